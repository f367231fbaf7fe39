//! `hes_job` entries.

use super::*;

entries! {
    /// `job_wait`.
    fn wait = job_wait(j: hes_job, timeout_ms: u32);
    /// `job_release`: detaches the job; its callback still runs.
    release fn release = job_release(j: hes_job);
}
