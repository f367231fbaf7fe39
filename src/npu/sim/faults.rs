//! Fault injection at chosen jobs.
//!
//! Jobs are numbered per device from 0 in submission order. A fault at
//! submission makes that `run_async` fail (and, as in HailoRT, leaves the
//! configured model needing reconfiguration); a timeout makes the job
//! complete with `HAILO_TIMEOUT` instead of producing outputs.

use std::collections::BTreeMap;

use super::status::*;

/// A fault the simulator can inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Fault {
    /// The job completes with `HAILO_TIMEOUT` (4).
    Timeout,
    /// `run_async` fails with `HAILO_COMMUNICATION_CLOSED` (62).
    CommunicationClosed,
    /// `run_async` fails with `HAILO_DEVICE_TEMPORARILY_UNAVAILABLE` (97).
    DeviceTemporarilyUnavailable,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Fault::Timeout => "timeout",
            Fault::CommunicationClosed => "communication closed",
            Fault::DeviceTemporarilyUnavailable => "device temporarily unavailable",
        })
    }
}

impl Fault {
    /// The status the fault produces.
    pub fn status(self) -> u32 {
        match self {
            Fault::Timeout => HAILO_TIMEOUT,
            Fault::CommunicationClosed => HAILO_COMMUNICATION_CLOSED,
            Fault::DeviceTemporarilyUnavailable => HAILO_DEVICE_TEMPORARILY_UNAVAILABLE,
        }
    }
}

/// Which jobs fail, and how.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultPlan {
    at: BTreeMap<u64, Fault>,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> FaultPlan {
        FaultPlan::default()
    }

    /// Adds a fault at job `index` (0-based, per device, submission order).
    pub fn at_job(mut self, index: u64, fault: Fault) -> FaultPlan {
        self.at.insert(index, fault);
        self
    }

    /// The fault planned for job `index`.
    pub fn at(&self, index: u64) -> Option<Fault> {
        self.at.get(&index).copied()
    }
}
