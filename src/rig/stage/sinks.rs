//! The sinks: each fitted instant as one JSON line, the MCAP recording of
//! every frame the NPU stage takes (or every captured frame) and every result
//! (the camera recorder's layout plus Foxglove's keypoint, body and camera-pose
//! channels and a `/results` channel), and the live Foxglove server.
//!
//! Results index bones and keypoints, so each stream names the skeleton they
//! count in once: the JSON lines file opens with a header line
//! ([`ResultsHeader`]), and the `/results` channel carries the same record in
//! its `skeleton` metadata.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde::Serialize;

use crate::body::SkeletonNaming;
use crate::camera::record::{McapFileError, RecordError, Recorder};
use crate::camera::{Frame, Stop};
use crate::geom::Camera;
use crate::publish::foxglove_ws::FoxgloveServer;
use crate::publish::zenoh::ZenohPublisher;
use crate::rig::config::RecordFrames;

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
    /// The keypoints the fit used, camera pixels `[x, y, visibility, score]`: the
    /// decoder's top detection, or with `body.keypoints = "ground_truth"` the synthetic
    /// truth with its noise, in the skeleton's keypoint order (visibility 0: not seen).
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

/// An output that failed during the run: it ended there, the others went on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SinkFailure {
    /// `jsonl` or `record`.
    pub sink: &'static str,
    /// Its file (`-` for standard output).
    pub path: String,
    pub error: String,
    /// Items that reached the sink after it failed, not written.
    pub items_lost: u64,
}

/// The failures of a run's sinks, shared by the threads that write them.
#[derive(Debug, Clone, Default)]
pub struct SinkFailures(Arc<Mutex<Vec<SinkFailure>>>);

impl SinkFailures {
    /// Records that `sink` at `path` failed with `error`, losing `lost` items.
    pub fn push(&self, sink: &'static str, path: &Path, error: &dyn std::fmt::Display, lost: u64) {
        log::error!(
            "{sink} {}: {error}; that output ends, the run goes on",
            path.display()
        );
        self.lock().push(SinkFailure {
            sink,
            path: path.display().to_string(),
            error: error.to_string(),
            items_lost: lost,
        });
    }

    /// Counts one more item `sink` could not write.
    fn lost(&self, sink: &str) {
        if let Some(f) = self.lock().iter_mut().find(|f| f.sink == sink) {
            f.items_lost += 1;
        }
    }

    /// The failures so far.
    pub fn list(&self) -> Vec<SinkFailure> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SinkFailure>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where the fit stage's results go: a JSON lines writer, the recorder, both
/// or neither. A JSON lines writer that fails ends there (counted in
/// `failures`); the results still go to the recorder.
#[derive(Default)]
pub struct Sinks {
    /// One line per fitted instant.
    pub jsonl: Option<Box<dyn Write + Send>>,
    /// The JSON lines file, for messages (`-`: standard output).
    pub jsonl_path: PathBuf,
    /// Each result's JSON with its capture time, for the recorder.
    pub record: Option<Sender<Item>>,
    /// The live Foxglove server, when one runs.
    pub foxglove: Option<Arc<FoxgloveServer>>,
    /// The Zenoh publisher, when bodies are published.
    pub zenoh: Option<Arc<ZenohPublisher>>,
    /// Where a failed output is recorded.
    pub failures: SinkFailures,
    /// Live viewers, when anyone watches (never waits).
    pub live: Option<super::live::LiveTap>,
}

impl Sinks {
    /// Whether any sink takes results (without one, the fit stage builds no
    /// per-view records: a frame costs its counters and latencies alone).
    pub fn any(&self) -> bool {
        self.jsonl.is_some()
            || self.record.is_some()
            || self.foxglove.is_some()
            || self.zenoh.is_some()
            || self
                .live
                .as_ref()
                .is_some_and(super::live::LiveTap::watched)
    }

    /// Runs `write` on the JSON lines writer; a failure ends that sink.
    /// `items` is what the write carries (a line: 1, a flush: 0), counted as
    /// lost when the sink has failed.
    fn on_jsonl(&mut self, items: u64, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
        let Some(w) = &mut self.jsonl else {
            if items > 0 && self.jsonl_failed() {
                self.failures.lost("jsonl");
            }
            return;
        };
        if let Err(e) = write(w.as_mut()) {
            self.failures.push("jsonl", &self.jsonl_path, &e, items);
            self.jsonl = None;
        }
    }

    fn jsonl_failed(&self) -> bool {
        self.failures.lock().iter().any(|f| f.sink == "jsonl")
    }

    /// Writes the header line naming the skeleton; call once, before the first
    /// result.
    ///
    /// # Errors
    /// The skeleton could not be serialised.
    pub fn header(&mut self, skeleton: &SkeletonNaming) -> std::io::Result<()> {
        let header = ResultsHeader {
            schema: RESULTS_SCHEMA,
            skeleton,
        };
        let line = serde_json::to_string(&header).map_err(std::io::Error::other)?;
        self.on_jsonl(1, |w| writeln!(w, "{line}"));
        Ok(())
    }

    /// Writes `result` as one JSON line and hands it to the recorder.
    ///
    /// # Errors
    /// The result could not be serialised.
    pub fn write(&mut self, result: &FrameResult<'_>) -> std::io::Result<()> {
        if let Some(tap) = &self.live {
            tap.offer_result(result);
        }
        if let Some(fox) = &self.foxglove {
            for v in &result.views {
                fox.keypoints(v.camera, v.capture_ns, &v.keypoints);
            }
            if let Some(fit) = &result.fit {
                fox.body(result.capture_ns, &fit.keypoints_3d, fit.residual_mm);
            }
        }
        if let Some(z) = &self.zenoh {
            for v in &result.views {
                z.view(v.camera, v.sequence, v.capture_ns, &v.keypoints);
            }
            if let Some(fit) = &result.fit {
                z.body(
                    result.capture_ns,
                    fit.translation,
                    fit.rotations.iter().map(|(k, v)| (*k, *v)),
                    &fit.keypoints_3d,
                    (fit.residual_mm, fit.residual_px),
                );
            }
        }
        if self.jsonl.is_none() && self.record.is_none() {
            return Ok(());
        }
        let line = serde_json::to_string(result).map_err(std::io::Error::other)?;
        self.on_jsonl(1, |w| writeln!(w, "{line}"));
        if let Some(r) = &self.record {
            let _ = r.send(Item::Result(ResultItem::of(result, line)));
        }
        Ok(())
    }

    /// Flushes the JSON lines (a failure ends that sink, as a write's does).
    ///
    /// # Errors
    /// None: failures are recorded in `failures`.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.on_jsonl(0, |w| w.flush());
        Ok(())
    }
}

/// Something to record.
#[derive(Debug)]
pub enum Item {
    /// A captured frame, as the camera delivered it.
    Frame(Frame),
    /// One result.
    Result(ResultItem),
}

/// One result as the recorder takes it: its JSON line and what the Foxglove
/// channels draw.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultItem {
    /// Capture time of the sync anchor, CLOCK_MONOTONIC ns.
    pub capture_ns: u64,
    pub json: String,
    /// Per view: camera index, capture time, keypoints `[x, y, visibility, score]`.
    pub views: Vec<(usize, u64, Vec<[f32; 4]>)>,
    /// The fitted 3D keypoints (metres) and the residual (mm), when the fit ran.
    pub body: Option<(Vec<[f64; 3]>, Option<f64>)>,
}

impl ResultItem {
    fn of(result: &FrameResult<'_>, json: String) -> Self {
        Self {
            capture_ns: result.capture_ns,
            json,
            views: result
                .views
                .iter()
                .map(|v| (v.camera, v.capture_ns, v.keypoints.clone()))
                .collect(),
            body: result
                .fit
                .as_ref()
                .map(|f| (f.keypoints_3d.clone(), f.residual_mm)),
        }
    }
}

/// The JSON schema of the `/results` channel (loose: the JSON lines format).
const RESULT_SCHEMA: &str = r#"{"type":"object","title":"hailo_edge.FrameResult","properties":{"capture_ns":{"type":"integer"},"views":{"type":"array"},"fit":{"type":["object","null"]},"fit_error":{"type":["string","null"]}}}"#;

/// Counts of what was recorded.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Recorded {
    /// Which frames were recorded (`admitted` or `all`).
    pub which_frames: RecordFrames,
    pub frames: u64,
    pub results: u64,
    /// Captured frames the recorder could not take in time (recording every
    /// captured frame only; the NPU stage's frames wait for it instead).
    pub frames_not_recorded: u64,
}

/// The recorder thread: frames from the NPU stage, results from the fit stage.
///
/// The file is finished (summary and footer) when the items end, or when
/// `abandon` is requested because the drain ran out of time; a write that
/// fails ends the recording there, counted in `failures`, and the items
/// after it are taken and counted so the stages sending them go on.
pub struct Recording {
    pub recorder: Recorder,
    pub items: Receiver<Item>,
    /// The skeleton the results count in, recorded as the `/results`
    /// channel's `skeleton` metadata.
    pub skeleton: SkeletonNaming,
    /// Every camera's frame id (`camN`) and calibration, for the `/tf` channel.
    pub cameras: Vec<(String, Camera)>,
    /// Which frames reach the recorder.
    pub which_frames: RecordFrames,
    /// Captured frames that did not reach the recorder, counted by the capture
    /// threads when recording every captured frame.
    pub not_recorded: Arc<std::sync::atomic::AtomicU64>,
    /// Finish with what has arrived, without waiting for the senders.
    pub abandon: Stop,
    pub failures: SinkFailures,
}

/// How often the recorder looks at `abandon` while no item arrives.
const ABANDON_POLL: Duration = Duration::from_millis(20);

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
            cameras,
            which_frames,
            not_recorded,
            abandon,
            failures,
        } = self;
        let mut scene =
            super::record::SceneChannels::add(&mut recorder, cameras, &skeleton.keypoints)?;
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
        let mut failed = false;
        loop {
            let item = match items.recv_timeout(ABANDON_POLL) {
                Ok(item) => item,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) if !abandon.is_requested() => {
                    continue
                }
                Err(_) => break,
            };
            if failed {
                failures.lost("record");
                continue;
            }
            let written = match item {
                Item::Frame(frame) => recorder.write(&frame),
                Item::Result(r) => scene.write(&mut recorder, &r).and_then(|()| {
                    recorder
                        .write_json(channel, results as u32, r.capture_ns, r.json.as_bytes())
                        .map(|()| results += 1)
                }),
            };
            if let Err(e) = written {
                failures.push("record", recorder.path(), &e, 1);
                failed = true;
            }
        }
        let recorded = |frames| Recorded {
            which_frames,
            frames,
            results,
            frames_not_recorded: not_recorded.load(std::sync::atomic::Ordering::Relaxed),
        };
        if failed {
            let frames = recorder.frames();
            drop(recorder);
            return Ok(recorded(frames));
        }
        let path = recorder.path().to_path_buf();
        let frames = recorder.frames();
        match recorder.finish() {
            Ok(frames) => Ok(recorded(frames)),
            Err(e) => {
                failures.push("record", &path, &e, 0);
                Ok(recorded(frames))
            }
        }
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
            ..Sinks::default()
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
            Item::Result(r) => {
                assert_eq!(r.capture_ns, 42);
                assert_eq!(format!("{}\n", r.json), text);
            }
            Item::Frame(_) => panic!("a result was recorded as a frame"),
        }
        assert!(!Sinks::default().any());
    }

    /// A disk that fills after `room` bytes.
    struct FillsUp {
        room: usize,
    }

    impl Write for FillsUp {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if buf.len() > self.room {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            self.room -= buf.len();
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_full_disk_ends_the_json_lines_and_the_recorder_still_gets_every_result() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut sinks = Sinks {
            jsonl: Some(Box::new(FillsUp { room: 100 })),
            jsonl_path: "/mnt/full/run.jsonl".into(),
            record: Some(tx),
            ..Sinks::default()
        };
        let result = FrameResult {
            capture_ns: 7,
            views: Vec::new(),
            fit: None,
            fit_error: None,
        };
        for _ in 0..5 {
            sinks.write(&result).unwrap();
        }
        sinks.flush().unwrap();
        assert_eq!(rx.try_iter().count(), 5);
        let failures = sinks.failures.list();
        assert_eq!(failures.len(), 1, "{failures:?}");
        let f = &failures[0];
        assert_eq!((f.sink, f.path.as_str()), ("jsonl", "/mnt/full/run.jsonl"));
        assert!(f.error.contains("No space left"), "{}", f.error);
        // One line fits in 100 bytes; the second failed and three came after it.
        assert_eq!(f.items_lost, 4);
        // A writer with room records no failure.
        let mut roomy = Sinks {
            jsonl: Some(Box::new(FillsUp { room: 10_000 })),
            ..Sinks::default()
        };
        roomy.write(&result).unwrap();
        assert!(roomy.failures.list().is_empty());
    }

    #[test]
    fn the_header_line_names_the_skeleton_once() {
        let out = Shared::default();
        let mut sinks = Sinks {
            jsonl: Some(Box::new(out.clone())),
            ..Sinks::default()
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
