//! `hes_job` entries.

use super::*;

/// `job_wait`.
///
/// # Safety
/// `j` is a live job handle of `api`.
pub unsafe fn wait(api: &Api, j: NonNull<hes_job>, timeout_ms: u32) -> Result<(), NpuError> {
    // SAFETY: `j` is live (caller).
    unsafe { call!(api, job_wait(j.as_ptr(), timeout_ms)) }
}

/// `job_release`: detaches the job; its callback still runs.
///
/// # Safety
/// `j` is a live job handle of `api`, not used afterwards.
pub unsafe fn release(api: &Api, j: NonNull<hes_job>) -> Result<(), NpuError> {
    // SAFETY: the caller guarantees `j` is live and unused afterwards.
    unsafe { call!(api, job_release(j.as_ptr())) }
}
