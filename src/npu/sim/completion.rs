//! One submitted job of the simulator: the buffers it borrows and its
//! completion callback.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use super::core::lock;
use super::status::HAILO_TIMEOUT;

/// A host buffer lent to the device until the job's completion.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawBuf {
    pub ptr: *mut u8,
    pub len: usize,
}

// SAFETY: a RawBuf is only dereferenced by the worker while its job is in
// flight; the table's contract makes the submitter keep the buffer valid and
// untouched until the completion callback, so moving the pointer to the
// worker thread is sound.
unsafe impl Send for RawBuf {}

/// One submitted job: its completion callback and its outcome.
pub(crate) struct SimJob {
    callback: Mutex<Option<(hailort_sys::hes_completion_cb, usize)>>,
    done: Mutex<Option<u32>>,
    cv: Condvar,
}

impl SimJob {
    pub fn new(cb: hailort_sys::hes_completion_cb, user_data: *mut std::ffi::c_void) -> SimJob {
        SimJob {
            callback: Mutex::new(Some((cb, user_data as usize))),
            done: Mutex::new(None),
            cv: Condvar::new(),
        }
    }

    /// Runs the callback (once), then marks the job done.
    pub fn complete(&self, status: u32) {
        let callback = lock(&self.callback).take();
        if let Some((Some(cb), user_data)) = callback {
            // SAFETY: the submitter handed us this callback and user data for
            // exactly one call; `take` guarantees we make at most one.
            super::queue::as_completion(|| unsafe {
                cb(status, user_data as *mut std::ffi::c_void)
            });
        }
        *lock(&self.done) = Some(status);
        self.cv.notify_all();
    }

    /// Waits up to `timeout` for the job; its status, or `HAILO_TIMEOUT`.
    pub fn wait(&self, timeout: Duration) -> u32 {
        let guard = lock(&self.done);
        let (guard, _) = self
            .cv
            .wait_timeout_while(guard, timeout, |d| d.is_none())
            .unwrap_or_else(|e| e.into_inner());
        guard.unwrap_or(HAILO_TIMEOUT)
    }
}
