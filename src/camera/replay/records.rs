//! A recording's records read into per-camera tracks.
//!
//! The file is fed to mcap's streaming reader, exactly the bytes it asks for, so a record it
//! hands back ends where the feeding is. Schemas and channels are kept as declared; each
//! message on a camera's image channel becomes an entry of that camera's track. A file cut
//! short is read up to its last whole message, and what was lost is counted.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::path::Path;

use mcap::records::{op, MessageHeader, Record};
use mcap::sans_io::{LinearReadEvent, LinearReader, LinearReaderOptions};

use super::{framing, CameraTrack, ImageSchema, ReplayError, Truncation};
use crate::camera::frame::{CameraId, PixelFormat, TimestampSource};
use crate::camera::record::McapFileError;
use crate::camera::source::SourceInfo;
use crate::geom::Camera;
use crate::limits::MAX_CAMERA_SIDE;

/// What a recording's records hold: its camera tracks by camera id, the earliest capture
/// stamp (0 without frames) and, for a file cut short, what was lost.
pub(super) struct Indexed {
    pub tracks: Vec<CameraTrack>,
    pub first_ns: u64,
    pub truncation: Option<Truncation>,
}

/// Reads `bytes`, the file at `path`, record by record into camera tracks.
///
/// # Errors
/// [`ReplayError`] for bytes the reader refuses before its first record (not an MCAP file)
/// and for a malformed camera channel, naming its topic.
pub(super) fn read(path: &Path, bytes: &[u8]) -> Result<Indexed, ReplayError> {
    let mut feed = Feed::new(bytes);
    let mut index = Index::new(path);
    let mut records = 0u64;
    let cut = loop {
        let Some(event) = feed.reader.next_event() else {
            break None;
        };
        let (opcode, data) = match event {
            Ok(LinearReadEvent::ReadRequest(need)) => match feed.fill(need) {
                ControlFlow::Continue(()) => continue,
                ControlFlow::Break(why) => break Some(why),
            },
            Ok(LinearReadEvent::Record { opcode, data }) => (opcode, data),
            Err(source) if records == 0 => {
                return Err(McapFileError::Mcap {
                    path: path.to_path_buf(),
                    source,
                }
                .into())
            }
            Err(e) => break Some(e.to_string()),
        };
        records += 1;
        if let ControlFlow::Break(why) = index.record(opcode, data, feed.fed)? {
            break Some(why);
        }
    };
    Ok(index.finish(cut, bytes.len()))
}

/// mcap's streaming reader and the bytes it is fed from.
struct Feed<'a> {
    reader: LinearReader,
    /// The readable bytes not fed yet.
    rest: &'a [u8],
    /// Bytes fed so far: a record the reader hands back ends here.
    fed: usize,
    /// Why reading stops when the readable bytes run out.
    end: String,
}

impl<'a> Feed<'a> {
    /// A reader over `bytes` that does not require the end magic. A record may not claim
    /// more bytes than the file holds or a frame can need: mcap's reader adds a claimed
    /// length to its offset unchecked, and a length near 2^64 wraps. mcap's reader also
    /// walks an uncompressed chunk's records unchecked: the file is readable up to the first
    /// chunk whose records overrun it.
    fn new(bytes: &'a [u8]) -> Self {
        let record_limit = bytes
            .len()
            .max(usize::try_from(2 * crate::limits::MAX_FRAME_BYTES).unwrap_or(usize::MAX));
        let reader = LinearReader::new_with_options(
            LinearReaderOptions::default()
                .with_skip_end_magic(true)
                .with_record_length_limit(record_limit),
        );
        let (rest, end) = match framing::first_overrun_chunk(bytes) {
            Some((at, why)) => (bytes.get(..at).unwrap_or(bytes), why),
            None => (bytes, "the file ends before its footer".to_string()),
        };
        Self {
            reader,
            rest,
            fed: 0,
            end,
        }
    }

    /// Feeds the reader the next `need` bytes, or as many as are left; breaks with why
    /// reading stops when none are.
    fn fill(&mut self, need: usize) -> ControlFlow<String> {
        let n = need.min(self.rest.len());
        if n == 0 {
            return ControlFlow::Break(self.end.clone());
        }
        let (head, tail) = self.rest.split_at(n);
        self.reader.insert(n).copy_from_slice(head);
        self.reader.notify_read(n);
        self.rest = tail;
        self.fed += n;
        ControlFlow::Continue(())
    }
}

/// The records read so far: schemas and channels as declared, and the camera tracks their
/// messages make.
struct Index<'p> {
    path: &'p Path,
    /// Schema names by schema id.
    schemas: HashMap<u16, String>,
    channels: HashMap<u16, Channel>,
    /// Each image channel's track, as an index into `tracks`.
    channel_track: HashMap<u16, usize>,
    tracks: Vec<CameraTrack>,
    /// The earliest capture stamp, `u64::MAX` before any frame.
    first_ns: u64,
    /// Messages read.
    read: u64,
    /// Where the last whole message ends in the file.
    last_end: usize,
}

impl<'p> Index<'p> {
    fn new(path: &'p Path) -> Self {
        Self {
            path,
            schemas: HashMap::new(),
            channels: HashMap::new(),
            channel_track: HashMap::new(),
            tracks: Vec::new(),
            first_ns: u64::MAX,
            read: 0,
            last_end: 0,
        }
    }

    /// Takes in one record, which ends at byte `end` of the file; breaks with the parse
    /// error of a malformed one. Only schemas, channels and messages are read. Other records
    /// are not parsed: mcap 0.26 panics on some malformed ones (an attachment too short for
    /// its CRC indexes out of its slice), and none of them is needed here.
    fn record(
        &mut self,
        opcode: u8,
        data: &[u8],
        end: usize,
    ) -> Result<ControlFlow<String>, ReplayError> {
        if !matches!(opcode, op::SCHEMA | op::CHANNEL | op::MESSAGE) {
            return Ok(ControlFlow::Continue(()));
        }
        match mcap::parse_record(opcode, data) {
            Ok(Record::Schema { header, .. }) => {
                self.schemas.insert(header.id, header.name);
            }
            Ok(Record::Channel(ch)) => {
                let schema = self.schemas.get(&ch.schema_id).cloned().unwrap_or_default();
                self.channels.insert(
                    ch.id,
                    Channel {
                        topic: ch.topic,
                        metadata: ch.metadata,
                        encoding: ch.message_encoding,
                        schema,
                    },
                );
            }
            Ok(Record::Message { header, data }) => {
                self.read += 1;
                self.last_end = end;
                self.message(&header, data)?;
            }
            Ok(_) => {}
            Err(e) => return Ok(ControlFlow::Break(e.to_string())),
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Adds a message on a camera's image channel to its track; other messages are skipped.
    fn message(&mut self, header: &MessageHeader, data: Cow<'_, [u8]>) -> Result<(), ReplayError> {
        let Some(track) = self.track(header.channel_id)? else {
            return Ok(());
        };
        // A copy: chunks are compressed, so a message is not the file's bytes.
        track.push(header, data.into_owned());
        self.first_ns = self.first_ns.min(header.publish_time);
        Ok(())
    }

    /// The track of an image channel (a topic ending in `/image`), made at its first
    /// message; `None` for an undeclared or other channel.
    fn track(&mut self, channel_id: u16) -> Result<Option<&mut CameraTrack>, ReplayError> {
        let Some(channel) = self.channels.get(&channel_id) else {
            return Ok(None);
        };
        if !channel.topic.ends_with("/image") {
            return Ok(None);
        }
        let at = match self.channel_track.get(&channel_id) {
            Some(&at) => at,
            None => {
                let schema = channel.image_schema(self.path)?;
                let (info, calibration) = track_info(self.path, &channel.topic, &channel.metadata)?;
                self.tracks.push(CameraTrack {
                    info,
                    schema,
                    calibration,
                    entries: Vec::new(),
                });
                let at = self.tracks.len() - 1;
                self.channel_track.insert(channel_id, at);
                at
            }
        };
        Ok(self.tracks.get_mut(at))
    }

    /// The tracks by camera id, and what was lost when reading stopped for `cut` before the
    /// end of a `file_len`-byte file.
    fn finish(mut self, cut: Option<String>, file_len: usize) -> Indexed {
        self.tracks.sort_by_key(|t| t.info.camera);
        let truncation = cut.map(|error| Truncation {
            messages_read: self.read,
            bytes_discarded: (file_len - self.last_end) as u64,
            error,
        });
        Indexed {
            tracks: self.tracks,
            first_ns: if self.first_ns == u64::MAX {
                0
            } else {
                self.first_ns
            },
            truncation,
        }
    }
}

/// A channel as its records declare it.
struct Channel {
    topic: String,
    metadata: BTreeMap<String, String>,
    encoding: String,
    schema: String,
}

impl Channel {
    /// Which image message the channel carries; anything but Foxglove's protobuf
    /// images is refused, naming what it is.
    fn image_schema(&self, path: &Path) -> Result<ImageSchema, ReplayError> {
        let schema = match (self.encoding.as_str(), self.schema.as_str()) {
            ("protobuf", "foxglove.RawImage") => ImageSchema::Raw,
            ("protobuf", "foxglove.CompressedImage") => ImageSchema::Compressed,
            (encoding, schema) => {
                return Err(ReplayError::Channel {
                    path: path.to_path_buf(),
                    topic: self.topic.clone(),
                    what: format!(
                        "{encoding} messages of schema `{schema}`; a camera channel carries \
                         protobuf foxglove.RawImage or foxglove.CompressedImage"
                    ),
                })
            }
        };
        Ok(schema)
    }
}

/// The camera a channel's metadata declares, and its calibration if one is recorded; a
/// missing or malformed key, or a size past the bound, is refused naming the channel.
fn track_info(
    path: &Path,
    topic: &str,
    meta: &BTreeMap<String, String>,
) -> Result<(SourceInfo, Option<Camera>), ReplayError> {
    let bad = |what: String| ReplayError::Channel {
        path: path.to_path_buf(),
        topic: topic.to_string(),
        what,
    };
    let get = |k: &str| {
        meta.get(k)
            .ok_or_else(|| bad(format!("no `{k}` in channel metadata")))
    };
    let num = |k: &str| -> Result<u32, ReplayError> {
        get(k)?
            .parse()
            .map_err(|_| bad(format!("`{k}` is not an integer")))
    };
    let format =
        PixelFormat::from_name(get("format")?).ok_or_else(|| bad("unknown `format`".into()))?;
    let timestamp_source = TimestampSource::from_name(get("timestamp_source")?)
        .ok_or_else(|| bad("unknown `timestamp_source`".into()))?;
    let calibration = match meta.get("calibration") {
        Some(json) => {
            Some(serde_json::from_str(json).map_err(|e| bad(format!("calibration: {e}")))?)
        }
        None => None,
    };
    let (width, height) = (num("width")?, num("height")?);
    if !(1..=MAX_CAMERA_SIDE).contains(&width) || !(1..=MAX_CAMERA_SIDE).contains(&height) {
        return Err(bad(format!(
            "a {width}x{height} camera is outside 1..={MAX_CAMERA_SIDE} pixels a side"
        )));
    }
    let info = SourceInfo {
        camera: CameraId(num("camera")?),
        name: get("name")?.clone(),
        format,
        width,
        height,
        fps: get("fps")?
            .parse()
            .map_err(|_| bad("`fps` is not a number".into()))?,
        timestamp_source,
    };
    Ok((info, calibration))
}
