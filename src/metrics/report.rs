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

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::figure::{Figure, Unit};
use super::utilisation::{ComputeShare, Precision};

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

/// Which backend produced a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// HailoRT on a real part.
    Hailort,
    /// The built-in simulator (its figures are modelled).
    Simulator,
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
}

/// The utilisation report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UtilisationReport {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Which backend ran.
    pub backend: Backend,
    /// The device, when a real one ran.
    pub device: Option<String>,
    /// One entry per graph.
    pub graphs: Vec<GraphUtilisation>,
}

impl UtilisationReport {
    /// Reads and validates a report file.
    pub fn from_path(path: &Path) -> Result<Self, ReportError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
            path: p.clone(),
            source,
        })?;
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
                    return bad(field, format!("unit {:?}, expected {unit:?}", fig.unit));
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
