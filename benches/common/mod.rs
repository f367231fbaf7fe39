//! Timing shared by the decoder benchmark and profiler.

use std::time::Duration;

/// CPU time consumed by the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
///
/// On a machine shared with other work, wall time counts the time this thread waited
/// for a core; thread CPU time does not, so single-threaded engines compare fairly.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and the clock id is a constant the
    // kernel knows; clock_gettime writes only into `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
