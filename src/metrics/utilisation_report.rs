//! The utilisation section of a run or bench report (`report.json`), which the planner reads.
//!
//! Schema `hailo-edge.utilisation/1`:
//!
//! ```json
//! {
//!   "schema": "hailo-edge.utilisation/1",
//!   "backend": "hailort",                 // or "simulator"
//!   "device": "0000:01:00.0",             // the device, when a real one ran
//!   "graphs": [{
//!     "name": "backbone_288", "side": 288, "hef_precision": "int8", "batch": 4,
//!     "ops_per_frame": { "value": 35.6, "unit": "gops", "provenance": {...} },
//!     "fps":           { "value": 120.0, "unit": "fps", "provenance": {"kind": "measured", "device": "0000:01:00.0"} },
//!     "compute": { "hef_precision": "int8", "achieved": {...}, "of_int8_peak": {...}, "of_int4_peak": {...} },
//!     "busy":          { "value": 0.81, "unit": "fraction", "provenance": {...} }
//!   }]
//! }
//! ```
//!
//! Every figure carries its provenance; the planner keeps it, so a plan made from a simulator
//! report says "modelled" and one made from a device says which device.
//!
//! [`load_any`] also reads the report `hailo-edge run` writes, telling the two apart by their
//! `schema` tag (`from_run`).

mod from_run;

pub use from_run::{load_any, parse_any, LoadedReport, ReportKind, RUN_SCHEMA};

use std::path::Path;

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::figure::{BackendKind, Figure, Provenance, Unit};
use super::stats::LatencySummary;
use super::utilisation::{compute_share, ComputeShare, Precision};

/// The schema tag of this version of the report.
pub const SCHEMA: &str = "hailo-edge.utilisation/1";

/// Errors reading a utilisation report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid JSON of this schema.
    #[error("{path}: {reason}")]
    Parse {
        /// The file.
        path: String,
        /// What serde said.
        reason: String,
    },
    /// The file is neither kind of report the planner reads.
    #[error("{path}: {found}; {expected}")]
    NotAReport {
        /// The file.
        path: String,
        /// What the file holds instead.
        found: String,
        /// The kinds of report expected.
        expected: &'static str,
    },
    /// A field has an impossible value.
    #[error("{path}: {field}: {reason}")]
    Field {
        /// The file.
        path: String,
        /// The field, e.g. `graphs[1].compute.of_int8_peak`.
        field: String,
        /// What was expected.
        reason: String,
    },
}

/// What one graph achieved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphUtilisation {
    /// Graph (network group) name.
    pub name: String,
    /// Square input side in pixels, which the planner matches cameras on.
    pub side: Option<u32>,
    /// The precision the HEF was compiled for.
    pub hef_precision: Precision,
    /// Batch size of the run.
    pub batch: Option<u32>,
    /// Ops per frame (2 x MACs), in GOPS.
    pub ops_per_frame: Figure,
    /// Device fps of the graph.
    pub fps: Figure,
    /// Compute share against both peaks.
    pub compute: ComputeShare,
    /// Busy share of the NN core while this graph ran.
    pub busy: Option<Figure>,
    /// Latency per stage (`hw` where HailoRT gives it, `host` always).
    #[serde(default)]
    pub latency: Option<LatencyReport>,
}

/// Latency statistics of a graph, per stage, with where they come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyReport {
    /// Measured (host clock around a real device) or modelled (the simulator's timing model).
    pub provenance: Provenance,
    /// Summary per stage.
    pub stages: BTreeMap<String, LatencySummary>,
}

impl GraphUtilisation {
    /// The entry of a graph that ran at `fps` with `ops_per_frame` GOPS on a HEF of
    /// `hef_precision`; the compute share is derived from them.
    pub fn new(
        name: impl Into<String>,
        side: Option<u32>,
        hef_precision: Precision,
        ops_per_frame: Figure,
        fps: Figure,
    ) -> Self {
        let compute = compute_share(&ops_per_frame, &fps, hef_precision);
        Self {
            name: name.into(),
            side,
            hef_precision,
            batch: None,
            ops_per_frame,
            fps,
            compute,
            busy: None,
            latency: None,
        }
    }
}

/// The file's name as errors give it, and its text.
fn read_text(path: &Path) -> Result<(String, String), ReportError> {
    let p = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Ok((p, text)),
        Err(source) => Err(ReportError::Read { path: p, source }),
    }
}

/// The utilisation report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UtilisationReport {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Which backend ran.
    pub backend: BackendKind,
    /// The device, when a real one ran.
    pub device: Option<String>,
    /// One entry per graph.
    pub graphs: Vec<GraphUtilisation>,
    /// What a reader must heed before trusting the figures, e.g. that the
    /// simulator ran although a Hailo part is present.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl UtilisationReport {
    /// A report of `graphs` run on `backend` (and `device`, when real).
    pub fn new(
        backend: BackendKind,
        device: Option<String>,
        graphs: Vec<GraphUtilisation>,
    ) -> Self {
        Self {
            schema: SCHEMA.to_owned(),
            backend,
            device,
            graphs,
            warnings: Vec::new(),
        }
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| unreachable!("plain data serialises: {e}"))
    }

    /// Reads and validates a report file.
    pub fn from_path(path: &Path) -> Result<Self, ReportError> {
        let (p, text) = read_text(path)?;
        Self::from_json(&p, &text)
    }

    /// Parses and validates report JSON; `path` names it in errors.
    pub fn from_json(path: &str, text: &str) -> Result<Self, ReportError> {
        let report: Self = serde_json::from_str(text).map_err(|e| ReportError::Parse {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        report.validate(path)?;
        Ok(report)
    }

    /// Checks the schema tag, units and ranges.
    pub fn validate(&self, path: &str) -> Result<(), ReportError> {
        let bad = |field: String, reason: String| {
            Err(ReportError::Field {
                path: path.to_owned(),
                field,
                reason,
            })
        };
        if self.schema != SCHEMA {
            return bad(
                "schema".into(),
                format!("`{}`, expected `{SCHEMA}`", self.schema),
            );
        }
        if self.graphs.is_empty() {
            return bad("graphs".into(), "empty, expected at least one graph".into());
        }
        for (i, g) in self.graphs.iter().enumerate() {
            let checks: [(&str, &Figure, Unit, f64); 5] = [
                ("ops_per_frame", &g.ops_per_frame, Unit::Gops, f64::INFINITY),
                ("fps", &g.fps, Unit::Fps, f64::INFINITY),
                (
                    "compute.achieved",
                    &g.compute.achieved,
                    Unit::Tops,
                    f64::INFINITY,
                ),
                (
                    "compute.of_int8_peak",
                    &g.compute.of_int8_peak,
                    Unit::Fraction,
                    1.0,
                ),
                (
                    "compute.of_int4_peak",
                    &g.compute.of_int4_peak,
                    Unit::Fraction,
                    1.0,
                ),
            ];
            for (name, fig, unit, max) in checks {
                let field = format!("graphs[{i}].{name}");
                if fig.unit != unit {
                    return bad(field, format!("unit {}, expected {unit}", fig.unit));
                }
                if !(fig.value.is_finite() && fig.value > 0.0 && fig.value <= max) {
                    return bad(field, format!("{} is outside (0, {max}]", fig.value));
                }
            }
            if g.compute.hef_precision != g.hef_precision {
                return bad(
                    format!("graphs[{i}].compute.hef_precision"),
                    "differs from hef_precision".into(),
                );
            }
            if let Some(b) = &g.busy {
                if b.unit != Unit::Fraction || !(0.0..=1.0).contains(&b.value) {
                    return bad(
                        format!("graphs[{i}].busy"),
                        "expected a fraction in [0, 1]".into(),
                    );
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::figure::Assumption;

    fn report() -> UtilisationReport {
        let dev = "0000:01:00.0";
        let g = GraphUtilisation::new(
            "backbone_288",
            Some(288),
            Precision::Int8,
            Figure::measured(35.65, Unit::Gops, dev),
            Figure::measured(150.0, Unit::Fps, dev),
        );
        UtilisationReport::new(BackendKind::HailoRt, Some(dev.into()), vec![g])
    }

    #[test]
    fn written_report_reads_back() {
        let r = report();
        assert!((r.graphs[0].compute.of_int8_peak.value - 0.267375).abs() < 1e-9);
        assert!(r.graphs[0].compute.of_int8_peak.provenance.is_measured());
        let back = UtilisationReport::from_json("r.json", &r.to_json()).unwrap();
        assert_eq!(
            back.graphs[0].compute.of_own_peak().provenance,
            r.graphs[0].fps.provenance
        );
        assert!((back.graphs[0].compute.of_int4_peak.value - 0.1336875).abs() < 1e-12);
    }

    #[test]
    fn validation_names_the_field() {
        let mut r = report();
        r.graphs[0].fps = Figure::modelled(-1.0, Unit::Fps, [Assumption::new("clock", "virtual")]);
        let err = UtilisationReport::from_json("r.json", &r.to_json())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("r.json") && err.contains("graphs[0].fps"),
            "{err}"
        );
        let mut r = report();
        r.schema = "other/2".into();
        assert!(UtilisationReport::from_json("r.json", &r.to_json())
            .unwrap_err()
            .to_string()
            .contains("schema"));
    }
}
