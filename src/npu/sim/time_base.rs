//! Simulated time.
//!
//! - [`TimeBase::RealTime`]: frames arrive at wall-clock time and the device
//!   sleeps until each modelled completion.
//! - [`TimeBase::Virtual`]: as fast as possible; a frame arrives at the device's
//!   current virtual time, and the device jumps ahead whenever it would wait.
//! - [`TimeBase::Manual`]: virtual and deterministic: the feeder owns time.
//!   Frames arrive at [`ManualClock::now`], and the device decides at time
//!   `t` only once the feeder has advanced to `t`, so the same feed always
//!   gives the same schedule.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::core::Core;

/// The time base of a simulated device. A rig file names it as `realtime` or
/// `virtual`; a manual clock exists only in code, where its feeder lives.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeBase {
    RealTime,
    #[default]
    Virtual,
    #[serde(skip)]
    Manual(ManualClock),
}

impl TimeBase {
    /// A name for reports.
    pub fn name(&self) -> &'static str {
        match self {
            TimeBase::RealTime => "real-time",
            TimeBase::Virtual => "virtual",
            TimeBase::Manual(_) => "virtual (manual)",
        }
    }

    /// Whether time is the wall clock's. Otherwise cameras run as fast as the host goes,
    /// waiting for room rather than dropping, and durations are the cameras' time.
    pub fn is_real_time(&self) -> bool {
        matches!(self, TimeBase::RealTime)
    }
}

/// A virtual clock advanced by the feeder. Clones share the same time, and
/// compare equal exactly when they do.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

#[derive(Debug, Default)]
struct ManualInner {
    now_ns: AtomicU64,
    cores: Mutex<Vec<Weak<Core>>>,
}

impl PartialEq for ManualClock {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// The feeder's current time.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.now_ns())
    }

    pub(crate) fn now_ns(&self) -> u64 {
        self.inner.now_ns.load(Ordering::Acquire)
    }

    /// Moves time forward to `t` (never backwards) and lets the devices
    /// catch up to it.
    pub fn advance_to(&self, t: Duration) {
        let t = u64::try_from(t.as_nanos()).unwrap_or(u64::MAX);
        self.set(t);
    }

    /// Moves time forward by `dt`.
    pub fn advance(&self, dt: Duration) {
        let dt = u64::try_from(dt.as_nanos()).unwrap_or(u64::MAX);
        self.set(self.now_ns().saturating_add(dt));
    }

    /// Declares that no more frames will come: the devices run everything
    /// queued to completion.
    pub fn finish(&self) {
        self.set(u64::MAX);
    }

    fn set(&self, t: u64) {
        self.inner.now_ns.fetch_max(t, Ordering::AcqRel);
        let cores = self.inner.cores.lock().unwrap_or_else(|e| e.into_inner());
        for core in cores.iter().filter_map(Weak::upgrade) {
            core.wake();
        }
    }

    pub(crate) fn attach(&self, core: &Arc<Core>) {
        let mut cores = self.inner.cores.lock().unwrap_or_else(|e| e.into_inner());
        cores.retain(|c| c.strong_count() > 0);
        cores.push(Arc::downgrade(core));
    }
}
