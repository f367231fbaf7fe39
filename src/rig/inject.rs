//! Faults injected into a run, for the fault matrix's tests (docs/faults.md): the simulated
//! device dropping off, jobs timing out, a full queue shutting a model down, a camera
//! unplugged and plugged back. A run without them is a run with [`Faults::default`].

use crate::camera::fault::{CameraFault, FaultySource};
use crate::camera::Source;
use crate::npu::sim::FaultPlan;

/// What goes wrong during a run, and when.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// The simulator's faults, by job (a rig on the `sim` backend; HailoRT ignores them).
    pub npu: FaultPlan,
    /// Per camera, by its index in the rig file: the faults its source meets.
    pub cameras: Vec<(usize, Vec<CameraFault>)>,
}

impl Faults {
    /// The rig's sources, those with faults planned wrapped in a [`FaultySource`].
    pub(super) fn wrap(&self, sources: Vec<Box<dyn Source>>) -> Vec<Box<dyn Source>> {
        sources
            .into_iter()
            .enumerate()
            .map(|(i, source)| {
                let planned: Vec<CameraFault> = self
                    .cameras
                    .iter()
                    .filter(|(c, _)| *c == i)
                    .flat_map(|(_, f)| f.iter().copied())
                    .collect();
                if planned.is_empty() {
                    source
                } else {
                    Box::new(FaultySource::new(source, planned)) as Box<dyn Source>
                }
            })
            .collect()
    }
}
