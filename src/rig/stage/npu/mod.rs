//! The NPU stage: one thread that takes frames from the camera queues,
//! preprocesses each straight into a job's input buffer, batches per graph,
//! submits with a bounded number of jobs in flight, switches graphs (by the
//! HailoRT scheduler, or by hand every K frames) and routes completions to
//! the decoder pool.
//!
//! Backpressure: the stage admits a frame only while fewer than the rig's
//! in-flight limit are past the camera queues and not yet decoded, and while
//! its graph's batch and jobs in flight have room. When the device or the
//! decoders cannot keep up, frames therefore wait in the camera queues, which
//! drop their oldest (counted by the capture threads), and never age in a
//! queue behind the slow stage: what is admitted is the newest frame there is.
//!
//! Routing: a completion goes to the decoder thread with the fewest frames
//! queued, except that a camera with a frame still in some thread's queue
//! stays with that thread, so each camera's views leave the pool in capture
//! order (the sync needs that) without one busy thread holding up the others.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Select, Sender, TryRecvError};

use crate::camera::Frame;
use crate::npu::{Bindings, ConfiguredModel, NpuError};
use crate::preprocess::Preprocessor;

use crate::geom::time::{thread_cpu_ns, Clock};
use crate::rig::stamp::{Stage, Stamps};
use crate::rig::stats::{DropStage, LiveStats};
use crate::rig::work::{DecodeWork, FrameMeta, Returned};

/// Longest the stage blocks when nothing is queued or batched (a safety
/// net: every event it waits for wakes it sooner).
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// How the graphs share the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switching {
    /// HailoRT's model scheduler switches (priority, threshold, timeout per graph).
    Scheduler,
    /// Scheduling NONE: the stage activates one graph at a time and switches after
    /// `frames_per_switch` frames when another graph has frames waiting.
    Manual { frames_per_switch: u64 },
}

/// One graph on the device and its batcher.
pub struct Lane {
    pub cm: ConfiguredModel,
    /// The HEF input the preprocessed frame is written into.
    pub input: String,
    /// Frames per submission.
    pub batch: usize,
    /// Longest a partial batch waits, ns.
    pub timeout_ns: u64,
    /// Most frames on the device at once.
    pub max_in_flight: usize,
    pending: Vec<(FrameMeta, Bindings)>,
    first_pending_ns: Option<u64>,
    last_frame_ns: u64,
    in_flight: HashMap<u64, FrameMeta>,
    spare: Vec<Bindings>,
    since_switch: u64,
}

impl Lane {
    pub fn new(
        cm: ConfiguredModel,
        input: String,
        batch: usize,
        timeout_ns: u64,
        max_in_flight: usize,
    ) -> Self {
        Self {
            cm,
            input,
            batch: batch.max(1),
            timeout_ns,
            max_in_flight: max_in_flight.max(batch.max(1)),
            pending: Vec::new(),
            first_pending_ns: None,
            last_frame_ns: 0,
            in_flight: HashMap::new(),
            spare: Vec::new(),
            since_switch: 0,
        }
    }

    fn has_room_for(&self, frames: usize) -> bool {
        self.pending.len() + frames <= self.batch
            && self.pending.len() + self.in_flight.len() + frames <= self.max_in_flight
    }
}

/// Everything the stage thread owns.
pub struct NpuStage {
    pub lanes: Vec<Lane>,
    /// Per camera: its preprocessor and its graph.
    pub preprocessors: Vec<Preprocessor>,
    pub camera_graph: Vec<usize>,
    pub cameras: Vec<Receiver<Frame>>,
    /// One queue per decoder thread; which one gets a frame is [`Routing`]'s choice.
    pub decode: Vec<Sender<DecodeWork>>,
    /// Buffers coming back from the decoders.
    pub recycle: Receiver<Returned>,
    pub switching: Switching,
    pub stats: Arc<LiveStats>,
    pub clock: Arc<dyn Clock>,
    /// Skip the decoder: completions go straight back (pipeline-only measurements).
    pub bypass: Option<Sender<crate::rig::work::ViewResult>>,
    /// Frames to record, after preprocessing.
    pub record: Option<Sender<crate::rig::stage::sinks::Item>>,
    /// Take one frame per camera at a time (cameras of one rate, this frame
    /// period in ns), waiting at most two periods for a silent camera.
    pub instant_sets: Option<u64>,
    /// Per camera: the frame taken from its queue for the set being formed.
    heads: Vec<Option<Frame>>,
    last_set_ns: u64,
    active: Option<usize>,
    closed: Vec<bool>,
    admission: Admission,
    routing: Routing,
    /// Whether decoder threads can still return buffers.
    recycle_open: bool,
}

/// Frames past the camera queues and not yet decoded, against a limit.
#[derive(Debug)]
struct Admission {
    limit: usize,
    held: usize,
}

impl Admission {
    fn has_room_for(&self, frames: usize) -> bool {
        self.held.saturating_add(frames) <= self.limit
    }

    fn release(&mut self) {
        self.held = self.held.saturating_sub(1);
    }
}

/// Which decoder thread gets the next completion.
#[derive(Debug)]
struct Routing {
    /// Per decoder thread: frames sent and not yet returned.
    queued: Vec<usize>,
    /// Per camera: the thread holding its frames, and how many.
    camera: Vec<Option<(usize, usize)>>,
}

impl Routing {
    fn new(workers: usize, cameras: usize) -> Self {
        Self {
            queued: vec![0; workers],
            camera: vec![None; cameras],
        }
    }

    /// The thread for camera `c`'s next frame (and counts it as sent).
    fn pick(&mut self, c: usize) -> usize {
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
    fn done(&mut self, w: usize, c: usize) {
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

impl NpuStage {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        lanes: Vec<Lane>,
        preprocessors: Vec<Preprocessor>,
        camera_graph: Vec<usize>,
        cameras: Vec<Receiver<Frame>>,
        decode: Vec<Sender<DecodeWork>>,
        recycle: Receiver<Returned>,
        switching: Switching,
        stats: Arc<LiveStats>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let n = cameras.len();
        let workers = decode.len();
        Self {
            lanes,
            preprocessors,
            camera_graph,
            cameras,
            decode,
            recycle,
            switching,
            stats,
            clock,
            bypass: None,
            record: None,
            instant_sets: None,
            heads: (0..n).map(|_| None).collect(),
            last_set_ns: 0,
            active: None,
            closed: vec![false; n],
            // No limit until `set_in_flight_limit` (the rig's `decoder.in_flight`).
            admission: Admission {
                limit: usize::MAX,
                held: 0,
            },
            routing: Routing::new(workers, n),
            recycle_open: true,
        }
    }

    /// Most frames past the camera queues and not yet decoded (at least one
    /// per camera, so an instant always fits).
    pub fn set_in_flight_limit(&mut self, limit: usize) {
        self.admission.limit = limit.max(self.cameras.len()).max(1);
    }

    /// Runs until every camera queue is closed and empty and every frame has left
    /// the device; returns the error that stopped it early, if any.
    ///
    /// # Errors
    /// A device error on activate/deactivate (manual switching).
    pub fn run(mut self) -> Result<(), NpuError> {
        let cpu0 = thread_cpu_ns();
        let out = self.run_loop();
        self.stats.cpu.npu_stage.fetch_add(
            thread_cpu_ns().saturating_sub(cpu0),
            std::sync::atomic::Ordering::Relaxed,
        );
        // A failed run leaves frames behind: count them so the accounting stays whole.
        for (c, head) in self.heads.iter_mut().enumerate() {
            if head.take().is_some() {
                self.stats.cameras[c].drop_at(DropStage::Npu);
            }
        }
        for lane in &mut self.lanes {
            for (meta, _) in lane.pending.drain(..) {
                self.stats.cameras[meta.camera].drop_at(DropStage::Npu);
            }
            for (_, meta) in lane.in_flight.drain() {
                self.stats.cameras[meta.camera].drop_at(DropStage::Npu);
            }
        }
        out
    }

    fn run_loop(&mut self) -> Result<(), NpuError> {
        loop {
            self.take_recycled();
            self.take_frames();
            self.take_completions();
            self.switch()?;
            let all_closed = self.closed.iter().all(|&c| c);
            self.submit(all_closed);
            if all_closed
                && self
                    .lanes
                    .iter()
                    .all(|l| l.pending.is_empty() && l.in_flight.is_empty())
            {
                return Ok(());
            }
            let cpu0 = thread_cpu_ns();
            self.wait(all_closed);
            self.stats.cpu.npu_wait.fetch_add(
                thread_cpu_ns().saturating_sub(cpu0),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }

    fn take_recycled(&mut self) {
        loop {
            match self.recycle.try_recv() {
                Ok(r) => {
                    self.admission.release();
                    self.routing.done(r.worker, r.camera);
                    if let Some(lane) = self.lanes.get_mut(r.graph) {
                        lane.spare.push(r.bindings);
                    }
                }
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Disconnected) => {
                    // No decoder thread (pipeline-only runs): nothing will come back.
                    self.recycle_open = false;
                    return;
                }
            }
        }
    }

    /// Room for `frames` more frames of graph `g`.
    fn has_room(&self, g: usize, frames: usize) -> bool {
        self.admission.has_room_for(frames) && self.lanes[g].has_room_for(frames)
    }

    /// Takes every frame waiting in a camera queue whose graph has room.
    fn take_frames(&mut self) {
        if let Some(period_ns) = self.instant_sets {
            return self.take_sets(period_ns);
        }
        for c in 0..self.cameras.len() {
            while !self.closed[c] && self.has_room(self.camera_graph[c], 1) {
                match self.cameras[c].try_recv() {
                    Ok(frame) => self.accept(c, frame),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => self.closed[c] = true,
                }
            }
        }
    }

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
    /// instant, or when one has been silent for two periods.
    fn take_sets(&mut self, period_ns: u64) {
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
            self.align_heads(period_ns / 2);
            let now = self.clock.now_ns();
            let ready = self.open_cameras().all(|c| self.heads[c].is_some());
            let stalled = now.saturating_sub(self.last_set_ns) >= 2 * period_ns
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

    fn accept(&mut self, c: usize, frame: Frame) {
        let now = self.clock.now_ns();
        self.stats.cameras[c]
            .taken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let g = self.camera_graph[c];
        let lane = &mut self.lanes[g];
        let mut stamps = Stamps::new(frame.capture_ns);
        stamps.leave(Stage::Capture, now.max(frame.capture_ns));
        let bindings = match lane.spare.pop() {
            Some(b) => Ok(b),
            None => lane.cm.bindings(),
        };
        let mut bindings = match bindings {
            Ok(b) => b,
            Err(e) => {
                log::warn!("graph {}: no buffers for a frame: {e}", lane.cm.name());
                self.stats.cameras[c].drop_at(DropStage::Npu);
                return;
            }
        };
        let cpu0 = thread_cpu_ns();
        let transform = match bindings.input_mut(&lane.input) {
            Ok(buf) => self.preprocessors[c]
                .run_into(&frame, buf)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        self.stats.cpu.preprocess.fetch_add(
            thread_cpu_ns().saturating_sub(cpu0),
            std::sync::atomic::Ordering::Relaxed,
        );
        let transform = match transform {
            Ok(t) => t,
            Err(e) => {
                log::warn!("camera {c}: frame {} refused: {e}", frame.sequence);
                self.stats.cameras[c].drop_at(DropStage::Preprocess);
                lane.spare.push(bindings);
                return;
            }
        };
        stamps.leave(Stage::Preprocess, self.clock.now_ns());
        let meta = FrameMeta {
            camera: c,
            graph: g,
            sequence: frame.sequence,
            stamps,
            transform,
            truth: frame.truth.clone(),
        };
        if lane.pending.is_empty() {
            lane.first_pending_ns = Some(now);
        }
        lane.last_frame_ns = now;
        lane.pending.push((meta, bindings));
        self.admission.held += 1;
        if let Some(r) = &self.record {
            // Blocks while the recorder is behind: recording is lossless.
            let _ = r.send(crate::rig::stage::sinks::Item::Frame(frame));
        }
    }

    fn take_completions(&mut self) {
        for g in 0..self.lanes.len() {
            while let Ok(done) = self.lanes[g].cm.completions().try_recv() {
                let lane = &mut self.lanes[g];
                let Some(mut meta) = lane.in_flight.remove(&done.job) else {
                    log::warn!(
                        "graph {}: completion of unknown job {}",
                        lane.cm.name(),
                        done.job
                    );
                    continue;
                };
                self.stats.graphs[g]
                    .completed
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if let Err(e) = done.status {
                    log::warn!("graph {}: job {} failed: {e}", lane.cm.name(), done.job);
                    self.stats.cameras[meta.camera].drop_at(DropStage::Npu);
                    lane.spare.push(done.bindings);
                    self.admission.release();
                    continue;
                }
                meta.stamps.leave(Stage::Npu, self.clock.now_ns());
                if let Some(bypass) = &self.bypass {
                    lane.spare.push(done.bindings);
                    self.admission.release();
                    let _ = bypass.send(crate::rig::work::ViewResult {
                        meta,
                        detection: None,
                    });
                    continue;
                }
                let camera = meta.camera;
                let worker = self.routing.pick(camera);
                let work = DecodeWork {
                    meta,
                    bindings: done.bindings,
                };
                // Never blocks: a decoder queue holds as many frames as may be
                // in flight.
                let sent = match self.decode.get(worker) {
                    Some(tx) => tx.send(work).map_err(|failed| failed.0),
                    None => Err(work),
                };
                if let Err(work) = sent {
                    self.stats.cameras[camera].drop_at(DropStage::Decode);
                    lane.spare.push(work.bindings);
                    self.routing.done(worker, camera);
                    self.admission.release();
                }
            }
        }
    }

    /// Manual switching: after K frames of the active graph, or when it has had
    /// no frame for its timeout (or its cameras are closed), hand the device to
    /// the next graph with frames waiting, once the active one is idle.
    fn switch(&mut self) -> Result<(), NpuError> {
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

    /// Submits full batches, and partial ones past their timeout or when flushing.
    fn submit(&mut self, flush: bool) {
        let now = self.clock.now_ns();
        let manual = matches!(self.switching, Switching::Manual { .. });
        let k = match self.switching {
            Switching::Manual { frames_per_switch } => frames_per_switch,
            Switching::Scheduler => u64::MAX,
        };
        for g in 0..self.lanes.len() {
            if manual && self.active != Some(g) {
                continue;
            }
            let lane = &mut self.lanes[g];
            if lane.pending.is_empty() || (manual && lane.since_switch >= k) {
                continue;
            }
            let due = lane
                .first_pending_ns
                .is_some_and(|t| now.saturating_sub(t) >= lane.timeout_ns);
            if !(lane.pending.len() >= lane.batch || due || flush) {
                continue;
            }
            self.stats.graphs[g]
                .batches
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let take = if manual {
                (k - lane.since_switch).min(lane.pending.len() as u64) as usize
            } else {
                lane.pending.len()
            };
            // Drained in place: the batcher keeps its capacity across batches.
            lane.first_pending_ns = (lane.pending.len() > take).then_some(now);
            for (mut meta, bindings) in lane.pending.drain(..take) {
                meta.stamps.leave(Stage::Queue, now);
                match lane.cm.submit(bindings) {
                    Ok(job) => {
                        lane.in_flight.insert(job, meta);
                        lane.since_switch += 1;
                        self.stats.graphs[g]
                            .submitted
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(e) => {
                        log::warn!("graph {}: submit failed: {e}", lane.cm.name());
                        self.stats.cameras[meta.camera].drop_at(DropStage::Npu);
                        self.admission.release();
                    }
                }
            }
        }
    }

    /// Sleeps until a frame, a completion or a batch deadline can move something.
    ///
    /// With every camera queue empty and nothing batched, no deadline is
    /// running: only a frame, a completion or a closing queue can move
    /// anything, and each of those wakes the select. The stage then blocks
    /// up to [`IDLE_WAIT`] instead of polling every 5 ms, which between two
    /// frame instants (8.3 ms at 120 fps) was one wake-up per instant for
    /// nothing.
    fn wait(&mut self, all_closed: bool) {
        let now = self.clock.now_ns();
        let idle = self.lanes.iter().all(|l| l.pending.is_empty())
            && self.cameras.iter().all(|c| c.is_empty())
            && self.heads.iter().all(Option::is_none);
        let mut timeout = if all_closed {
            Duration::from_millis(1)
        } else if idle {
            IDLE_WAIT
        } else {
            Duration::from_millis(5)
        };
        for lane in &self.lanes {
            if let Some(t) = lane.first_pending_ns {
                let left = (t + lane.timeout_ns).saturating_sub(now);
                timeout = timeout.min(Duration::from_nanos(left.max(50_000)));
            }
        }
        let mut sel = Select::new();
        let mut any = false;
        for c in 0..self.cameras.len() {
            // Taking sets, a camera with a head or a frame queued waits for the others.
            let waits = self.instant_sets.is_some()
                && (self.heads[c].is_some() || !self.cameras[c].is_empty());
            if !self.closed[c] && !waits && self.has_room(self.camera_graph[c], 1) {
                sel.recv(&self.cameras[c]);
                any = true;
            }
        }
        for lane in &self.lanes {
            if !lane.in_flight.is_empty() {
                sel.recv(lane.cm.completions());
                any = true;
            }
        }
        if self.admission.held > 0 && self.recycle_open {
            // A decoded frame frees a slot (and its buffers). (A closed
            // channel would be always ready: the wait would spin.)
            sel.recv(&self.recycle);
            any = true;
        }
        if !any {
            std::thread::sleep(timeout.min(Duration::from_micros(200)));
            return;
        }
        // Only wakes; the next round takes what is ready.
        let _ = sel.ready_timeout(timeout);
    }
}

#[cfg(test)]
mod tests {
    use super::{Admission, Routing};

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

    #[test]
    fn admission_stops_at_its_limit() {
        let mut a = Admission { limit: 4, held: 0 };
        assert!(a.has_room_for(4));
        a.held = 3;
        assert!(a.has_room_for(1));
        assert!(!a.has_room_for(2));
        a.release();
        assert!(a.has_room_for(2));
        a.held = 0;
        a.release();
        assert_eq!(a.held, 0);
    }
}
