//! `hes_configured_model` entries.

use super::*;

/// `configured_model_release`.
///
/// # Safety
/// `c` is a live configured model of `api`, not used afterwards.
pub unsafe fn release(api: &Api, c: NonNull<hes_configured_model>) -> Result<(), NpuError> {
    // SAFETY: the caller guarantees `c` is live and unused afterwards.
    unsafe { call!(api, configured_model_release(c.as_ptr())) }
}

/// `configured_model_create_bindings`.
///
/// # Safety
/// `c` is a live configured model of `api`.
pub unsafe fn create_bindings(
    api: &Api,
    c: NonNull<hes_configured_model>,
) -> Result<NonNull<hes_bindings>, NpuError> {
    let mut out = ptr::null_mut();
    // SAFETY: `c` is live (caller); `out` is writable.
    unsafe { call!(api, configured_model_create_bindings(c.as_ptr(), &mut out))? };
    non_null(api, out, "configured_model_create_bindings")
}

/// `configured_model_run`: blocking inference.
///
/// # Safety
/// `c` and `b` are live handles of `api`; the buffers set on `b` are valid.
pub unsafe fn run(
    api: &Api,
    c: NonNull<hes_configured_model>,
    b: NonNull<hes_bindings>,
    timeout_ms: u32,
) -> Result<(), NpuError> {
    // SAFETY: the caller guarantees live handles and valid buffers.
    unsafe {
        call!(
            api,
            configured_model_run(c.as_ptr(), b.as_ptr(), timeout_ms)
        )
    }
}

/// `configured_model_run_async`. On success the callback runs exactly
/// once; the returned job handle may be absent when the job already ended.
///
/// # Safety
/// `c` and `b` are live handles of `api`; the buffers set on `b` stay valid
/// and `user_data` stays valid until `callback` runs; `callback` never
/// unwinds.
pub unsafe fn run_async(
    api: &Api,
    c: NonNull<hes_configured_model>,
    b: NonNull<hes_bindings>,
    callback: hes_completion_cb,
    user_data: *mut c_void,
) -> Result<Option<NonNull<hes_job>>, NpuError> {
    let mut job = ptr::null_mut();
    // SAFETY: the caller guarantees the handles, buffers and user data.
    unsafe {
        call!(
            api,
            configured_model_run_async(c.as_ptr(), b.as_ptr(), callback, user_data, &mut job)
        )?
    };
    Ok(NonNull::new(job))
}

/// `configured_model_wait_for_async_ready`.
///
/// # Safety
/// `c` is a live configured model of `api`.
pub unsafe fn wait_for_async_ready(
    api: &Api,
    c: NonNull<hes_configured_model>,
    timeout_ms: u32,
    frames: u32,
) -> Result<(), NpuError> {
    // SAFETY: `c` is live (caller).
    unsafe {
        call!(
            api,
            configured_model_wait_for_async_ready(c.as_ptr(), timeout_ms, frames)
        )
    }
}

/// `configured_model_set_scheduler_priority`.
///
/// # Safety
/// `c` is a live configured model of `api`.
pub unsafe fn set_scheduler_priority(
    api: &Api,
    c: NonNull<hes_configured_model>,
    priority: u8,
) -> Result<(), NpuError> {
    // SAFETY: `c` is live (caller).
    unsafe {
        call!(
            api,
            configured_model_set_scheduler_priority(c.as_ptr(), priority)
        )
    }
}

/// `configured_model_set_scheduler_threshold`.
///
/// # Safety
/// `c` is a live configured model of `api`.
pub unsafe fn set_scheduler_threshold(
    api: &Api,
    c: NonNull<hes_configured_model>,
    threshold: u32,
) -> Result<(), NpuError> {
    // SAFETY: `c` is live (caller).
    unsafe {
        call!(
            api,
            configured_model_set_scheduler_threshold(c.as_ptr(), threshold)
        )
    }
}

/// `configured_model_set_scheduler_timeout`.
///
/// # Safety
/// `c` is a live configured model of `api`.
pub unsafe fn set_scheduler_timeout(
    api: &Api,
    c: NonNull<hes_configured_model>,
    timeout_ms: u32,
) -> Result<(), NpuError> {
    // SAFETY: `c` is live (caller).
    unsafe {
        call!(
            api,
            configured_model_set_scheduler_timeout(c.as_ptr(), timeout_ms)
        )
    }
}

/// `configured_model_activate`.
///
/// # Safety
/// `c` is a live configured model of `api`.
pub unsafe fn activate(api: &Api, c: NonNull<hes_configured_model>) -> Result<(), NpuError> {
    // SAFETY: `c` is live (caller).
    unsafe { call!(api, configured_model_activate(c.as_ptr())) }
}

/// `configured_model_deactivate`.
///
/// # Safety
/// `c` is a live configured model of `api`.
pub unsafe fn deactivate(api: &Api, c: NonNull<hes_configured_model>) -> Result<(), NpuError> {
    // SAFETY: `c` is live (caller).
    unsafe { call!(api, configured_model_deactivate(c.as_ptr())) }
}

/// `configured_model_shutdown`: aborts in-flight jobs.
///
/// # Safety
/// `c` is a live configured model of `api`.
pub unsafe fn shutdown(api: &Api, c: NonNull<hes_configured_model>) -> Result<(), NpuError> {
    // SAFETY: `c` is live (caller).
    unsafe { call!(api, configured_model_shutdown(c.as_ptr())) }
}
