//! Playing an MCAP recording back as camera sources.
//!
//! Every frame comes back with the bytes, capture stamp and sequence it was
//! recorded with, in recorded order, so a replayed run is deterministic. The
//! capture stamp is the MCAP `publish_time` (see [`super::record`]), not the
//! wall-clock `log_time`.
//! Pacing is either as fast as possible or the original timing, measured from
//! one start instant shared by all cameras of the recording, so relative
//! timing across cameras is kept too.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::BTreeMap;

use mcap::records::{MessageHeader, Record};
use mcap::sans_io::{LinearReadEvent, LinearReader, LinearReaderOptions};

use super::frame::{check_sides, CameraId, Frame, FrameError};
use super::pool::BufferPool;
use super::record::image::pixel_format;
use super::record::McapFileError;
use super::source::{Source, SourceError, SourceInfo};
use super::stop::Stop;
use crate::geom::Camera;

mod framing;
mod records;

use records::Indexed;

/// How fast frames are handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// As soon as asked.
    AsFastAsPossible,
    /// At the recorded capture times, relative to the first frame.
    Original,
}

/// Why a recording cannot be played.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    #[error(transparent)]
    File(#[from] McapFileError),
    #[error("{}: channel {topic}: {what}", path.display())]
    Channel {
        path: PathBuf,
        topic: String,
        what: String,
    },
}

struct Entry {
    /// The message (a protobuf image), decoded when the frame is asked for.
    payload: Vec<u8>,
    /// Capture clock (the MCAP `publish_time`), ns.
    capture_ns: u64,
    /// The frame sequence, unwrapped from the header's low 32 bits.
    sequence: u64,
}

/// What an image channel carries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ImageSchema {
    Raw,
    Compressed,
}

struct CameraTrack {
    info: SourceInfo,
    schema: ImageSchema,
    calibration: Option<Camera>,
    entries: Vec<Entry>,
}

impl CameraTrack {
    /// Appends a message's payload as the track's next entry, its sequence unwrapped past the
    /// previous entry's.
    fn push(&mut self, header: &MessageHeader, payload: Vec<u8>) {
        let sequence = match self.entries.last() {
            Some(last) => unwrap_sequence(last.sequence, header.sequence),
            None => u64::from(header.sequence),
        };
        self.entries.push(Entry {
            payload,
            capture_ns: header.publish_time,
            sequence,
        });
    }
}

/// A recording read into memory and indexed per camera.
pub struct Recording {
    path: PathBuf,
    tracks: Vec<CameraTrack>,
    first_ns: u64,
    truncation: Option<Truncation>,
}

/// What a recording cut short (a run killed before its footer, a full disk)
/// lost: it is read up to its last whole message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    /// Messages read before the cut.
    pub messages_read: u64,
    /// Bytes after the last whole message, not read.
    pub bytes_discarded: u64,
    /// What the reader found at the cut.
    pub error: String,
}

impl Recording {
    /// Reads and indexes `path`. A file cut short (no footer, or ending inside
    /// a record) is read up to its last whole message, and what was lost is
    /// kept ([`Recording::truncation`]).
    ///
    /// # Errors
    /// [`ReplayError`] naming the file and, for a malformed channel, its topic;
    /// a file that is not an MCAP recording at all.
    pub fn open(path: &Path) -> Result<Arc<Self>, ReplayError> {
        let bytes = std::fs::read(path).map_err(|source| McapFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let Indexed {
            tracks,
            first_ns,
            truncation,
        } = records::read(path, &bytes)?;
        if let Some(t) = &truncation {
            log::warn!(
                "{}: cut short ({}): read {} messages, {} bytes after the last whole one discarded",
                path.display(),
                t.error,
                t.messages_read,
                t.bytes_discarded
            );
        }
        Ok(Arc::new(Self {
            path: path.to_path_buf(),
            tracks,
            first_ns,
            truncation,
        }))
    }

    /// What a recording cut short lost; `None` for a whole file.
    pub fn truncation(&self) -> Option<&Truncation> {
        self.truncation.as_ref()
    }

    /// The recorded cameras, by camera id.
    pub fn cameras(&self) -> impl Iterator<Item = &SourceInfo> {
        self.tracks.iter().map(|t| &t.info)
    }

    /// A camera's recorded calibration.
    pub fn calibration(&self, camera: CameraId) -> Option<Camera> {
        self.tracks
            .iter()
            .find(|t| t.info.camera == camera)?
            .calibration
    }

    /// Frames recorded for a camera.
    pub fn frame_count(&self, camera: CameraId) -> usize {
        self.tracks
            .iter()
            .find(|t| t.info.camera == camera)
            .map_or(0, |t| t.entries.len())
    }

    /// One source per recorded camera, sharing one start instant for pacing.
    pub fn sources(self: &Arc<Self>, pacing: Pacing) -> Vec<ReplaySource> {
        let start = Instant::now();
        (0..self.tracks.len())
            .map(|track| ReplaySource {
                recording: Arc::clone(self),
                track,
                next: 0,
                pacing,
                start,
                stop: Stop::new(),
                told_truncation: false,
                pool: BufferPool::new(8),
            })
            .collect()
    }
}

/// The 64-bit sequence after `previous` whose low 32 bits are `low`: the header
/// keeps 32 bits, which wrap after 414 days at 120 fps.
fn unwrap_sequence(previous: u64, low: u32) -> u64 {
    let candidate = (previous & !0xffff_ffff) | u64::from(low);
    if candidate < previous && previous - candidate > 1 << 31 {
        candidate + (1 << 32)
    } else {
        candidate
    }
}

/// One camera of a recording.
pub struct ReplaySource {
    recording: Arc<Recording>,
    track: usize,
    next: usize,
    pacing: Pacing,
    start: Instant,
    /// What a paced wait for the next frame ends on.
    stop: Stop,
    /// Whether the end of a truncated recording was reported.
    told_truncation: bool,
    pool: BufferPool,
}

impl Source for ReplaySource {
    fn info(&self) -> &SourceInfo {
        &self.recording.tracks[self.track].info
    }

    fn next_frame(&mut self) -> Result<Frame, SourceError> {
        let rec = &self.recording;
        let track = &rec.tracks[self.track];
        let Some(entry) = track.entries.get(self.next) else {
            // Once, at the end of a recording cut short: what it lost.
            if let (Some(t), false) = (&rec.truncation, self.told_truncation) {
                self.told_truncation = true;
                return Err(SourceError::Truncated {
                    device: rec.path.display().to_string(),
                    bytes_discarded: t.bytes_discarded,
                });
            }
            return Err(SourceError::EndOfStream);
        };
        self.next += 1;
        let bytes = entry.payload.as_slice();
        // A frame that does not decode is one bad frame: it is counted and
        // the camera goes on with the next.
        let corrupt = |what: String| {
            SourceError::BadFrame(FrameError::Corrupt {
                camera: track.info.camera,
                file: rec.path.display().to_string(),
                index: self.next - 1,
                what,
            })
        };
        let (width, height, pixels) = match track.schema {
            ImageSchema::Raw => {
                let m = <foxglove::messages::RawImage as prost::Message>::decode(bytes)
                    .map_err(|e| corrupt(format!("foxglove.RawImage: {e}")))?;
                let format = pixel_format(&m.encoding);
                if format != Some(track.info.format) {
                    return Err(corrupt(format!(
                        "encoding `{}`, the channel records {}",
                        m.encoding,
                        track.info.format.name()
                    )));
                }
                (m.width, m.height, m.data)
            }
            ImageSchema::Compressed => {
                let m = <foxglove::messages::CompressedImage as prost::Message>::decode(bytes)
                    .map_err(|e| corrupt(format!("foxglove.CompressedImage: {e}")))?;
                (track.info.width, track.info.height, m.data)
            }
        };
        // The claimed size is bounded before anything downstream sizes a
        // buffer from it; the payload itself is bounded by the file.
        check_sides(track.info.camera, width, height)?;
        let capture_ns = entry.capture_ns;
        let mut data = self.pool.zeroed(pixels.len());
        data.copy_from_slice(&pixels);
        if self.pacing == Pacing::Original {
            let due = Duration::from_nanos(capture_ns.saturating_sub(rec.first_ns));
            if self.stop.wait_for(due.saturating_sub(self.start.elapsed())) {
                return Err(SourceError::Stopped);
            }
        }
        let frame = Frame {
            camera: track.info.camera,
            format: track.info.format,
            width,
            height,
            capture_ns,
            sequence: entry.sequence,
            timestamp_source: track.info.timestamp_source,
            data,
            truth: None,
        };
        frame.check_size()?;
        Ok(frame)
    }

    fn stop_on(&mut self, stop: Stop) {
        self.stop = stop;
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_hostile;

/// Every camera's calibration as a recording's `hailo-edge.rig` metadata record
/// holds it (camera id to calibration, `None` for a camera recorded without
/// one), read from the file's start without reading its frames: the recorder
/// writes the record before the first frame.
///
/// # Errors
/// [`ReplayError`] naming the file: unreadable, not MCAP, or without the
/// record (not a hailo-edge recording).
pub fn recorded_calibrations(path: &Path) -> Result<BTreeMap<u32, Option<Camera>>, ReplayError> {
    use std::io::Read;
    let io = |source| McapFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut reader =
        LinearReader::new_with_options(LinearReaderOptions::default().with_skip_end_magic(true));
    let missing = |what: String| ReplayError::Channel {
        path: path.to_path_buf(),
        topic: "hailo-edge.rig".into(),
        what,
    };
    while let Some(event) = reader.next_event() {
        match event {
            Ok(LinearReadEvent::ReadRequest(need)) => {
                let n = file.read(reader.insert(need)).map_err(io)?;
                if n == 0 {
                    break;
                }
                reader.notify_read(n);
            }
            Ok(LinearReadEvent::Record { opcode, data }) => {
                let Ok(Record::Metadata(m)) = mcap::parse_record(opcode, data) else {
                    continue;
                };
                if m.name != "hailo-edge.rig" {
                    continue;
                }
                let json = m
                    .metadata
                    .get("calibration")
                    .ok_or_else(|| missing("no `calibration` in the metadata record".into()))?;
                let by_name: BTreeMap<String, Option<Camera>> =
                    serde_json::from_str(json).map_err(|e| missing(format!("calibration: {e}")))?;
                return by_name
                    .into_iter()
                    .map(|(name, c)| {
                        let id = name
                            .strip_prefix("cam")
                            .and_then(|n| n.parse().ok())
                            .ok_or_else(|| missing(format!("`{name}` is not a camera (camN)")))?;
                        Ok((id, c))
                    })
                    .collect();
            }
            Err(source) => {
                return Err(McapFileError::Mcap {
                    path: path.to_path_buf(),
                    source,
                }
                .into())
            }
        }
    }
    Err(missing(
        "the file has no `hailo-edge.rig` metadata record (not a hailo-edge recording)".into(),
    ))
}
