//! The live status line (indicatif): per camera fps and drops, per graph
//! device fps, switches per second, NPU busy, per-stage latency p50/p99 and
//! the fit's error.

use std::sync::atomic::Ordering;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::npu::Device;
use crate::rig::stage::capture::CaptureThread;

use super::config::RigConfig;
use super::stats::{LiveStats, END_TO_END};

/// A spinner line on stderr, redrawn from the live counters.
pub struct StatusLine {
    bar: ProgressBar,
    names: Vec<String>,
    graphs: Vec<String>,
    last: Option<(Duration, Vec<u64>, Vec<u64>, u64)>,
}

impl StatusLine {
    pub fn new(rig: &RigConfig, device: &Device) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.println(format!("running on {}", device.describe()));
        Self {
            bar,
            names: rig.cameras.iter().map(|c| c.name.clone()).collect(),
            graphs: rig.graphs.iter().map(|g| g.name.clone()).collect(),
            last: None,
        }
    }

    /// Redraws from the counters (rates over the time since the last update).
    pub fn update(
        &mut self,
        stats: &LiveStats,
        captures: &[CaptureThread],
        device: &Device,
        elapsed: Duration,
    ) {
        let frames: Vec<u64> = captures
            .iter()
            .map(|c| c.status.snapshot().frames)
            .collect();
        let graph_frames: Vec<u64> = stats
            .graphs
            .iter()
            .map(|g| g.completed.load(Ordering::Relaxed))
            .collect();
        let sim = device.sim_stats();
        let switches = sim
            .as_ref()
            .map_or(stats.app_switches.load(Ordering::Relaxed), |s| s.switches);
        let Some((t0, f0, g0, s0)) =
            self.last
                .replace((elapsed, frames.clone(), graph_frames.clone(), switches))
        else {
            return;
        };
        let dt = (elapsed - t0).as_secs_f64().max(1e-6);
        if dt < 0.4 {
            self.last = Some((t0, f0, g0, s0));
            return;
        }
        let mut msg = String::new();
        for (i, c) in captures.iter().enumerate() {
            let snap = c.status.snapshot();
            let drops: u64 = snap.queue_drops
                + super::stats::DropStage::ALL
                    .iter()
                    .map(|&s| stats.cameras[i].dropped(s))
                    .sum::<u64>();
            msg += &format!(
                "{} {:.0}fps d{} | ",
                self.names[i],
                (frames[i] - f0[i]) as f64 / dt,
                drops
            );
        }
        for (i, g) in self.graphs.iter().enumerate() {
            msg += &format!("{g} {:.0}fps ", (graph_frames[i] - g0[i]) as f64 / dt);
        }
        msg += &format!("| sw {:.0}/s ", (switches - s0) as f64 / dt);
        if let Some(s) = &sim {
            msg += &format!(
                "busy {:.0}% ",
                100.0 * s.busy_ns as f64 / s.now_ns.max(1) as f64
            );
        }
        let lat = stats.latencies();
        for stage in ["npu", "decode", "fit", END_TO_END] {
            if let Some(s) = lat.stage(stage).and_then(|l| l.summary()) {
                msg += &format!("| {stage} {:.1}/{:.1}ms ", s.p50_ms, s.p99_ms);
            }
        }
        let q = stats.fit_quality();
        if let Some(m) = q.last_mpjpe_m {
            msg += &format!("| MPJPE {:.0}mm", m * 1e3);
        } else if let Some(r) = q.residual_px() {
            msg += &format!("| residual {r:.1}px");
        }
        self.bar.set_message(msg);
        self.bar.tick();
    }

    /// Leaves the last line on screen.
    pub fn finish(self) {
        self.bar.finish();
    }
}
