//! The report's JSON sections (the run report's schema,
//! `hailo-edge.run-report/1`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::camera::controls::ControlOutcome;
use crate::metrics::figure::{Assumption, Figure};
use crate::metrics::stats::FrameCounts;
use crate::metrics::utilisation::Precision;
use crate::npu::RanOn;

/// What ran.
#[derive(Debug, Clone, Serialize)]
pub struct WhatRan {
    pub rig: String,
    /// Backend, device and fallback warning (flattened: `backend`, `device`,
    /// `backend_warning`).
    #[serde(flatten)]
    pub ran_on: RanOn,
    pub simulator_clock: Option<String>,
    /// Where the NPU outputs came from (device, reference ONNX, synthetic).
    pub npu_outputs: String,
    pub decoder: String,
    pub decoder_threads: usize,
    /// Where the fit's 2D keypoints came from.
    pub fit_keypoints: String,
    pub body_model: String,
    pub switching: String,
    pub notes: Vec<String>,
    /// Figures the simulator assumes (empty on a real device).
    pub assumed: Vec<Assumption>,
}

/// One camera's frames.
#[derive(Debug, Clone, Serialize)]
pub struct CameraReport {
    pub name: String,
    pub graph: String,
    pub nominal_fps: f64,
    pub captured_fps: f64,
    pub processed_fps: f64,
    /// captured = processed + dropped (by stage) + in flight.
    pub frames: FrameCounts,
    pub accounting_ok: bool,
    /// Frames found unusable and skipped, the camera going on: at the source
    /// (wrong size, past the size bound, a recorded message that does not
    /// decode; these are not among the captured frames) or downstream (a
    /// corrupt MJPEG).
    pub bad_frames: u64,
    /// The source's last error (a disconnect, a bad frame, a timeout, a
    /// recording cut short), when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The rig file's camera controls: asked, read back, and whether the
    /// device took them (V4L2 cameras with a `[camera.controls]` table).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<ControlOutcome>,
}

/// One graph on the device.
#[derive(Debug, Clone, Serialize)]
pub struct GraphReport {
    pub name: String,
    /// The HEF that ran.
    pub hef: String,
    /// Square side of the HEF's first input, which `plan --from` matches cameras on.
    pub side: Option<u32>,
    /// The precision the HEF is quoted against.
    pub hef_precision: Option<Precision>,
    /// Operations per frame (2 x MACs) the HEF carries, GOPS; `None` when it carries none.
    pub ops_per_frame: Option<Figure>,
    /// The decoder ONNX that ran: the rig's file, or the generated graph.
    pub decoder: String,
    /// The device/host split the decoder is built for, in words.
    pub split: String,
    /// Which HEF output fed which decoder input: `output (g, g, C) -> input (1, C, g, g)`.
    pub pairing: Vec<String>,
    pub batch: u16,
    pub priority: u8,
    pub threshold: u32,
    pub timeout_ms: f64,
    pub frames: u64,
    pub jobs: u64,
    pub device_fps: Figure,
    /// The first fault that broke the graph's configured model (HailoRT's
    /// status in words), when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// Times the graph was configured again after a fault.
    pub reconfigured: u64,
    /// Attempts to configure it again that failed.
    pub reconfigure_failed: u64,
    /// Time the graph was down (from the stage seeing the fault to its
    /// model's return, or to the end of the run), ms.
    pub down_ms: f64,
}

/// Graph switching.
#[derive(Debug, Clone, Serialize)]
pub struct SwitchReport {
    pub mode: String,
    pub switches: Option<u64>,
    pub switches_per_s: Option<Figure>,
    pub ms_per_switch: Option<Figure>,
    /// Manual mode: switches made by the application and host time per switch.
    pub app_switches: u64,
    pub app_ms_per_switch: Option<f64>,
    pub npu_busy: Option<Figure>,
}

/// CPU per stage, measured with thread CPU clocks.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    pub cores: usize,
    /// The pipeline itself (NPU stage, decoder threads outside the decoder,
    /// sync and sinks), per frame taken from a camera queue.
    pub pipeline_us_per_frame: Option<f64>,
    /// `pipeline_us_per_frame` by thread, per frame taken.
    pub pipeline_breakdown_us: Option<PipelineBreakdown>,
    pub decode_ms_per_frame: Option<f64>,
    pub fit_ms_per_group: Option<f64>,
    /// Everything else in the process (capture threads with synthetic rendering,
    /// the simulator, the status line), per captured frame.
    pub other_us_per_frame: Option<f64>,
    pub process_cpu_share: f64,
    pub rss_first_10s_mb: Option<f64>,
    pub rss_last_mb: Option<f64>,
}

/// Where the pipeline's own CPU goes, us per frame taken from a camera queue.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PipelineBreakdown {
    /// NPU stage: preprocessing frames into the HEF inputs.
    pub preprocess: f64,
    /// NPU stage: waiting for work (the CPU its wake-ups cost).
    pub npu_stage_wait: f64,
    /// NPU stage: everything else (queues, batching, submission, routing).
    pub npu_stage_rest: f64,
    /// Decoder threads outside the decoder.
    pub decode_overhead: f64,
    /// The fit thread outside the fit: sync and sinks.
    pub sync_sinks: f64,
}

/// Can the machine keep up, and if not, where it falls short.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub sustained: bool,
    pub frames_offered_per_s: f64,
    /// CPU seconds per second each stage needs at the nominal rate.
    pub cores_needed: BTreeMap<String, f64>,
    pub bottleneck: Option<String>,
    /// Share of the device the offered rate needs (1 = all of it): mean device
    /// time per frame x frames per second. Modelled on the simulator.
    pub device_share_needed: Option<f64>,
    /// Capture to fitted body with no queueing at all: device time of one
    /// instant's frames, decoding them on the decoder threads, and the fit.
    pub latency_floor_ms: Option<f64>,
    pub text: String,
}

/// Fit quality.
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    pub fits: u64,
    pub cold_starts: u64,
    pub mpjpe_mm: Option<f64>,
    pub residual_px: Option<f64>,
    /// Per fitted instant, the fit residual (RMS reprojection error back-projected at each
    /// keypoint's depth) as a percentage of the subject's stature: p50, p99, max.
    pub residual_stature_pct: Option<crate::metrics::stats::ValueSummary>,
    /// The stature the share is taken of, metres (the rest mesh's height at the fitted
    /// phenotype).
    pub stature_m: Option<f64>,
}
