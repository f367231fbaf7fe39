//! Batching per graph: a [`Lane`] holds one graph's preprocessed frames until
//! a batch is full or its timeout passes, its jobs on the device, and the job
//! buffers it reuses.

use std::collections::HashMap;

use crate::npu::{Bindings, ConfiguredModel, NpuError};
use crate::rig::work::FrameMeta;

use super::recovery::{ModelSetup, Recovery};

/// One graph on the device and its batcher.
pub struct Lane {
    pub cm: ConfiguredModel,
    /// The HEF input the preprocessed frame is written into.
    pub input: String,
    /// Frames per submission.
    pub batch: usize,
    /// Longest a partial batch waits, ns.
    pub timeout_ns: u64,
    /// Most frames batched or on the device at once, never more than the
    /// model's async queue holds.
    pub max_in_flight: usize,
    /// Frames preprocessed into their job buffers, waiting for a batch.
    pub(super) pending: Vec<(FrameMeta, Bindings)>,
    /// When the oldest pending frame arrived, ns.
    pub(super) first_pending_ns: Option<u64>,
    /// When the last frame arrived, ns (manual switching's starvation test).
    pub(super) last_frame_ns: u64,
    /// Submitted jobs by id.
    pub(super) in_flight: HashMap<u64, FrameMeta>,
    /// Job buffers back from the device or the decoders, for the next frames.
    pub(super) free: FreeBindings,
    /// Frames submitted since this graph got the device (manual switching).
    pub(super) since_switch: u64,
    /// Frames of this graph whose job could not run (refused, failed, no buffers).
    pub(super) failures: Failures,
    /// Configuring the graph again after a fault breaks its model.
    pub(super) recovery: Recovery,
}

impl Lane {
    /// A lane of `cm` with at most `max_in_flight` frames batched or on the
    /// device, capped at the model's async queue: HailoRT's card answers a
    /// job past it with `HAILO_QUEUE_IS_FULL` and shuts the model down.
    ///
    /// # Errors
    /// Reading the queue size from the backend.
    pub fn new(
        cm: ConfiguredModel,
        input: String,
        batch: usize,
        timeout_ns: u64,
        max_in_flight: usize,
    ) -> Result<Self, NpuError> {
        let queue = cm.async_queue_size()?;
        Ok(Self {
            max_in_flight: max_in_flight.max(batch.max(1)).min(queue),
            cm,
            input,
            batch: batch.max(1),
            timeout_ns,
            pending: Vec::new(),
            first_pending_ns: None,
            last_frame_ns: 0,
            in_flight: HashMap::new(),
            free: FreeBindings::default(),
            since_switch: 0,
            failures: Failures::default(),
            recovery: Recovery::new(None),
        })
    }

    /// The lane configures its graph again from `setup` when a fault breaks
    /// its model (see `recovery`); without it, a broken graph stays down.
    pub fn recovering_with(mut self, setup: ModelSetup) -> Self {
        self.recovery = Recovery::new(Some(setup));
        self
    }

    /// Keeps `bindings` for the next frames, unless they belong to a model
    /// this lane has since configured again.
    pub(super) fn reuse(&mut self, bindings: Bindings) {
        if self.cm.owns(&bindings) {
            self.free.put(bindings);
        }
    }

    pub(super) fn has_room_for(&self, frames: usize) -> bool {
        self.pending.len() + frames <= self.batch
            && self.pending.len() + self.in_flight.len() + frames <= self.max_in_flight
    }
}

/// A graph's frames whose job could not run, for its log lines.
#[derive(Default)]
pub(super) struct Failures(u64);

impl Failures {
    /// Logs a frame of `graph` whose job could not run (`what`: its submission, its
    /// completion, its buffers): the first failure, then the count at each power of ten, so
    /// that a device gone for good says so without a line per frame. The frames themselves
    /// are counted as NPU drops in the report.
    pub(super) fn note(&mut self, graph: &str, what: &str, e: &dyn std::fmt::Display) {
        self.0 += 1;
        if self.0 == 1 {
            log::warn!("graph {graph}: {what} failed: {e}");
        } else if is_power_of_ten(self.0) {
            log::warn!(
                "graph {graph}: {} frames dropped at the NPU so far; the latest {what} failed: {e}",
                self.0
            );
        }
    }
}

/// Whether `n` is 1, 10, 100, ...: the counts at which a repeated failure is logged.
pub(super) fn is_power_of_ten(mut n: u64) -> bool {
    while n >= 10 && n.is_multiple_of(10) {
        n /= 10;
    }
    n == 1
}

/// A lane's free list of job buffers (input and output bindings of its
/// graph): what came back from a decoder, a failed job or a refused frame is
/// taken again before the graph allocates new ones, so a steady run allocates
/// none. It is not a pool of camera frames (`camera::BufferPool`) nor
/// of device-visible buffers (`npu::BufferPool`).
#[derive(Default)]
pub(super) struct FreeBindings(Vec<Bindings>);

impl FreeBindings {
    /// A free set of buffers, or new ones from `cm`.
    pub(super) fn take(&mut self, cm: &ConfiguredModel) -> Result<Bindings, NpuError> {
        match self.0.pop() {
            Some(b) => Ok(b),
            None => cm.bindings(),
        }
    }

    /// Buffers to reuse.
    pub(super) fn put(&mut self, bindings: Bindings) {
        self.0.push(bindings);
    }

    /// Forgets every free buffer (their model was configured again).
    pub(super) fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::Lane;
    use crate::npu::sim::SimProfile;
    use crate::npu::{Backend, Device};

    #[test]
    fn a_lane_never_holds_more_than_the_async_queue() {
        let profile = SimProfile::default().with_async_queue_size(3);
        let device = Device::open(Backend::Sim(profile)).unwrap();
        let hef = hef::HefBuilder::new(&hef::samples::backbone(288))
            .build()
            .unwrap();
        let cm = device.load_model(&hef).unwrap().configure().unwrap();
        // Two batches of two would be four frames in flight; the queue holds three.
        let lane = Lane::new(cm, "input".into(), 2, 0, 4).unwrap();
        assert_eq!(lane.max_in_flight, 3);
        assert!(lane.has_room_for(2));
        // Control: a queue with room keeps the asked-for limit.
        let roomy = Device::open(Backend::Sim(SimProfile::default())).unwrap();
        let cm = roomy.load_model(&hef).unwrap().configure().unwrap();
        let lane = Lane::new(cm, "input".into(), 2, 0, 4).unwrap();
        assert_eq!(lane.max_in_flight, 4);
    }

    #[test]
    fn buffers_of_a_replaced_model_are_not_reused() {
        let device = Device::open(Backend::Sim(SimProfile::default())).unwrap();
        let hef = hef::HefBuilder::new(&hef::samples::backbone(288))
            .build()
            .unwrap();
        let model = device.load_model(&hef).unwrap();
        let mut lane = Lane::new(model.configure().unwrap(), "input".into(), 1, 0, 2).unwrap();
        let replaced = model.configure().unwrap();
        lane.reuse(replaced.bindings().unwrap());
        assert_eq!(lane.free.0.len(), 0);
        // Control: the lane's own buffers are kept.
        let own = lane.cm.bindings().unwrap();
        lane.reuse(own);
        assert_eq!(lane.free.0.len(), 1);
    }

    #[test]
    fn repeated_failures_are_logged_at_powers_of_ten() {
        let logged: Vec<u64> = (1..=1000).filter(|&n| super::is_power_of_ten(n)).collect();
        assert_eq!(logged, [1, 10, 100, 1000]);
    }
}
