//! The per-stage stamps every frame carries.
//!
//! All stamps are CLOCK_MONOTONIC nanoseconds from a [`Clock`](crate::geom::time::Clock), the clock V4L2 drivers stamp
//! frames with, so a driver's capture time and the rig's own stamps can be subtracted
//! directly. Tests inject a [`MockClock`](crate::geom::time::MockClock) instead.

use serde::Serialize;

/// The legs of a frame's path, each timed by the stamp that ends it, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Leg {
    /// From the capture stamp until the NPU stage takes the frame: the driver
    /// and camera thread's hand-over, then the wait in the camera queue (where
    /// frames wait for admission, and drop when the chain is behind).
    Capture,
    /// Crop, convert, resize and quantise into the graph input.
    Preprocess,
    /// Waiting in the graph's batcher until its batch is submitted.
    Queue,
    /// On the NPU: from submission to completion.
    Npu,
    /// The CPU decoder, including the wait for a decoder thread.
    Decode,
    /// Waiting for the other views of the same instant.
    Sync,
    /// Triangulation and body fit.
    Fit,
}

impl Leg {
    /// Every stage, in pipeline order.
    pub const ALL: [Leg; 7] = [
        Leg::Capture,
        Leg::Preprocess,
        Leg::Queue,
        Leg::Npu,
        Leg::Decode,
        Leg::Sync,
        Leg::Fit,
    ];

    /// The stage's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Leg::Capture => "capture",
            Leg::Preprocess => "preprocess",
            Leg::Queue => "queue",
            Leg::Npu => "npu",
            Leg::Decode => "decode",
            Leg::Sync => "sync",
            Leg::Fit => "fit",
        }
    }
}

/// When a frame left each stage, after its capture stamp.
///
/// A stage's latency is its leave stamp minus the previous stage's (the capture
/// stamp for the first), so the stage latencies add up to the end-to-end
/// latency exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamps {
    capture_ns: u64,
    left: [Option<u64>; Leg::ALL.len()],
}

impl Stamps {
    /// Stamps of a frame captured at `capture_ns`.
    pub fn new(capture_ns: u64) -> Self {
        Self {
            capture_ns,
            left: [None; Leg::ALL.len()],
        }
    }

    /// The capture stamp.
    pub fn capture_ns(&self) -> u64 {
        self.capture_ns
    }

    /// Records that the frame left `stage` at `now_ns`.
    pub fn leave(&mut self, stage: Leg, now_ns: u64) {
        self.left[stage as usize] = Some(now_ns);
    }

    /// When the frame left `stage`.
    pub fn left(&self, stage: Leg) -> Option<u64> {
        self.left[stage as usize]
    }

    /// Time spent in `stage`, when it and the stage before it were stamped.
    pub fn latency_ns(&self, stage: Leg) -> Option<u64> {
        let end = self.left(stage)?;
        let start = match stage as usize {
            0 => self.capture_ns,
            i => self.left[..i].iter().rev().flatten().next().copied()?,
        };
        Some(end.saturating_sub(start))
    }

    /// From capture to the last stamped stage.
    pub fn total_ns(&self) -> Option<u64> {
        let last = self.left.iter().rev().flatten().next()?;
        Some(last.saturating_sub(self.capture_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::time::{Clock, MockClock};

    #[test]
    fn stage_latencies_add_up_to_the_total() {
        let clock = MockClock::new(1_000);
        let mut s = Stamps::new(clock.now_ns());
        for (i, stage) in Leg::ALL.into_iter().enumerate() {
            clock.advance(100 * (i as u64 + 1));
            s.leave(stage, clock.now_ns());
        }
        let sum: u64 = Leg::ALL.iter().map(|&st| s.latency_ns(st).unwrap()).sum();
        assert_eq!(sum, s.total_ns().unwrap());
        assert_eq!(s.latency_ns(Leg::Capture), Some(100));
        assert_eq!(s.latency_ns(Leg::Fit), Some(700));
    }

    #[test]
    fn a_skipped_stage_counts_from_the_last_stamped_one() {
        let mut s = Stamps::new(0);
        s.leave(Leg::Capture, 10);
        s.leave(Leg::Npu, 50);
        assert_eq!(s.latency_ns(Leg::Npu), Some(40));
        assert_eq!(s.latency_ns(Leg::Queue), None);
        assert_eq!(s.total_ns(), Some(50));
    }
}
