//! The NPU stage: one thread that takes frames from the camera queues,
//! preprocesses each straight into a job's input buffer, batches per graph,
//! submits with a bounded number of jobs in flight, switches graphs (by the
//! HailoRT scheduler, or by hand every K frames) and routes completions to
//! the decoder pool.
//!
//! | concern | module |
//! |---|---|
//! | which frames may leave the camera queues | `admission` |
//! | cameras of one rate taken instant by instant | `sets` |
//! | per-graph batches, jobs in flight, free job buffers | `batcher` |
//! | which graph has the device | `switching` |
//! | which decoder thread gets a completion | `routing` |
//! | a graph whose model a fault broke, configured again | `recovery` |

mod admission;
mod batcher;
mod recovery;
mod routing;
mod sets;
mod switching;

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Select, Sender, TryRecvError};

use crate::camera::Frame;
use crate::npu::NpuError;
use crate::preprocess::Preprocessor;

use crate::geom::time::{thread_cpu_ns, Clock};
use crate::rig::stamp::{Leg, Stamps};
use crate::rig::stats::{DropStage, LiveStats};
use crate::rig::work::{DecodeWork, FrameMeta, Returned};

use super::Stage;
use admission::Admission;
pub use batcher::Lane;
pub use recovery::{ModelSetup, SchedulerSettings};
use routing::Routing;
pub use sets::InstantSets;
pub use switching::Switching;

/// Longest the stage blocks when nothing is queued or batched (a safety
/// net: every event it waits for wakes it sooner).
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// Everything the stage thread owns.
pub struct NpuStage {
    pub lanes: Vec<Lane>,
    /// Per camera: its preprocessor and its graph.
    pub preprocessors: Vec<Preprocessor>,
    pub camera_graph: Vec<usize>,
    pub cameras: Vec<Receiver<Frame>>,
    /// One queue per decoder thread; which one gets a frame is the routing's choice.
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
    /// The live Foxglove server, offered each frame after preprocessing.
    pub foxglove: Option<std::sync::Arc<crate::publish::foxglove_ws::FoxgloveServer>>,
    /// Frames a live viewer may want (never waits).
    pub live: Option<crate::rig::stage::live::LiveTap>,
    /// The run's stop, requested when the device is gone (see `recovery`).
    pub stop: Option<crate::camera::Stop>,
    /// Take one frame per camera at a time (cameras of one rate).
    pub instant_sets: Option<InstantSets>,
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

impl Stage for NpuStage {
    type Output = Result<(), NpuError>;

    fn name(&self) -> String {
        "npu-stage".into()
    }

    /// Runs until every camera queue is closed and empty and every frame has left
    /// the device; returns the error that stopped it early, if any.
    ///
    /// # Errors
    /// A device error on activate/deactivate (manual switching).
    fn run(mut self) -> Self::Output {
        let cpu0 = thread_cpu_ns();
        // The first instant set's wait for its cameras counts from the stage's start.
        self.last_set_ns = self.clock.now_ns();
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
        let now = self.clock.now_ns();
        for (lane, counters) in self.lanes.iter_mut().zip(&self.stats.graphs) {
            // A graph still down at the end: its outage so far.
            if let Some(ns) = lane.recovery.down_for(now) {
                counters
                    .down_ns
                    .fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
            }
            for (meta, _) in lane.pending.drain(..) {
                self.stats.cameras[meta.camera].drop_at(DropStage::Npu);
            }
            for (_, meta) in lane.in_flight.drain() {
                self.stats.cameras[meta.camera].drop_at(DropStage::Npu);
            }
        }
        out
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
            foxglove: None,
            live: None,
            stop: None,
            instant_sets: None,
            heads: (0..n).map(|_| None).collect(),
            last_set_ns: 0,
            active: None,
            closed: vec![false; n],
            // No limit until `set_in_flight_limit` (the rig's `decoder.in_flight`).
            admission: Admission::unlimited(),
            routing: Routing::new(workers, n),
            recycle_open: true,
        }
    }

    /// Most frames past the camera queues and not yet decoded (at least one
    /// per camera, so an instant always fits).
    pub fn set_in_flight_limit(&mut self, limit: usize) {
        self.admission.set_limit(limit, self.cameras.len());
    }

    fn run_loop(&mut self) -> Result<(), NpuError> {
        loop {
            self.take_recycled();
            self.take_frames();
            self.take_completions();
            self.recover();
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
                        lane.reuse(r.bindings);
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
        if let Some(sets) = self.instant_sets {
            return self.take_sets(sets);
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

    fn accept(&mut self, c: usize, frame: Frame) {
        let now = self.clock.now_ns();
        self.stats.cameras[c]
            .taken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let g = self.camera_graph[c];
        let lane = &mut self.lanes[g];
        if lane.cm.needs_reconfigure() {
            // Down until `recover` configures it again: counted, not preprocessed.
            self.stats.cameras[c].drop_at(DropStage::Npu);
            return;
        }
        let mut stamps = Stamps::new(frame.capture_ns);
        stamps.leave(Leg::Capture, now.max(frame.capture_ns));
        let mut bindings = match lane.free.take(&lane.cm) {
            Ok(b) => b,
            Err(e) => {
                lane.failures
                    .note(lane.cm.name(), "buffers for a frame", &e);
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
                lane.free.put(bindings);
                return;
            }
        };
        stamps.leave(Leg::Preprocess, self.clock.now_ns());
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
        self.admission.hold();
        if let Some(fox) = &self.foxglove {
            fox.frame(&frame);
        }
        if let Some(tap) = &self.live {
            tap.offer_frame(c, &frame);
        }
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
                    lane.failures
                        .note(lane.cm.name(), &format!("job {}", done.job), &e);
                    self.stats.cameras[meta.camera].drop_at(DropStage::Npu);
                    lane.reuse(done.bindings);
                    self.admission.release();
                    continue;
                }
                lane.recovery.completed();
                meta.stamps.leave(Leg::Npu, self.clock.now_ns());
                if let Some(bypass) = &self.bypass {
                    lane.reuse(done.bindings);
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
                    lane.reuse(work.bindings);
                    self.routing.done(worker, camera);
                    self.admission.release();
                }
            }
        }
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
                meta.stamps.leave(Leg::Queue, now);
                match lane.cm.submit(bindings) {
                    Ok(job) => {
                        lane.in_flight.insert(job, meta);
                        lane.since_switch += 1;
                        self.stats.graphs[g]
                            .submitted
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(e) => {
                        lane.failures.note(lane.cm.name(), "submission", &e);
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
    /// up to [`IDLE_WAIT`]: polling every 5 ms would wake it once between two
    /// frame instants (8.3 ms at 120 fps) for nothing.
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
        if self.admission.holds_any() && self.recycle_open {
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
