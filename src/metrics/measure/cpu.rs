//! CPU time of the calling thread, for the host cost of submitting and completing frames.

use std::time::Duration;

use nix::time::{clock_gettime, ClockId};

/// CPU time consumed by the calling thread so far (`CLOCK_THREAD_CPUTIME_ID`); zero where the
/// clock is unavailable, which [`ThreadCpu::elapsed`] then reports as `None`.
fn now() -> Option<Duration> {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .ok()
        .map(Duration::from)
}

/// A start point of the calling thread's CPU time.
#[derive(Debug, Clone, Copy)]
pub struct ThreadCpu {
    start: Option<Duration>,
}

impl ThreadCpu {
    /// Starts counting on the calling thread.
    pub fn start() -> Self {
        Self { start: now() }
    }

    /// CPU time the calling thread used since [`ThreadCpu::start`] (call it on the same thread).
    pub fn elapsed(&self) -> Option<Duration> {
        Some(now()?.saturating_sub(self.start?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_work_costs_cpu_and_sleeping_does_not() {
        let cpu = ThreadCpu::start();
        std::thread::sleep(Duration::from_millis(50));
        let slept = cpu.elapsed().unwrap();
        assert!(slept < Duration::from_millis(20), "{slept:?}");
        // Spin until the thread has used 20 ms of CPU (on a loaded machine this takes longer
        // in wall time); a clock that did not count would never get there.
        let cpu = ThreadCpu::start();
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while cpu.elapsed().unwrap() < Duration::from_millis(20)
            && t.elapsed() < Duration::from_secs(10)
        {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        assert!(cpu.elapsed().unwrap() >= Duration::from_millis(20));
    }
}
