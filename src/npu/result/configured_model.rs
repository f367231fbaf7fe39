//! `hes_configured_model` entries.

use super::*;

entries! {
    /// `configured_model_release`.
    release fn release = configured_model_release(c: hes_configured_model);
    /// `configured_model_create_bindings`.
    fn create_bindings = configured_model_create_bindings(c: hes_configured_model)
        -> handle hes_bindings;
    /// `configured_model_wait_for_async_ready`.
    fn wait_for_async_ready = configured_model_wait_for_async_ready(
        c: hes_configured_model,
        timeout_ms: u32,
        frames: u32
    );
    /// `configured_model_get_async_queue_size`.
    fn get_async_queue_size = configured_model_get_async_queue_size(c: hes_configured_model)
        -> usize;
    /// `configured_model_set_scheduler_priority`.
    fn set_scheduler_priority = configured_model_set_scheduler_priority(
        c: hes_configured_model,
        priority: u8
    );
    /// `configured_model_set_scheduler_threshold`.
    fn set_scheduler_threshold = configured_model_set_scheduler_threshold(
        c: hes_configured_model,
        threshold: u32
    );
    /// `configured_model_set_scheduler_timeout`.
    fn set_scheduler_timeout = configured_model_set_scheduler_timeout(
        c: hes_configured_model,
        timeout_ms: u32
    );
    /// `configured_model_activate`.
    fn activate = configured_model_activate(c: hes_configured_model);
    /// `configured_model_deactivate`.
    fn deactivate = configured_model_deactivate(c: hes_configured_model);
    /// `configured_model_shutdown`: aborts in-flight jobs.
    fn shutdown = configured_model_shutdown(c: hes_configured_model);
    /// `configured_model_hw_latency`: the average hardware latency, ns.
    fn hw_latency = configured_model_hw_latency(c: hes_configured_model) -> u64;
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
