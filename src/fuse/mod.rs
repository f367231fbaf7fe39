//! `hailo-edge fuse`: one body from the views of several boxes.
//!
//! Each box runs `hailo-edge run --publish zenoh` and puts every view's keypoints with its
//! camera's calibration (`hailo-edge/NAME/view/camN`, [`crate::publish::zenoh`]). `fuse`
//! subscribes to them, takes in each box's cameras once their calibrations prove to share
//! one world frame ([`boxes`]), groups the views of all boxes by wall-clock capture time
//! ([`instants`]) and fits one body to every instant over all their cameras ([`solve`]).
//!
//! The boxes' clocks must be synchronised (PTP or chrony; `docs/fuse.md`): views are grouped
//! by their wall-clock stamps, and each box's clock is compared with this host's on every
//! message. A box silent past a limit is fused without, counted, and taken in again when it
//! is heard; a box whose clock is off past the tolerance is reported and not fused until it
//! is back within.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ::zenoh::Wait;

use crate::body::Model;
use crate::camera::Stop;
use crate::geom::time::{monotonic_ns, thread_cpu_ns, WallClock};
use crate::metrics::stats::{ValueStats, ValueSummary};
use crate::output::{self, AtomicFile, OutputSet};
use crate::publish::zenoh::{open_session, Endpoint, Message, PREFIX};
use crate::scene::{BodyRig, BodyScene};

pub mod boxes;
pub mod instants;
mod report;
pub mod solve;
#[cfg(test)]
mod tests;

pub use boxes::{Boxes, Presence, Refusal, RigStats};
pub use instants::{Instant, Instants, Pushed, SlotView};
pub use report::{Accuracy, FuseReport, FusedLine, RigReport};

/// Views received and not yet taken in, at most: past this the fusing thread is behind by
/// seconds, and further views are dropped (counted).
const ARRIVALS: usize = 4096;

/// One sample as it arrived (Zenoh's buffer, not a copy), with when.
struct Arrival {
    sample: ::zenoh::sample::Sample,
    now_ns: u64,
    wall_ns: u64,
}

/// Schema of the fuse report.
pub const REPORT_SCHEMA: &str = "hailo-edge.fuse-report/1";

/// How `fuse` runs.
#[derive(Debug, Clone)]
pub struct FuseOptions {
    /// Endpoints of the boxes (`tcp/HOST:PORT`, each box's `--publish zenoh:ENDPOINT`);
    /// empty: Zenoh's scouting finds them.
    pub connect: Vec<String>,
    /// The rigs to fuse, by name; empty: every rig heard.
    pub rigs: Vec<String>,
    /// Stop by itself after this long.
    pub duration: Option<Duration>,
    /// Views at most this far apart in capture time are one instant.
    pub window: Duration,
    /// Longest an instant waits for the views of every box.
    pub wait: Duration,
    /// A box silent this long is fused without until heard again.
    pub absent_after: Duration,
    /// Clock skew past which a box is reported and not fused.
    pub max_skew: Duration,
    /// Score each fit against the synthetic subject of `run`'s demo with this seed, and fit
    /// each box alone to compare (synthetic boxes on `--scene-clock wall` only).
    pub truth_seed: Option<u64>,
    /// One JSON line per fused instant.
    pub jsonl: Option<PathBuf>,
    /// The report.
    pub report: Option<PathBuf>,
    /// Replace existing output files.
    pub overwrite: bool,
}

impl Default for FuseOptions {
    fn default() -> Self {
        Self {
            connect: Vec::new(),
            rigs: Vec::new(),
            duration: None,
            window: Duration::from_millis(4),
            wait: Duration::from_millis(300),
            absent_after: Duration::from_secs(1),
            max_skew: Duration::from_millis(2),
            truth_seed: None,
            jsonl: None,
            report: None,
            overwrite: false,
        }
    }
}

/// Why `fuse` could not run.
#[derive(Debug, thiserror::Error)]
pub enum FuseError {
    #[error(transparent)]
    Zenoh(#[from] crate::publish::zenoh::ZenohError),
    #[error("the body model: {0}")]
    Body(String),
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    #[error("{path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// Runs until `stop` is requested or the duration is over, then reports.
///
/// # Errors
/// [`FuseError`] when the session, the body model or an output cannot be opened, or an
/// output cannot be written.
pub fn run(options: &FuseOptions, stop: &Stop) -> Result<FuseReport, FuseError> {
    let Outputs {
        mut jsonl,
        report_file,
    } = open_outputs(options)?;
    let model = Model::embedded().map_err(|e| FuseError::Body(e.to_string()))?;
    let body = Arc::new(BodyRig::anny(model, true).map_err(|e| FuseError::Body(e.to_string()))?);
    let truth = options
        .truth_seed
        .map(|seed| BodyScene::demo(Arc::clone(&body), seed));
    let session = open_session(
        if options.connect.is_empty() {
            Endpoint::Default
        } else {
            Endpoint::ConnectAll(&options.connect)
        },
        options.connect.is_empty(),
    )?;
    let arrivals = Arrivals::subscribe(&session)?;
    let mut fuse = Fuser::new(options, body, truth);
    let t0 = std::time::Instant::now();
    let cpu0 = thread_cpu_ns();
    let mut last_tick = monotonic_ns();
    loop {
        if stop.is_requested() || options.duration.is_some_and(|d| t0.elapsed() >= d) {
            break;
        }
        if let Ok(a) = arrivals.rx.recv_timeout(Duration::from_millis(10)) {
            let key = a.sample.key_expr().as_str();
            fuse.receive(key, &a.sample.payload().to_bytes(), a.now_ns, a.wall_ns);
        }
        let now = monotonic_ns();
        fuse.boxes.tick(now, (now - last_tick) as f64 * 1e-9);
        last_tick = now;
        for line in fuse.ready(now) {
            write_line(&mut jsonl, &line, options)?;
        }
    }
    for line in fuse.finish() {
        write_line(&mut jsonl, &line, options)?;
    }
    if let Some(out) = &mut jsonl {
        out.flush().map_err(|source| FuseError::Write {
            path: shown(&options.jsonl),
            source,
        })?;
    }
    let mut report = fuse.report(t0.elapsed().as_secs_f64(), thread_cpu_ns() - cpu0);
    report.overflow = arrivals.overflow.load(Ordering::Relaxed);
    if report.overflow > 0 {
        log::warn!(
            "{} views arrived while {ARRIVALS} waited to be fused, and were dropped",
            report.overflow
        );
    }
    if let Some(file) = report_file {
        let text = serde_json::to_string_pretty(&report).map_err(std::io::Error::other);
        let text = text.map_err(|source| FuseError::Write {
            path: shown(&options.report),
            source,
        })?;
        file.commit(text.as_bytes())?;
    }
    Ok(report)
}

/// The JSON lines and the report file, checked together ([`OutputSet::check`]: not one path
/// twice, no existing file without `overwrite`) and opened before anything slow starts.
fn open_outputs(options: &FuseOptions) -> Result<Outputs, FuseError> {
    let mut outputs = OutputSet {
        overwrite: options.overwrite,
        ..OutputSet::default()
    };
    for (what, path, stdout_ok) in [
        ("jsonl", &options.jsonl, true),
        ("report", &options.report, false),
    ] {
        if let Some(path) = path {
            outputs.outputs.push(output::Output {
                what,
                path,
                stdout_ok,
            });
        }
    }
    outputs.check()?;
    let jsonl = match &options.jsonl {
        Some(p) => Some(output::lines("jsonl", p, options.overwrite)?),
        None => None,
    };
    let report_file = match &options.report {
        Some(p) => Some(AtomicFile::prepare("report", p, options.overwrite)?),
        None => None,
    };
    Ok(Outputs { jsonl, report_file })
}

/// Where a fuse run writes.
struct Outputs {
    /// One JSON line per fused instant.
    jsonl: Option<Box<dyn Write + Send>>,
    /// The report, committed at the end.
    report_file: Option<AtomicFile>,
}

/// The views the boxes publish, as they arrive: each sample is stamped as Zenoh hands it
/// over, not when the fits leave time to take it, since the arrival times are what the
/// clock comparison and the absence limit measure.
struct Arrivals {
    rx: crossbeam_channel::Receiver<Arrival>,
    /// Views dropped because [`ARRIVALS`] were already waiting.
    overflow: Arc<AtomicU64>,
    /// Undeclared when dropped.
    _subscriber: ::zenoh::pubsub::Subscriber<()>,
}

impl Arrivals {
    fn subscribe(session: &::zenoh::Session) -> Result<Self, FuseError> {
        let key = format!("{PREFIX}/*/view/*");
        let (tx, rx) = crossbeam_channel::bounded::<Arrival>(ARRIVALS);
        let overflow = Arc::new(AtomicU64::new(0));
        let full = Arc::clone(&overflow);
        let wall = WallClock::now();
        let subscriber = session
            .declare_subscriber(key.clone())
            .callback(move |sample| {
                let now = monotonic_ns();
                let arrival = Arrival {
                    sample,
                    now_ns: now,
                    wall_ns: wall.wall_ns(now),
                };
                if tx.try_send(arrival).is_err() {
                    full.fetch_add(1, Ordering::Relaxed);
                }
            })
            .wait()
            .map_err(|e| crate::publish::zenoh::ZenohError {
                endpoint: None,
                what: format!("subscribing to {key}: {e}"),
            })?;
        Ok(Self {
            rx,
            overflow,
            _subscriber: subscriber,
        })
    }
}

/// An output's path for a message.
fn shown(path: &Option<PathBuf>) -> String {
    path.as_deref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

fn write_line(
    out: &mut Option<Box<dyn Write + Send>>,
    line: &FusedLine,
    options: &FuseOptions,
) -> Result<(), FuseError> {
    let Some(out) = out else { return Ok(()) };
    let text = serde_json::to_string(line).map_err(std::io::Error::other);
    text.and_then(|t| writeln!(out, "{t}"))
        .map_err(|source| FuseError::Write {
            path: shown(&options.jsonl),
            source,
        })
}

/// The state of a fuse run, fed message by message (what [`run`] drives, and tests drive
/// without a network).
pub struct Fuser {
    pub boxes: Boxes,
    instants: Instants,
    solver: solve::Solver,
    rigs: Vec<String>,
    /// Longest an instant waits, ns.
    wait_ns: u64,
    truth: bool,
    malformed: u64,
    late: u64,
    duplicates: u64,
    fused: u64,
    fit_errors: u64,
    views_fused: u64,
    latency_ms: ValueStats,
    accuracy: report::AccuracySums,
}

impl Fuser {
    /// A fuser with `options`' limits over `body`, scored against `truth` when given.
    pub fn new(options: &FuseOptions, body: Arc<BodyRig>, truth: Option<BodyScene>) -> Self {
        Self {
            boxes: Boxes::new(
                options.max_skew.as_nanos() as u64,
                options.absent_after.as_nanos() as u64,
            ),
            instants: Instants::new(
                options.window.as_nanos() as u64,
                options.wait.as_nanos() as u64,
            ),
            truth: truth.is_some(),
            solver: solve::Solver::new(body, truth),
            rigs: options.rigs.clone(),
            wait_ns: options.wait.as_nanos() as u64,
            malformed: 0,
            late: 0,
            duplicates: 0,
            fused: 0,
            fit_errors: 0,
            views_fused: 0,
            latency_ms: ValueStats::default(),
            accuracy: report::AccuracySums::default(),
        }
    }

    /// Takes one payload received on `key` at `now_ns` (monotonic) and `now_wall_ns`; a
    /// payload that is not a view is counted and skipped with a line naming its key.
    pub fn receive(&mut self, key: &str, payload: &[u8], now_ns: u64, now_wall_ns: u64) {
        let view = match Message::decode(key, payload) {
            Ok(Message::View(v)) => v,
            Ok(_) => return,
            Err(e) => {
                self.malformed += 1;
                log::warn!("{e}; skipped");
                return;
            }
        };
        // The key names the rig: a payload cannot speak for another.
        let rig = key.split('/').nth(1).unwrap_or_default();
        if !self.rigs.is_empty() && !self.rigs.iter().any(|r| r == rig) {
            return;
        }
        let delay = i128::from(now_wall_ns) - i128::from(view.sent_wall_ns);
        let delay = delay.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        let admitted = self
            .boxes
            .admit(rig, view.camera, &view.calibration, now_ns, delay);
        let slot = match admitted {
            boxes::Admission::Slot(slot) => slot,
            boxes::Admission::NotFused => return,
            boxes::Admission::Refused(b) => {
                let slots: Vec<usize> = self.boxes.boxes[b]
                    .cameras
                    .values()
                    .map(|&(s, _)| s)
                    .collect();
                let taken = self.instants.forget(&slots);
                self.boxes.boxes[b].stats.not_fused += taken;
                return;
            }
        };
        let pushed = self.instants.push(
            SlotView {
                slot,
                wall_ns: view.wall_ns,
                keypoints: view.keypoints.into_owned(),
            },
            now_ns,
        );
        let b = self.boxes.slots[slot].0;
        match pushed {
            Pushed::Waiting => {}
            // Its instant left before the box was taken in: it was not awaited.
            Pushed::Late
                if now_ns.saturating_sub(self.boxes.boxes[b].fused_since_ns) < self.wait_ns =>
            {
                self.boxes.boxes[b].stats.not_fused += 1;
            }
            Pushed::Late => {
                self.late += 1;
                self.boxes.boxes[b].stats.late += 1;
            }
            Pushed::Duplicate => {
                self.duplicates += 1;
                self.boxes.boxes[b].stats.not_fused += 1;
            }
        }
    }

    /// Fuses the instants ready at `now_ns`.
    pub fn ready(&mut self, now_ns: u64) -> Vec<FusedLine> {
        let expected = self.boxes.expected();
        let ready = self.instants.ready(now_ns, Some(&expected));
        ready.into_iter().map(|i| self.fuse(&i, now_ns)).collect()
    }

    /// Fuses everything still waiting.
    pub fn finish(&mut self) -> Vec<FusedLine> {
        let now = monotonic_ns();
        let rest = self.instants.finish();
        rest.into_iter().map(|i| self.fuse(&i, now)).collect()
    }

    fn fuse(&mut self, instant: &Instant, now_ns: u64) -> FusedLine {
        let solved = self.solver.solve(instant, &self.boxes);
        self.fused += 1;
        self.views_fused += instant.views.len() as u64;
        for v in &instant.views {
            let b = self.boxes.slots[v.slot].0;
            self.boxes.boxes[b].stats.fused += 1;
        }
        self.boxes.count_missed();
        let rig_of = |slot: usize| self.boxes.slots[slot].0;
        self.latency_ms
            .record(now_ns.saturating_sub(instant.first_arrival_ns) as f64 / 1e6);
        let rigs = &solved.rigs;
        // Shared: every box fused now gave at least two views, so each can be fitted alone
        // on the same instant.
        let fused_boxes = self.boxes.boxes.iter().filter(|b| b.fused()).count();
        let shared = rigs.len() > 1
            && rigs.len() >= fused_boxes
            && solved.by_rig_mpjpe_m.len() == rigs.len()
            && rigs
                .iter()
                .all(|&r| instant.views.iter().filter(|v| rig_of(v.slot) == r).count() >= 2);
        if let (true, Some(m)) = (shared, solved.mpjpe_m) {
            self.accuracy.add(m, &solved.by_rig_mpjpe_m);
        }
        if let Some(m) = solved.mpjpe_m {
            self.accuracy.add_any(m);
        }
        let names = |r: &usize| self.boxes.boxes[*r].name.clone();
        let (fit, fit_error) = match solved.fit {
            Ok(out) => (Some(out), None),
            Err(e) => {
                self.fit_errors += 1;
                (None, Some(e.to_string()))
            }
        };
        FusedLine {
            wall_ns: instant.wall_ns,
            views: instant.views.len(),
            rigs: rigs.iter().map(names).collect(),
            translation: fit.as_ref().map(|f| f.pose.translation.into()),
            keypoints_3d: fit
                .as_ref()
                .map(|f| f.keypoints.iter().map(|p| [p.x, p.y, p.z]).collect()),
            residual_mm: fit.as_ref().and_then(|f| f.residual_m).map(|m| m * 1e3),
            mpjpe_mm: solved.mpjpe_m.map(|m| m * 1e3),
            by_rig_mpjpe_mm: solved
                .by_rig_mpjpe_m
                .iter()
                .map(|(r, m)| (names(r), m * 1e3))
                .collect(),
            fit_error,
        }
    }

    /// The report after `seconds` of running, `cpu_ns` of the fusing thread's CPU.
    pub fn report(&self, seconds: f64, cpu_ns: u64) -> FuseReport {
        let latency: Option<ValueSummary> = self.latency_ms.summary();
        FuseReport {
            schema: REPORT_SCHEMA,
            seconds,
            rigs: self
                .boxes
                .boxes
                .iter()
                .map(|b| RigReport {
                    name: b.name.clone(),
                    presence: b.presence.clone(),
                    refused: b.refusal.clone(),
                    cameras: b.cameras.len(),
                    stats: b.stats.clone(),
                })
                .collect(),
            instants: self.fused,
            instants_per_s: self.fused as f64 / seconds.max(1e-9),
            views_fused: self.views_fused,
            fit_errors: self.fit_errors,
            late: self.late,
            duplicates: self.duplicates,
            malformed: self.malformed,
            overflow: 0,
            latency_ms: latency,
            cpu_ms_per_instant: (self.fused > 0).then(|| cpu_ns as f64 / 1e6 / self.fused as f64),
            accuracy: self
                .truth
                .then(|| self.accuracy.summary(|r| self.boxes.boxes[r].name.clone())),
        }
    }
}
