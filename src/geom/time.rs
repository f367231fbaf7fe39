//! Time: the monotonic clock every stamp is taken on, CPU-time clocks for host cost, and a
//! mock clock for tests.
//!
//! Stamps are CLOCK_MONOTONIC nanoseconds, the clock V4L2 drivers stamp frames with, so a
//! driver's capture time and the rig's own stamps subtract directly. The clocks are read
//! through `nix`; on Linux each of them always exists, so a failed read is a broken system,
//! not an input error, and reads as zero rather than a panic.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nix::time::{clock_gettime, ClockId};

/// Nanoseconds on `clock` (0 if the clock cannot be read).
fn read_ns(clock: ClockId) -> u64 {
    clock_gettime(clock).map_or(0, |t| Duration::from(t).as_nanos() as u64)
}

/// CLOCK_MONOTONIC now, ns (the clock V4L2 drivers stamp with).
pub fn monotonic_ns() -> u64 {
    read_ns(ClockId::CLOCK_MONOTONIC)
}

/// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), ns.
pub fn thread_cpu_ns() -> u64 {
    read_ns(ClockId::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time of the whole process, all threads (CLOCK_PROCESS_CPUTIME_ID), ns.
pub fn process_cpu_ns() -> u64 {
    read_ns(ClockId::CLOCK_PROCESS_CPUTIME_ID)
}

/// A source of monotonic nanoseconds.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Nanoseconds on CLOCK_MONOTONIC (or the mock's time).
    fn now_ns(&self) -> u64;
}

/// CLOCK_MONOTONIC.
#[derive(Debug, Clone, Copy, Default)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        monotonic_ns()
    }
}

/// A clock that moves only when told to; clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct MockClock(Arc<AtomicU64>);

impl MockClock {
    /// A mock clock at `start_ns`.
    pub fn new(start_ns: u64) -> Self {
        Self(Arc::new(AtomicU64::new(start_ns)))
    }

    /// Moves the clock forward.
    pub fn advance(&self, ns: u64) {
        self.0.fetch_add(ns, Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set(&self, ns: u64) {
        self.0.store(ns, Ordering::SeqCst);
    }
}

impl Clock for MockClock {
    fn now_ns(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// CPU time consumed by the calling thread so far (`CLOCK_THREAD_CPUTIME_ID`); zero where the
/// clock is unavailable, which [`ThreadCpu::elapsed`] then reports as `None`.
fn thread_cpu() -> Option<Duration> {
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
        Self {
            start: thread_cpu(),
        }
    }

    /// CPU time the calling thread used since [`ThreadCpu::start`] (call it on the same thread).
    pub fn elapsed(&self) -> Option<Duration> {
        Some(thread_cpu()?.saturating_sub(self.start?))
    }
}

/// The wall-clock time of monotonic stamps: CLOCK_REALTIME minus CLOCK_MONOTONIC, read once.
///
/// Recordings and live viewers place messages on the calendar (Foxglove shows a stamp of
/// CLOCK_MONOTONIC as a moment in 1970), while the pipeline's stamps stay monotonic. The
/// offset is read once, so wall times keep the monotonic spacing even when NTP steps the
/// real-time clock during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallClock {
    offset_ns: i128,
}

impl WallClock {
    /// Reads the offset now: the real-time clock between two monotonic reads, so the
    /// offset errs by at most half the time between them.
    pub fn now() -> Self {
        let before = read_ns(ClockId::CLOCK_MONOTONIC);
        let real = read_ns(ClockId::CLOCK_REALTIME);
        let after = read_ns(ClockId::CLOCK_MONOTONIC);
        let mono = before / 2 + after / 2;
        Self::with_offset(i128::from(real) - i128::from(mono))
    }

    /// A wall clock `offset_ns` ahead of the monotonic clock (tests, replays).
    pub fn with_offset(offset_ns: i128) -> Self {
        Self { offset_ns }
    }

    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, ns.
    pub fn offset_ns(&self) -> i128 {
        self.offset_ns
    }

    /// The wall-clock time (ns since the Unix epoch) of a monotonic stamp, clamped to
    /// what a u64 holds.
    pub fn wall_ns(&self, monotonic_ns: u64) -> u64 {
        (i128::from(monotonic_ns) + self.offset_ns).clamp(0, i128::from(u64::MAX)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_moves_forward() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = MonotonicClock.now_ns();
        assert!(b >= a + 1_000_000, "{a} -> {b}");
    }

    #[test]
    fn wall_clock_puts_a_monotonic_stamp_now_on_the_calendar() {
        let wall = WallClock::now();
        let real = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i128;
        let placed = i128::from(wall.wall_ns(monotonic_ns()));
        assert!((placed - real).abs() < 50_000_000, "{placed} vs {real}");
        // Spacing is kept; a stamp before the epoch clamps to it.
        assert_eq!(wall.wall_ns(2_000) - wall.wall_ns(1_000), 1_000);
        assert_eq!(WallClock::with_offset(-10).wall_ns(3), 0);
        // Negative control: the monotonic stamp itself is decades from the calendar.
        assert!((i128::from(monotonic_ns()) - real).abs() > 1_000_000_000 * 3600 * 24 * 365);
    }

    #[test]
    fn mock_clones_share_time() {
        let a = MockClock::new(5);
        let b = a.clone();
        a.advance(10);
        assert_eq!(b.now_ns(), 15);
    }

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
