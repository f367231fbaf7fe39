//! From a sweep to `report.json` (the planner's schema) and `report.csv`, and the provenance
//! check a simulator report must pass.

use std::collections::BTreeMap;
use std::path::Path;

use super::{BenchError, PointResult, Sweep};
use crate::bench::measure::GraphMeasurement;
use crate::metrics::figure::{BackendKind, Figure, Provenance};
use crate::metrics::utilisation_report::{GraphUtilisation, LatencyReport, UtilisationReport};

/// The utilisation report of a sweep: one entry per graph, from the point where that graph
/// reached its highest fps running alone (or, with no such point, in a pair). The planner plans
/// each camera with the compute share its graph reached there.
///
/// # Errors
/// [`BenchError::Config`] for a sweep without points.
pub fn utilisation_report(sweep: &Sweep) -> Result<UtilisationReport, BenchError> {
    let first = sweep
        .points
        .first()
        .ok_or_else(|| BenchError::Config("the sweep has no points".into()))?;
    let mut best: BTreeMap<&str, (&PointResult, &GraphMeasurement)> = BTreeMap::new();
    for p in &sweep.points {
        for g in &p.measurement.graphs {
            let better = match best.get(g.name.as_str()) {
                None => true,
                Some((bp, bg)) => {
                    let alone = |p: &PointResult| p.mode == "alone";
                    (alone(p), g.fps.value) > (alone(bp), bg.fps.value)
                }
            };
            if better {
                best.insert(&g.name, (p, g));
            }
        }
    }
    let graphs = best
        .values()
        .map(|(p, g)| {
            let mut entry = GraphUtilisation::new(
                g.name.clone(),
                g.side,
                g.precision,
                g.ops_per_frame.clone(),
                g.fps.clone(),
            );
            entry.batch = Some(u32::from(p.measurement.batch));
            entry.busy = p.measurement.device.busy.clone();
            entry.latency = g.host_latency.as_ref().map(|h| LatencyReport {
                provenance: h.provenance.clone(),
                stages: BTreeMap::from([("host".to_owned(), h.summary.clone())]),
            });
            entry
        })
        .collect();
    let m = &first.measurement;
    let mut report = if m.on_device {
        UtilisationReport::new(BackendKind::HailoRt, Some(m.device_id.clone()), graphs)
    } else {
        UtilisationReport::new(BackendKind::Sim, None, graphs)
    };
    report.warnings.extend(m.backend_warning.clone());
    Ok(report)
}

/// A figure of a report whose provenance does not match the backend that produced it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProvenanceError {
    /// A simulator report with a figure labelled as measured.
    #[error("{field}: claims to be measured on {device}, but the simulator ran")]
    MeasuredOnSimulator {
        /// The figure, e.g. `graphs[1].fps`.
        field: String,
        /// The device it names.
        device: String,
    },
    /// A simulator report with a modelled figure that lists no assumed values.
    #[error("{field}: modelled without listing its assumed values")]
    NoAssumptions {
        /// The figure, e.g. `graphs[0].compute.of_int4_peak`.
        field: String,
    },
    /// A HailoRT report without its device.
    #[error("device: a HailoRT report must name its device")]
    NoDevice,
}

/// Checks that a report labels its figures honestly: on the simulator every figure must be
/// modelled and list the assumed values it rests on; on a device the device must be named.
///
/// # Errors
/// The [`ProvenanceError`] of the first figure that fails.
pub fn check_provenance(report: &UtilisationReport) -> Result<(), ProvenanceError> {
    for (i, g) in report.graphs.iter().enumerate() {
        let mut figures: Vec<(String, &Figure)> = vec![
            ("ops_per_frame".into(), &g.ops_per_frame),
            ("fps".into(), &g.fps),
            ("compute.achieved".into(), &g.compute.achieved),
            ("compute.of_int8_peak".into(), &g.compute.of_int8_peak),
            ("compute.of_int4_peak".into(), &g.compute.of_int4_peak),
        ];
        if let Some(b) = &g.busy {
            figures.push(("busy".into(), b));
        }
        let mut provenances: Vec<(String, &Provenance)> = figures
            .iter()
            .map(|(n, f)| (n.clone(), &f.provenance))
            .collect();
        if let Some(l) = &g.latency {
            provenances.push(("latency".into(), &l.provenance));
        }
        for (name, p) in provenances {
            let field = format!("graphs[{i}].{name}");
            match (report.backend, p) {
                (BackendKind::Sim, Provenance::Measured { device }) => {
                    return Err(ProvenanceError::MeasuredOnSimulator {
                        field,
                        device: device.clone(),
                    })
                }
                (BackendKind::Sim, Provenance::Modelled { assumed }) if assumed.is_empty() => {
                    return Err(ProvenanceError::NoAssumptions { field })
                }
                (BackendKind::HailoRt, _) if report.device.is_none() => {
                    return Err(ProvenanceError::NoDevice)
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn opt(f: Option<&Figure>, scale: f64) -> String {
    f.map_or_else(String::new, |f| format!("{:.6}", f.value * scale))
}

/// Writes one row per point and graph to `path`.
///
/// # Errors
/// [`BenchError::Write`] naming the file.
pub fn write_csv(sweep: &Sweep, path: &Path) -> Result<(), BenchError> {
    let err = |e: &dyn std::fmt::Display| BenchError::Write {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let mut w = csv::Writer::from_path(path).map_err(|e| err(&e))?;
    w.write_record([
        "point",
        "mode",
        "batch",
        "threshold",
        "timeout_ms",
        "graph",
        "weight",
        "side",
        "hef_precision",
        "ops_gops",
        "ops_source",
        "frames",
        "fps",
        "compute_int8",
        "compute_int4",
        "busy",
        "hw_latency_ms",
        "host_p50_ms",
        "host_p99_ms",
        "switches_per_s",
        "ms_per_switch",
        "bytes_in_per_s",
        "bytes_out_per_s",
        "power_w",
        "temperature_c",
        "host_cpu_ms_per_frame",
        "host_cpu_submit_ms_per_frame",
        "host_cpu_complete_ms_per_frame",
        "provenance",
    ])
    .map_err(|e| err(&e))?;
    for p in &sweep.points {
        let m = &p.measurement;
        let d = &m.device;
        for g in &m.graphs {
            let latency = g.host_latency.as_ref().map(|h| &h.summary);
            w.write_record([
                p.label.clone(),
                p.mode.to_owned(),
                m.batch.to_string(),
                m.threshold.to_string(),
                m.timeout_ms.to_string(),
                g.name.clone(),
                g.weight.to_string(),
                g.side.map_or_else(String::new, |s| s.to_string()),
                g.precision.to_string(),
                format!("{:.4}", g.ops_per_frame.value),
                g.ops_source.clone(),
                g.frames.to_string(),
                format!("{:.4}", g.fps.value),
                format!("{:.6}", g.compute.of_int8_peak.value),
                format!("{:.6}", g.compute.of_int4_peak.value),
                opt(d.busy.as_ref(), 1.0),
                opt(g.hw_latency.as_ref(), 1.0),
                latency.map_or_else(String::new, |l| format!("{:.6}", l.p50_ms)),
                latency.map_or_else(String::new, |l| format!("{:.6}", l.p99_ms)),
                opt(d.switches_per_s.as_ref(), 1.0),
                opt(d.time_per_switch.as_ref(), 1.0),
                opt(d.bytes_in_per_s.as_ref(), 1.0),
                opt(d.bytes_out_per_s.as_ref(), 1.0),
                opt(d.power.as_ref(), 1.0),
                opt(d.temperature.as_ref(), 1.0),
                opt(m.host_cpu.as_ref().map(|c| &c.per_frame), 1.0),
                opt(m.host_cpu.as_ref().map(|c| &c.submit_per_frame), 1.0),
                opt(m.host_cpu.as_ref().map(|c| &c.complete_per_frame), 1.0),
                if m.on_device {
                    format!("measured on {}", m.device_id)
                } else {
                    "modelled".to_owned()
                },
            ])
            .map_err(|e| err(&e))?;
        }
    }
    w.flush().map_err(|e| err(&e))
}
