//! Views of several boxes grouped into instants by their wall-clock capture time.
//!
//! Boxes publish an instant's views when their own fit is done, so views of one instant arrive
//! from different boxes up to their pipelines' latency apart, and a box that fell behind
//! publishes some instants not at all. An instant is fused once every camera of the boxes
//! fused now has delivered, or when its first view has waited the set time; instants leave in
//! capture order, and a view for an instant already fused is late (counted).

use std::collections::VecDeque;

/// One view waiting for its instant.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotView {
    /// Camera slot in the fused rig.
    pub slot: usize,
    /// Wall-clock capture time, ns.
    pub wall_ns: u64,
    /// `[x, y, visibility, score]` per keypoint.
    pub keypoints: Vec<[f32; 4]>,
}

/// The views of one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Instant {
    /// Wall-clock capture time of its first view, ns.
    pub wall_ns: u64,
    /// This host's monotonic ns when its first view arrived.
    pub first_arrival_ns: u64,
    pub views: Vec<SlotView>,
}

impl Instant {
    fn has(&self, slot: usize) -> bool {
        self.views.iter().any(|v| v.slot == slot)
    }
}

/// What happened to a pushed view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// Joined (or opened) an instant.
    Waiting,
    /// Its instant was fused already.
    Late,
    /// Its instant holds a view of this slot already.
    Duplicate,
}

/// The grouper.
#[derive(Debug)]
pub struct Instants {
    /// Views at most this far apart are one instant, ns.
    window_ns: u64,
    /// Longest an instant waits for missing views, ns.
    wait_ns: u64,
    /// Waiting instants, in capture order.
    pending: VecDeque<Instant>,
    /// Capture time of the last instant that left.
    last_out_ns: Option<u64>,
}

impl Instants {
    /// Views within `window_ns` are one instant; an instant waits at most `wait_ns`.
    pub fn new(window_ns: u64, wait_ns: u64) -> Self {
        Self {
            window_ns,
            wait_ns,
            pending: VecDeque::new(),
            last_out_ns: None,
        }
    }

    /// Adds a view that arrived at `now_ns` (monotonic).
    pub fn push(&mut self, view: SlotView, now_ns: u64) -> Pushed {
        if self
            .last_out_ns
            .is_some_and(|out| view.wall_ns <= out.saturating_add(self.window_ns))
        {
            return Pushed::Late;
        }
        let near = |i: &Instant| i.wall_ns.abs_diff(view.wall_ns) <= self.window_ns;
        if let Some(i) = self.pending.iter_mut().find(|i| near(i)) {
            if i.has(view.slot) {
                return Pushed::Duplicate;
            }
            i.views.push(view);
            return Pushed::Waiting;
        }
        let at = self.pending.partition_point(|i| i.wall_ns < view.wall_ns);
        self.pending.insert(
            at,
            Instant {
                wall_ns: view.wall_ns,
                first_arrival_ns: now_ns,
                views: vec![view],
            },
        );
        Pushed::Waiting
    }

    /// The instants ready at `now_ns`, in capture order: complete for `expected` slots, or
    /// waited out (the only way out while `expected` is `None`: the cameras to expect are
    /// not known yet). A later complete instant leaves only after the earlier ones.
    pub fn ready(&mut self, now_ns: u64, expected: Option<&[usize]>) -> Vec<Instant> {
        let complete = |i: &Instant| expected.is_some_and(|e| e.iter().all(|&s| i.has(s)));
        // The last complete instant settles the ones before it too: the boxes publish in
        // capture order, so what they left out of an earlier one is not coming.
        let settled = self.pending.iter().rposition(complete).map_or(0, |i| i + 1);
        let mut out = Vec::new();
        while let Some(front) = self.pending.front() {
            let waited = now_ns.saturating_sub(front.first_arrival_ns) >= self.wait_ns;
            if out.len() >= settled && !waited {
                break;
            }
            if let Some(i) = self.pending.pop_front() {
                self.last_out_ns = Some(i.wall_ns);
                out.push(i);
            }
        }
        out
    }

    /// Takes the views of `slots` out of the waiting instants (a box refused after some of
    /// its cameras were taken in); returns how many. Instants left empty go.
    pub fn forget(&mut self, slots: &[usize]) -> u64 {
        let mut taken = 0;
        for i in &mut self.pending {
            let before = i.views.len();
            i.views.retain(|v| !slots.contains(&v.slot));
            taken += (before - i.views.len()) as u64;
        }
        self.pending.retain(|i| !i.views.is_empty());
        taken
    }

    /// Everything still waiting (at the end of a run).
    pub fn finish(&mut self) -> Vec<Instant> {
        let out: Vec<Instant> = self.pending.drain(..).collect();
        if let Some(last) = out.last() {
            self.last_out_ns = Some(last.wall_ns);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(slot: usize, wall_ns: u64) -> SlotView {
        SlotView {
            slot,
            wall_ns,
            keypoints: vec![[1.0, 2.0, 1.0, 1.0]],
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn views_within_the_window_are_one_instant_and_leave_when_complete() {
        let mut g = Instants::new(4 * MS, 300 * MS);
        assert_eq!(g.push(view(0, 1000 * MS), 0), Pushed::Waiting);
        assert_eq!(g.push(view(1, 1000 * MS + 3 * MS), MS), Pushed::Waiting);
        // Not yet complete: slot 2 is expected.
        assert!(g.ready(2 * MS, Some(&[0, 1, 2])).is_empty());
        // Negative control: outside the window is another instant.
        assert_eq!(g.push(view(2, 1000 * MS + 9 * MS), 3 * MS), Pushed::Waiting);
        assert!(g.ready(4 * MS, Some(&[0, 1, 2])).is_empty());
        assert_eq!(g.push(view(2, 1000 * MS + 1), 5 * MS), Pushed::Waiting);
        let out = g.ready(6 * MS, Some(&[0, 1, 2]));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].views.len(), 3);
        // The same slot twice in one instant is a duplicate.
        assert_eq!(
            g.push(view(2, 1000 * MS + 9 * MS), 7 * MS),
            Pushed::Duplicate
        );
    }

    #[test]
    fn an_instant_waits_its_time_then_leaves_incomplete_and_later_views_are_late() {
        let mut g = Instants::new(4 * MS, 300 * MS);
        g.push(view(0, 1000 * MS), 0);
        assert!(g.ready(299 * MS, Some(&[0, 1])).is_empty());
        let out = g.ready(300 * MS, Some(&[0, 1]));
        assert_eq!((out.len(), out[0].views.len()), (1, 1));
        assert_eq!(g.push(view(1, 1000 * MS), 301 * MS), Pushed::Late);
        assert_eq!(g.push(view(1, 1002 * MS), 301 * MS), Pushed::Late);
        // Negative control: a view of the next instant is not late.
        assert_eq!(g.push(view(1, 1008 * MS), 301 * MS), Pushed::Waiting);
    }

    #[test]
    fn instants_leave_in_capture_order_and_a_complete_one_settles_those_before() {
        let mut g = Instants::new(4 * MS, 300 * MS);
        // A box left instant 1000 out; instant 1008 arrives complete.
        g.push(view(1, 1008 * MS), 0);
        g.push(view(0, 1000 * MS), 0);
        g.push(view(0, 1008 * MS), MS);
        // While the cameras to expect are not known, nothing is complete.
        assert!(g.ready(2 * MS, None).is_empty());
        let out = g.ready(2 * MS, Some(&[0, 1]));
        let at: Vec<u64> = out.iter().map(|i| i.wall_ns / MS).collect();
        assert_eq!(at, [1000, 1008]);
        // Negative control: with the complete instant not yet in, the first one waits.
        let mut g = Instants::new(4 * MS, 300 * MS);
        g.push(view(0, 1000 * MS), 0);
        g.push(view(0, 1008 * MS), 0);
        assert!(g.ready(MS, Some(&[0, 1])).is_empty());
        assert_eq!(g.finish().len(), 2);
    }
}
