//! `--backend`, spelled one way by every command that opens a device.

use clap::ValueEnum;
use hailo_edge::npu::sim::SimProfile;
use hailo_edge::npu::Backend;

/// Which device a command opens.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum BackendArg {
    /// HailoRT when this build links it and a part is present, else the simulator (with a
    /// loud warning when a part is present).
    Auto,
    /// The simulator.
    Sim,
    /// HailoRT (refused, with the build command, when this build does not link it).
    Hailort,
}

impl BackendArg {
    /// The backend: `device_id` picks the HailoRT device, `sim` gives the simulator's profile.
    pub(crate) fn backend(
        self,
        device_id: Option<String>,
        sim: impl FnOnce() -> SimProfile,
    ) -> Backend {
        match self {
            BackendArg::Auto => Backend::Auto,
            BackendArg::Sim => Backend::Sim(sim()),
            BackendArg::Hailort => Backend::HailoRt { device_id },
        }
    }
}
