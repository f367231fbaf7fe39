//! The sinks: each fitted instant as one JSON line, and the MCAP recording of
//! every frame the NPU stage takes and every result (the camera recorder's
//! layout plus a `/results` channel).
//!
//! Results index bones and keypoints, so each stream names the skeleton they
//! count in once: the JSON lines file opens with a header line
//! ([`ResultsHeader`]), and the `/results` channel carries the same record in
//! its `skeleton` metadata.

use std::collections::BTreeMap;
use std::io::Write;

use crossbeam_channel::{Receiver, Sender};
use serde::Serialize;

use crate::body::SkeletonNaming;
use crate::camera::record::{McapFileError, RecordError, Recorder};
use crate::camera::Frame;

use super::Stage;

/// One fitted instant, as written to the JSON lines file.
#[derive(Debug, Serialize)]
pub struct FrameResult<'a> {
    /// Capture time of the sync anchor, CLOCK_MONOTONIC ns.
    pub capture_ns: u64,
    pub views: Vec<ViewRecord>,
    pub fit: Option<FitRecord<'a>>,
    pub fit_error: Option<String>,
}

/// Schema name of the results stream (the JSON lines header and the MCAP channel).
pub const RESULTS_SCHEMA: &str = "hailo-edge.results/1";

/// The first line of a JSON lines file: what the lines after it are, and the
/// skeleton their bone names and keypoint indices count in.
#[derive(Debug, Serialize)]
pub struct ResultsHeader<'a> {
    pub schema: &'static str,
    pub skeleton: &'a SkeletonNaming,
}

/// One view of a result.
#[derive(Debug, Serialize)]
pub struct ViewRecord {
    pub camera: usize,
    pub sequence: u64,
    pub capture_ns: u64,
    /// The decoder's top detection keypoints, camera pixels: `[x, y, visibility, score]`.
    pub keypoints: Vec<[f32; 4]>,
    /// Per-stage latency, ms, and capture to fit.
    pub timing_ms: BTreeMap<&'static str, f64>,
}

/// The fitted body.
#[derive(Debug, Serialize)]
pub struct FitRecord<'a> {
    /// Root translation, metres.
    pub translation: [f64; 3],
    /// Rotation vectors (radians) of the fitted bones, by bone name.
    pub rotations: BTreeMap<&'a str, [f64; 3]>,
    /// 3D keypoints, metres.
    pub keypoints_3d: Vec<[f64; 3]>,
    /// Mean reprojection residual, pixels.
    pub residual_px: Option<f64>,
    /// The fit residual (RMS reprojection error back-projected at each keypoint's depth),
    /// millimetres.
    pub residual_mm: Option<f64>,
    /// `residual_mm` as a percentage of the subject's stature.
    pub residual_stature_pct: Option<f64>,
    /// MPJPE against ground truth, millimetres (synthetic cameras only).
    pub mpjpe_mm: Option<f64>,
    pub cold_start: bool,
}

/// Where the fit stage's results go: a JSON lines writer, the recorder, both
/// or neither.
#[derive(Default)]
pub struct Sinks {
    /// One line per fitted instant.
    pub jsonl: Option<Box<dyn Write + Send>>,
    /// Each result's JSON with its capture time, for the recorder.
    pub record: Option<Sender<Item>>,
}

impl Sinks {
    /// Whether any sink takes results (without one, the fit stage builds no
    /// per-view records: a frame costs its counters and latencies alone).
    pub fn any(&self) -> bool {
        self.jsonl.is_some() || self.record.is_some()
    }

    /// Writes the header line naming the skeleton; call once, before the first
    /// result.
    ///
    /// # Errors
    /// Writing the JSON lines failed.
    pub fn header(&mut self, skeleton: &SkeletonNaming) -> std::io::Result<()> {
        if let Some(w) = &mut self.jsonl {
            let header = ResultsHeader {
                schema: RESULTS_SCHEMA,
                skeleton,
            };
            serde_json::to_writer(&mut *w, &header).map_err(std::io::Error::other)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Writes `result` as one JSON line and hands it to the recorder.
    ///
    /// # Errors
    /// Writing the JSON lines failed.
    pub fn write(&mut self, result: &FrameResult<'_>) -> std::io::Result<()> {
        let line = serde_json::to_string(result).map_err(std::io::Error::other)?;
        if let Some(w) = &mut self.jsonl {
            w.write_all(line.as_bytes())?;
            w.write_all(b"\n")?;
        }
        if let Some(r) = &self.record {
            let _ = r.send(Item::Result {
                capture_ns: result.capture_ns,
                json: line,
            });
        }
        Ok(())
    }

    /// Flushes the JSON lines.
    ///
    /// # Errors
    /// Writing the JSON lines failed.
    pub fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.jsonl {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

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

/// The recorder thread: frames from the NPU stage, results from the fit stage.
pub struct Recording {
    pub recorder: Recorder,
    pub items: Receiver<Item>,
    /// The skeleton the results count in, recorded as the `/results`
    /// channel's `skeleton` metadata.
    pub skeleton: SkeletonNaming,
}

impl Stage for Recording {
    type Output = Result<Recorded, RecordError>;

    fn name(&self) -> String {
        "recorder".into()
    }

    /// Writes items until the channel closes, then finishes the file.
    ///
    /// # Errors
    /// [`RecordError`] naming the file.
    fn run(self) -> Self::Output {
        let Self {
            mut recorder,
            items,
            skeleton,
        } = self;
        let skeleton = serde_json::to_string(&skeleton).map_err(|e| McapFileError::Io {
            path: recorder.path().to_path_buf(),
            source: e.into(),
        })?;
        let metadata = BTreeMap::from([
            ("schema".to_owned(), RESULTS_SCHEMA.to_owned()),
            ("skeleton".to_owned(), skeleton),
        ]);
        let channel = recorder.add_json_channel(
            "/results",
            "hailo_edge.FrameResult",
            RESULT_SCHEMA,
            &metadata,
        )?;
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
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::{FrameResult, Item, Sinks};

    /// A writer whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_result_is_one_json_line_and_one_recorded_item() {
        let out = Shared::default();
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut sinks = Sinks {
            jsonl: Some(Box::new(out.clone())),
            record: Some(tx),
        };
        assert!(sinks.any());
        let result = FrameResult {
            capture_ns: 42,
            views: Vec::new(),
            fit: None,
            fit_error: Some("too few views".into()),
        };
        sinks.write(&result).unwrap();
        sinks.flush().unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "{\"capture_ns\":42,\"views\":[],\"fit\":null,\"fit_error\":\"too few views\"}\n"
        );
        match rx.try_recv().unwrap() {
            Item::Result { capture_ns, json } => {
                assert_eq!(capture_ns, 42);
                assert_eq!(format!("{json}\n"), text);
            }
            Item::Frame(_) => panic!("a result was recorded as a frame"),
        }
        assert!(!Sinks::default().any());
    }

    #[test]
    fn the_header_line_names_the_skeleton_once() {
        let out = Shared::default();
        let mut sinks = Sinks {
            jsonl: Some(Box::new(out.clone())),
            record: None,
        };
        let naming = crate::body::Model::embedded().unwrap().naming();
        sinks.header(&naming).unwrap();
        let result = FrameResult {
            capture_ns: 1,
            views: Vec::new(),
            fit: None,
            fit_error: None,
        };
        sinks.write(&result).unwrap();
        sinks.write(&result).unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        let skeleton = &lines[0]["skeleton"];
        assert_eq!(lines[0]["schema"], super::RESULTS_SCHEMA);
        assert_eq!(skeleton["rig"], "anny");
        assert_eq!(skeleton["topology"], "anny");
        assert_eq!(skeleton["version"], "0.6.2");
        assert_eq!(skeleton["bones"].as_array().unwrap().len(), 104);
        assert_eq!(skeleton["keypoints"][0], "nose");
        // Once per file: the result lines carry no skeleton.
        assert!(lines[1..].iter().all(|l| l.get("skeleton").is_none()));
    }
}
