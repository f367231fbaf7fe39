//! Graph switching: by HailoRT's model scheduler, or by the stage itself
//! (scheduling NONE), which activates one graph at a time and hands the device
//! on every K frames.

use std::time::Instant;

use crate::npu::NpuError;

use super::NpuStage;

/// How the graphs share the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switching {
    /// HailoRT's model scheduler switches (priority, threshold, timeout per graph).
    Scheduler,
    /// Scheduling NONE: the stage activates one graph at a time and switches after
    /// `frames_per_switch` frames when another graph has frames waiting.
    Manual { frames_per_switch: u64 },
}

impl NpuStage {
    /// Manual switching: after K frames of the active graph, or when it has had
    /// no frame for its timeout (or its cameras are closed), hand the device to
    /// the next graph with frames waiting, once the active one is idle.
    pub(super) fn switch(&mut self) -> Result<(), NpuError> {
        let Switching::Manual { frames_per_switch } = self.switching else {
            return Ok(());
        };
        let now = self.clock.now_ns();
        let n = self.lanes.len();
        let Some(a) = self.active else {
            if let Some(g) = (0..n).find(|&g| !self.lanes[g].pending.is_empty()) {
                self.activate(None, g)?;
            }
            return Ok(());
        };
        let Some(next) = (1..n)
            .map(|i| (a + i) % n)
            .find(|&g| !self.lanes[g].pending.is_empty())
        else {
            if self.lanes[a].since_switch >= frames_per_switch {
                // Nobody else waits: keep the device, start a new block.
                self.lanes[a].since_switch = 0;
            }
            return Ok(());
        };
        let lane = &self.lanes[a];
        let cameras_closed = (0..self.cameras.len())
            .filter(|&c| self.camera_graph[c] == a)
            .all(|c| self.closed[c]);
        let starved = lane.pending.is_empty()
            && (cameras_closed || now.saturating_sub(lane.last_frame_ns) >= lane.timeout_ns);
        if (lane.since_switch >= frames_per_switch || starved) && lane.in_flight.is_empty() {
            self.activate(Some(a), next)?;
        }
        Ok(())
    }

    fn activate(&mut self, from: Option<usize>, to: usize) -> Result<(), NpuError> {
        let t0 = Instant::now();
        if let Some(a) = from {
            self.lanes[a].cm.deactivate()?;
        }
        self.lanes[to].cm.activate()?;
        self.lanes[to].since_switch = 0;
        self.active = Some(to);
        self.stats
            .app_switches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.stats.app_switch_ns.fetch_add(
            t0.elapsed().as_nanos() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(())
    }
}
