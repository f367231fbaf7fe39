//! Recording a run: every frame the NPU stage takes, and every result, into
//! one MCAP file (the camera recorder's layout plus a `/results` channel).

use crossbeam_channel::Receiver;

use crate::camera::record::{RecordError, Recorder};
use crate::camera::Frame;

/// Something to record.
#[derive(Debug)]
pub enum Item {
    /// A captured frame, as the camera delivered it.
    Frame(Frame),
    /// One result line (JSON) and the capture time it belongs to.
    Result { capture_ns: u64, json: String },
}

/// The JSON schema of the `/results` channel (loose: the JSON lines format).
const RESULT_SCHEMA: &str = r#"{"type":"object","title":"hailo_edge.FrameResult","properties":{"capture_ns":{"type":"integer"},"views":{"type":"array"},"fit":{"type":["object","null"]},"fit_error":{"type":["string","null"]}}}"#;

/// Counts of what was recorded.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Recorded {
    pub frames: u64,
    pub results: u64,
}

/// Writes items until the channel closes, then finishes the file.
///
/// # Errors
/// [`RecordError`] naming the file.
pub fn run(mut recorder: Recorder, items: Receiver<Item>) -> Result<Recorded, RecordError> {
    let channel = recorder.add_json_channel("/results", "hailo_edge.FrameResult", RESULT_SCHEMA)?;
    let mut results = 0u64;
    while let Ok(item) = items.recv() {
        match item {
            Item::Frame(frame) => recorder.write(&frame)?,
            Item::Result { capture_ns, json } => {
                recorder.write_json(channel, results as u32, capture_ns, json.as_bytes())?;
                results += 1;
            }
        }
    }
    let frames = recorder.finish()?;
    Ok(Recorded { frames, results })
}
