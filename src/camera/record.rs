//! Recording every camera, losslessly, into MCAP.
//!
//! Layout (documented for other readers):
//! - one channel per camera, topic `/camN/image`, JSON messages with the
//!   `foxglove.RawImage` schema (`foxglove.CompressedImage` with format
//!   `jpeg` for MJPEG cameras), so Foxglove shows them; the bytes are the
//!   frame exactly as captured (base64, as Foxglove's JSON encoding of bytes
//!   requires), plus two fields Foxglove ignores: `sequence` (u64) and
//!   `timestamp_source`;
//! - message `log_time` and `publish_time` = capture time (CLOCK_MONOTONIC
//!   ns), MCAP `sequence` = the frame sequence (low 32 bits);
//! - channel metadata: `camera`, `name`, `format`, `width`, `height`, `fps`,
//!   `timestamp_source` and, when known, `calibration` (our JSON, with extrinsics);
//! - topic `/camN/calibration`: one `foxglove.CameraCalibration` message
//!   (plumb_bob K, D, R, P) at the camera's first frame.
//!
//! Chunks are not compressed: frames are recorded byte for byte and the
//! default build needs no zstd or lz4.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::{Deserialize, Serialize};

use super::frame::{Frame, PixelFormat};
use super::source::SourceInfo;
use crate::geom::Camera;

/// `foxglove.RawImage` / `foxglove.CompressedImage` as JSON, plus our two fields.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ImageMessage<'a> {
    pub timestamp: Time,
    #[serde(borrow)]
    pub frame_id: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub format: Option<Cow<'a, str>>,
    /// Base64 of the frame bytes.
    #[serde(borrow)]
    pub data: Cow<'a, str>,
    pub sequence: u64,
    #[serde(borrow)]
    pub timestamp_source: Cow<'a, str>,
}

/// Foxglove's `time`: seconds and nanoseconds.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Time {
    pub sec: u64,
    pub nsec: u32,
}

impl Time {
    pub fn from_ns(ns: u64) -> Self {
        Self {
            sec: ns / 1_000_000_000,
            nsec: (ns % 1_000_000_000) as u32,
        }
    }
    /// Nanoseconds, `None` past 2^64 ns (a stamp no recording can hold).
    pub fn to_ns(self) -> Option<u64> {
        self.sec
            .checked_mul(1_000_000_000)?
            .checked_add(u64::from(self.nsec))
    }
}

/// Foxglove's name for a raw pixel layout.
pub(crate) fn foxglove_encoding(f: PixelFormat) -> &'static str {
    match f {
        PixelFormat::Yuyv => "yuyv",
        PixelFormat::Grey => "mono8",
        PixelFormat::Rgb24 => "rgb8",
        // Not one Foxglove renders; kept lossless under its usual name.
        PixelFormat::Nv12 => "nv12",
        PixelFormat::Mjpeg => "jpeg",
    }
}

const RAW_IMAGE_SCHEMA: &str = r#"{"title":"foxglove.RawImage","type":"object","properties":{"timestamp":{"type":"object","properties":{"sec":{"type":"integer"},"nsec":{"type":"integer"}}},"frame_id":{"type":"string"},"width":{"type":"integer"},"height":{"type":"integer"},"encoding":{"type":"string"},"step":{"type":"integer"},"data":{"type":"string","contentEncoding":"base64"},"sequence":{"type":"integer"},"timestamp_source":{"type":"string"}}}"#;
const COMPRESSED_IMAGE_SCHEMA: &str = r#"{"title":"foxglove.CompressedImage","type":"object","properties":{"timestamp":{"type":"object","properties":{"sec":{"type":"integer"},"nsec":{"type":"integer"}}},"frame_id":{"type":"string"},"data":{"type":"string","contentEncoding":"base64"},"format":{"type":"string"},"sequence":{"type":"integer"},"timestamp_source":{"type":"string"}}}"#;
const CALIBRATION_SCHEMA: &str = r#"{"title":"foxglove.CameraCalibration","type":"object","properties":{"timestamp":{"type":"object","properties":{"sec":{"type":"integer"},"nsec":{"type":"integer"}}},"frame_id":{"type":"string"},"width":{"type":"integer"},"height":{"type":"integer"},"distortion_model":{"type":"string"},"D":{"type":"array","items":{"type":"number"}},"K":{"type":"array","items":{"type":"number"}},"R":{"type":"array","items":{"type":"number"}},"P":{"type":"array","items":{"type":"number"}}}}"#;

/// One camera as the recorder writes it.
#[derive(Debug, Clone)]
pub struct RecordedCamera {
    pub info: SourceInfo,
    pub calibration: Option<Camera>,
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
    #[error("{}: MCAP: {source}", path.display())]
    Mcap {
        path: PathBuf,
        #[source]
        source: mcap::McapError,
    },
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
    calibration: Option<u16>,
    calibration_written: bool,
    frame_id: String,
}

/// Writes frames of several cameras into one MCAP file.
pub struct Recorder {
    path: PathBuf,
    writer: mcap::Writer<BufWriter<File>>,
    channels: BTreeMap<u32, Channel>,
    calibrations: BTreeMap<u32, Camera>,
    b64: String,
    json: Vec<u8>,
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
        let io = |source| McapFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mc = |source| McapFileError::Mcap {
            path: path.to_path_buf(),
            source,
        };
        let file = crate::output::create("record", path, overwrite)?;
        let options = mcap::WriteOptions::new()
            .compression(None)
            .profile("")
            .library(concat!("hailo-edge ", env!("CARGO_PKG_VERSION")));
        let mut writer = options.create(BufWriter::new(file)).map_err(mc)?;
        let raw = writer
            .add_schema(
                "foxglove.RawImage",
                "jsonschema",
                RAW_IMAGE_SCHEMA.as_bytes(),
            )
            .map_err(mc)?;
        let compressed = writer
            .add_schema(
                "foxglove.CompressedImage",
                "jsonschema",
                COMPRESSED_IMAGE_SCHEMA.as_bytes(),
            )
            .map_err(mc)?;
        let calib_schema = writer
            .add_schema(
                "foxglove.CameraCalibration",
                "jsonschema",
                CALIBRATION_SCHEMA.as_bytes(),
            )
            .map_err(mc)?;
        let mut channels = BTreeMap::new();
        let mut calibrations = BTreeMap::new();
        for cam in cameras {
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
                let json = serde_json::to_string(c).map_err(|e| io(e.into()))?;
                meta.insert("calibration".to_string(), json);
                calibrations.insert(i.camera.0, *c);
            }
            let schema = if i.format == PixelFormat::Mjpeg {
                compressed
            } else {
                raw
            };
            let topic = format!("/{}/image", i.camera);
            let image = writer
                .add_channel(schema, &topic, "json", &meta)
                .map_err(mc)?;
            let calibration = match &cam.calibration {
                Some(_) => Some(
                    writer
                        .add_channel(
                            calib_schema,
                            &format!("/{}/calibration", i.camera),
                            "json",
                            &BTreeMap::new(),
                        )
                        .map_err(mc)?,
                ),
                None => None,
            };
            channels.insert(
                i.camera.0,
                Channel {
                    image,
                    calibration,
                    calibration_written: false,
                    frame_id: i.camera.to_string(),
                },
            );
        }
        let rig = serde_json::to_string(
            &cameras
                .iter()
                .map(|c| (c.info.camera.to_string(), c.calibration))
                .collect::<BTreeMap<_, _>>(),
        )
        .map_err(|e| io(e.into()))?;
        writer
            .write_metadata(&mcap::records::Metadata {
                name: "hailo-edge.rig".into(),
                metadata: BTreeMap::from([("calibration".to_string(), rig)]),
            })
            .map_err(mc)?;
        Ok(Self {
            path: path.to_path_buf(),
            writer,
            channels,
            calibrations,
            b64: String::new(),
            json: Vec::new(),
            frames: 0,
        })
    }

    /// Appends one frame (and, before its camera's first frame, its calibration).
    ///
    /// # Errors
    /// [`RecordError::UnknownCamera`] for a camera not declared at creation,
    /// [`McapFileError::Mcap`] when writing fails.
    pub fn write(&mut self, frame: &Frame) -> Result<(), RecordError> {
        let mc = |source| McapFileError::Mcap {
            path: self.path.clone(),
            source,
        };
        let Some(ch) = self.channels.get_mut(&frame.camera.0) else {
            return Err(RecordError::UnknownCamera {
                path: self.path.clone(),
                camera: frame.camera,
            });
        };
        if let (Some(id), false) = (ch.calibration, ch.calibration_written) {
            if let Some(c) = self.calibrations.get(&frame.camera.0) {
                let msg = calibration_message(c, &ch.frame_id, frame.capture_ns);
                let header = mcap::records::MessageHeader {
                    channel_id: id,
                    sequence: 0,
                    log_time: frame.capture_ns,
                    publish_time: frame.capture_ns,
                };
                self.writer
                    .write_to_known_channel(&header, msg.to_string().as_bytes())
                    .map_err(mc)?;
            }
            ch.calibration_written = true;
        }
        self.b64.clear();
        base64::engine::general_purpose::STANDARD.encode_string(&frame.data[..], &mut self.b64);
        let compressed = frame.format == PixelFormat::Mjpeg;
        let msg = ImageMessage {
            timestamp: Time::from_ns(frame.capture_ns),
            frame_id: Cow::Borrowed(&ch.frame_id),
            width: (!compressed).then_some(frame.width),
            height: (!compressed).then_some(frame.height),
            encoding: (!compressed).then(|| Cow::Borrowed(foxglove_encoding(frame.format))),
            step: (!compressed).then(|| match frame.format {
                PixelFormat::Yuyv => frame.width * 2,
                PixelFormat::Rgb24 => frame.width * 3,
                _ => frame.width,
            }),
            format: compressed.then_some(Cow::Borrowed("jpeg")),
            data: Cow::Borrowed(&self.b64),
            sequence: frame.sequence,
            timestamp_source: Cow::Borrowed(frame.timestamp_source.name()),
        };
        self.json.clear();
        serde_json::to_writer(&mut self.json, &msg).map_err(|e| McapFileError::Io {
            path: self.path.clone(),
            source: e.into(),
        })?;
        let header = mcap::records::MessageHeader {
            channel_id: ch.image,
            sequence: frame.sequence as u32,
            log_time: frame.capture_ns,
            publish_time: frame.capture_ns,
        };
        self.writer
            .write_to_known_channel(&header, &self.json)
            .map_err(mc)?;
        self.frames += 1;
        Ok(())
    }

    /// Declares one more JSON channel in the same file (e.g. the pipeline's
    /// per-frame results), with a JSON schema and channel metadata; returns its id for
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
        let mc = |source| McapFileError::Mcap {
            path: self.path.clone(),
            source,
        };
        let id = self
            .writer
            .add_schema(schema_name, "jsonschema", schema.as_bytes())
            .map_err(mc)?;
        Ok(self
            .writer
            .add_channel(id, topic, "json", metadata)
            .map_err(mc)?)
    }

    /// Writes one JSON message, logged at `log_time_ns`, on a channel from
    /// [`Recorder::add_json_channel`].
    ///
    /// # Errors
    /// [`McapFileError::Mcap`] when writing fails.
    pub fn write_json(
        &mut self,
        channel: u16,
        sequence: u32,
        log_time_ns: u64,
        json: &[u8],
    ) -> Result<(), RecordError> {
        let header = mcap::records::MessageHeader {
            channel_id: channel,
            sequence,
            log_time: log_time_ns,
            publish_time: log_time_ns,
        };
        self.writer
            .write_to_known_channel(&header, json)
            .map_err(|source| McapFileError::Mcap {
                path: self.path.clone(),
                source,
            })?;
        Ok(())
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
        self.writer.finish().map_err(|source| McapFileError::Mcap {
            path: self.path.clone(),
            source,
        })?;
        Ok(self.frames)
    }
}

/// `foxglove.CameraCalibration` (ROS `plumb_bob`) of a calibration.
fn calibration_message(c: &Camera, frame_id: &str, ns: u64) -> serde_json::Value {
    // ROS/Foxglove put pixel centres on integers; ours are at +0.5.
    let (cx, cy) = (c.cx - 0.5, c.cy - 0.5);
    let d = c.distortion;
    let k = [c.fx, 0.0, cx, 0.0, c.fy, cy, 0.0, 0.0, 1.0];
    let p = [c.fx, 0.0, cx, 0.0, 0.0, c.fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0];
    serde_json::json!({
        "timestamp": Time::from_ns(ns),
        "frame_id": frame_id,
        "width": c.width,
        "height": c.height,
        "distortion_model": "plumb_bob",
        "D": [d.k1, d.k2, d.p1, d.p2, d.k3],
        "K": k,
        "R": [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        "P": p,
    })
}
