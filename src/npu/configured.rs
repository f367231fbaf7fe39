//! A configured model: scheduler settings, activation, and running frames.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use hailort_sys::hes_configured_model;

use super::buffer::PagePool;
use super::device::{DeviceInner, Handle};
use super::error::NpuError;
use super::infer_model::{Model, StreamDesc};
use super::job::{on_complete, Bindings, Completion, InFlight, Job, Route};
use super::sim::OutputKind;
use super::BackendKind;
use super::{reaper, result};

/// How long dropping a configured model waits for aborted jobs to report
/// (HailoRT waits as long for its own, `WAIT_FOR_ASYNC_IN_DTOR_TIMEOUT`).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct CmShared {
    pub device: Arc<DeviceInner>,
    pub handle: Handle<hes_configured_model>,
    pub name: String,
    pub inputs: Vec<StreamDesc>,
    pub outputs: Vec<StreamDesc>,
    pub pool: PagePool,
    pending: Arc<AtomicUsize>,
    callbacks: Arc<AtomicUsize>,
    broken: Mutex<Option<String>>,
    /// The sending end of the completion queue, closed once the configured
    /// model is dropped.
    queue_gate: Route,
    queue_rx: Receiver<Completion>,
    /// HailoRT's `get_async_queue_size`, read once.
    queue_size: OnceLock<usize>,
    drop_timeout: Mutex<Duration>,
    next_job: AtomicU64,
    output_kind: OutputKind,
}

impl CmShared {
    /// Marks the model as needing reconfiguration (the first cause is kept).
    pub(crate) fn mark_broken(&self, cause: String) {
        let mut broken = self.broken.lock().unwrap_or_else(|e| e.into_inner());
        if broken.is_none() {
            log::warn!("'{}' needs reconfiguring: {cause}", self.name);
            *broken = Some(cause);
        }
    }
}

impl Drop for CmShared {
    fn drop(&mut self) {
        if let Err(err) =
            // SAFETY: bindings and jobs hold an Arc to this, so none is left.
            unsafe { result::configured_model::release(&self.device.api, self.handle.ptr()) }
        {
            log::warn!("releasing configured model '{}': {err}", self.name);
        }
    }
}

/// A model configured on a device: ready to run.
///
/// It holds an `Arc` to its device, so the device stays open while it lives
/// (the hRPC client of a Hailo-10H reports lost communication otherwise).
/// Dropping it aborts jobs still in flight; their completions arrive with
/// `StreamAbort`. It waits for them (up to [`ConfiguredModel::set_drop_timeout`])
/// and drops the completions still queued for
/// [`ConfiguredModel::wait_next_complete`], which hold the model: nothing
/// keeps the model and its device alive after an error path drops it.
///
/// At most [`ConfiguredModel::async_queue_size`] jobs are in flight at once:
/// HailoRT's card answers one more with `HAILO_QUEUE_IS_FULL` in its
/// completion and shuts its copy of the model down, so `run_async` and
/// `submit` refuse it with [`NpuError::QueueIsFull`] before it leaves the
/// host, and the model stays usable.
///
/// It is `Send + Sync`: share it between threads with an `Arc` (or scoped
/// borrows); calls into the backend are serialised per handle, and
/// completions may be taken on any thread.
pub struct ConfiguredModel {
    shared: Arc<CmShared>,
}

impl std::fmt::Debug for ConfiguredModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfiguredModel")
            .field("name", &self.shared.name)
            .field("pending", &self.pending())
            .finish()
    }
}

impl ConfiguredModel {
    pub(crate) fn new(model: &Model, ptr: NonNull<hes_configured_model>) -> ConfiguredModel {
        let device = Arc::clone(&model.device);
        let output_kind = match (&device.kind, &device.sim) {
            (BackendKind::Sim, Some(p)) if p.references.contains_key(model.name()) => {
                OutputKind::SimReference
            }
            (BackendKind::Sim, _) => OutputKind::SimSynthetic,
            (BackendKind::HailoRt, _) => OutputKind::Device,
        };
        let (queue_tx, queue_rx) = crossbeam_channel::unbounded();
        reaper::start();
        ConfiguredModel {
            shared: Arc::new(CmShared {
                device,
                handle: Handle::new(ptr),
                name: model.name().to_string(),
                inputs: model.inputs().to_vec(),
                outputs: model.outputs().to_vec(),
                pool: super::open_params::pool_for(&model.device),
                pending: Arc::new(AtomicUsize::new(0)),
                callbacks: Arc::new(AtomicUsize::new(0)),
                broken: Mutex::new(None),
                queue_gate: Route::open(queue_tx),
                queue_rx,
                queue_size: OnceLock::new(),
                drop_timeout: Mutex::new(DRAIN_TIMEOUT),
                next_job: AtomicU64::new(0),
                output_kind,
            }),
        }
    }

    /// The network group's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The inputs.
    pub fn inputs(&self) -> &[StreamDesc] {
        &self.shared.inputs
    }

    /// The outputs.
    pub fn outputs(&self) -> &[StreamDesc] {
        &self.shared.outputs
    }

    /// Where this model's outputs come from (device, reference model or generator).
    pub fn output_kind(&self) -> OutputKind {
        self.shared.output_kind
    }

    /// Jobs submitted and not yet completed.
    pub fn pending(&self) -> usize {
        self.shared.pending.load(Ordering::Acquire)
    }

    /// The most jobs this model takes in flight (HailoRT's
    /// `get_async_queue_size`, read once).
    ///
    /// # Errors
    /// The table's status.
    #[doc(alias = "ConfiguredInferModel::get_async_queue_size")]
    pub fn async_queue_size(&self) -> Result<usize, NpuError> {
        if let Some(&n) = self.shared.queue_size.get() {
            return Ok(n);
        }
        // SAFETY: the handle is live while `self` is.
        let n =
            self.with(|api, c| unsafe { result::configured_model::get_async_queue_size(api, c) })?;
        Ok(*self.shared.queue_size.get_or_init(|| n.max(1)))
    }

    /// How long dropping this model waits for its jobs in flight (10 s by
    /// default); a job that reports later is dropped on the reaper thread.
    pub fn set_drop_timeout(&self, timeout: Duration) {
        *self
            .shared
            .drop_timeout
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = timeout;
    }

    /// Buffers idle in this model's pool: a job's come back only with its
    /// completion.
    pub fn idle_buffers(&self) -> usize {
        self.shared.pool.idle()
    }

    /// Whether a failed `run_async`, or a completion whose status HailoRT
    /// treats as fatal to the model, left it needing reconfiguration.
    pub fn needs_reconfigure(&self) -> bool {
        // Asked per frame while a graph is down: no copy of the cause.
        self.shared
            .broken
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Why the model needs reconfiguration: the first fault that broke it.
    pub fn broken_by(&self) -> Option<String> {
        self.broken()
    }

    /// Whether `bindings` were made by this configured model: the buffers
    /// of a model that was configured again cannot run on its successor.
    pub fn owns(&self, bindings: &Bindings) -> bool {
        Arc::ptr_eq(&bindings.cm, &self.shared)
    }

    fn broken(&self) -> Option<String> {
        self.shared
            .broken
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn check_usable(&self) -> Result<(), NpuError> {
        match self.broken() {
            Some(cause) => Err(NpuError::NeedsReconfigure {
                model: self.shared.name.clone(),
                cause,
            }),
            None => Ok(()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&result_api::Api, NonNull<hes_configured_model>) -> R) -> R {
        let api = self.shared.device.api;
        self.shared.handle.with(|c| f(&api, c))
    }

    /// Sets the scheduler priority (0..=31, HailoRT's default 16).
    ///
    /// # Errors
    /// `InvalidOperation` without a scheduler; `InvalidArgument` above 31.
    #[doc(alias = "ConfiguredInferModel::set_scheduler_priority")]
    pub fn set_scheduler_priority(&self, priority: u8) -> Result<(), NpuError> {
        // SAFETY: the handle is live while `self` is.
        self.with(|api, c| unsafe {
            result::configured_model::set_scheduler_priority(api, c, priority)
        })
    }

    /// Sets the frames a model needs queued before the scheduler switches to it.
    ///
    /// # Errors
    /// `InvalidOperation` without a scheduler.
    #[doc(alias = "ConfiguredInferModel::set_scheduler_threshold")]
    pub fn set_scheduler_threshold(&self, frames: u32) -> Result<(), NpuError> {
        // SAFETY: the handle is live while `self` is.
        self.with(|api, c| unsafe {
            result::configured_model::set_scheduler_threshold(api, c, frames)
        })
    }

    /// Sets how long since its last run the model may wait below threshold.
    ///
    /// # Errors
    /// `InvalidOperation` without a scheduler.
    #[doc(alias = "ConfiguredInferModel::set_scheduler_timeout")]
    pub fn set_scheduler_timeout(&self, timeout: Duration) -> Result<(), NpuError> {
        let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX - 1);
        // SAFETY: the handle is live while `self` is.
        self.with(|api, c| unsafe { result::configured_model::set_scheduler_timeout(api, c, ms) })
    }

    /// Activates the model (scheduling NONE only).
    ///
    /// # Errors
    /// `InvalidOperation` under the scheduler or when another model is active.
    #[doc(alias = "ConfiguredInferModel::activate")]
    pub fn activate(&self) -> Result<(), NpuError> {
        // SAFETY: the handle is live while `self` is.
        self.with(|api, c| unsafe { result::configured_model::activate(api, c) })
    }

    /// Deactivates the model (scheduling NONE only).
    ///
    /// # Errors
    /// `InvalidOperation` under the scheduler or when the model is not active.
    #[doc(alias = "ConfiguredInferModel::deactivate")]
    pub fn deactivate(&self) -> Result<(), NpuError> {
        // SAFETY: the handle is live while `self` is.
        self.with(|api, c| unsafe { result::configured_model::deactivate(api, c) })
    }

    /// Waits until the backend accepts `frames` more jobs.
    ///
    /// # Errors
    /// `Timeout`; the table's status.
    #[doc(alias = "ConfiguredInferModel::wait_for_async_ready")]
    pub fn wait_for_async_ready(&self, timeout: Duration, frames: u32) -> Result<(), NpuError> {
        let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX - 1);
        // SAFETY: the handle is live while `self` is.
        self.with(|api, c| unsafe {
            result::configured_model::wait_for_async_ready(api, c, ms, frames)
        })
    }

    /// The average hardware latency HailoRT measured, when the model was
    /// configured after [`Model::set_hw_latency_measurement`]; `None` when
    /// HailoRT has none (`HAILO_NOT_AVAILABLE`: no measurement flag, nothing
    /// run yet, or more than one input). On the simulator the figure is
    /// modelled from its timing model.
    ///
    /// # Errors
    /// The table's status other than `NotAvailable`.
    #[doc(alias = "ConfiguredInferModel::get_hw_latency_measurement")]
    pub fn hw_latency(&self) -> Result<Option<Duration>, NpuError> {
        // SAFETY: the handle is live while `self` is.
        match self.with(|api, c| unsafe { result::configured_model::hw_latency(api, c) }) {
            Ok(ns) => Ok(Some(Duration::from_nanos(ns))),
            Err(NpuError::NotAvailable { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Page-aligned buffers for one frame, from this model's pool.
    ///
    /// # Errors
    /// The table's status.
    #[doc(alias = "ConfiguredInferModel::create_bindings")]
    pub fn bindings(&self) -> Result<Bindings, NpuError> {
        Bindings::new(Arc::clone(&self.shared))
    }

    /// Runs one frame and waits up to `timeout` for it; the bindings come
    /// back with the outputs.
    ///
    /// It is a `run_async` and a wait, so the buffers stay with the job until
    /// the backend is done with them: after a timeout the job is still in
    /// flight (HailoRT's own blocking `run` returns then too, infer_model.cpp
    /// 712-734, with nothing to say when the transfer ends), and its bindings
    /// return to the pool only when its completion arrives.
    ///
    /// # Errors
    /// `Timeout` (the bindings stay with the job in flight);
    /// [`NpuError::NeedsReconfigure`]; `QueueIsFull`; the table's or the
    /// job's status.
    #[doc(alias = "ConfiguredInferModel::run")]
    pub fn run(&self, bindings: Bindings, timeout: Duration) -> Result<Bindings, NpuError> {
        let mut job = self.run_async(bindings)?;
        let done = job.wait(timeout).map_err(|err| match err {
            NpuError::Timeout { .. } => NpuError::Timeout {
                call: "run",
                detail: format!(
                    "job {} of '{}' still in flight after {} ms; its buffers return to the \
                     pool when it completes",
                    job.id(),
                    self.shared.name,
                    timeout.as_millis()
                ),
            },
            other => other,
        })?;
        done.status.map(|()| done.bindings)
    }

    /// Takes one slot of the async queue, or refuses with `QueueIsFull`.
    fn reserve(&self) -> Result<(), NpuError> {
        let queue = self.async_queue_size()?;
        self.shared
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (p < queue).then_some(p + 1)
            })
            .map(drop)
            .map_err(|p| NpuError::QueueIsFull {
                call: "run_async",
                detail: format!(
                    "'{}' has {p} jobs in flight, as many as its async queue holds; take a \
                     completion or call wait_for_async_ready first (refused before it reached \
                     the device, so the model stays usable)",
                    self.shared.name
                ),
            })
    }

    fn launch(
        &self,
        bindings: Bindings,
        route: Route,
    ) -> Result<(u64, Option<Handle<hailort_sys::hes_job>>), NpuError> {
        self.check_usable()?;
        if !Arc::ptr_eq(&bindings.cm, &self.shared) {
            return Err(NpuError::InvalidArgument {
                call: "run_async",
                detail: format!(
                    "bindings belong to another configured model ('{}')",
                    bindings.cm.name
                ),
            });
        }
        self.reserve()?;
        let job = self.shared.next_job.fetch_add(1, Ordering::Relaxed);
        let b = bindings.handle.ptr();
        let inflight = Box::new(InFlight {
            route,
            bindings,
            job,
            pending: Arc::clone(&self.shared.pending),
            callbacks: Arc::clone(&self.shared.callbacks),
            output_kind: self.shared.output_kind,
        });
        self.shared.callbacks.fetch_add(1, Ordering::AcqRel);
        let user_data = Box::into_raw(inflight).cast::<c_void>();
        let api = self.shared.device.api;
        // SAFETY: handles are live; the bindings and their buffers are owned by
        // the InFlight box behind `user_data`, which only `on_complete` frees,
        // once; `on_complete` never unwinds.
        let launched = self.shared.handle.with(|c| unsafe {
            result::configured_model::run_async(&api, c, b, Some(on_complete), user_data)
        });
        match launched {
            Ok(handle) => Ok((job, handle.map(Handle::new))),
            Err(err) => {
                // SAFETY: on failure the table never calls the callback, so the
                // box is still ours.
                drop(unsafe { Box::from_raw(user_data.cast::<InFlight>()) });
                self.shared.pending.fetch_sub(1, Ordering::AcqRel);
                self.shared.callbacks.fetch_sub(1, Ordering::AcqRel);
                self.shared.mark_broken(format!("run_async failed: {err}"));
                Err(err)
            }
        }
    }

    /// Starts one frame; the returned job owns the bindings until it completes.
    ///
    /// ```compile_fail,E0382
    /// # fn f(cm: &hailo_edge::npu::ConfiguredModel) -> Result<(), hailo_edge::npu::NpuError> {
    /// let mut bindings = cm.bindings()?;
    /// let job = cm.run_async(bindings)?;
    /// bindings.input_mut("x")?; // the buffers belong to the job now
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`NpuError::NeedsReconfigure`] after an earlier failure; `QueueIsFull`
    /// with [`ConfiguredModel::async_queue_size`] jobs in flight; the table's
    /// status, after which this model needs reconfiguring (as in HailoRT).
    #[doc(alias = "ConfiguredInferModel::run_async")]
    pub fn run_async(&self, bindings: Bindings) -> Result<Job, NpuError> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let route = Route::open(tx);
        let (id, handle) = self.launch(bindings, route.clone())?;
        Ok(Job::new(id, rx, &route, handle, Arc::clone(&self.shared)))
    }

    /// Starts one frame whose completion goes to this model's queue (see
    /// [`ConfiguredModel::wait_next_complete`]); returns the job number.
    ///
    /// # Errors
    /// As [`ConfiguredModel::run_async`].
    pub fn submit(&self, bindings: Bindings) -> Result<u64, NpuError> {
        let route = self.shared.queue_gate.clone();
        let (id, handle) = self.launch(bindings, route)?;
        if let Some(handle) = handle {
            let api = self.shared.device.api;
            // SAFETY: fresh handle with no other user; release detaches it.
            if let Err(err) = unsafe { result::job::release(&api, handle.ptr()) } {
                log::warn!("releasing job {id}: {err}");
            }
        }
        Ok(id)
    }

    /// The next completion of a submitted job, waiting up to `timeout`.
    pub fn wait_next_complete(&self, timeout: Duration) -> Option<Completion> {
        self.shared.queue_rx.recv_timeout(timeout).ok()
    }

    /// The channel completions of submitted jobs arrive on.
    pub fn completions(&self) -> &Receiver<Completion> {
        &self.shared.queue_rx
    }

    /// Aborts jobs in flight; the model needs reconfiguring afterwards.
    ///
    /// # Errors
    /// The table's status.
    #[doc(alias = "ConfiguredInferModel::shutdown")]
    pub fn shutdown(&self) -> Result<(), NpuError> {
        self.shared.mark_broken("shut down".into());
        // SAFETY: the handle is live while `self` is.
        self.with(|api, c| unsafe { result::configured_model::shutdown(api, c) })
    }
}

impl Drop for ConfiguredModel {
    fn drop(&mut self) {
        // Completions that arrive from now on go to the reaper thread.
        self.shared.queue_gate.close();
        let callbacks = || self.shared.callbacks.load(Ordering::Acquire);
        if callbacks() > 0 {
            if self.pending() > 0 {
                if let Err(err) = self.shutdown() {
                    log::warn!("shutting down '{}': {err}", self.shared.name);
                }
            }
            let timeout = *self
                .shared
                .drop_timeout
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let start = Instant::now();
            while callbacks() > 0 && start.elapsed() < timeout {
                std::thread::sleep(Duration::from_micros(200));
            }
            if callbacks() > 0 {
                log::error!(
                    "'{}': {} jobs did not report within {} ms of shutdown; they are released \
                     on the reaper thread when they do",
                    self.shared.name,
                    callbacks(),
                    timeout.as_millis()
                );
            }
        }
        // Queued completions hold this model through their bindings: a cycle
        // that would keep the model and its device alive.
        while let Ok(c) = self.shared.queue_rx.try_recv() {
            drop(c);
        }
    }
}

mod result_api {
    pub use crate::npu::api::Api;
}
