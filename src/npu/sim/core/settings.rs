//! Per-model settings of the simulated chip: the hardware latency
//! measurement, the scheduler's priority, threshold and timeout, and manual
//! activation under scheduling NONE, each refused as HailoRT refuses it.

use std::time::Duration;

use super::super::scheduler::ModelState;
use super::super::status::*;
use super::{ns, Core, Fail};

impl Core {
    /// Sets the hardware latency flags model `id` was configured with.
    pub(crate) fn set_latency_flags(&self, id: u64, flags: u32) -> Result<(), Fail> {
        self.with_model(id, |st| {
            if let Some(m) = st.models.get_mut(&id) {
                m.latency.set_flags(flags);
            }
            Ok(())
        })
    }

    /// The average hardware latency of model `id` (named `name`, with
    /// `inputs` input streams), ns.
    pub(crate) fn hw_latency(&self, id: u64, name: &str, inputs: usize) -> Result<u64, Fail> {
        self.with_model(id, |st| match st.models.get_mut(&id) {
            Some(m) => m.latency.average(name, inputs),
            None => Err((HAILO_NOT_FOUND, format!("configured model {id} is gone"))),
        })
    }

    fn require_scheduler(&self, what: &str) -> Result<(), Fail> {
        if self.round_robin {
            Ok(())
        } else {
            Err((
                HAILO_INVALID_OPERATION,
                format!("{what} needs the model scheduler, but the device was opened with scheduling NONE"),
            ))
        }
    }

    /// Changes one scheduler setting of model `id` (the C entry `what`).
    fn set_sched(
        &self,
        id: u64,
        what: &str,
        set: impl FnOnce(&mut ModelState),
    ) -> Result<(), Fail> {
        self.require_scheduler(what)?;
        self.with_model(id, |st| {
            if let Some(m) = st.models.get_mut(&id) {
                set(&mut m.sched);
            }
            Ok(())
        })
    }

    /// HailoRT's refusal of manual `what` (activate, deactivate) under the
    /// model scheduler, in its words.
    fn require_manual(&self, what: &str) -> Result<(), Fail> {
        if self.round_robin {
            return Err((
                HAILO_INVALID_OPERATION,
                format!(
                    "Manually {what} a core-op is not allowed when the core-op scheduler is active"
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn set_priority(&self, id: u64, priority: u8) -> Result<(), Fail> {
        self.set_sched(id, "set_scheduler_priority", |s| s.priority = priority)
    }

    pub(crate) fn set_threshold(&self, id: u64, threshold: u32) -> Result<(), Fail> {
        self.set_sched(id, "set_scheduler_threshold", |s| s.threshold = threshold)
    }

    pub(crate) fn set_timeout(&self, id: u64, timeout: Duration) -> Result<(), Fail> {
        let t = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        self.set_sched(id, "set_scheduler_timeout", |s| s.timeout_ns = t)
    }

    /// Manual activation (scheduling NONE); charges one switch.
    pub(crate) fn activate(&self, id: u64) -> Result<(), Fail> {
        self.require_manual("activate")?;
        let switch_ns = ns(self.profile.switch_cost_s.value);
        self.with_model(id, |st| {
            if let Some(active) = st.manual_active {
                return Err((
                    HAILO_INVALID_OPERATION,
                    format!("network group {active} is already active; deactivate it first"),
                ));
            }
            st.manual_active = Some(id);
            st.dev_now += switch_ns;
            st.stats.switches += 1;
            st.stats.switch_ns.push(switch_ns);
            st.stats.busy_ns += switch_ns;
            let name = st.models[&id].spec.name.clone();
            st.stats.models.entry(name).or_default().switches_in += 1;
            Ok(())
        })
    }

    pub(crate) fn deactivate(&self, id: u64) -> Result<(), Fail> {
        self.require_manual("deactivate")?;
        self.with_model(id, |st| {
            if st.manual_active != Some(id) {
                return Err((
                    HAILO_INVALID_OPERATION,
                    "network group is not active".into(),
                ));
            }
            st.manual_active = None;
            Ok(())
        })
    }
}
