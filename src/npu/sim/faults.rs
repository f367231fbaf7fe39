//! DeviceFault injection at chosen jobs.
//!
//! Jobs are numbered per device from 0 in submission order. A fault at
//! submission makes that `run_async` fail (and, as in HailoRT, leaves the
//! configured model needing reconfiguration); a timeout makes the job
//! complete with `HAILO_TIMEOUT` instead of producing outputs; a full queue
//! fails the job's completion with `HAILO_QUEUE_IS_FULL` and shuts the
//! card's copy of the model down, as an overflow of its async queue does
//! (the `queue` module), so every later job of that model completes with
//! `HAILO_STREAM_ABORT`. A device that drops off ([`FaultPlan::closed_from`])
//! refuses every job from one on with `HAILO_COMMUNICATION_CLOSED`, and
//! every configuration after it.

use std::collections::BTreeMap;

use super::status::*;

/// A fault the simulator can inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceFault {
    /// The job completes with `HAILO_TIMEOUT` (4).
    Timeout,
    /// `run_async` fails with `HAILO_COMMUNICATION_CLOSED` (62).
    CommunicationClosed,
    /// `run_async` fails with `HAILO_DEVICE_TEMPORARILY_UNAVAILABLE` (97).
    DeviceTemporarilyUnavailable,
    /// The job completes with `HAILO_QUEUE_IS_FULL` (82) and the model shuts down.
    QueueFull,
}

impl std::fmt::Display for DeviceFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeviceFault::Timeout => "timeout",
            DeviceFault::CommunicationClosed => "communication closed",
            DeviceFault::DeviceTemporarilyUnavailable => "device temporarily unavailable",
            DeviceFault::QueueFull => "queue full",
        })
    }
}

impl DeviceFault {
    /// The status the fault produces.
    pub fn status(self) -> u32 {
        match self {
            DeviceFault::Timeout => HAILO_TIMEOUT,
            DeviceFault::CommunicationClosed => HAILO_COMMUNICATION_CLOSED,
            DeviceFault::DeviceTemporarilyUnavailable => HAILO_DEVICE_TEMPORARILY_UNAVAILABLE,
            DeviceFault::QueueFull => HAILO_QUEUE_IS_FULL,
        }
    }
}

/// A fault spec that is not `KIND@JOB`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{spec}`: {why}; expected KIND@JOB, KIND one of timeout, unavailable, queue-full, closed (e.g. closed@300)")]
pub struct FaultSpecError {
    /// The spec as given.
    pub spec: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// Which jobs fail, and how.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultPlan {
    at: BTreeMap<u64, DeviceFault>,
    /// The first job of a device that has dropped off.
    closed_from: Option<u64>,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> FaultPlan {
        FaultPlan::default()
    }

    /// Adds a fault at job `index` (0-based, per device, submission order).
    pub fn at_job(mut self, index: u64, fault: DeviceFault) -> FaultPlan {
        self.at.insert(index, fault);
        self
    }

    /// The device drops off at job `index`: that job and every later one fail
    /// `run_async` with `HAILO_COMMUNICATION_CLOSED`.
    pub fn closed_from(mut self, index: u64) -> FaultPlan {
        self.closed_from = Some(index);
        self
    }

    /// The job at which the device dropped off, once `submitted` jobs have
    /// been tried: from then on the hRPC client answers every request,
    /// configuring included, with `HAILO_COMMUNICATION_CLOSED` (HailoRT
    /// 5.2.0: the client connects once, hrpc/client.cpp:39-73, and refuses
    /// requests once its message loop has ended, 150-151; configuring is
    /// such a request, infer_model_hrpc_client.cpp:113).
    pub fn closed_after(&self, submitted: u64) -> Option<u64> {
        self.closed_from.filter(|&from| submitted > from)
    }

    /// Adds the fault `spec` names: `KIND@JOB`, KIND one of `timeout`,
    /// `unavailable`, `queue-full` (a fault at that job) or `closed` (the device
    /// drops off there, [`FaultPlan::closed_from`]).
    ///
    /// # Errors
    /// [`FaultSpecError`] naming the spec and the form expected.
    pub fn with_spec(self, spec: &str) -> Result<FaultPlan, FaultSpecError> {
        let bad = |why: &'static str| FaultSpecError {
            spec: spec.to_owned(),
            why,
        };
        let (kind, job) = spec.split_once('@').ok_or_else(|| bad("no `@JOB`"))?;
        let job: u64 = job
            .parse()
            .map_err(|_| bad("JOB is not a whole number of jobs from 0"))?;
        Ok(match kind {
            "timeout" => self.at_job(job, DeviceFault::Timeout),
            "unavailable" => self.at_job(job, DeviceFault::DeviceTemporarilyUnavailable),
            "queue-full" => self.at_job(job, DeviceFault::QueueFull),
            "closed" => self.closed_from(job),
            _ => {
                return Err(bad(
                    "KIND is none of timeout, unavailable, queue-full, closed",
                ))
            }
        })
    }

    /// The fault planned for job `index`.
    pub fn at(&self, index: u64) -> Option<DeviceFault> {
        match self.closed_from {
            Some(from) if index >= from => Some(DeviceFault::CommunicationClosed),
            _ => self.at.get(&index).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_a_fault_at_a_job() {
        let plan = FaultPlan::none()
            .with_spec("timeout@3")
            .and_then(|p| p.with_spec("queue-full@5"))
            .and_then(|p| p.with_spec("unavailable@7"))
            .and_then(|p| p.with_spec("closed@9"))
            .unwrap();
        let faults: Vec<_> = (0..11).map(|j| plan.at(j)).collect();
        assert_eq!(faults[3], Some(DeviceFault::Timeout));
        assert_eq!(faults[5], Some(DeviceFault::QueueFull));
        assert_eq!(faults[7], Some(DeviceFault::DeviceTemporarilyUnavailable));
        assert_eq!(faults[9..], [Some(DeviceFault::CommunicationClosed); 2]);
        assert_eq!(faults[4], None);
        for bad in [
            "closed",
            "closed@",
            "closed@-1",
            "reset@3",
            "@3",
            "timeout@1e3",
        ] {
            let err = FaultPlan::none().with_spec(bad).unwrap_err();
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
        }
    }
}
