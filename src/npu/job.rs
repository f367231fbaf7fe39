//! Bindings (the buffers of one frame), jobs and their completions.
//!
//! Ownership follows nusb's transfer model: `run_async` / `submit` take the
//! [`Bindings`] by value, the in-flight job owns them, and the
//! [`Completion`] hands them back. The C callback only moves the completion
//! into a channel; it runs under `catch_unwind` and never panics across the
//! FFI boundary.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use hailort_sys::{hes_bindings, hes_job, hes_status};

use super::buffer::PageBuf;
use super::configured::CmShared;
use super::device::Handle;
use super::error::{NpuError, Status};
use super::infer_model::Direction;
use super::result;
use super::sim::OutputKind;

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

/// What the C callback owns while a job runs.
pub(crate) struct InFlight {
    pub tx: Sender<Completion>,
    pub bindings: Bindings,
    pub job: u64,
    /// Jobs not yet delivered (user-visible).
    pub pending: Arc<AtomicUsize>,
    /// Callbacks not yet finished (what dropping a configured model waits for).
    pub callbacks: Arc<AtomicUsize>,
    pub output_kind: OutputKind,
}

/// The completion callback given to the table: moves the completion into
/// its channel. The in-flight state is dropped before `callbacks` falls, so
/// a configured model waiting for `callbacks == 0` never has its last
/// reference dropped on the backend's thread.
pub(crate) unsafe extern "C" fn on_complete(status: hes_status, user_data: *mut c_void) {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `user_data` is the Box<InFlight> leaked by `launch`, and the
        // table calls this callback exactly once per successful run_async.
        let inflight = unsafe { Box::from_raw(user_data.cast::<InFlight>()) };
        let InFlight {
            tx,
            bindings,
            job,
            pending,
            callbacks,
            output_kind,
        } = *inflight;
        let status = if status == 0 {
            Ok(())
        } else {
            Err(NpuError::from_status(
                status,
                "run_async completion",
                String::new(),
            ))
        };
        pending.fetch_sub(1, Ordering::AcqRel);
        // A closed receiver (the job was dropped) drops the completion here:
        // its bindings go back to the pool.
        let _ = tx.send(Completion {
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
/// bindings return to the pool); dropping the configured model aborts it.
pub struct Job {
    pub(crate) id: u64,
    pub(crate) rx: Receiver<Completion>,
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
