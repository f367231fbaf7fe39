//! The final report of a run: what ran, frame accounting per camera, device
//! and pipeline rates, switching, per-stage latency, fit quality, host CPU per
//! stage and, when the machine cannot keep up, which stage is the bottleneck
//! and by how much. Every figure says whether it was measured or modelled.
//!
//! | part | module |
//! |---|---|
//! | the JSON sections | [`schema`] |
//! | frames per camera, device rates per graph, switching | [`rates`] |
//! | host CPU per stage and memory | [`host_cost`] |
//! | whether the machine keeps up, and the latency floor | [`verdict`] |
//! | what ran, and notes on how to read the figures | [`what_ran`] |

pub mod host_cost;
pub mod rates;
pub mod schema;
pub mod verdict;
pub mod what_ran;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::camera::SourceInfo;
use crate::metrics::figure::Assumption;
use crate::metrics::stats::LatencySummary;
use crate::npu::Device;
use crate::rig::stage::capture::CameraStatus;

use super::config::RigConfig;
use super::run::RunOptions;
use super::stage::sinks::{Recorded, SinkFailure};
use super::stats::{LiveStats, END_TO_END};
use schema::{CameraReport, FitReport, GraphReport, HostReport, SwitchReport, Verdict, WhatRan};

/// Everything the report is made from.
pub struct RunFacts<'a> {
    pub origin: String,
    pub rig: &'a RigConfig,
    pub device: &'a Device,
    pub infos: &'a [SourceInfo],
    /// Per graph: which HEF output fed which decoder input.
    pub pairings: &'a [crate::decode::Pairing],
    /// Per graph: the decoder ONNX that ran.
    pub decoders: &'a [crate::rig::decoders::DecoderChoice],
    pub camera_status: &'a [Arc<CameraStatus>],
    pub stats: &'a LiveStats,
    pub run_time: Duration,
    pub drain_time: Duration,
    pub process_cpu_ns: u64,
    pub rss_samples: Vec<(f64, u64)>,
    pub model: &'static str,
    pub options: &'a RunOptions,
    pub recorded: Option<Recorded>,
    /// The live Foxglove server, when one ran.
    pub foxglove: Option<crate::publish::foxglove_ws::FoxgloveReport>,
    /// The Zenoh publisher, when one ran.
    pub zenoh: Option<crate::publish::zenoh::ZenohReport>,
    /// The subject's stature, metres, that fit residuals are a share of.
    pub stature_m: Option<f64>,
    /// Per camera: millimetres per feature cell at the subject, from the calibration.
    pub framing: Option<Vec<crate::camera::calib::framing::Framing>>,
    /// Whether the drain ended in time.
    pub drain: DrainReport,
    /// Outputs that failed during the run.
    pub sink_failures: Vec<SinkFailure>,
}

/// The drain after the stop: whether every stage ended within its timeout,
/// and if not, which were still running and how many frames were in flight.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DrainReport {
    pub completed: bool,
    pub timeout_s: f64,
    /// Stage threads still running when the timeout passed.
    pub waiting_for: Vec<String>,
    /// Frames captured and neither processed nor dropped, over all cameras.
    pub frames_in_flight: u64,
}

/// The final report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub what_ran: WhatRan,
    pub duration_s: f64,
    pub drain_s: f64,
    pub drain: DrainReport,
    pub cameras: Vec<CameraReport>,
    pub accounting_ok: bool,
    pub graphs: Vec<GraphReport>,
    pub switching: SwitchReport,
    /// Per-stage latency and capture to fitted body (`end_to_end`), ms.
    pub latency_ms: BTreeMap<String, LatencySummary>,
    pub latency_note: String,
    pub fit: FitReport,
    /// Per camera: the millimetres one feature cell spans at the subject's distance,
    /// modelled from the calibration (docs/calibration.md#framing-precision); absent when
    /// there is no subject point.
    pub framing: Option<Vec<crate::camera::calib::framing::Framing>>,
    pub host: HostReport,
    pub verdict: Verdict,
    pub recorded: Option<Recorded>,
    /// The live Foxglove server, when one ran.
    pub foxglove: Option<crate::publish::foxglove_ws::FoxgloveReport>,
    /// The Zenoh publisher, when one ran.
    pub zenoh: Option<crate::publish::zenoh::ZenohReport>,
    /// Outputs that failed during the run (each ended there; the others went on).
    pub output_failures: Vec<SinkFailure>,
    /// Why the run stopped early for a device that is gone, when it did
    /// (docs/faults.md#recovery): `run` then exits with status 5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_lost: Option<String>,
    /// Live viewers (`run --serve`): clients served, and what slow ones lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serve: Option<crate::rig::stage::live::LiveReport>,
}

impl Report {
    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// End-to-end latency summary, when any frame was fitted.
    pub fn end_to_end(&self) -> Option<&LatencySummary> {
        self.latency_ms.get(END_TO_END)
    }

    /// Builds the report.
    pub fn build(f: &RunFacts<'_>) -> Report {
        let secs = f.run_time.as_secs_f64().max(1e-9);
        let sim = f.device.sim_stats();
        let device = rates::DeviceFigures::new(f.device);
        let cameras = rates::cameras(f, secs);
        let graphs = rates::graphs(f, secs, &device);
        let switching = rates::switching(f, sim.as_ref(), &device);
        let q = f.stats.fit_quality();
        let fit = FitReport {
            fits: q.fits,
            cold_starts: q.cold_starts,
            mpjpe_mm: q.mpjpe_mm(),
            residual_px: q.residual_px(),
            residual_stature_pct: q.residual_stature_pct.summary(),
            stature_m: f.stature_m,
        };
        let host = host_cost::host(f, secs, &cameras);
        let verdict = verdict::verdict(f.rig, &host, &cameras, sim.as_ref());
        let what_ran = what_ran::what_ran(f, &switching.mode);
        let accounting_ok = cameras.iter().all(|c| c.accounting_ok);
        let drain = DrainReport {
            frames_in_flight: cameras.iter().map(|c| c.frames.in_flight).sum(),
            ..f.drain.clone()
        };
        Report {
            schema: "hailo-edge.run-report/1",
            what_ran,
            duration_s: secs,
            drain_s: f.drain_time.as_secs_f64(),
            drain,
            accounting_ok,
            cameras,
            graphs,
            switching,
            latency_ms: f.stats.latencies().summaries(),
            latency_note: "capture = capture stamp to the NPU stage taking the frame (camera queue wait included); queue = batcher wait; npu = submit to completion; decode includes its queue; sync = waiting for the other views; fit = triangulation and fit; end_to_end = capture to fitted body".into(),
            fit,
            framing: f.framing.clone(),
            host,
            verdict,
            recorded: f.recorded,
            foxglove: f.foxglove.clone(),
            zenoh: f.zenoh.clone(),
            output_failures: f.sink_failures.clone(),
            device_lost: f
                .stats
                .device_lost
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            serve: f.options.live.as_ref().map(|t| t.report()),
        }
    }
}

/// The figures the simulator assumes, its utilisation's source among them (none on a real
/// device).
fn assumptions(device: &Device) -> Vec<Assumption> {
    device.assumptions()
}
