//! Recovery after a fault that leaves a graph's configured model needing
//! reconfiguration, as HailoRT does after `HAILO_QUEUE_IS_FULL`, a stream
//! abort or a failed `run_async` (`npu::ConfiguredModel::needs_reconfigure`).
//!
//! The stage configures the graph again from its loaded model, with the
//! scheduler settings it started with, once the broken model's jobs in flight
//! have reported (or [`DRAIN_TIMEOUT`] has passed: those frames are counted
//! as NPU drops). Frames of the graph that arrive while it is down are
//! counted as NPU drops too. An attempt that fails, or a model that breaks
//! again before it completes a job, doubles the wait before the next attempt,
//! from [`FIRST_BACKOFF`] up to [`MAX_BACKOFF`]: a model that keeps failing
//! costs one attempt every few seconds, not one per frame.
//!
//! A configuration refused with `HAILO_COMMUNICATION_CLOSED` means the
//! device itself is gone: HailoRT's hRPC client connects once, and answers
//! every request after its connection closed with that status, so nothing on
//! this device object will work again. The stage then requests the run's
//! stop: the run drains, reports `device_lost`, and `run` exits with status 5,
//! which a service manager restarts (a new process opens the device anew).

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::npu::{ConfiguredModel, Model, NpuError, Status};
use crate::rig::error::GraphStep;
use crate::rig::stats::DropStage;

use super::batcher::is_power_of_ten;
use super::{NpuStage, Switching};

/// The wait before the second attempt; each failure doubles it.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Longest the stage waits for a broken model's jobs to report before it
/// configures the graph again without them.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// How long releasing the broken model may wait for jobs that never
/// reported (the stage thread waits that long); later reports go to the
/// reaper thread.
const RELEASE_TIMEOUT: Duration = Duration::from_millis(100);

/// A graph's settings under HailoRT's model scheduler.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SchedulerSettings {
    /// 0..=31, HailoRT's default 16.
    pub priority: u8,
    /// Frames the scheduler waits for before it switches to the graph.
    pub threshold: u32,
    /// Longest the scheduler waits for the threshold.
    pub timeout: Duration,
}

/// What configuring a graph takes: its loaded model (batch size already
/// set) and, under the scheduler, its settings. The start and every
/// reconfiguration go through [`ModelSetup::configure`], so a recovered
/// graph runs as the first one did.
pub struct ModelSetup {
    model: Model,
    scheduler: Option<SchedulerSettings>,
}

impl ModelSetup {
    pub fn new(model: Model, scheduler: Option<SchedulerSettings>) -> Self {
        Self { model, scheduler }
    }

    /// A configured model with the graph's scheduler settings applied.
    ///
    /// # Errors
    /// The step that failed, with the device's error.
    pub fn configure(&self) -> Result<ConfiguredModel, (GraphStep, NpuError)> {
        let cm = self
            .model
            .configure()
            .map_err(|e| (GraphStep::Configure, e))?;
        if let Some(s) = self.scheduler {
            cm.set_scheduler_priority(s.priority)
                .map_err(|e| (GraphStep::SchedulerPriority, e))?;
            cm.set_scheduler_threshold(s.threshold)
                .map_err(|e| (GraphStep::SchedulerThreshold, e))?;
            cm.set_scheduler_timeout(s.timeout)
                .map_err(|e| (GraphStep::SchedulerTimeout, e))?;
        }
        Ok(cm)
    }
}

impl NpuStage {
    /// Configures again each graph whose model a fault broke, once its jobs
    /// in flight have reported and its backoff has run out.
    pub(super) fn recover(&mut self) {
        let now = self.clock.now_ns();
        for g in 0..self.lanes.len() {
            let lane = &mut self.lanes[g];
            if !lane.cm.needs_reconfigure() {
                continue;
            }
            let (next, first) = lane.recovery.next(now, lane.in_flight.len());
            let counters = &self.stats.graphs[g];
            if first {
                // The cause is copied once per outage, not on every round of the stage.
                let cause = lane.cm.broken_by().unwrap_or_default();
                counters.note_fault(&cause);
                if lane.recovery.can_recover() {
                    log::warn!(
                        "graph {}: down ({cause}); it is configured again once its {} jobs in \
                         flight report; its frames are dropped until then",
                        lane.cm.name(),
                        lane.in_flight.len()
                    );
                }
            }
            if next == Next::Wait || !lane.recovery.can_recover() {
                continue;
            }
            // Frames still on the broken model are given up: its buffers
            // cannot run on the new one.
            for (_, meta) in lane.in_flight.drain() {
                self.stats.cameras[meta.camera].drop_at(DropStage::Npu);
                self.admission.release();
            }
            for (meta, _) in lane.pending.drain(..) {
                self.stats.cameras[meta.camera].drop_at(DropStage::Npu);
                self.admission.release();
            }
            lane.first_pending_ns = None;
            lane.free.clear();
            match lane.recovery.reconfigure(now, &lane.cm) {
                Ok((cm, down_ns)) => {
                    let name = cm.name().to_string();
                    // The broken model is released here (its late reports go to the reaper).
                    drop(std::mem::replace(&mut lane.cm, cm));
                    lane.since_switch = 0;
                    counters.reconfigured.fetch_add(1, Ordering::Relaxed);
                    counters.down_ns.fetch_add(down_ns, Ordering::Relaxed);
                    log::warn!(
                        "graph {name}: configured again after {:.0} ms down",
                        down_ns as f64 / 1e6
                    );
                    if matches!(self.switching, Switching::Manual { .. }) && self.active == Some(g)
                    {
                        // The broken model's activation went with it: the
                        // switching activates the graph with frames waiting.
                        self.active = None;
                    }
                }
                Err((step, e)) if e.status() == Some(Status::CommunicationClosed) => {
                    counters.reconfigure_failed.fetch_add(1, Ordering::Relaxed);
                    let why = format!(
                        "graph {}: configuring it again failed at {step}: {e}",
                        lane.cm.name()
                    );
                    let mut lost = self
                        .stats
                        .device_lost
                        .lock()
                        .unwrap_or_else(|p| p.into_inner());
                    if lost.is_none() {
                        log::error!(
                            "the device is gone ({why}); the run stops, to be run again once it \
                             is back"
                        );
                        *lost = Some(why);
                    }
                    if let Some(stop) = &self.stop {
                        stop.request();
                    }
                }
                Err((step, e)) => {
                    let failed = counters.reconfigure_failed.fetch_add(1, Ordering::Relaxed) + 1;
                    if is_power_of_ten(failed) {
                        log::warn!(
                            "graph {}: configuring it again failed ({failed} attempts so far), \
                             at {step}: {e}",
                            lane.cm.name()
                        );
                    }
                }
            }
        }
    }
}

/// What the stage does next for a graph whose model is broken.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Wait: its jobs in flight have not all reported, or the backoff runs.
    Wait,
    /// Configure it again now; the jobs still in flight are given up.
    Reconfigure,
}

/// One graph's recovery state.
pub(super) struct Recovery {
    setup: Option<ModelSetup>,
    /// When the stage first saw the model broken, ns (clock of the stage).
    down_since_ns: Option<u64>,
    /// No attempt before this, ns.
    not_before_ns: u64,
    backoff: Duration,
    /// Reconfigured since the last completed job: a break now is a failed attempt.
    unproven: bool,
}

impl Recovery {
    /// Recovery through `setup`; `None` leaves a broken graph down (a lane
    /// built around a bare configured model).
    pub(super) fn new(setup: Option<ModelSetup>) -> Self {
        Self {
            setup,
            down_since_ns: None,
            not_before_ns: 0,
            backoff: FIRST_BACKOFF,
            unproven: false,
        }
    }

    pub(super) fn can_recover(&self) -> bool {
        self.setup.is_some()
    }

    /// The model is broken at `now`; `in_flight` of its jobs have not reported.
    /// Returns whether this is the first time the stage sees it down.
    pub(super) fn next(&mut self, now: u64, in_flight: usize) -> (Next, bool) {
        let first = self.down_since_ns.is_none();
        let since = *self.down_since_ns.get_or_insert(now);
        if first && self.unproven {
            // It broke again before completing a job: that attempt failed.
            self.failed(now);
        }
        let drained = in_flight == 0 || now.saturating_sub(since) >= nanos(DRAIN_TIMEOUT);
        let next = if drained && now >= self.not_before_ns {
            Next::Reconfigure
        } else {
            Next::Wait
        };
        (next, first)
    }

    /// Configures the graph again, releasing `broken` (its jobs still in
    /// flight report to the reaper thread). Returns how long it was down, ns.
    ///
    /// # Errors
    /// The step that failed; the next attempt waits the doubled backoff.
    pub(super) fn reconfigure(
        &mut self,
        now: u64,
        broken: &ConfiguredModel,
    ) -> Result<(ConfiguredModel, u64), (GraphStep, NpuError)> {
        let Some(setup) = &self.setup else {
            return Err((
                GraphStep::Configure,
                NpuError::NeedsReconfigure {
                    model: broken.name().to_string(),
                    cause: "no loaded model to configure it again from".into(),
                },
            ));
        };
        broken.set_drop_timeout(RELEASE_TIMEOUT);
        match setup.configure() {
            Ok(cm) => {
                let down = now.saturating_sub(self.down_since_ns.take().unwrap_or(now));
                self.unproven = true;
                Ok((cm, down))
            }
            Err(e) => {
                self.failed(now);
                Err(e)
            }
        }
    }

    /// How long the graph has been down at `now`, ns, if it is.
    pub(super) fn down_for(&self, now: u64) -> Option<u64> {
        self.down_since_ns.map(|t| now.saturating_sub(t))
    }

    /// A job of the graph completed: the model works, the backoff starts over.
    pub(super) fn completed(&mut self) {
        self.unproven = false;
        self.backoff = FIRST_BACKOFF;
    }

    fn failed(&mut self, now: u64) {
        self.not_before_ns = now.saturating_add(nanos(self.backoff));
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn waits_for_jobs_in_flight_up_to_the_drain_timeout() {
        let mut r = Recovery::new(None);
        assert_eq!(r.next(0, 3), (Next::Wait, true));
        assert_eq!(r.next(10 * MS, 3), (Next::Wait, false));
        // Every job reported: at once.
        assert_eq!(r.next(10 * MS, 0), (Next::Reconfigure, false));
        // Jobs that never report are given up after the drain timeout.
        assert_eq!(r.next(nanos(DRAIN_TIMEOUT) - 1, 3), (Next::Wait, false));
        assert_eq!(r.next(nanos(DRAIN_TIMEOUT), 3), (Next::Reconfigure, false));
    }

    #[test]
    fn a_model_that_breaks_again_before_completing_a_job_backs_off_doubling() {
        let mut r = Recovery::new(None);
        let mut now = 0;
        let mut waits = Vec::new();
        for _ in 0..8 {
            // Reconfigured (as `reconfigure` leaves it), then broken at once.
            r.down_since_ns = None;
            r.unproven = true;
            assert_eq!(r.next(now, 0), (Next::Wait, true));
            waits.push((r.not_before_ns - now) / MS);
            now = r.not_before_ns;
            assert_eq!(r.next(now, 0), (Next::Reconfigure, false));
        }
        assert_eq!(waits, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        // A completed job starts the backoff over.
        r.completed();
        r.down_since_ns = None;
        r.unproven = true;
        r.next(now, 0);
        assert_eq!((r.not_before_ns - now) / MS, 100);
        // Control: a model that completed a job before it broke is tried again at once.
        let mut r = Recovery::new(None);
        assert_eq!(r.next(now, 0), (Next::Reconfigure, true));
    }
}
