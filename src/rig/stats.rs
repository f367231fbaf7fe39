//! Live counters shared by the stages, read by the status line and the report.
//!
//! Per camera: frames dropped at each stage (the camera queue's drops are the
//! capture thread's own counter), frames processed; per graph: frames on the
//! device; per stage: latency histograms; the fit's error.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

use crate::metrics::stats::{StageLatencies, ValueStats};

use super::stamp::{Leg, Stamps};

/// Where a frame can be lost after its camera queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropStage {
    /// Taken from its camera queue but older than the other cameras' frames
    /// of the instant being taken (they had dropped its instant already).
    Unaligned,
    /// Preprocessing refused the frame (wrong size, corrupt JPEG).
    Preprocess,
    /// The NPU job failed.
    Npu,
    /// The decoder failed on the features.
    Decode,
    /// The sync found no group for the frame (between anchors, or out of order).
    Sync,
    /// The fit failed for the frame's group.
    Fit,
}

impl DropStage {
    pub const ALL: [DropStage; 6] = [
        DropStage::Unaligned,
        DropStage::Preprocess,
        DropStage::Npu,
        DropStage::Decode,
        DropStage::Sync,
        DropStage::Fit,
    ];

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            DropStage::Unaligned => "unaligned",
            DropStage::Preprocess => "preprocess",
            DropStage::Npu => "npu",
            DropStage::Decode => "decode",
            DropStage::Sync => "sync",
            DropStage::Fit => "fit",
        }
    }
}

/// Counters of one camera past its queue.
#[derive(Debug, Default)]
pub struct CameraCounters {
    /// Frames the NPU stage took from the camera queue.
    pub taken: AtomicU64,
    /// Frames that came out of the fit stage (fitted, as part of a group).
    pub processed: AtomicU64,
    dropped: [AtomicU64; DropStage::ALL.len()],
}

impl CameraCounters {
    /// Counts one frame lost at `stage`.
    pub fn drop_at(&self, stage: DropStage) {
        self.dropped[stage as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Frames lost at `stage`.
    pub fn dropped(&self, stage: DropStage) -> u64 {
        self.dropped[stage as usize].load(Ordering::Relaxed)
    }
}

/// Counters of one graph.
#[derive(Debug, Default)]
pub struct GraphCounters {
    /// Frames submitted to the device.
    pub submitted: AtomicU64,
    /// Frames completed by the device.
    pub completed: AtomicU64,
    /// Jobs (batches) submitted.
    pub batches: AtomicU64,
    /// Times a fault broke the graph's configured model and the stage configured it again.
    pub reconfigured: AtomicU64,
    /// Attempts to configure it again that failed.
    pub reconfigure_failed: AtomicU64,
    /// Time the graph was down, from the stage seeing the fault to its model's return, ns.
    pub down_ns: AtomicU64,
    /// The first fault that broke the graph's model.
    pub fault: Mutex<Option<String>>,
}

impl GraphCounters {
    /// Keeps the first fault that broke the graph's model.
    pub fn note_fault(&self, cause: &str) {
        let mut fault = self.fault.lock().unwrap_or_else(|e| e.into_inner());
        fault.get_or_insert_with(|| cause.to_owned());
    }

    /// The first fault that broke the graph's model, if any did.
    pub fn fault(&self) -> Option<String> {
        self.fault.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Fit quality so far.
#[derive(Debug, Default, Clone, Serialize)]
pub struct FitQuality {
    /// Groups fitted.
    pub fits: u64,
    /// Of which cold starts.
    pub cold_starts: u64,
    /// Sum and count of MPJPE (m) against ground truth, when there is truth.
    pub mpjpe_sum_m: f64,
    pub mpjpe_count: u64,
    /// Sum and count of mean reprojection residuals (px).
    pub residual_sum_px: f64,
    pub residual_count: u64,
    /// The last MPJPE (m).
    pub last_mpjpe_m: Option<f64>,
    /// Each fitted instant's residual as a percentage of the subject's stature.
    #[serde(skip)]
    pub residual_stature_pct: ValueStats,
}

impl FitQuality {
    /// Mean MPJPE in millimetres.
    pub fn mpjpe_mm(&self) -> Option<f64> {
        (self.mpjpe_count > 0).then(|| 1e3 * self.mpjpe_sum_m / self.mpjpe_count as f64)
    }

    /// Mean residual in pixels.
    pub fn residual_px(&self) -> Option<f64> {
        (self.residual_count > 0).then(|| self.residual_sum_px / self.residual_count as f64)
    }
}

/// Thread CPU time the stages spent, ns.
#[derive(Debug, Default)]
pub struct CpuCounters {
    /// The NPU stage thread: pulling frames, preprocessing, batching, submission, routing.
    pub npu_stage: AtomicU64,
    /// Of `npu_stage`, preprocessing frames into the HEF inputs.
    pub preprocess: AtomicU64,
    /// Of `npu_stage`, waiting for a frame, a completion or a deadline
    /// (the CPU a wake-up costs: registering, spinning, parking).
    pub npu_wait: AtomicU64,
    /// Decoder threads outside the decoder itself (queueing, recycling buffers).
    pub decode_overhead: AtomicU64,
    /// Decoder threads inside the decoder (dequantise, run, top detection).
    pub decode: AtomicU64,
    /// The fit thread outside the fit (sync, sinks).
    pub sync_sinks: AtomicU64,
    /// The fit thread inside triangulation and fit.
    pub fit: AtomicU64,
    /// Frames decoded and groups fitted, to divide by.
    pub decoded_frames: AtomicU64,
    pub fitted_groups: AtomicU64,
}

/// Everything live.
#[derive(Debug)]
pub struct LiveStats {
    pub cameras: Vec<CameraCounters>,
    pub graphs: Vec<GraphCounters>,
    pub latency: Mutex<StageLatencies>,
    pub fit: Mutex<FitQuality>,
    pub cpu: CpuCounters,
    /// Switches the application made (manual mode).
    pub app_switches: AtomicU64,
    /// Why the run stopped for a device that is gone (its hRPC connection
    /// closed), when it did.
    pub device_lost: Mutex<Option<String>>,
    /// Time spent switching by the application (deactivate + activate), ns.
    pub app_switch_ns: AtomicU64,
}

/// The name of the end-to-end latency in the latency table.
pub const END_TO_END: &str = "end_to_end";

impl LiveStats {
    pub fn new(cameras: usize, graphs: usize) -> Self {
        Self {
            cameras: (0..cameras).map(|_| CameraCounters::default()).collect(),
            graphs: (0..graphs).map(|_| GraphCounters::default()).collect(),
            latency: Mutex::new(StageLatencies::default()),
            fit: Mutex::new(FitQuality::default()),
            cpu: CpuCounters::default(),
            app_switches: AtomicU64::new(0),
            device_lost: Mutex::new(None),
            app_switch_ns: AtomicU64::new(0),
        }
    }

    /// Records every stage latency of a finished frame and its end-to-end latency.
    pub fn record_latency(&self, stamps: &Stamps) {
        let mut l = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        for stage in Leg::ALL {
            if let Some(ns) = stamps.latency_ns(stage) {
                l.record(stage.name(), Duration::from_nanos(ns));
            }
        }
        if let Some(ns) = stamps.total_ns() {
            l.record(END_TO_END, Duration::from_nanos(ns));
        }
    }

    /// A copy of the latency table.
    pub fn latencies(&self) -> StageLatencies {
        self.latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A copy of the fit quality.
    pub fn fit_quality(&self) -> FitQuality {
        self.fit.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
