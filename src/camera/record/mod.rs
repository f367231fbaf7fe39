//! Recording every camera, losslessly, into MCAP that Foxglove opens as it is.
//!
//! Layout (documented for other readers in `docs/recording.md`):
//! - one channel per camera, topic `/camN/image`, protobuf `foxglove.RawImage`
//!   (`foxglove.CompressedImage` with format `jpeg` for MJPEG cameras): the bytes
//!   are the frame exactly as captured;
//! - topic `/camN/calibration`: `foxglove.CameraCalibration` (plumb_bob K, D, R, P)
//!   at the camera's first frame and then once a second, so a viewer that seeks
//!   finds one;
//! - times: the message `log_time` and the stamps inside messages are wall-clock
//!   time (CLOCK_REALTIME ns, through one [`WallClock`] offset read when the file
//!   is created), so a viewer places the run on the calendar; the MCAP
//!   `publish_time` keeps the capture clock (CLOCK_MONOTONIC ns, what the
//!   pipeline's stamps and a replay use), and MCAP `sequence` the frame sequence
//!   (low 32 bits);
//! - channel metadata: `camera`, `name`, `format`, `width`, `height`, `fps`,
//!   `timestamp_source` and, when known, `calibration` (our JSON, with
//!   extrinsics);
//! - metadata record `hailo-edge.rig`: every camera's calibration, the capture
//!   clock and the wall-clock offset.
//!
//! Chunks are zstd-compressed (frames are still recorded byte for byte).

pub mod image;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use foxglove::messages::{CameraCalibration, CompressedImage, RawImage};
use foxglove::Encode;

use super::frame::{Frame, PixelFormat};
use super::source::SourceInfo;
use crate::geom::time::WallClock;
use crate::geom::Camera;
use image::Image;

/// Where the capture clock is kept: the name written in the `hailo-edge.rig`
/// metadata record.
pub const CAPTURE_CLOCK_FIELD: &str = "publish_time";

/// How often a camera's calibration is repeated, capture-clock ns.
const CALIBRATION_EVERY_NS: u64 = 1_000_000_000;

/// zstd level of the chunks: level 3 keeps up with four cameras on one core.
const ZSTD_LEVEL: u32 = 3;

/// Chunk size before compression: a few frames of four cameras, so a run killed
/// mid-chunk loses a fraction of a second.
pub const CHUNK_BYTES: u64 = 1 << 20;

/// One camera as the recorder writes it.
#[derive(Debug, Clone)]
pub struct RecordedCamera {
    pub info: SourceInfo,
    pub calibration: Option<Camera>,
}

/// A camera recorded without a calibration.
impl From<SourceInfo> for RecordedCamera {
    fn from(info: SourceInfo) -> RecordedCamera {
        RecordedCamera {
            info,
            calibration: None,
        }
    }
}

/// Why an MCAP file could not be read or written, naming the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McapFileError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: MCAP: {}", path.display(), WithCause(source))]
    Mcap {
        path: PathBuf,
        #[source]
        source: mcap::McapError,
    },
    #[error("{}: a message for {topic} cannot be encoded: {what}", path.display())]
    Encode {
        path: PathBuf,
        topic: String,
        what: String,
    },
}

/// An MCAP error with the error under it (the I/O error under "I/O error from writing"), so
/// that a report's one line says what happened: a full disk, a file-size limit.
struct WithCause<'a>(&'a mcap::McapError);

impl std::fmt::Display for WithCause<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        match std::error::Error::source(self.0) {
            Some(cause) => write!(f, ": {cause}"),
            None => Ok(()),
        }
    }
}

/// Why recording failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    #[error(transparent)]
    File(#[from] McapFileError),
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    #[error("{}: frame from {camera}, which is not one of the recorded cameras", path.display())]
    UnknownCamera {
        path: PathBuf,
        camera: super::CameraId,
    },
}

struct Channel {
    image: u16,
    calibration: Option<(u16, Camera)>,
    /// Capture time at or after which the calibration is written again.
    calibration_due_ns: u64,
    frame_id: String,
}

/// Writes frames of several cameras, and any other Foxglove or JSON channel, into
/// one MCAP file.
pub struct Recorder {
    path: PathBuf,
    writer: mcap::Writer<BufWriter<File>>,
    channels: BTreeMap<u32, Channel>,
    /// Topic of each channel id, for errors.
    topics: BTreeMap<u16, String>,
    wall: WallClock,
    buf: Vec<u8>,
    frames: u64,
}

impl Recorder {
    /// Creates `path` (refusing an existing file or a link) and declares one
    /// channel per camera.
    ///
    /// # Errors
    /// [`RecordError`] naming the file.
    pub fn create(path: &Path, cameras: &[RecordedCamera]) -> Result<Self, RecordError> {
        Self::create_with(path, cameras, false)
    }

    /// [`Recorder::create`], replacing an existing file when `overwrite`. The
    /// file is created owner-only ([`crate::output::PRIVATE_MODE`]): it
    /// films people.
    ///
    /// # Errors
    /// [`RecordError`] naming the file.
    pub fn create_with(
        path: &Path,
        cameras: &[RecordedCamera],
        overwrite: bool,
    ) -> Result<Self, RecordError> {
        Self::create_chunked(path, cameras, overwrite, CHUNK_BYTES)
    }

    /// [`Recorder::create_with`] with chunks of about `chunk_bytes` (before
    /// compression): a run killed mid-chunk loses that chunk.
    ///
    /// # Errors
    /// [`RecordError`] naming the file.
    pub fn create_chunked(
        path: &Path,
        cameras: &[RecordedCamera],
        overwrite: bool,
        chunk_bytes: u64,
    ) -> Result<Self, RecordError> {
        let file = crate::output::create("record", path, overwrite)?;
        let options = mcap::WriteOptions::new()
            .chunk_size(Some(chunk_bytes))
            .compression(Some(mcap::Compression::Zstd))
            .compression_level(ZSTD_LEVEL)
            .profile("")
            .library(concat!("hailo-edge ", env!("CARGO_PKG_VERSION")));
        let writer =
            options
                .create(BufWriter::new(file))
                .map_err(|source| McapFileError::Mcap {
                    path: path.to_path_buf(),
                    source,
                })?;
        let mut rec = Self {
            path: path.to_path_buf(),
            writer,
            channels: BTreeMap::new(),
            topics: BTreeMap::new(),
            wall: WallClock::now(),
            buf: Vec::new(),
            frames: 0,
        };
        for cam in cameras {
            rec.add_camera(cam)?;
        }
        let rig = serde_json::to_string(
            &cameras
                .iter()
                .map(|c| (c.info.camera.to_string(), c.calibration))
                .collect::<BTreeMap<_, _>>(),
        )
        .map_err(|e| rec.io(e.into()))?;
        let metadata = mcap::records::Metadata {
            name: "hailo-edge.rig".into(),
            metadata: BTreeMap::from([
                ("calibration".to_string(), rig),
                ("capture_clock".to_string(), "CLOCK_MONOTONIC".to_string()),
                (
                    "capture_clock_in".to_string(),
                    CAPTURE_CLOCK_FIELD.to_string(),
                ),
                (
                    "wall_clock_offset_ns".to_string(),
                    rec.wall.offset_ns().to_string(),
                ),
            ]),
        };
        rec.writer
            .write_metadata(&metadata)
            .map_err(|e| rec.mcap(e))?;
        Ok(rec)
    }

    fn io(&self, source: std::io::Error) -> McapFileError {
        McapFileError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn mcap(&self, source: mcap::McapError) -> McapFileError {
        McapFileError::Mcap {
            path: self.path.clone(),
            source,
        }
    }

    /// Declares a camera's image channel and, with a calibration, its calibration
    /// channel.
    fn add_camera(&mut self, cam: &RecordedCamera) -> Result<(), RecordError> {
        let i = &cam.info;
        let mut meta = BTreeMap::from([
            ("camera".to_string(), i.camera.0.to_string()),
            ("name".to_string(), i.name.clone()),
            ("format".to_string(), i.format.name().to_string()),
            ("width".to_string(), i.width.to_string()),
            ("height".to_string(), i.height.to_string()),
            ("fps".to_string(), format!("{}", i.fps)),
            (
                "timestamp_source".to_string(),
                i.timestamp_source.name().to_string(),
            ),
        ]);
        if let Some(c) = &cam.calibration {
            let json = serde_json::to_string(c).map_err(|e| self.io(e.into()))?;
            meta.insert("calibration".to_string(), json);
        }
        let topic = format!("/{}/image", i.camera);
        let image = if i.format == PixelFormat::Mjpeg {
            self.add_channel::<CompressedImage>(&topic, &meta)?
        } else {
            self.add_channel::<RawImage>(&topic, &meta)?
        };
        let calibration = match cam.calibration {
            Some(c) => Some((
                self.add_channel::<CameraCalibration>(
                    &format!("/{}/calibration", i.camera),
                    &BTreeMap::new(),
                )?,
                c,
            )),
            None => None,
        };
        self.channels.insert(
            i.camera.0,
            Channel {
                image,
                calibration,
                calibration_due_ns: 0,
                frame_id: i.camera.to_string(),
            },
        );
        Ok(())
    }

    /// Declares a channel of Foxglove's message `T` (protobuf, its schema in
    /// the file); returns its id for [`Recorder::write_message`].
    ///
    /// # Errors
    /// [`McapFileError::Mcap`] when the channel cannot be added.
    pub fn add_channel<T: Encode>(
        &mut self,
        topic: &str,
        metadata: &BTreeMap<String, String>,
    ) -> Result<u16, RecordError> {
        let Some(schema) = T::get_schema() else {
            return Err(McapFileError::Encode {
                path: self.path.clone(),
                topic: topic.into(),
                what: "the message type has no schema".into(),
            }
            .into());
        };
        let id = self
            .writer
            .add_schema(&schema.name, &schema.encoding, &schema.data)
            .map_err(|e| self.mcap(e))?;
        let channel = self
            .writer
            .add_channel(id, topic, &T::get_message_encoding(), metadata)
            .map_err(|e| self.mcap(e))?;
        self.topics.insert(channel, topic.to_owned());
        Ok(channel)
    }

    /// Declares a JSON channel (e.g. the pipeline's per-frame results), with a
    /// JSON schema and channel metadata; returns its id for
    /// [`Recorder::write_json`].
    ///
    /// # Errors
    /// [`McapFileError::Mcap`] when the channel cannot be added.
    pub fn add_json_channel(
        &mut self,
        topic: &str,
        schema_name: &str,
        schema: &str,
        metadata: &BTreeMap<String, String>,
    ) -> Result<u16, RecordError> {
        let id = self
            .writer
            .add_schema(schema_name, "jsonschema", schema.as_bytes())
            .map_err(|e| self.mcap(e))?;
        let channel = self
            .writer
            .add_channel(id, topic, "json", metadata)
            .map_err(|e| self.mcap(e))?;
        self.topics.insert(channel, topic.to_owned());
        Ok(channel)
    }

    /// Appends one frame (and, when due, its camera's calibration).
    ///
    /// # Errors
    /// [`RecordError::UnknownCamera`] for a camera not declared at creation,
    /// [`McapFileError::Mcap`] when writing fails.
    pub fn write(&mut self, frame: &Frame) -> Result<(), RecordError> {
        let Some(ch) = self.channels.get_mut(&frame.camera.0) else {
            return Err(RecordError::UnknownCamera {
                path: self.path.clone(),
                camera: frame.camera,
            });
        };
        let wall_ns = self.wall.wall_ns(frame.capture_ns);
        // Both messages are built while the channel is borrowed; they own their frame id.
        let calibration = match ch.calibration {
            Some((id, c)) if frame.capture_ns >= ch.calibration_due_ns => {
                ch.calibration_due_ns = frame.capture_ns.saturating_add(CALIBRATION_EVERY_NS);
                Some((id, image::calibration(&c, &ch.frame_id, wall_ns)))
            }
            _ => None,
        };
        let (channel, message) = (ch.image, Image::of(frame, &ch.frame_id, wall_ns));
        if let Some((id, msg)) = calibration {
            self.write_message(id, 0, frame.capture_ns, &msg)?;
        }
        let sequence = frame.sequence as u32;
        match message {
            Image::Raw(m) => self.write_message(channel, sequence, frame.capture_ns, &m)?,
            Image::Compressed(m) => self.write_message(channel, sequence, frame.capture_ns, &m)?,
        }
        self.frames += 1;
        Ok(())
    }

    /// Writes one Foxglove message on a channel from [`Recorder::add_channel`]:
    /// logged at the wall-clock time of `capture_ns`, published at `capture_ns`.
    ///
    /// # Errors
    /// [`McapFileError::Encode`] or [`McapFileError::Mcap`] naming the file.
    pub fn write_message<T: Encode>(
        &mut self,
        channel: u16,
        sequence: u32,
        capture_ns: u64,
        message: &T,
    ) -> Result<(), RecordError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        if let Some(n) = message.encoded_len() {
            buf.reserve(n);
        }
        if let Err(e) = message.encode(&mut buf) {
            return Err(McapFileError::Encode {
                path: self.path.clone(),
                topic: self.topics.get(&channel).cloned().unwrap_or_default(),
                what: e.to_string(),
            }
            .into());
        }
        let written = self.write_bytes(channel, sequence, capture_ns, &buf);
        self.buf = buf;
        written
    }

    /// Writes one JSON message on a channel from [`Recorder::add_json_channel`],
    /// with the times of [`Recorder::write_message`].
    ///
    /// # Errors
    /// [`McapFileError::Mcap`] when writing fails.
    pub fn write_json(
        &mut self,
        channel: u16,
        sequence: u32,
        capture_ns: u64,
        json: &[u8],
    ) -> Result<(), RecordError> {
        self.write_bytes(channel, sequence, capture_ns, json)
    }

    fn write_bytes(
        &mut self,
        channel: u16,
        sequence: u32,
        capture_ns: u64,
        data: &[u8],
    ) -> Result<(), RecordError> {
        let header = mcap::records::MessageHeader {
            channel_id: channel,
            sequence,
            log_time: self.wall.wall_ns(capture_ns),
            publish_time: capture_ns,
        };
        self.writer
            .write_to_known_channel(&header, data)
            .map_err(|e| self.mcap(e))?;
        Ok(())
    }

    /// The wall-clock offset the file's log times use.
    pub fn wall_clock(&self) -> WallClock {
        self.wall
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Writes the summary and closes the file.
    ///
    /// # Errors
    /// [`McapFileError::Mcap`] when the summary cannot be written.
    pub fn finish(mut self) -> Result<u64, RecordError> {
        self.writer.finish().map_err(|e| self.mcap(e))?;
        Ok(self.frames)
    }
}
