//! The stages of a frame's path, in the order the frame meets them.
//!
//! | stage | module | thread(s) |
//! |---|---|---|
//! | 1 | [`capture`] | one per camera: source to a drop-oldest camera queue |
//! | 2 | [`npu`] | one: admission, preprocessing into job buffers, batching, submission, switching, routing |
//! | 3 | [`decode`] | the decoder pool: features to keypoints |
//! | 4 | [`sync`] | (in the fit thread) views of one instant grouped across cameras |
//! | 5 | [`fit`] | one: triangulation and the pose fit |
//! | 6 | [`sinks`] | JSON lines (in the fit thread) and the MCAP recorder |
//! | | [`live`] | (the NPU, fit and main threads) the tap live viewers read, never waited for |
//!
//! Each threaded stage is a [`Stage`]: [`start`] spawns it, it runs until its
//! input closes, and [`Running::drain`] waits for it to pass on or count
//! every frame it took.

pub mod capture;
pub mod decode;
pub mod fit;
pub mod live;
pub mod npu;
pub mod record;
pub mod sinks;
pub mod sync;

use std::thread::JoinHandle;

/// A stage of the frame's path that runs on its own thread.
///
/// The shape is what the stages share. Each owns its input and output
/// channels from construction, so starting is spawning its thread. A stage
/// stops when its input closes, which is how a stop travels down the path
/// (the capture stage's input is its source, closed by
/// [`capture::CaptureThread::stop`]); before returning it drains, so every
/// frame it took is passed on or counted as dropped. Its counters (thread
/// CPU, drops, latencies) go into the run's shared
/// [`LiveStats`](crate::rig::stats::LiveStats) as it runs, since the status
/// line reads them live; what only exists at the end is its `Output`.
pub trait Stage: Send + 'static {
    /// What the stage hands back once drained.
    type Output: Send + 'static;

    /// Its thread's name.
    fn name(&self) -> String;

    /// Runs until the input closes, then drains.
    fn run(self) -> Self::Output;
}

/// A started stage: its thread.
#[derive(Debug)]
pub struct Running<T> {
    name: String,
    handle: JoinHandle<T>,
}

/// A stage's thread panicked.
#[derive(Debug, thiserror::Error)]
#[error("the {stage} thread panicked")]
pub struct Panicked {
    /// The stage's thread name.
    pub stage: String,
}

/// Starts `stage` on its own thread.
///
/// # Errors
/// The thread could not be spawned.
pub fn start<S: Stage>(stage: S) -> std::io::Result<Running<S::Output>> {
    let name = stage.name();
    let handle = std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || stage.run())?;
    Ok(Running { name, handle })
}

impl<T> Running<T> {
    /// Whether the stage's thread has returned.
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Waits for the stage to drain and returns what it handed back.
    ///
    /// # Errors
    /// [`Panicked`] naming the stage.
    pub fn drain(self) -> Result<T, Panicked> {
        self.handle
            .join()
            .map_err(|_| Panicked { stage: self.name })
    }

    /// [`Running::drain`], waiting no later than `deadline`: a stage still
    /// running then is handed back (`Err`), its thread left to end alone.
    pub fn drain_until(self, deadline: std::time::Instant) -> Result<Result<T, Panicked>, Self> {
        while !self.is_finished() {
            if std::time::Instant::now() >= deadline {
                return Err(self);
            }
            std::thread::sleep(DRAIN_POLL);
        }
        Ok(self.drain())
    }

    /// The stage's thread name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// How often a bounded drain looks whether a stage has ended.
const DRAIN_POLL: std::time::Duration = std::time::Duration::from_millis(2);

#[cfg(test)]
mod tests {
    use super::{start, Stage};

    struct Sum(Vec<u32>);

    impl Stage for Sum {
        type Output = u32;

        fn name(&self) -> String {
            "sum".into()
        }

        fn run(self) -> u32 {
            self.0.iter().sum()
        }
    }

    struct Fails;

    impl Stage for Fails {
        type Output = ();

        fn name(&self) -> String {
            "fails".into()
        }

        fn run(self) {
            panic!("on purpose");
        }
    }

    #[test]
    fn a_drained_stage_hands_back_its_output() {
        let running = start(Sum(vec![1, 2, 3])).unwrap();
        assert_eq!(running.drain().unwrap(), 6);
    }

    struct Sleeps(std::time::Duration);

    impl Stage for Sleeps {
        type Output = ();

        fn name(&self) -> String {
            "sleeps".into()
        }

        fn run(self) {
            std::thread::sleep(self.0);
        }
    }

    #[test]
    fn a_bounded_drain_hands_back_a_stage_that_outlives_it() {
        use std::time::{Duration, Instant};
        let t = Instant::now();
        let slow = start(Sleeps(Duration::from_secs(3))).unwrap();
        let left = slow
            .drain_until(t + Duration::from_millis(50))
            .expect_err("a 3 s stage drained in 50 ms");
        assert_eq!(left.name(), "sleeps");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        let quick = start(Sleeps(Duration::from_millis(1))).unwrap();
        assert!(quick
            .drain_until(Instant::now() + Duration::from_secs(5))
            .is_ok());
    }

    #[test]
    fn a_panicking_stage_is_named() {
        let err = start(Fails).unwrap().drain().unwrap_err();
        assert_eq!(err.to_string(), "the fails thread panicked");
    }
}
