//! Grouping frames of several cameras by capture time.
//!
//! UVC cameras have no shared trigger, so sync is done in software, the way
//! ROS `message_filters` ApproximateTime does: one camera is the anchor (by
//! default the slowest), and for each anchor frame every other camera
//! contributes its frame nearest in time, if one lies within that camera's
//! tolerance (by default half its own frame period, so with no drops and
//! moderate jitter exactly the right frame matches). A group with a camera
//! missing is emitted anyway, marked incomplete and counted; frames of faster
//! cameras that fall between anchors are counted as unused.
//!
//! A group is emitted as soon as no later frame could change it. ApproximateTime
//! waits for each camera's *next* frame to rule out a nearer one, which costs
//! every group up to a frame period of latency. Here a camera's frames are taken
//! to be at least half its nominal period apart (a camera delivering faster
//! than twice its configured rate is misconfigured), so a frame at or after the
//! anchor, or one a quarter period before it, already settles that camera, and
//! a group of synchronised cameras leaves with its last view.

use std::collections::VecDeque;

use crate::camera::frame::Frame;

/// Something with a camera index and a capture time.
pub trait Stamped {
    /// Index of the camera (0-based, dense).
    fn camera_index(&self) -> usize;
    /// Capture time, ns on one clock shared by all cameras.
    fn capture_ns(&self) -> u64;
}

impl Stamped for Frame {
    fn camera_index(&self) -> usize {
        self.camera.0 as usize
    }
    fn capture_ns(&self) -> u64 {
        self.capture_ns
    }
}

/// How to group.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncConfig {
    /// Nominal frame period of each camera, ns.
    pub periods_ns: Vec<u64>,
    /// One tolerance for all cameras; `None` = half of each camera's period.
    pub tolerance_ns: Option<u64>,
    /// The camera whose frames define groups; `None` = the slowest.
    pub anchor: Option<usize>,
    /// A camera from which nothing has arrived for this long, while others
    /// deliver, counts as missing until it delivers again (so an unplugged camera
    /// does not stall the others); `None` = 4 slowest periods. Live pipelines,
    /// whose cameras' views arrive skewed by their processing, need more.
    pub stall_ns: Option<u64>,
}

impl SyncConfig {
    /// Defaults for cameras running at these rates (fps).
    pub fn for_rates(fps: &[f64]) -> Self {
        Self {
            periods_ns: fps.iter().map(|f| (1e9 / f.max(1e-3)) as u64).collect(),
            tolerance_ns: None,
            anchor: None,
            stall_ns: None,
        }
    }
}

/// Frames of one instant, one slot per camera.
#[derive(Debug)]
pub struct Group<T> {
    /// Capture time of the anchor frame.
    pub anchor_ns: u64,
    pub members: Vec<Option<T>>,
}

impl<T> Group<T> {
    /// Whether every camera contributed.
    pub fn is_complete(&self) -> bool {
        self.members.iter().all(Option::is_some)
    }
}

/// Counters of a synchronizer.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyncStats {
    pub complete: u64,
    pub incomplete: u64,
    /// Per camera: groups it was missing from (anchor gaps count for the anchor).
    pub missing: Vec<u64>,
    /// Per camera: frames no group used (expected for cameras faster than the anchor).
    pub unused: Vec<u64>,
}

/// Streaming grouper; push frames as they arrive, take groups as they resolve.
#[derive(Debug)]
pub struct Synchronizer<T> {
    anchor: usize,
    tolerance: Vec<u64>,
    /// Per camera: the least time between two of its frames (half its period).
    min_gap: Vec<u64>,
    anchor_period: u64,
    stall: u64,
    queues: Vec<VecDeque<T>>,
    latest: Vec<Option<u64>>,
    /// Per camera: when its latest frame arrived (see [`Synchronizer::push_at`]).
    arrived: Vec<Option<u64>>,
    /// When the first frame of any camera arrived.
    first_arrival: Option<u64>,
    /// When the latest frame of any camera arrived.
    last_arrival: u64,
    last_anchor: Option<u64>,
    stats: SyncStats,
}

impl<T: Stamped> Synchronizer<T> {
    /// A synchronizer for `config.periods_ns.len()` cameras.
    ///
    /// # Panics
    /// If no camera is configured or the anchor index is out of range
    /// (both are programming errors, validated with the rig).
    pub fn new(config: &SyncConfig) -> Self {
        let n = config.periods_ns.len();
        assert!(n > 0, "synchronizer needs at least one camera");
        let anchor = config.anchor.unwrap_or_else(|| {
            (0..n)
                .max_by_key(|&i| (config.periods_ns[i], std::cmp::Reverse(i)))
                .unwrap_or(0)
        });
        assert!(anchor < n, "anchor camera {anchor} of {n}");
        let tolerance = config
            .periods_ns
            .iter()
            .map(|p| config.tolerance_ns.unwrap_or(p / 2))
            .collect();
        let slowest = config.periods_ns.iter().copied().max().unwrap_or(0);
        Self {
            anchor,
            tolerance,
            min_gap: config.periods_ns.iter().map(|p| p / 2).collect(),
            anchor_period: config.periods_ns[anchor],
            stall: config.stall_ns.unwrap_or(4 * slowest),
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            latest: vec![None; n],
            arrived: vec![None; n],
            first_arrival: None,
            last_arrival: 0,
            last_anchor: None,
            stats: SyncStats {
                missing: vec![0; n],
                unused: vec![0; n],
                ..Default::default()
            },
        }
    }

    /// The anchor camera.
    pub fn anchor(&self) -> usize {
        self.anchor
    }

    /// Counters so far.
    pub fn stats(&self) -> &SyncStats {
        &self.stats
    }

    /// Adds one frame of a recorded or simulated stream, taking its capture
    /// time as its arrival time; see [`Synchronizer::push_at`].
    pub fn push(&mut self, item: T) -> Vec<Group<T>> {
        let t = item.capture_ns();
        self.push_at(item, t)
    }

    /// Adds one frame that arrived at `arrival_ns` (on any clock that only
    /// moves forward) and returns the groups it resolved, oldest first.
    ///
    /// A live pipeline passes its own clock: a camera counts as silent when
    /// nothing has *arrived* from it for the stall time, however far the other
    /// cameras' capture stamps have moved meanwhile, so views that are merely
    /// late (queued behind other views in a decoder) are waited for.
    ///
    /// Frames of one camera must arrive in capture order; a frame from an
    /// unknown camera index is counted as unused and dropped.
    pub fn push_at(&mut self, item: T, arrival_ns: u64) -> Vec<Group<T>> {
        let c = item.camera_index();
        if c >= self.queues.len() {
            log::warn!(
                "sync: frame from camera {c}, only {} configured",
                self.queues.len()
            );
            return Vec::new();
        }
        let t = item.capture_ns();
        self.latest[c] = Some(self.latest[c].map_or(t, |l| l.max(t)));
        self.arrived[c] = Some(arrival_ns);
        self.first_arrival.get_or_insert(arrival_ns);
        self.last_arrival = self.last_arrival.max(arrival_ns);
        self.queues[c].push_back(item);
        self.resolve(false)
    }

    /// Resolves everything still buffered (end of stream).
    pub fn finish(&mut self) -> Vec<Group<T>> {
        let groups = self.resolve(true);
        for (c, q) in self.queues.iter_mut().enumerate() {
            self.stats.unused[c] += q.len() as u64;
            q.clear();
        }
        groups
    }

    fn resolve(&mut self, flush: bool) -> Vec<Group<T>> {
        let mut out = Vec::new();
        while let Some(t) = self.queues[self.anchor].front().map(Stamped::capture_ns) {
            let decidable = (0..self.queues.len())
                .all(|c| c == self.anchor || flush || self.silent(c) || self.settled(c, t));
            if !decidable {
                break;
            }
            self.count_anchor_gap(t);
            let mut members = Vec::with_capacity(self.queues.len());
            for c in 0..self.queues.len() {
                if c == self.anchor {
                    members.push(self.queues[c].pop_front());
                } else {
                    members.push(self.take_nearest(c, t));
                }
            }
            let group = Group {
                anchor_ns: t,
                members,
            };
            if group.is_complete() {
                self.stats.complete += 1;
            } else {
                self.stats.incomplete += 1;
                for (c, m) in group.members.iter().enumerate() {
                    if m.is_none() {
                        self.stats.missing[c] += 1;
                    }
                }
            }
            out.push(group);
        }
        out
    }

    /// Whether nothing has arrived from camera `c` for the stall time while
    /// others delivered.
    fn silent(&self, c: usize) -> bool {
        let since = self.arrived[c].or(self.first_arrival).unwrap_or(u64::MAX);
        self.last_arrival > since.saturating_add(self.stall)
    }

    /// Whether camera `c`'s member for anchor time `t` is known: no frame it
    /// can still deliver would be nearer to `t` than the best one queued, or,
    /// with none queued within tolerance, could fall within it.
    fn settled(&self, c: usize, t: u64) -> bool {
        let Some(latest) = self.latest[c] else {
            return false;
        };
        // Its next frame comes at least `min_gap` after its latest one.
        let next = latest + self.min_gap[c];
        let nearest_future = next.saturating_sub(t);
        match self.nearest(c, t) {
            Some((_, d)) => d <= nearest_future,
            None => nearest_future > self.tolerance[c],
        }
    }

    /// Camera `c`'s queued frame nearest to `t` within its tolerance (the
    /// first of equals): its index in the queue and its distance from `t`.
    fn nearest(&self, c: usize, t: u64) -> Option<(usize, u64)> {
        let tol = self.tolerance[c];
        self.queues[c]
            .iter()
            .enumerate()
            .map(|(i, f)| (i, f.capture_ns().abs_diff(t)))
            .filter(|&(_, d)| d <= tol)
            .min_by_key(|&(_, d)| d)
    }

    /// Anchor frames missing since the last one count as incomplete groups.
    fn count_anchor_gap(&mut self, t: u64) {
        if let Some(last) = self.last_anchor {
            let p = self.anchor_period.max(1);
            let missed = (t.saturating_sub(last) + p / 2) / p;
            if missed > 1 {
                self.stats.incomplete += missed - 1;
                self.stats.missing[self.anchor] += missed - 1;
            }
        }
        self.last_anchor = Some(t);
    }

    /// Removes and returns camera `c`'s frame nearest to `t` within tolerance,
    /// discarding (as unused) the frames before it.
    fn take_nearest(&mut self, c: usize, t: u64) -> Option<T> {
        let tol = self.tolerance[c];
        let best = self.nearest(c, t);
        let q = &mut self.queues[c];
        match best {
            Some((i, _)) => {
                self.stats.unused[c] += i as u64;
                q.drain(..i);
                q.pop_front()
            }
            None => {
                // Frames too old for this and any later anchor are of no use.
                let stale = q.iter().take_while(|f| f.capture_ns() + tol < t).count();
                self.stats.unused[c] += stale as u64;
                q.drain(..stale);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    struct F {
        cam: usize,
        ns: u64,
        /// Index of the anchor tick this frame belongs to, when it lies on one.
        tick: Option<u64>,
    }

    impl Stamped for F {
        fn camera_index(&self) -> usize {
            self.cam
        }
        fn capture_ns(&self) -> u64 {
            self.ns
        }
    }

    /// Deterministic pseudo-random numbers in [0, 1).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    const FPS: [f64; 4] = [30.0, 30.0, 60.0, 120.0];
    // The anchor jitters too, so |stamp difference| stays below each tolerance only if
    // the sum of both jitters does (1.0 + 1.5 < 4.17 ms for the 120 fps camera).
    const JITTER_MS: [f64; 4] = [1.0, 3.0, 2.0, 1.5];

    /// Frames of four cameras over `secs`, merged in arrival order, plus which were dropped.
    fn scenario(secs: f64, drop_p: f64) -> (Vec<F>, Vec<Vec<bool>>) {
        let mut rng = Lcg(7);
        let mut frames = Vec::new();
        let mut dropped = vec![Vec::new(); 4];
        for (cam, fps) in FPS.iter().enumerate() {
            let per_tick = (fps / 30.0) as u64;
            let n = (secs * fps) as u64;
            for k in 0..n {
                let ideal = 1e9 + k as f64 * 1e9 / fps;
                let jitter = (rng.next() * 2.0 - 1.0) * JITTER_MS[cam] * 1e6;
                let tick = (k % per_tick == 0).then_some(k / per_tick);
                let drop = rng.next() < drop_p;
                if tick.is_some() {
                    dropped[cam].push(drop);
                }
                if !drop {
                    frames.push(F {
                        cam,
                        ns: (ideal + jitter) as u64,
                        tick,
                    });
                }
            }
        }
        // Arrival order: by capture time plus a per-camera transport delay.
        frames.sort_by_key(|f| f.ns + f.cam as u64 * 2_000_000);
        (frames, dropped)
    }

    fn run(frames: &[F], config: &SyncConfig) -> (Vec<Group<F>>, SyncStats) {
        let mut sync = Synchronizer::new(config);
        let mut groups = Vec::new();
        for f in frames {
            groups.extend(sync.push(*f));
        }
        groups.extend(sync.finish());
        (groups, sync.stats().clone())
    }

    #[test]
    fn jittered_and_dropped_frames_group_exactly() {
        let (frames, dropped) = scenario(5.0, 0.05);
        let config = SyncConfig::for_rates(&FPS);
        let (groups, stats) = run(&frames, &config);
        let ticks = dropped[0].len() as u64;
        // Every anchor tick is accounted for, as a group or as an anchor gap.
        let anchor_drops = dropped[0].iter().filter(|&&d| d).count() as u64;
        assert_eq!(groups.len() as u64 + anchor_drops, ticks);
        let mut expect_incomplete = 0;
        for g in &groups {
            let tick = g.members[0].unwrap().tick.unwrap();
            let mut complete = true;
            for (cam, drops) in dropped.iter().enumerate().skip(1) {
                let was_dropped = drops[tick as usize];
                match g.members[cam] {
                    Some(f) => {
                        assert!(!was_dropped);
                        assert_eq!(f.tick, Some(tick), "cam {cam} matched the wrong frame");
                    }
                    None => {
                        assert!(was_dropped, "cam {cam} tick {tick} missing though captured");
                        complete = false;
                    }
                }
            }
            expect_incomplete += u64::from(!complete);
        }
        // Anchor drops after the first frame are incomplete groups too.
        let interior_anchor_drops = dropped[0].iter().skip(1).filter(|&&d| d).count() as u64
            - dropped[0].iter().rev().take_while(|&&d| d).count() as u64;
        assert_eq!(stats.incomplete, expect_incomplete + interior_anchor_drops);
        assert_eq!(stats.complete, groups.len() as u64 - expect_incomplete);
        assert!(stats.incomplete > 5 && stats.complete > 100, "{stats:?}");
        // The 120 fps camera contributes one frame in four.
        assert!(stats.unused[3] > 3 * stats.complete);
    }

    #[test]
    fn too_tight_a_tolerance_misses_frames() {
        // Negative control: the same stream with a 0.2 ms tolerance cannot group.
        let (frames, _) = scenario(2.0, 0.0);
        let mut config = SyncConfig::for_rates(&FPS);
        let (_, loose) = run(&frames, &config);
        assert_eq!(loose.incomplete, 0);
        config.tolerance_ns = Some(200_000);
        let (_, tight) = run(&frames, &config);
        assert!(tight.incomplete > tight.complete, "{tight:?}");
    }

    /// Pushes instant `k` of three 30 fps cameras, camera 2 stamped `offset_ms`
    /// after the others; returns the anchor times of the groups that resolved.
    fn push_instant(sync: &mut Synchronizer<F>, k: u64, offset_ms: f64) -> Vec<u64> {
        let t = 1_000_000_000 + k * 33_333_333;
        let mut out = Vec::new();
        for cam in [2, 1, 0] {
            let ns = if cam == 2 {
                (t as f64 + offset_ms * 1e6) as u64
            } else {
                t
            };
            let groups = sync.push(F {
                cam,
                ns,
                tick: None,
            });
            out.extend(groups.iter().map(|g| g.anchor_ns));
        }
        out
    }

    #[test]
    fn a_group_leaves_with_its_last_view() {
        // Synchronised cameras, and one stamped 5 ms (0.15 periods) early or late:
        // no later frame can be nearer, so each group leaves with its own instant.
        for offset in [0.0, -5.0, 12.0] {
            let mut sync = Synchronizer::new(&SyncConfig::for_rates(&[30.0; 3]));
            for k in 0..10 {
                let got = push_instant(&mut sync, k, offset);
                assert_eq!(got, vec![1_000_000_000 + k * 33_333_333], "offset {offset}");
            }
            assert_eq!(sync.stats().complete, 10);
        }
    }

    #[test]
    fn a_frame_well_before_the_anchor_waits_for_the_next_one() {
        // Negative control: 12 ms (0.36 periods) early, the next frame of that
        // camera might be nearer, so the group waits for it; the early frame is
        // still the one chosen.
        let mut sync = Synchronizer::new(&SyncConfig::for_rates(&[30.0; 3]));
        assert!(push_instant(&mut sync, 0, -12.0).is_empty());
        let t0 = 1_000_000_000;
        let mut groups = Vec::new();
        groups.extend(sync.push(F {
            cam: 2,
            ns: t0 + 33_333_333 - 12_000_000,
            tick: None,
        }));
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].anchor_ns, t0);
        assert_eq!(groups[0].members[2].unwrap().ns, t0 - 12_000_000);
    }

    /// Three 120 fps cameras, camera 2's views arriving 150 ms (18 periods)
    /// after capture, the others' at once, as a live pipeline can skew them;
    /// camera 2 stops after `until` instants. Returns each frame with its
    /// arrival time, in arrival order.
    fn skewed(instants: u64, until: u64) -> Vec<(F, u64)> {
        let period = 8_333_333;
        let mut frames = Vec::new();
        for k in 0..instants {
            let t = 1_000_000_000 + k * period;
            for cam in 0..3 {
                if cam == 2 && k >= until {
                    continue;
                }
                let arrival = if cam == 2 { t + 150_000_000 } else { t };
                frames.push((
                    F {
                        cam,
                        ns: t,
                        tick: Some(k),
                    },
                    arrival,
                ));
            }
        }
        frames.sort_by_key(|&(f, a)| (a, f.cam));
        frames
    }

    #[test]
    fn late_views_are_waited_for_and_a_silent_camera_is_not() {
        // A stall time of 100 ms, as a pipeline would set it above its cameras'
        // usual gaps between arrivals (8 ms here) but not above this skew.
        let config = SyncConfig {
            stall_ns: Some(100_000_000),
            ..SyncConfig::for_rates(&[120.0; 3])
        };
        let mut sync = Synchronizer::new(&config);
        let mut groups = Vec::new();
        for (f, arrival) in skewed(110, 60) {
            groups.extend(sync.push_at(f, arrival));
        }
        // Until camera 2's first view arrives (150 ms in) it is silent, and the
        // groups that resolve meanwhile go without it. After that every
        // instant it captured is grouped whole, however far the others' stamps
        // ran ahead meanwhile.
        for g in &groups {
            let tick = g.members[0].unwrap().tick.unwrap();
            if (20..60).contains(&tick) {
                assert!(g.members[2].is_some(), "tick {tick}");
            }
        }
        let unused = sync.stats().unused[2];
        assert!(unused <= 20, "{unused} views of camera 2 unused");
        // Once nothing arrives from it for the stall time, camera 2 no longer
        // holds the groups up.
        assert!(groups.len() >= 95, "{} groups", groups.len());
        // Negative control: with capture stamps as arrival times (a recorded
        // stream's view), camera 2 looks silent whenever the others run more
        // than the stall time ahead, and its frames go unused.
        let mut offline = Synchronizer::new(&config);
        for (f, _) in skewed(110, 60) {
            offline.push(f);
        }
        assert!(offline.stats().unused[2] > 40, "{:?}", offline.stats());
    }

    #[test]
    fn a_silent_camera_does_not_stall_the_others() {
        let (frames, _) = scenario(2.0, 0.0);
        // Camera 1 is unplugged after 0.5 s.
        let frames: Vec<F> = frames
            .into_iter()
            .filter(|f| f.cam != 1 || f.ns < 1_500_000_000)
            .collect();
        let mut sync = Synchronizer::new(&SyncConfig::for_rates(&FPS));
        let mut groups = Vec::new();
        for f in &frames {
            groups.extend(sync.push(*f));
        }
        // Without finish(): groups keep coming while camera 1 is silent.
        let last = groups.last().unwrap().anchor_ns;
        assert!(last > 2_800_000_000, "stalled at {last}");
        assert!(sync.stats().missing[1] > 30);
        assert_eq!(sync.stats().missing[2], 0);
    }
}
