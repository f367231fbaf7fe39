//! The simulator's configured-model, bindings and job entries.

use std::ffi::{c_char, c_void};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hailort_sys::*;

use super::completion::{RawBuf, SimJob};
use super::core::Fail;
use super::status::*;
use super::table::{
    guard, insert, lookup, on_configured, out, remove, str_arg, Obj, SimBindings, SimConfigured,
};

fn live(cm: &SimConfigured) -> Result<(), Fail> {
    if cm.shut_down.load(Ordering::Acquire) {
        Err((
            HAILO_INVALID_OPERATION,
            format!(
                "configured model '{}' was shut down (a run_async failed or shutdown was called); configure it again",
                cm.spec.name
            ),
        ))
    } else {
        Ok(())
    }
}

/// The buffers of a complete set of bindings, inputs then outputs.
fn buffers_of(b: &SimBindings) -> Result<(Vec<RawBuf>, Vec<RawBuf>), Fail> {
    let spec = &b.cm.spec;
    let buffers = b.buffers.lock().unwrap_or_else(|e| e.into_inner());
    let names = spec.inputs.iter().chain(&spec.outputs).map(|s| &s.name);
    let mut all = Vec::with_capacity(buffers.len());
    for (buf, name) in buffers.iter().zip(names) {
        all.push(buf.ok_or_else(|| {
            (
                HAILO_INVALID_ARGUMENT,
                format!("no buffer set for stream '{name}'"),
            )
        })?);
    }
    let outputs = all.split_off(spec.inputs.len());
    Ok((all, outputs))
}

unsafe extern "C" fn noop_callback(_status: hes_status, _user_data: *mut c_void) {}

fn timeout_of(timeout_ms: u32) -> Duration {
    if timeout_ms == HES_INFINITE {
        Duration::MAX
    } else {
        Duration::from_millis(u64::from(timeout_ms))
    }
}

/// Waits for `job`: its status as a result, naming `what` (and `more` on a timeout).
fn waited(job: &SimJob, timeout_ms: u32, what: &str, more: &str) -> Result<(), Fail> {
    match job.wait(timeout_of(timeout_ms)) {
        HAILO_SUCCESS => Ok(()),
        HAILO_TIMEOUT => Err((
            HAILO_TIMEOUT,
            format!("{what} did not finish within {timeout_ms} ms{more}"),
        )),
        status => Err((status, format!("{what} failed"))),
    }
}

/// HailoRT's blocking run (`ConfiguredInferModelBase::run`, infer_model.cpp:712-734): a
/// run_async and a wait. On HAILO_TIMEOUT the job stays in flight with the buffers in use,
/// and nothing reports its end.
pub(super) unsafe extern "C" fn configured_model_run(
    c: *mut hes_configured_model,
    b: *mut hes_bindings,
    timeout_ms: u32,
) -> hes_status {
    on_configured(c, |cm| {
        let bindings = lookup!(b, Bindings, "bindings");
        live(&cm)?;
        let (inputs, outputs) = buffers_of(&bindings)?;
        let job = Arc::new(SimJob::new(Some(noop_callback), std::ptr::null_mut()));
        if let Err(fail) = cm
            .core
            .submit(cm.model_id, Arc::clone(&job), inputs, outputs)
        {
            cm.shut_down.store(true, Ordering::Release);
            return Err(fail);
        }
        waited(&job, timeout_ms, "run", "; the job is still in flight")
    })
}

pub(super) unsafe extern "C" fn configured_model_run_async(
    c: *mut hes_configured_model,
    b: *mut hes_bindings,
    callback: hes_completion_cb,
    user_data: *mut c_void,
    j: *mut *mut hes_job,
) -> hes_status {
    on_configured(c, |cm| {
        let bindings = lookup!(b, Bindings, "bindings");
        let j = out(j)?;
        if callback.is_none() {
            return Err((HAILO_INVALID_ARGUMENT, "callback is NULL".into()));
        }
        live(&cm)?;
        let (inputs, outputs) = buffers_of(&bindings)?;
        let job = Arc::new(SimJob::new(callback, user_data));
        if let Err(fail) = cm
            .core
            .submit(cm.model_id, Arc::clone(&job), inputs, outputs)
        {
            // As HailoRT: a failed run_async shuts the configured model down.
            cm.shut_down.store(true, Ordering::Release);
            return Err(fail);
        }
        // SAFETY: `j` is non-NULL and writable.
        unsafe { *j = insert(Obj::Job(job)) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn configured_model_wait_for_async_ready(
    c: *mut hes_configured_model,
    timeout_ms: u32,
    frames: u32,
) -> hes_status {
    on_configured(c, |cm| {
        live(&cm)?;
        let frames = usize::try_from(frames).unwrap_or(usize::MAX);
        cm.core
            .wait_for_slots(cm.model_id, frames, timeout_of(timeout_ms))
    })
}

pub(super) unsafe extern "C" fn configured_model_get_async_queue_size(
    c: *mut hes_configured_model,
    size: *mut usize,
) -> hes_status {
    on_configured(c, |cm| {
        let size = out(size)?;
        let n = cm.core.async_queue_size(cm.model_id)?;
        // SAFETY: `size` is non-NULL and writable.
        unsafe { *size = n };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn configured_model_set_scheduler_priority(
    c: *mut hes_configured_model,
    priority: u8,
) -> hes_status {
    on_configured(c, |cm| {
        if priority > 31 {
            return Err((
                HAILO_INVALID_ARGUMENT,
                format!("priority {priority} is above the maximum 31"),
            ));
        }
        cm.core.set_priority(cm.model_id, priority)
    })
}

pub(super) unsafe extern "C" fn configured_model_set_scheduler_threshold(
    c: *mut hes_configured_model,
    threshold: u32,
) -> hes_status {
    on_configured(c, |cm| cm.core.set_threshold(cm.model_id, threshold))
}

pub(super) unsafe extern "C" fn configured_model_set_scheduler_timeout(
    c: *mut hes_configured_model,
    timeout_ms: u32,
) -> hes_status {
    on_configured(c, |cm| {
        cm.core
            .set_timeout(cm.model_id, Duration::from_millis(u64::from(timeout_ms)))
    })
}

pub(super) unsafe extern "C" fn configured_model_activate(
    c: *mut hes_configured_model,
) -> hes_status {
    on_configured(c, |cm| {
        live(&cm)?;
        cm.core.activate(cm.model_id)
    })
}

pub(super) unsafe extern "C" fn configured_model_deactivate(
    c: *mut hes_configured_model,
) -> hes_status {
    on_configured(c, |cm| cm.core.deactivate(cm.model_id))
}

pub(super) unsafe extern "C" fn configured_model_shutdown(
    c: *mut hes_configured_model,
) -> hes_status {
    on_configured(c, |cm| {
        cm.shut_down.store(true, Ordering::Release);
        cm.core.shutdown_model(cm.model_id, false);
        Ok(())
    })
}

pub(super) unsafe extern "C" fn bindings_set_buffer(
    b: *mut hes_bindings,
    d: hes_direction,
    name: *const c_char,
    data: *mut c_void,
    size: usize,
) -> hes_status {
    guard(|| {
        let bindings = lookup!(b, Bindings, "bindings");
        // SAFETY: `name` is NULL or NUL-terminated (contract).
        let name = unsafe { str_arg(name, "stream name") }?;
        if data.is_null() {
            return Err((
                HAILO_INVALID_ARGUMENT,
                format!("buffer for '{name}' is NULL"),
            ));
        }
        let spec = &bindings.cm.spec;
        let (streams, offset, kind) = match d {
            0 => (&spec.inputs, 0, "input"),
            1 => (&spec.outputs, spec.inputs.len(), "output"),
            d => {
                return Err((
                    HAILO_INVALID_ARGUMENT,
                    format!("direction {d} is neither 0 nor 1"),
                ))
            }
        };
        let (index, stream) = streams
            .iter()
            .enumerate()
            .find(|(_, s)| s.name == name)
            .ok_or_else(|| {
                (
                    HAILO_NOT_FOUND,
                    format!("model '{}' has no {kind} stream '{name}'", spec.name),
                )
            })?;
        if size != stream.frame_size() {
            return Err((
                HAILO_INVALID_ARGUMENT,
                format!(
                    "buffer for '{name}' has {size} bytes, the frame size is {}",
                    stream.frame_size()
                ),
            ));
        }
        let mut buffers = bindings.buffers.lock().unwrap_or_else(|e| e.into_inner());
        buffers[offset + index] = Some(RawBuf {
            ptr: data.cast::<u8>(),
            len: size,
        });
        Ok(())
    })
}

pub(super) unsafe extern "C" fn bindings_release(b: *mut hes_bindings) -> hes_status {
    guard(|| remove(b as usize, "bindings").map(drop))
}

pub(super) unsafe extern "C" fn job_wait(j: *mut hes_job, timeout_ms: u32) -> hes_status {
    guard(|| {
        let job = lookup!(j, Job, "job");
        waited(&job, timeout_ms, "job", "")
    })
}

pub(super) unsafe extern "C" fn job_release(j: *mut hes_job) -> hes_status {
    guard(|| remove(j as usize, "job").map(drop))
}
