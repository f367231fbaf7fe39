//! Set alignment: cameras of one rate are taken instant by instant, so the
//! frames admitted together are of one capture instant.

use crossbeam_channel::TryRecvError;

use crate::rig::stats::DropStage;

use super::NpuStage;

/// How frames of one instant are taken together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstantSets {
    /// The cameras' frame period, ns: heads further apart than half of it are of
    /// different instants.
    pub period_ns: u64,
    /// How long, on the host's clock, a set waits for a camera that has no frame queued
    /// before it goes without it.
    pub silent_ns: u64,
}

impl InstantSets {
    /// Cameras paced in real time: a camera two periods late has lost its frame.
    pub fn real_time(period_ns: u64) -> Self {
        Self {
            period_ns,
            silent_ns: 2 * period_ns,
        }
    }

    /// Cameras on a virtual clock wait for room instead of dropping: a camera without a
    /// frame is still rendering it, however slowly the host runs, so a set waits for it
    /// this long before taking it for lost.
    pub fn virtual_time(period_ns: u64) -> Self {
        Self {
            period_ns,
            silent_ns: 5_000_000_000,
        }
    }
}

impl NpuStage {
    /// Takes one frame from every camera at once: frames of one instant, so
    /// when the host falls behind, whole instants are dropped at the camera
    /// queues instead of each camera losing different ones, and the sync finds
    /// complete groups.
    ///
    /// When every graph has room for its cameras' frames, each open camera's
    /// oldest queued frame becomes its head. The queues drop on their own, so
    /// heads can be of different instants: a head more than half a period older
    /// than the newest is an instant the other cameras have already lost, and
    /// is dropped too (counted as [`DropStage::Unaligned`]) for the camera's
    /// next frame. The set goes when every open camera has a head of the same
    /// instant, or when one has been silent for `sets.silent_ns`.
    pub(super) fn take_sets(&mut self, sets: InstantSets) {
        let n = self.cameras.len();
        loop {
            if self.open_cameras().next().is_none() {
                return;
            }
            let room = self.admission.has_room_for(self.open_cameras().count())
                && (0..self.lanes.len()).all(|g| {
                    let k = self
                        .open_cameras()
                        .filter(|&c| self.camera_graph[c] == g)
                        .count();
                    self.lanes[g].has_room_for(k)
                });
            if !room {
                return;
            }
            for c in 0..n {
                self.fill_head(c);
            }
            self.align_heads(sets.period_ns / 2);
            let now = self.clock.now_ns();
            let ready = self.open_cameras().all(|c| self.heads[c].is_some());
            let stalled = now.saturating_sub(self.last_set_ns) >= sets.silent_ns
                && self.heads.iter().any(Option::is_some);
            if !(ready || stalled) {
                return;
            }
            for c in 0..n {
                if let Some(frame) = self.heads[c].take() {
                    self.accept(c, frame);
                }
            }
            self.last_set_ns = now;
        }
    }

    /// Takes camera `c`'s oldest queued frame as its head, if it has none.
    fn fill_head(&mut self, c: usize) {
        if self.closed[c] || self.heads[c].is_some() {
            return;
        }
        match self.cameras[c].try_recv() {
            Ok(frame) => self.heads[c] = Some(frame),
            Err(TryRecvError::Empty) => {}
            Err(TryRecvError::Disconnected) => self.closed[c] = true,
        }
    }

    /// Drops heads more than `tolerance_ns` older than the newest head, taking
    /// each such camera's next frame, until the heads are of one instant or a
    /// camera has nothing newer queued.
    fn align_heads(&mut self, tolerance_ns: u64) {
        loop {
            let Some(newest) = self.heads.iter().flatten().map(|f| f.capture_ns).max() else {
                return;
            };
            let mut dropped = false;
            for c in 0..self.heads.len() {
                if self.heads[c]
                    .as_ref()
                    .is_some_and(|f| f.capture_ns + tolerance_ns < newest)
                {
                    self.heads[c] = None;
                    let counters = &self.stats.cameras[c];
                    counters
                        .taken
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    counters.drop_at(DropStage::Unaligned);
                    self.fill_head(c);
                    dropped = true;
                }
            }
            if !dropped {
                return;
            }
        }
    }

    /// Cameras not yet closed, by index (no list is built per round).
    fn open_cameras(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.cameras.len()).filter(|&c| !self.closed[c])
    }
}
