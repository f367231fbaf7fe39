//! Measuring utilisation: run HEFs on a device (real or simulated) and report every figure with
//! where it comes from.
//!
//! One [`measure`] call opens a device, configures one or more graphs with a batch size and
//! scheduler settings, keeps them fed (several frames in flight per graph, in the ratio given,
//! e.g. 3:1 for three body cameras and one face camera), and then reads:
//!
//! | figure | real part (HailoRT) | simulator |
//! |---|---|---|
//! | device fps per graph | completions over wall time | frames over the modelled device time |
//! | host latency (submit to completion) | host clock | host clock around the simulator |
//! | hardware latency | `get_hw_latency_measurement` (configured with `HAILO_LATENCY_MEASURE`) | the timing model's burst time, through the same table entry |
//! | busy % | `query_performance_stats` NN-core utilisation | modelled busy time over device time |
//! | compute % INT8 / INT4 | ops per frame x fps / peak | the same, from modelled fps |
//! | switches/s, time per switch | not visible to a client: `None`; [`switch_cost`] infers the time per switch | the timing model's switches |
//! | link bytes/s in and out | frame sizes x completions over wall time | modelled bytes over device time |
//! | power, temperature | where the device reports them | not modelled: `None`, with a note |
//! | host CPU | thread CPU time of the submit/complete loop | the same (a real host measurement) |
//!
//! Device figures from the simulator are [`Provenance::Modelled`] and list the profile's assumed
//! values; from a real part they are [`Provenance::Measured`] naming the device.

mod driver;
pub mod switch_cost;
mod telemetry;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

pub use crate::geom::time::ThreadCpu;
pub use driver::measure;
pub use switch_cost::{infer_switch_cost, SwitchCost, SwitchCostConfig};

use crate::metrics::figure::{Assumption, Figure, Provenance};
use crate::metrics::ops::hef::HefOpsError;
use crate::metrics::stats::LatencySummary;
use crate::metrics::utilisation::{ComputeShare, Precision};
use crate::npu::NpuError;

/// Errors of a measurement.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeasureError {
    /// A HEF could not be read.
    #[error(transparent)]
    Hef(#[from] HefOpsError),
    /// The device refused a step; `what` names the step and the graph.
    #[error("{what}: {source}")]
    Npu {
        /// The step, e.g. `configuring backbone_288 (fixtures/backbone_288.hef)`.
        what: String,
        /// The device's error.
        source: NpuError,
    },
    /// No operations per frame for a graph: neither HailoRT nor the HEF gives them.
    #[error("{file}: network group {graph} carries no computational ops; give them in GOPS (`bench --ops FILE=GOPS`, or GraphRun::ops_override)")]
    NoOps {
        /// The HEF.
        file: String,
        /// The network group.
        graph: String,
    },
    /// The run configuration is impossible.
    #[error("invalid run: {0}")]
    Config(String),
    /// Frames did not come back.
    #[error("{graph}: {missing} frame(s) did not complete within {} ms", timeout.as_millis())]
    Stalled {
        /// The graph.
        graph: String,
        /// Frames still in flight.
        missing: usize,
        /// How long it waited.
        timeout: Duration,
    },
}

/// One graph to run: a HEF (its first network group) and its share of the traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphRun {
    /// The HEF file.
    pub hef: PathBuf,
    /// Frames of this graph per round of traffic (3 for the body graph and 1 for the face graph
    /// reproduce the rig's 3:1).
    pub weight: u32,
    /// Operations per frame in GOPS, taking precedence over HailoRT's and the HEF's count
    /// (needed for HEFs that carry none). The simulator's timing still uses its own count.
    pub ops_override: Option<f64>,
}

impl GraphRun {
    /// A graph with weight 1.
    pub fn new(hef: impl Into<PathBuf>) -> Self {
        Self {
            hef: hef.into(),
            weight: 1,
            ops_override: None,
        }
    }

    /// The same graph with another traffic weight.
    pub fn with_weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }
}

/// What to run and for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// The graphs, all configured on the same device.
    pub graphs: Vec<GraphRun>,
    /// Batch size of every graph (HailoRT's scheduler needs them equal).
    pub batch: u16,
    /// Scheduler threshold, frames.
    pub threshold: u32,
    /// Scheduler timeout.
    pub timeout: Duration,
    /// How long to run: device time on the simulator's virtual clock, wall time otherwise.
    pub duration: Duration,
}

impl RunConfig {
    /// One graph at batch 1 with HailoRT's scheduler defaults, for `duration`.
    pub fn single(hef: impl Into<PathBuf>, duration: Duration) -> Self {
        Self {
            graphs: vec![GraphRun::new(hef)],
            batch: 1,
            threshold: 0,
            timeout: Duration::ZERO,
            duration,
        }
    }
}

/// Host-observed latency of one graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostLatency {
    /// Measured on the host; on the simulator the host clock runs around modelled device
    /// time, so it is labelled modelled.
    pub provenance: Provenance,
    /// Percentiles, submit to completion.
    pub summary: LatencySummary,
    /// Sorted samples in milliseconds (for CDF plots; not written to JSON).
    #[serde(skip)]
    pub samples_ms: Vec<f64>,
}

/// What one graph did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphMeasurement {
    /// Network group name.
    pub name: String,
    /// The HEF.
    pub file: String,
    /// Square input side.
    pub side: Option<u32>,
    /// Frames of this graph per round of traffic.
    pub weight: u32,
    /// The precision compute % is quoted against first, and why.
    pub precision: Precision,
    /// The stream types the precision rests on.
    pub precision_basis: String,
    /// Operations per frame, GOPS.
    pub ops_per_frame: Figure,
    /// Where the ops come from (`HailoRT get_computational_ops`, `HEF computational_ops`, `given`).
    pub ops_source: String,
    /// Frames completed.
    pub frames: u64,
    /// Link bytes of one frame, host to device (the HEF's input frame sizes).
    pub bytes_in_per_frame: u64,
    /// Link bytes of one frame, device to host.
    pub bytes_out_per_frame: u64,
    /// Device fps.
    pub fps: Figure,
    /// Compute share against both peaks.
    pub compute: ComputeShare,
    /// Hardware latency of one burst, ms (`None` where the backend cannot give it).
    pub hw_latency: Option<Figure>,
    /// Submit-to-completion latency on the host.
    pub host_latency: Option<HostLatency>,
}

/// Host CPU spent by the thread that submits frames and handles completions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostCpu {
    /// CPU milliseconds per completed frame, the whole loop (waiting for completions included).
    pub per_frame: Figure,
    /// Of which submitting (taking bindings, `run_async`), per frame.
    pub submit_per_frame: Figure,
    /// Of which handling the completion (status, latency, returning the bindings), per frame.
    pub complete_per_frame: Figure,
    /// CPU time over wall time of the run.
    pub share_of_wall: Figure,
}

/// Device-wide figures of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceMeasurement {
    /// Busy share of the NN core.
    pub busy: Option<Figure>,
    /// Switches between graphs per second (the first activation included).
    pub switches_per_s: Option<Figure>,
    /// Mean time per switch, ms.
    pub time_per_switch: Option<Figure>,
    /// Every switch's duration, ms (for the histogram).
    pub switch_ms: Vec<f64>,
    /// Link bytes per second, host to device.
    pub bytes_in_per_s: Option<Figure>,
    /// Link bytes per second, device to host.
    pub bytes_out_per_s: Option<Figure>,
    /// Power draw.
    pub power: Option<Figure>,
    /// Chip temperature (the hotter sensor).
    pub temperature: Option<Figure>,
    /// Figures not reported, and why (e.g. `power: not modelled by the simulator`).
    pub not_reported: Vec<String>,
}

/// Everything one run gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunMeasurement {
    /// What ran: backend, device, profile, clock.
    pub backend: String,
    /// True on a real part.
    pub on_device: bool,
    /// Set when `Backend::Auto` ran the simulator although a Hailo part is
    /// present ([`crate::npu::Device::backend_warning`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_warning: Option<String>,
    /// The device id (PCIe BDF, IP address, or the simulator's id).
    pub device_id: String,
    /// The provenance of every device figure of this run.
    pub provenance: Provenance,
    /// Batch size.
    pub batch: u16,
    /// Scheduler threshold.
    pub threshold: u32,
    /// Scheduler timeout, ms.
    pub timeout_ms: u64,
    /// The time base the fps are over, seconds (device time on the virtual clock).
    pub window_s: f64,
    /// Per graph.
    pub graphs: Vec<GraphMeasurement>,
    /// Device-wide.
    pub device: DeviceMeasurement,
    /// Host CPU of the measuring thread.
    pub host_cpu: Option<HostCpu>,
}

impl RunMeasurement {
    /// Where the run's device figures come from, for the terminal: the device
    /// they are measured on, or that the simulator models them, with its
    /// assumed values one a line.
    pub fn provenance_lines(&self) -> Vec<String> {
        if self.on_device {
            return vec![format!("device figures: MEASURED on {}", self.device_id)];
        }
        std::iter::once(
            "device figures: MODELLED by the simulator, resting on these assumed values:".into(),
        )
        .chain(
            self.assumptions()
                .iter()
                .map(|a| format!("  {} = {}", a.name, a.value)),
        )
        .collect()
    }

    /// The assumptions the run's figures rest on (empty on a real part).
    pub fn assumptions(&self) -> &[Assumption] {
        match &self.provenance {
            Provenance::Modelled { assumed } => assumed,
            Provenance::Measured { .. } | Provenance::Published { .. } => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::bench::{utilisation_report, PointResult, Sweep};
    use crate::doctor::SysRoot;
    use crate::metrics::utilisation_report::UtilisationReport;
    use crate::npu::probe::{fake, Probe};
    use crate::npu::{auto_open, DeviceOptions};

    /// 50 ms of the 288 backbone fixture on `device`.
    fn measure_288(device: &crate::npu::Device) -> RunMeasurement {
        let config = RunConfig {
            graphs: vec![GraphRun::new(crate::fixture("backbone_288.hef"))],
            batch: 1,
            threshold: 0,
            timeout: Duration::ZERO,
            duration: Duration::from_millis(50),
        };
        measure(device, &config).unwrap()
    }

    fn report_of(root: &Path) -> UtilisationReport {
        let device = auto_open(
            &Probe::new(SysRoot::new(root)),
            None,
            DeviceOptions::default(),
        )
        .unwrap();
        let measurement = measure_288(&device);
        let sweep = Sweep {
            backend: measurement.backend.clone(),
            points: vec![PointResult {
                label: "p".into(),
                mode: "alone",
                measurement,
            }],
        };
        utilisation_report(&sweep).unwrap()
    }

    #[test]
    fn fallback_beside_a_part_is_carried_into_the_report() {
        let dir = tempfile::tempdir().unwrap();
        let quiet = report_of(dir.path());
        assert!(quiet.warnings.is_empty(), "no part, no warning");
        assert!(!quiet.to_json().contains("\"warnings\""));
        fake::usbnet(dir.path(), "up");
        let loud = report_of(dir.path());
        assert_eq!(loud.warnings.len(), 1);
        assert!(
            loud.warnings[0].contains("192.168.10.12"),
            "{}",
            loud.warnings[0]
        );
        let back = UtilisationReport::from_json("report.json", &loud.to_json()).unwrap();
        assert_eq!(back.warnings, loud.warnings);
    }

    #[test]
    fn provenance_lines_name_the_part_or_every_assumed_value() {
        let device =
            crate::npu::Device::open(crate::npu::Backend::Sim(Default::default())).unwrap();
        let mut m = measure_288(&device);
        let modelled = m.provenance_lines();
        assert!(modelled[0].contains("MODELLED"), "{modelled:?}");
        assert!(!m.assumptions().is_empty());
        assert_eq!(modelled.len(), 1 + m.assumptions().len());
        let first = &m.assumptions()[0];
        assert_eq!(modelled[1], format!("  {} = {}", first.name, first.value));
        // Negative control: a run on the part names it and assumes nothing.
        m.on_device = true;
        m.device_id = "0000:01:00.0".into();
        assert_eq!(
            m.provenance_lines(),
            ["device figures: MEASURED on 0000:01:00.0"]
        );
    }
}
