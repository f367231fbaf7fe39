//! A simulator of the Hailo-10H behind the same C table as HailoRT.
//!
//! The safe layer ([`crate::npu`]) runs unchanged on it: [`table::api`] is a
//! `hes_api` of Rust `extern "C"` functions with the shim's contract and
//! HailoRT's status codes. Behind the table:
//!
//! - [`profile`]: the device figures (20 TOPS INT8, 40 INT4, 8 GiB, link,
//!   switch cost, utilisation), each marked published or assumed;
//! - [`scheduler`]: HailoRT's model scheduler rules as a pure function;
//! - `core`: the device thread: queues, bursts, timing, statistics;
//! - `queue`: each model's async queue (HailoRT's size rule, the card's
//!   answer past it) and the marking of completion callbacks;
//! - [`time_base`]: real-time, virtual and manual (deterministic) time;
//! - [`model_spec`] and [`mod@reference`]: the streams and how outputs are made;
//! - [`faults`]: timeouts, closed communication, unavailable device, at
//!   chosen jobs.
//!
//! Timing of a burst of `n` frames: switch (if the model changes) + input
//! transfer + `n` x ops per frame / (peak x utilisation) + output transfer.

use std::collections::BTreeMap;
use std::ffi::{c_char, CString};
use std::sync::{Arc, LazyLock};

mod completion;
mod core;
mod device_stats;
pub mod faults;
mod jobs;
mod measure;
mod model_entries;
pub mod model_spec;
pub mod profile;
mod queue;
pub mod reference;
pub mod registry;
pub mod scheduler;
mod status;
pub mod table;
pub mod time_base;
mod vdevice;

pub use self::core::MAX_NETWORK_GROUPS;
pub use device_stats::{ModelStats, SimStats};
pub use faults::{DeviceFault, FaultPlan};
pub use model_spec::{OpsSource, OutputKind};
pub use profile::{DeviceProfile, Link, LinkKind, ProfileFigure};
pub use queue::releases_in_completion;
pub use reference::{ReferenceError, ReferenceModel};
pub use time_base::{ManualClock, TimeBase};

/// Everything one simulated device is opened with.
#[derive(Debug, Clone, Default)]
pub struct SimProfile {
    pub device: DeviceProfile,
    pub clock: TimeBase,
    pub faults: FaultPlan,
    /// Reference ONNX models by network group name.
    pub references: BTreeMap<String, Arc<ReferenceModel>>,
    /// Operations per frame by network group name, for HEFs without them.
    pub ops_per_frame: BTreeMap<String, u64>,
    /// One async queue size for every model, instead of HailoRT's rule.
    pub async_queue_size: Option<usize>,
}

impl SimProfile {
    /// A device with this profile and the virtual clock.
    pub fn new(device: DeviceProfile) -> SimProfile {
        SimProfile {
            device,
            ..SimProfile::default()
        }
    }

    /// The same with another clock.
    pub fn with_clock(mut self, clock: TimeBase) -> SimProfile {
        self.clock = clock;
        self
    }

    /// The same with faults injected.
    pub fn with_faults(mut self, faults: FaultPlan) -> SimProfile {
        self.faults = faults;
        self
    }

    /// The same with a reference ONNX for network group `group`.
    pub fn with_reference(mut self, group: &str, model: ReferenceModel) -> SimProfile {
        self.references.insert(group.to_string(), Arc::new(model));
        self
    }

    /// The same with every model's async queue holding `frames` jobs.
    pub fn with_async_queue_size(mut self, frames: usize) -> SimProfile {
        self.async_queue_size = Some(frames);
        self
    }

    /// The same with operations per frame given for network group `group`.
    pub fn with_ops_per_frame(mut self, group: &str, ops: u64) -> SimProfile {
        self.ops_per_frame.insert(group.to_string(), ops);
        self
    }
}

static NAMES: LazyLock<Vec<CString>> = LazyLock::new(|| {
    crate::npu::error::Status::ALL
        .iter()
        .map(|s| CString::new(s.name()).unwrap_or_default())
        .collect()
});

/// HailoRT's name of a status (`hailo_get_status_message` answers the name)
/// as a static C string.
pub(crate) fn status_name_c(status: crate::npu::error::Status) -> *const c_char {
    let index = crate::npu::error::Status::ALL
        .iter()
        .position(|&s| s == status)
        .unwrap_or(0);
    NAMES.get(index).map_or(c"".as_ptr(), |m| m.as_ptr())
}
