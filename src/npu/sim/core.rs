//! The simulated chip: configured models, their queues, the scheduler loop
//! on a worker thread, the timing model and the statistics.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::completion::{RawBuf, SimJob};
use super::device_stats::SimStats;
use super::faults::{DeviceFault, FaultPlan};
use super::measure::{DmaMaps, LatencyMeter};
use super::model_spec::{fill_outputs, ModelSpec};
use super::queue;
use super::scheduler::{Decision, ModelState, Scheduler};
use super::status::*;
use super::time_base::TimeBase;
use super::DeviceProfile;

mod settings;

/// A failed check: a HailoRT status and the reason.
pub(crate) type Fail = (u32, String);

/// HailoRT's limit of network groups on one device (`HAILO_MAX_NETWORK_GROUPS`).
pub const MAX_NETWORK_GROUPS: usize = 8;

pub(super) struct Pending {
    pub(super) job: Arc<SimJob>,
    pub(super) inputs: Vec<RawBuf>,
    pub(super) outputs: Vec<RawBuf>,
    pub(super) index: u64,
    pub(super) fault: Option<DeviceFault>,
}

pub(super) struct SimModel {
    pub(super) sched: ModelState,
    pub(super) spec: Arc<ModelSpec>,
    pub(super) queue: VecDeque<Pending>,
    /// The async queue size `get_async_queue_size` answers.
    pub(super) queue_size: usize,
    /// Jobs accepted and not yet completed (queued or in a burst).
    pub(super) in_flight: usize,
    /// The card shut this model down after an overflow: every job fails.
    pub(super) down: bool,
    pub(super) latency: LatencyMeter,
}

impl AsRef<ModelState> for SimModel {
    fn as_ref(&self) -> &ModelState {
        &self.sched
    }
}

pub(super) struct CoreState {
    pub(super) models: BTreeMap<u64, SimModel>,
    pub(super) scheduler: Scheduler,
    pub(super) manual_active: Option<u64>,
    pub(super) dev_now: u64,
    pub(super) stopping: bool,
    pub(super) stats: SimStats,
    pub(super) submitted: u64,
    pub(super) next_model: u64,
    /// Jobs that fail without running (model, job, status), for the worker
    /// to complete: HailoRT reports them on its callback thread too.
    pub(super) rejected: Vec<(u64, Arc<SimJob>, u32)>,
}

/// One simulated device.
pub struct Core {
    pub(crate) id: String,
    pub(crate) profile: DeviceProfile,
    clock: TimeBase,
    pub(crate) round_robin: bool,
    faults: FaultPlan,
    /// A fixed async queue size for every model instead of HailoRT's rule.
    queue_size: Option<usize>,
    /// Host buffers mapped for DMA by the device's VDevices.
    pub(crate) dma: DmaMaps,
    pub(super) state: Mutex<CoreState>,
    pub(super) cv: Condvar,
    /// Notified whenever jobs complete and free queue slots.
    pub(super) slots: Condvar,
    /// Bumped (under the state lock) whenever there is new work, so an idle
    /// worker can spin briefly on it before parking.
    pub(super) work: AtomicU64,
    start: Instant,
    worker: Mutex<Option<JoinHandle<()>>>,
}

/// How long an idle worker on the virtual clock spins before it parks: a
/// parked thread takes microseconds to wake, which would dominate the
/// round trip of a zero-time job.
const IDLE_SPIN: Duration = Duration::from_micros(50);

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn ns(seconds: f64) -> u64 {
    if seconds.is_finite() && seconds > 0.0 {
        (seconds * 1e9).round() as u64
    } else {
        0
    }
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Core {
    /// Starts a device and its scheduler thread.
    pub(crate) fn start(
        id: String,
        profile: DeviceProfile,
        clock: TimeBase,
        faults: FaultPlan,
        round_robin: bool,
        queue_size: Option<usize>,
    ) -> Arc<Core> {
        let core = Arc::new(Core {
            id,
            profile,
            clock: clock.clone(),
            round_robin,
            faults,
            queue_size,
            dma: DmaMaps::default(),
            state: Mutex::new(CoreState {
                models: BTreeMap::new(),
                scheduler: Scheduler::default(),
                manual_active: None,
                dev_now: 0,
                stopping: false,
                stats: SimStats::default(),
                submitted: 0,
                next_model: 1,
                rejected: Vec::new(),
            }),
            cv: Condvar::new(),
            slots: Condvar::new(),
            work: AtomicU64::new(0),
            start: Instant::now(),
            worker: Mutex::new(None),
        });
        if let TimeBase::Manual(manual) = &clock {
            manual.attach(&core);
        }
        let runner = Arc::clone(&core);
        let handle = thread::Builder::new()
            .name(format!("npu-sim-{}", core.id))
            .spawn(move || runner.run())
            .expect("spawn the simulator thread");
        *lock(&core.worker) = Some(handle);
        core
    }

    /// Stops the scheduler thread; queued jobs complete with HAILO_STREAM_ABORT.
    pub(crate) fn stop(&self) {
        lock(&self.state).stopping = true;
        self.work.fetch_add(1, Ordering::AcqRel);
        self.cv.notify_all();
        let handle = lock(&self.worker).take();
        if let Some(handle) = handle {
            if handle.thread().id() != thread::current().id() {
                let _ = handle.join();
            }
        }
    }

    pub(crate) fn wake(&self) {
        let _guard = lock(&self.state);
        self.work.fetch_add(1, Ordering::AcqRel);
        self.cv.notify_all();
    }

    fn wall_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn arrival_ns(&self, st: &CoreState) -> u64 {
        match &self.clock {
            TimeBase::RealTime => self.wall_ns(),
            TimeBase::Virtual => st.dev_now,
            TimeBase::Manual(m) => m.now_ns(),
        }
    }

    fn horizon_ns(&self) -> u64 {
        match &self.clock {
            TimeBase::RealTime => self.wall_ns(),
            TimeBase::Virtual => u64::MAX,
            TimeBase::Manual(m) => m.now_ns(),
        }
    }

    /// A snapshot of the statistics.
    pub fn stats(&self) -> SimStats {
        let st = lock(&self.state);
        let mut stats = st.stats.clone();
        stats.now_ns = st.dev_now;
        stats.mapped_buffers = self.dma.count() as u64;
        stats
    }

    /// Adds a configured model; checks the limits HailoRT enforces.
    ///
    /// Two checks go beyond what HailoRT 5.2's source shows and are the
    /// simulator's reading of its documentation: HailoRT compares batch sizes
    /// between the networks of one configure call (`INVALID_OPERATION`), the
    /// simulator across all models on the device; and a ninth network group
    /// is refused with `INVALID_OPERATION`, a code chosen here (HailoRT
    /// refuses a HEF with more than 8 groups with `INVALID_HEF`, which
    /// `vdevice::SimInferModel::new` does too).
    pub(crate) fn configure(&self, spec: Arc<ModelSpec>) -> Result<u64, Fail> {
        let mut st = lock(&self.state);
        if st.models.len() >= MAX_NETWORK_GROUPS {
            return Err((
                HAILO_INVALID_OPERATION,
                format!(
                    "device {} already has {} configured network groups (HAILO_MAX_NETWORK_GROUPS = {})",
                    self.id, MAX_NETWORK_GROUPS, MAX_NETWORK_GROUPS
                ),
            ));
        }
        if let Some(from) = self.faults.closed_after(st.submitted) {
            return Err((
                HAILO_COMMUNICATION_CLOSED,
                format!(
                    "injected fault: device {} dropped off at job {from}",
                    self.id
                ),
            ));
        }
        if self.round_robin {
            if let Some(other) = st.models.values().find(|m| m.spec.batch != spec.batch) {
                return Err((
                    HAILO_INVALID_OPERATION,
                    format!(
                        "When scheduler is enabled, all networks should have the same batch_size: \
                         '{}' has {} and '{}' has {}; to disable the scheduler use scheduling NONE",
                        other.spec.name, other.spec.batch, spec.name, spec.batch
                    ),
                ));
            }
        }
        let id = st.next_model;
        st.next_model += 1;
        let now = st.dev_now;
        st.stats.models.entry(spec.name.clone()).or_default();
        let queue_size = self
            .queue_size
            .unwrap_or_else(|| queue::async_queue_size(&spec))
            .max(1);
        st.models.insert(
            id,
            SimModel {
                sched: ModelState::new(u32::from(spec.batch.max(1)), now),
                spec,
                queue: VecDeque::new(),
                queue_size,
                in_flight: 0,
                down: false,
                latency: LatencyMeter::default(),
            },
        );
        Ok(id)
    }

    pub(super) fn with_model<R>(
        &self,
        id: u64,
        f: impl FnOnce(&mut CoreState) -> Result<R, Fail>,
    ) -> Result<R, Fail> {
        let mut st = lock(&self.state);
        if !st.models.contains_key(&id) {
            return Err((
                HAILO_NOT_FOUND,
                format!("configured model {id} is not on device {}", self.id),
            ));
        }
        let out = f(&mut st);
        self.work.fetch_add(1, Ordering::AcqRel);
        self.cv.notify_all();
        out
    }

    /// Queues one frame. Faults planned at submission fail here.
    pub(crate) fn submit(
        &self,
        id: u64,
        job: Arc<SimJob>,
        inputs: Vec<RawBuf>,
        outputs: Vec<RawBuf>,
    ) -> Result<(), Fail> {
        let mut st = lock(&self.state);
        if st.stopping {
            return Err((HAILO_COMMUNICATION_CLOSED, "device is closing".into()));
        }
        if !st.models.contains_key(&id) {
            return Err((
                HAILO_NOT_FOUND,
                format!("configured model {id} is not on device {}", self.id),
            ));
        }
        if !self.round_robin && st.manual_active != Some(id) {
            return Err((
                HAILO_NETWORK_GROUP_NOT_ACTIVATED,
                "scheduling NONE: activate the configured model before running it".into(),
            ));
        }
        let index = st.submitted;
        st.submitted += 1;
        let fault = self.faults.at(index);
        match fault {
            Some(DeviceFault::CommunicationClosed)
            | Some(DeviceFault::DeviceTemporarilyUnavailable) => {
                st.stats.faults_injected += 1;
                let fault = fault.unwrap_or(DeviceFault::CommunicationClosed);
                return Err((
                    fault.status(),
                    format!("injected fault at job {index}: {fault}"),
                ));
            }
            _ => {}
        }
        let cost = self.dma.cost(inputs.iter().chain(&outputs));
        st.stats.bounce_copies += cost.bounce_copies;
        st.stats.transfer_maps += cost.transfer_maps;
        let arrival = self.arrival_ns(&st);
        if fault == Some(DeviceFault::QueueFull) {
            st.stats.faults_injected += 1;
        }
        let model = st.models.get_mut(&id).expect("checked above");
        model.in_flight += 1;
        if model.down || model.in_flight > model.queue_size || fault == Some(DeviceFault::QueueFull)
        {
            self.overflow(&mut st, id, job);
            return Ok(());
        }
        let model = st.models.get_mut(&id).expect("checked above");
        model.sched.arrivals.push_back(arrival);
        model.queue.push_back(Pending {
            job,
            inputs,
            outputs,
            index,
            fault,
        });
        self.work.fetch_add(1, Ordering::AcqRel);
        self.cv.notify_all();
        Ok(())
    }

    fn run(self: Arc<Self>) {
        let mut st = lock(&self.state);
        loop {
            if st.stopping {
                let mut rejected = std::mem::take(&mut st.rejected);
                for (&id, m) in st.models.iter_mut() {
                    m.sched.arrivals.clear();
                    rejected.extend(m.queue.drain(..).map(|p| (id, p.job, HAILO_STREAM_ABORT)));
                }
                drop(st);
                self.deliver_rejected(rejected);
                return;
            }
            if !st.rejected.is_empty() {
                let rejected = std::mem::take(&mut st.rejected);
                drop(st);
                self.deliver_rejected(rejected);
                st = lock(&self.state);
                continue;
            }
            if matches!(self.clock, TimeBase::RealTime) {
                st.dev_now = st.dev_now.max(self.wall_ns());
            }
            let now = st.dev_now;
            let horizon = self.horizon_ns();
            // Manual time: frames stamped with the feeder's current time may
            // still come, so decide only strictly before it.
            if matches!(self.clock, TimeBase::Manual(_)) && now >= horizon {
                st = self.wait(st, Some(Duration::from_millis(5)));
                continue;
            }
            let decision = if self.round_robin {
                let CoreState {
                    models, scheduler, ..
                } = &mut *st;
                scheduler.decide(models, now)
            } else {
                Scheduler::decide_manual(&st.models, st.manual_active, now)
            };
            match decision {
                Decision::Run {
                    model,
                    frames,
                    switch,
                } => {
                    let (spec, batch, end) = self.start_burst(&mut st, model, frames, switch, now);
                    drop(st);
                    if matches!(self.clock, TimeBase::RealTime) {
                        let target = self.start + Duration::from_nanos(end);
                        if let Some(left) = target.checked_duration_since(Instant::now()) {
                            thread::sleep(left);
                        }
                    }
                    let done = batch.into_iter().map(|p| {
                        let status = match p.fault {
                            Some(DeviceFault::Timeout) => HAILO_TIMEOUT,
                            _ => match fill_outputs(&spec, p.index, &p.inputs, &p.outputs) {
                                Ok(()) => HAILO_SUCCESS,
                                Err(err) => {
                                    log::error!("job {}: {err}", p.index);
                                    HAILO_INTERNAL_FAILURE
                                }
                            },
                        };
                        (p.job, status)
                    });
                    self.finish(model, done.collect::<Vec<_>>());
                    st = lock(&self.state);
                }
                Decision::Idle { wake_at } => {
                    let target = wake_at.unwrap_or(u64::MAX).min(horizon);
                    match &self.clock {
                        TimeBase::RealTime => {
                            let wait = wake_at.map(|t| Duration::from_nanos(t.saturating_sub(now)));
                            st = self.wait(st, Some(wait.unwrap_or(Duration::from_millis(100))));
                        }
                        _ if target != u64::MAX && target > now => st.dev_now = target,
                        TimeBase::Manual(_) => st = self.wait(st, Some(Duration::from_millis(5))),
                        _ => st = self.idle(st),
                    }
                }
            }
        }
    }

    /// Spins for [`IDLE_SPIN`] waiting for new work, then parks.
    fn idle<'a>(&'a self, st: MutexGuard<'a, CoreState>) -> MutexGuard<'a, CoreState> {
        let seen = self.work.load(Ordering::Acquire);
        drop(st);
        let spin = Instant::now();
        while self.work.load(Ordering::Acquire) == seen && spin.elapsed() < IDLE_SPIN {
            // Yield rather than burn the core: on a loaded host the thread
            // that will submit next may need it.
            thread::yield_now();
        }
        let st = lock(&self.state);
        if self.work.load(Ordering::Acquire) != seen || st.stopping {
            st
        } else {
            self.wait(st, None)
        }
    }

    fn wait<'a>(
        &self,
        st: MutexGuard<'a, CoreState>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, CoreState> {
        match timeout {
            Some(t) => self
                .cv
                .wait_timeout(st, t)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0),
            None => self.cv.wait(st).unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// Takes `frames` frames of `model`, charges their time and returns them
    /// with the burst's end time.
    fn start_burst(
        &self,
        st: &mut CoreState,
        model: u64,
        frames: usize,
        switch: bool,
        now: u64,
    ) -> (Arc<ModelSpec>, Vec<Pending>, u64) {
        let p = &self.profile;
        let m = st
            .models
            .get_mut(&model)
            .expect("the scheduler chose a known model");
        let spec = Arc::clone(&m.spec);
        let batch: Vec<Pending> = m.queue.drain(..frames).collect();
        m.sched.arrivals.drain(..frames);
        let n = batch.len() as u64;
        let bytes_in = n * spec.device_bytes_in();
        let bytes_out = n * spec.device_bytes_out();
        let switch_ns = if switch { ns(p.switch_cost_s.value) } else { 0 };
        let in_ns = ns(p.link.transfer_s(bytes_in));
        let compute_ns =
            ns(p.compute_s(spec.ops_per_frame * n as f64, spec.utilisation(batch.len())));
        let out_ns = ns(p.link.transfer_s(bytes_out));
        let total = switch_ns + in_ns + compute_ns + out_ns;
        let end = now + total;
        m.sched.last_run_end_ns = end;
        m.latency.record(n, in_ns + compute_ns + out_ns);
        let s = &mut st.stats;
        s.busy_ns += total;
        s.compute_ns += compute_ns;
        s.transfer_ns += in_ns + out_ns;
        s.bytes_in += bytes_in;
        s.bytes_out += bytes_out;
        s.faults_injected += batch.iter().filter(|p| p.fault.is_some()).count() as u64;
        if switch {
            s.switches += 1;
            s.switch_ns.push(switch_ns);
        }
        let ms = s.models.entry(spec.name.clone()).or_default();
        ms.frames += n;
        ms.bursts += 1;
        ms.switches_in += u64::from(switch);
        ms.first_start_ns.get_or_insert(now);
        ms.last_end_ns = end;
        if !matches!(self.clock, TimeBase::RealTime) {
            st.dev_now = end;
        }
        (spec, batch, end)
    }
}
