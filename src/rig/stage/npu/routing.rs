//! Which decoder thread decodes a completion.
//!
//! A completion goes to the decoder thread with the fewest frames queued,
//! except that a camera with a frame still in some thread's queue stays with
//! that thread, so each camera's views leave the pool in capture order (the
//! sync needs that) without one busy thread holding up the others.

/// Which decoder thread gets the next completion.
#[derive(Debug)]
pub(super) struct Routing {
    /// Per decoder thread: frames sent and not yet returned.
    queued: Vec<usize>,
    /// Per camera: the thread holding its frames, and how many.
    camera: Vec<Option<(usize, usize)>>,
}

impl Routing {
    pub(super) fn new(workers: usize, cameras: usize) -> Self {
        Self {
            queued: vec![0; workers],
            camera: vec![None; cameras],
        }
    }

    /// The thread for camera `c`'s next frame (and counts it as sent).
    pub(super) fn pick(&mut self, c: usize) -> usize {
        let w = match self.camera[c] {
            Some((w, _)) => w,
            None => (0..self.queued.len())
                .min_by_key(|&w| self.queued[w])
                .unwrap_or(0),
        };
        if let Some(q) = self.queued.get_mut(w) {
            *q += 1;
        }
        let held = self.camera[c].map_or(0, |(_, n)| n);
        self.camera[c] = Some((w, held + 1));
        w
    }

    /// Thread `w` is done with (or never got) one frame of camera `c`.
    pub(super) fn done(&mut self, w: usize, c: usize) {
        if let Some(q) = self.queued.get_mut(w) {
            *q = q.saturating_sub(1);
        }
        if let Some(slot) = self.camera.get_mut(c) {
            *slot = match *slot {
                Some((w, n)) if n > 1 => Some((w, n - 1)),
                _ => None,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Routing;

    #[test]
    fn a_camera_stays_with_its_thread_while_it_has_frames_there() {
        let mut r = Routing::new(2, 3);
        let first = r.pick(0);
        // Camera 0 again: same thread, although the other one is idle.
        assert_eq!(r.pick(0), first);
        // Camera 1 has nothing queued: the least loaded thread.
        let other = r.pick(1);
        assert_ne!(other, first);
        assert_eq!(r.queued, {
            let mut q = vec![0, 0];
            q[first] = 2;
            q[other] = 1;
            q
        });
        r.done(first, 0);
        assert_eq!(r.pick(0), first, "one frame of camera 0 is still there");
        r.done(first, 0);
        r.done(first, 0);
        // Camera 0 has left its thread: it may move to the idle one.
        r.done(other, 1);
        r.pick(2);
        let next = r.pick(0);
        assert_ne!(next, r.camera[2].unwrap().0, "{:?}", r.queued);
    }

    /// Feeds 4 cameras an instant every 4 time units to 2 decoder threads;
    /// frames of cameras 1 and 3 cost 3 units, of 0 and 2 one unit, so the
    /// load is exactly two threads' worth. Returns the largest backlog (units
    /// of work queued on one thread) seen.
    fn largest_backlog(mut pick: impl FnMut(&mut Routing, usize) -> usize) -> u32 {
        let cost = [1u32, 3, 1, 3];
        let mut r = Routing::new(2, 4);
        // Per thread: (camera, units left) in FIFO order.
        let mut queues: [std::collections::VecDeque<(usize, u32)>; 2] = Default::default();
        let mut worst = 0;
        for _instant in 0..200 {
            for (c, &units) in cost.iter().enumerate() {
                let w = pick(&mut r, c);
                queues[w].push_back((c, units));
            }
            for q in &queues {
                worst = worst.max(q.iter().map(|&(_, u)| u).sum::<u32>());
            }
            // Four units of time pass.
            for (w, q) in queues.iter_mut().enumerate() {
                let mut time = 4;
                while time > 0 {
                    let Some(front) = q.front_mut() else { break };
                    let step = front.1.min(time);
                    front.1 -= step;
                    time -= step;
                    if front.1 == 0 {
                        let (c, _) = q.pop_front().unwrap();
                        r.done(w, c);
                    }
                }
            }
        }
        worst
    }

    #[test]
    fn routing_balances_where_cameras_fixed_to_threads_fall_behind() {
        let balanced = largest_backlog(Routing::pick);
        // Negative control: camera % threads, as a fixed split would route.
        let fixed = largest_backlog(|r, c| {
            let w = c % 2;
            r.queued[w] += 1;
            w
        });
        assert!(balanced <= 8, "balanced routing backlog grew to {balanced}");
        assert!(fixed > 100, "the fixed split kept up ({fixed})");
    }
}
