//! The device's side of a run: its time base, busy share, switches, link traffic, power and
//! temperature, each labelled with where it comes from.

use std::time::Duration;

use super::{DeviceMeasurement, GraphMeasurement};
use crate::metrics::figure::{Assumption, Figure, Provenance, Unit};
use crate::npu::sim::SimStats;
use crate::npu::{BackendKind, ConfiguredModel, Device};

/// The time base of a run.
pub(super) enum Window {
    /// The simulator's statistics: fps are over modelled device time.
    Sim(SimStats),
    /// A real part: fps are over host wall time.
    Wall(Duration),
}

impl Window {
    /// Seconds the fps are computed over (never zero).
    pub fn seconds(&self) -> f64 {
        let s = match self {
            Window::Sim(stats) => {
                let first = stats.models.values().filter_map(|m| m.first_start_ns).min();
                let last = stats.models.values().map(|m| m.last_end_ns).max();
                match (first, last) {
                    (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
                    _ => stats.now_ns as f64 / 1e9,
                }
            }
            Window::Wall(d) => d.as_secs_f64(),
        };
        s.max(1e-9)
    }

    /// Frames the device completed for `graph`, where it counts them.
    pub fn frames(&self, graph: &str) -> Option<u64> {
        match self {
            Window::Sim(stats) => stats.models.get(graph).map(|m| m.frames),
            Window::Wall(_) => None,
        }
    }
}

/// Measured on the device when real; modelled with the profile's assumed values otherwise.
pub(super) fn provenance(device: &Device) -> Provenance {
    match (device.backend(), device.sim_profile()) {
        (BackendKind::HailoRt, _) | (_, None) => Provenance::measured(device.device_id()),
        (BackendKind::Sim, Some(profile)) => {
            let mut assumed = vec![
                Assumption::new(
                    "device",
                    format!("simulator profile {}", profile.device.name),
                ),
                Assumption::new("clock", profile.clock.name()),
            ];
            assumed.extend(device.assumptions());
            Provenance::modelled(assumed)
        }
    }
}

/// Host latency is taken on the host clock; around the simulator that clock times a model.
pub(super) fn host_latency_provenance(device: &Device, run: &Provenance) -> Provenance {
    match device.backend() {
        BackendKind::HailoRt => run.clone(),
        BackendKind::Sim => run.combine(&Provenance::modelled([Assumption::new(
            "host latency",
            "host clock around the simulated device (virtual clock: simulator wall time, not device time)",
        )])),
    }
}

/// Hardware latency as the backend reports it (`get_hw_latency_measurement`, the model being
/// configured with `HAILO_LATENCY_MEASURE`): measured on the part; on the simulator the timing
/// model's switch-free burst time, modelled. `None` when the backend has none.
pub(super) fn hw_latency(
    cm: &ConfiguredModel,
    graph: &str,
    provenance: &Provenance,
) -> Option<Figure> {
    match cm.hw_latency() {
        Ok(latency) => latency.map(|d| fig(d.as_secs_f64() * 1e3, Unit::Milliseconds, provenance)),
        Err(err) => {
            log::warn!("{graph}: hardware latency: {err}");
            None
        }
    }
}

fn fig(value: f64, unit: Unit, provenance: &Provenance) -> Figure {
    Figure {
        value,
        unit,
        provenance: provenance.clone(),
    }
}

/// Device-wide figures of the run.
pub(super) fn device_figures(
    device: &Device,
    window: &Window,
    provenance: &Provenance,
    graphs: &[GraphMeasurement],
) -> DeviceMeasurement {
    let secs = window.seconds();
    let per_s = |count: f64, unit: Unit| Some(fig(count / secs, unit, provenance));
    let mut out = DeviceMeasurement {
        busy: None,
        switches_per_s: None,
        time_per_switch: None,
        switch_ms: Vec::new(),
        bytes_in_per_s: None,
        bytes_out_per_s: None,
        power: None,
        temperature: None,
        not_reported: Vec::new(),
    };
    match window {
        Window::Sim(stats) => {
            out.busy = Some(fig(
                (stats.busy_ns as f64 / 1e9 / secs).min(1.0),
                Unit::Fraction,
                provenance,
            ));
            out.switches_per_s = per_s(stats.switches as f64, Unit::PerSecond);
            out.switch_ms = stats.switch_ns.iter().map(|&ns| ns as f64 / 1e6).collect();
            if !out.switch_ms.is_empty() {
                let mean = out.switch_ms.iter().sum::<f64>() / out.switch_ms.len() as f64;
                out.time_per_switch = Some(fig(mean, Unit::Milliseconds, provenance));
            }
            out.bytes_in_per_s = per_s(stats.bytes_in as f64, Unit::BytesPerSecond);
            out.bytes_out_per_s = per_s(stats.bytes_out as f64, Unit::BytesPerSecond);
        }
        Window::Wall(_) => {
            match device.performance_stats() {
                Ok(p) if p.nnc_utilization >= 0.0 => {
                    out.busy = Some(fig(
                        f64::from(p.nnc_utilization / 100.0).min(1.0),
                        Unit::Fraction,
                        provenance,
                    ))
                }
                Ok(_) => out
                    .not_reported
                    .push("busy: the device reported no NN-core utilisation".into()),
                Err(e) => out
                    .not_reported
                    .push(format!("busy: query_performance_stats failed: {e}")),
            }
            out.not_reported.push(
                "switches: not visible through the C table; run with HAILO_TRACE=scheduler and read the ActivateCoreOp durations".into(),
            );
            // Frame sizes of the HEF times completed frames: what crossed the link.
            let bytes_in: f64 = graphs
                .iter()
                .map(|g| (g.frames * g.bytes_in_per_frame) as f64)
                .sum();
            let bytes_out: f64 = graphs
                .iter()
                .map(|g| (g.frames * g.bytes_out_per_frame) as f64)
                .sum();
            out.bytes_in_per_s = per_s(bytes_in, Unit::BytesPerSecond);
            out.bytes_out_per_s = per_s(bytes_out, Unit::BytesPerSecond);
        }
    }
    match device.power() {
        Ok(w) if w.is_finite() => out.power = Some(fig(f64::from(w), Unit::Watts, provenance)),
        Ok(_) => out
            .not_reported
            .push("power: the device returned no value".into()),
        Err(e) => out.not_reported.push(match device.backend() {
            BackendKind::Sim => "power: not modelled by the simulator".into(),
            BackendKind::HailoRt => format!("power: {e}"),
        }),
    }
    match device.chip_temperature() {
        Ok(t) => {
            out.temperature = Some(fig(
                f64::from(t.ts0_temperature.max(t.ts1_temperature)),
                Unit::Celsius,
                provenance,
            ))
        }
        Err(e) => out.not_reported.push(match device.backend() {
            BackendKind::Sim => "temperature: not modelled by the simulator".into(),
            BackendKind::HailoRt => format!("temperature: {e}"),
        }),
    }
    out
}
