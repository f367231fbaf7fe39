//! Bindings (the buffers of one frame), jobs and their completions.
//!
//! Ownership follows nusb's transfer model: `run_async` / `submit` take the
//! [`Bindings`] by value, the in-flight job owns them, and the
//! [`Completion`] hands them back. The C callback only moves the completion
//! into a channel; it runs under `catch_unwind` and never panics across the
//! FFI boundary. It never drops a completion either: one nobody will take
//! goes to the reaper thread ([`super::reaper`]), so the last handle of a
//! model or device is never released on the backend's thread.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use hailort_sys::{hes_bindings, hes_job, hes_status};

use super::buffer::PageBuf;
use super::configured::CmShared;
use super::device::Handle;
use super::error::{NpuError, Status};
use super::result;
use super::sim::OutputKind;
use super::Direction;

/// The buffers of one frame: one page-aligned buffer per input and output,
/// registered with the backend once.
pub struct Bindings {
    pub(crate) cm: Arc<CmShared>,
    pub(crate) handle: Handle<hes_bindings>,
    inputs: Vec<PageBuf>,
    outputs: Vec<PageBuf>,
}

impl std::fmt::Debug for Bindings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bindings")
            .field("model", &self.cm.name)
            .field("inputs", &self.inputs.len())
            .field("outputs", &self.outputs.len())
            .finish()
    }
}

impl Bindings {
    pub(crate) fn new(cm: Arc<CmShared>) -> Result<Bindings, NpuError> {
        let api = cm.device.api;
        let ptr = cm
            .handle
            // SAFETY: the configured model is live while `cm` is.
            .with(|c| unsafe { result::configured_model::create_bindings(&api, c) })?;
        let mut bindings = Bindings {
            inputs: cm
                .inputs
                .iter()
                .map(|s| cm.pool.take(s.frame_size))
                .collect(),
            outputs: cm
                .outputs
                .iter()
                .map(|s| cm.pool.take(s.frame_size))
                .collect(),
            handle: Handle::new(ptr),
            cm,
        };
        let cm = Arc::clone(&bindings.cm);
        let streams = cm
            .inputs
            .iter()
            .zip(bindings.inputs.iter_mut())
            .chain(cm.outputs.iter().zip(bindings.outputs.iter_mut()));
        for (stream, buf) in streams {
            let (ptr, len) = (buf.as_mut_ptr(), buf.len());
            // SAFETY: the buffer is owned by these bindings and outlives the
            // handle (released first in Drop); while a job runs, the bindings
            // and so the buffer belong to that job.
            bindings.handle.with(|b| unsafe {
                result::bindings::set_buffer(
                    &api,
                    b,
                    stream.direction.c_value(),
                    &stream.name,
                    ptr,
                    len,
                )
            })?;
        }
        Ok(bindings)
    }

    fn index(&self, direction: Direction, name: &str) -> Result<usize, NpuError> {
        let list = match direction {
            Direction::Input => &self.cm.inputs,
            Direction::Output => &self.cm.outputs,
        };
        list.iter()
            .position(|s| s.name == name)
            .ok_or_else(|| NpuError::NoSuchStream {
                model: self.cm.name.clone(),
                direction: direction.name(),
                stream: name.to_string(),
            })
    }

    /// The input buffer of a stream, to fill before running.
    ///
    /// # Errors
    /// [`NpuError::NoSuchStream`].
    pub fn input_mut(&mut self, name: &str) -> Result<&mut [u8], NpuError> {
        let i = self.index(Direction::Input, name)?;
        Ok(self.inputs[i].as_mut_slice())
    }

    /// Copies one frame into an input.
    ///
    /// # Errors
    /// [`NpuError::NoSuchStream`]; [`NpuError::BufferSize`] when `data` is not
    /// exactly one frame.
    pub fn write_input(&mut self, name: &str, data: &[u8]) -> Result<(), NpuError> {
        let buf = self.input_mut(name)?;
        if buf.len() != data.len() {
            return Err(NpuError::BufferSize {
                stream: name.to_string(),
                expected: buf.len(),
                actual: data.len(),
            });
        }
        buf.copy_from_slice(data);
        Ok(())
    }

    /// The input buffers in the model's order.
    pub fn inputs_mut(&mut self) -> impl Iterator<Item = &mut [u8]> {
        self.inputs.iter_mut().map(PageBuf::as_mut_slice)
    }

    /// An output of the last completed run.
    ///
    /// # Errors
    /// [`NpuError::NoSuchStream`].
    pub fn output(&self, name: &str) -> Result<&[u8], NpuError> {
        let i = self.index(Direction::Output, name)?;
        Ok(self.outputs[i].as_slice())
    }

    /// The output buffers in the model's order.
    pub fn outputs(&self) -> impl Iterator<Item = &[u8]> {
        self.outputs.iter().map(PageBuf::as_slice)
    }
}

impl Drop for Bindings {
    fn drop(&mut self) {
        let api = self.cm.device.api;
        // SAFETY: no job holds these bindings (a job owns them until its
        // completion), so the handle has no other user.
        if let Err(err) = unsafe { result::bindings::release(&api, self.handle.ptr()) } {
            log::warn!("releasing bindings of '{}': {err}", self.cm.name);
        }
        for buf in self.inputs.drain(..).chain(self.outputs.drain(..)) {
            self.cm.pool.give(buf);
        }
    }
}

/// The end of a job: its status, and the bindings back.
#[derive(Debug)]
#[must_use]
pub struct Completion {
    /// The job's number (per configured model, from 0).
    pub job: u64,
    pub status: Result<(), NpuError>,
    pub bindings: Bindings,
    /// Whether the outputs come from a device, a reference model or a generator.
    pub output_kind: OutputKind,
}

/// Where a completion goes: a job's own channel (open while its [`Job`]
/// lives) or a model's completion queue (open while its configured model
/// lives). The sender is behind a gate that the receiving side closes under
/// the same lock before it drains, so a completion is either taken by the
/// receiver or handed to the reaper, never dropped with the callback's end of
/// the channel.
#[derive(Clone)]
pub(crate) struct Route(Arc<Gate>);

/// A completion channel's sender, `None` once its receiving side closed it.
type Gate = Mutex<Option<Sender<Completion>>>;

impl Route {
    /// An open gate in front of `tx`.
    pub(crate) fn open(tx: Sender<Completion>) -> Route {
        Route(Arc::new(Mutex::new(Some(tx))))
    }

    /// Closes the gate: what arrives from now on goes to the reaper. A
    /// poisoned lock still closes it, since a gate left open would keep the
    /// receiver's model alive.
    pub(crate) fn close(&self) {
        close_gate(&self.0);
    }

    /// A handle that closes this gate without keeping its sender alive, so
    /// the receiver still sees the channel disconnect when the callback's end
    /// is dropped undelivered.
    fn closer(&self) -> Weak<Gate> {
        Arc::downgrade(&self.0)
    }

    fn deliver(&self, c: Completion) {
        let undelivered = match &*self.0.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(tx) => tx.send(c).err().map(|e| e.into_inner()),
            None => Some(c),
        };
        if let Some(c) = undelivered {
            super::reaper::bury(c);
        }
    }
}

fn close_gate(gate: &Gate) {
    drop(gate.lock().unwrap_or_else(|e| e.into_inner()).take());
}

/// HailoRT completion statuses after which the configured model is unusable
/// (HailoRT 5.2.0):
/// - `HAILO_QUEUE_IS_FULL` (82): the card's pipeline refused a job past its
///   queue (async_infer_runner.cpp:318-319) and `run_async` shut the card's
///   model down (infer_model.cpp:597-604); the server answers with the status
///   (hrpc/server.cpp:164-167);
/// - `HAILO_STREAM_ABORT` (63): the model's pipeline was aborted by that
///   shutdown, and every later job fails on it (async_infer_runner.cpp:246-251,
///   315-316);
/// - `HAILO_STREAM_NOT_ACTIVATED` (72): the scheduler's accumulator of the
///   model was shut down (infer_request_accumulator.cpp:27-28);
/// - `HAILO_COMMUNICATION_CLOSED` (62): the hRPC message loop ended and
///   answers every request with it (hrpc/client.cpp:57-71).
pub(crate) fn fatal_to_model(status: hes_status) -> bool {
    matches!(
        Status::from_code(status),
        Some(
            Status::QueueIsFull
                | Status::StreamAbort
                | Status::StreamNotActivated
                | Status::CommunicationClosed
        )
    )
}

/// What the C callback owns while a job runs.
pub(crate) struct InFlight {
    pub route: Route,
    pub bindings: Bindings,
    pub job: u64,
    /// Jobs not yet delivered (user-visible).
    pub pending: Arc<AtomicUsize>,
    /// Callbacks not yet finished (what dropping a configured model waits for).
    pub callbacks: Arc<AtomicUsize>,
    pub output_kind: OutputKind,
}

/// The completion callback given to the table: moves the completion into
/// its channel, or to the reaper when nobody will take it. A status HailoRT
/// treats as fatal ([`fatal_to_model`]) marks the model as needing
/// reconfiguration, so later submissions fail at once instead of one by one.
pub(crate) unsafe extern "C" fn on_complete(status: hes_status, user_data: *mut c_void) {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `user_data` is the Box<InFlight> leaked by `launch`, and the
        // table calls this callback exactly once per successful run_async.
        let inflight = unsafe { Box::from_raw(user_data.cast::<InFlight>()) };
        let InFlight {
            route,
            bindings,
            job,
            pending,
            callbacks,
            output_kind,
        } = *inflight;
        let status = if status == 0 {
            Ok(())
        } else {
            let err = NpuError::from_status(status, "run_async completion", String::new());
            if fatal_to_model(status) {
                bindings
                    .cm
                    .mark_broken(format!("job {job} completed with {err}"));
            }
            Err(err)
        };
        pending.fetch_sub(1, Ordering::AcqRel);
        route.deliver(Completion {
            job,
            status,
            bindings,
            output_kind,
        });
        callbacks
    }));
    match outcome {
        Ok(callbacks) => {
            callbacks.fetch_sub(1, Ordering::AcqRel);
        }
        Err(_) => log::error!("panic in the NPU completion callback was caught"),
    }
}

/// One frame in flight, from [`crate::npu::ConfiguredModel::run_async`].
///
/// Dropping a job does not cancel it: its completion still arrives (and its
/// bindings return to the pool, from the reaper thread); dropping the
/// configured model aborts it.
pub struct Job {
    pub(crate) id: u64,
    pub(crate) rx: Receiver<Completion>,
    /// The gate of the job's channel (see [`Route`]).
    gate: Weak<Gate>,
    pub(crate) handle: Option<Handle<hes_job>>,
    pub(crate) cm: Arc<CmShared>,
    pub(crate) delivered: bool,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("id", &self.id)
            .field("model", &self.cm.name)
            .finish()
    }
}

impl Job {
    /// A job whose completion arrives on `rx`, through `route`.
    pub(crate) fn new(
        id: u64,
        rx: Receiver<Completion>,
        route: &Route,
        handle: Option<Handle<hes_job>>,
        cm: Arc<CmShared>,
    ) -> Job {
        Job {
            id,
            rx,
            gate: route.closer(),
            handle,
            cm,
            delivered: false,
        }
    }

    /// The job's number.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The channel the completion arrives on.
    pub fn receiver(&self) -> &Receiver<Completion> {
        &self.rx
    }

    /// Waits up to `timeout` for the completion.
    ///
    /// # Errors
    /// `Timeout` when the job is still running; [`NpuError::AlreadyCompleted`]
    /// after the completion was taken; [`NpuError::CompletionLost`] if the
    /// backend dropped the callback.
    #[doc(alias = "AsyncInferJob::wait")]
    pub fn wait(&mut self, timeout: Duration) -> Result<Completion, NpuError> {
        if self.delivered {
            return Err(NpuError::AlreadyCompleted { job: self.id });
        }
        let start = Instant::now();
        if let Some(handle) = &self.handle {
            let api = self.cm.device.api;
            let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX - 1);
            // SAFETY: the job handle is live until Drop.
            let waited = handle.with(|j| unsafe { result::job::wait(&api, j, ms) });
            if let Err(err) = waited {
                if err.status() == Some(Status::Timeout) {
                    return match self.rx.try_recv() {
                        Ok(c) => self.take(c),
                        Err(_) => Err(err),
                    };
                }
            }
        }
        let left = timeout
            .saturating_sub(start.elapsed())
            .max(Duration::from_millis(100));
        match self.rx.recv_timeout(left) {
            Ok(c) => self.take(c),
            Err(RecvTimeoutError::Timeout) => Err(NpuError::Timeout {
                call: "job completion",
                detail: format!(
                    "no completion of job {} within {} ms",
                    self.id,
                    timeout.as_millis()
                ),
            }),
            Err(RecvTimeoutError::Disconnected) => Err(NpuError::CompletionLost { job: self.id }),
        }
    }

    fn take(&mut self, c: Completion) -> Result<Completion, NpuError> {
        self.delivered = true;
        Ok(c)
    }

    /// The completion if it has arrived.
    pub fn try_complete(&mut self) -> Option<Completion> {
        if self.delivered {
            return None;
        }
        let c = self.rx.try_recv().ok()?;
        self.delivered = true;
        Some(c)
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // Close the gate, then take what came before it closed: the callback's
        // end of the channel then never holds a completion when it drops.
        if let Some(gate) = self.gate.upgrade() {
            close_gate(&gate);
        }
        while let Ok(c) = self.rx.try_recv() {
            drop(c);
        }
        if let Some(handle) = &self.handle {
            let api = self.cm.device.api;
            // SAFETY: the handle is live and this is its last user; release
            // detaches it, the callback still runs.
            if let Err(err) = unsafe { result::job::release(&api, handle.ptr()) } {
                log::warn!("releasing job {}: {err}", self.id);
            }
        }
    }
}
