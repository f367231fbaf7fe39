//! The stop request of a run: set once (by Ctrl-C, a signal, the duration or
//! a failed stage) and seen at once by everything that waits inside the run.
//!
//! Sources pace themselves by waiting for a frame's due time; they wait on a
//! [`Stop`] instead of sleeping, so a camera at 0.001 fps or a replayed frame
//! stamped far in the future does not hold a stop up.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A shared stop request that waiters can sleep on.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<(Mutex<bool>, Condvar)>);

impl Stop {
    /// A stop not yet requested.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests the stop and wakes every waiter.
    pub fn request(&self) {
        let (flag, woken) = &*self.0;
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
        woken.notify_all();
    }

    /// Whether the stop was requested.
    pub fn is_requested(&self) -> bool {
        *self.0 .0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until `deadline` or the stop, whichever comes first; true when
    /// the stop came first (or had already been requested).
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let (flag, woken) = &*self.0;
        let mut stopped = flag.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if *stopped {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            stopped = woken
                .wait_timeout(stopped, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits for `timeout` or the stop; true when the stop came first.
    pub fn wait_for(&self, timeout: Duration) -> bool {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.wait_until(deadline),
            None => self.wait_forever(),
        }
    }

    /// Waits for the stop alone.
    fn wait_forever(&self) -> bool {
        let (flag, woken) = &*self.0;
        let stopped = flag.lock().unwrap_or_else(|e| e.into_inner());
        drop(woken.wait_while(stopped, |s| !*s));
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::Stop;

    #[test]
    fn a_wait_ends_at_its_deadline_without_a_stop() {
        let stop = Stop::new();
        let t = Instant::now();
        assert!(!stop.wait_for(Duration::from_millis(30)));
        assert!(t.elapsed() >= Duration::from_millis(30));
        assert!(!stop.is_requested());
    }

    #[test]
    fn a_stop_wakes_a_long_wait_at_once() {
        let stop = Stop::new();
        let waiter = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let t = Instant::now();
                (stop.wait_for(Duration::from_secs(1_000_000)), t.elapsed())
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        stop.request();
        let (stopped, waited) = waiter.join().unwrap();
        assert!(stopped);
        assert!(waited < Duration::from_secs(1), "waited {waited:?}");
        // Requested once, seen by every later wait.
        assert!(stop.wait_for(Duration::from_secs(1_000_000)));
    }
}
