//! Which kind of report a file is, and the utilisation section of a `run` report.
//!
//! `plan --from` takes either `bench`'s `report.json` (schema `hailo-edge.utilisation/1`) or the
//! report `hailo-edge run --report` writes (schema `hailo-edge.run-report/1`); the `schema` tag
//! inside the file says which. From a run report each graph's device fps is the rate the rig
//! offered it, so the compute share derived from it is what the rig used, a lower bound of what
//! the part reaches (the planner's cautious side).

use std::fmt;
use std::path::Path;

use serde::Deserialize;

use super::{GraphUtilisation, ReportError, UtilisationReport, SCHEMA};
use crate::metrics::figure::{BackendKind, Figure, Provenance};
use crate::metrics::utilisation::Precision;

/// The schema tag of the run report.
pub const RUN_SCHEMA: &str = "hailo-edge.run-report/1";

/// Which kind of report a file held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReportKind {
    /// `hailo-edge bench`'s `report.json`: each graph's best point of a sweep.
    Bench,
    /// `hailo-edge run --report`: the rates the rig ran at.
    Run,
}

impl fmt::Display for ReportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReportKind::Bench => "bench report (schema hailo-edge.utilisation/1)",
            ReportKind::Run => "run report (schema hailo-edge.run-report/1)",
        })
    }
}

/// A report read for planning, with the kind it was.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedReport {
    /// What the file was.
    pub kind: ReportKind,
    /// Its utilisation figures.
    pub report: UtilisationReport,
}

impl LoadedReport {
    /// What a reader of a plan made from this report must know about its figures.
    pub fn note(&self) -> &'static str {
        match self.kind {
            ReportKind::Bench => "each graph's best point of the sweep",
            ReportKind::Run => {
                "the rates the rig ran at: a lower bound of what the part reaches unless it was saturated"
            }
        }
    }
}

const EXPECTED: &str = "expected a bench report (`schema`: `hailo-edge.utilisation/1`, \
the report.json `hailo-edge bench` writes) or a run report (`schema`: `hailo-edge.run-report/1`, \
written by `hailo-edge run --report FILE`)";

/// Reads a bench or a run report, telling which by its `schema` tag.
///
/// # Errors
/// [`ReportError::Read`] for an unreadable file, [`ReportError::NotAReport`] naming the file and
/// what was expected for anything that is neither kind, and the errors of either reader.
pub fn load_any(path: &Path) -> Result<LoadedReport, ReportError> {
    let (p, text) = super::read_text(path)?;
    parse_any(&p, &text)
}

/// [`load_any`] on text already read; `path` names it in errors.
pub fn parse_any(path: &str, text: &str) -> Result<LoadedReport, ReportError> {
    let not_a_report = |found: String| ReportError::NotAReport {
        path: path.to_owned(),
        found,
        expected: EXPECTED,
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| not_a_report(format!("not JSON ({e})")))?;
    let schema = match value.get("schema") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(_) => return Err(not_a_report("a `schema` that is not a string".into())),
        None => return Err(not_a_report("no `schema` field".into())),
    };
    match schema.as_str() {
        SCHEMA => Ok(LoadedReport {
            kind: ReportKind::Bench,
            report: UtilisationReport::from_json(path, text)?,
        }),
        RUN_SCHEMA => Ok(LoadedReport {
            kind: ReportKind::Run,
            report: from_run_json(path, value)?,
        }),
        other => Err(not_a_report(format!("schema `{other}`"))),
    }
}

/// The parts of a run report the planner reads (the report has many more).
#[derive(Deserialize)]
struct RunView {
    what_ran: WhatRanView,
    graphs: Vec<GraphView>,
    switching: SwitchView,
}

#[derive(Deserialize)]
struct WhatRanView {
    backend: String,
}

#[derive(Deserialize)]
struct GraphView {
    name: String,
    #[serde(default)]
    side: Option<u32>,
    #[serde(default)]
    hef_precision: Option<Precision>,
    #[serde(default)]
    ops_per_frame: Option<Figure>,
    batch: u16,
    device_fps: Figure,
}

#[derive(Deserialize)]
struct SwitchView {
    #[serde(default)]
    npu_busy: Option<Figure>,
}

fn from_run_json(path: &str, value: serde_json::Value) -> Result<UtilisationReport, ReportError> {
    let run: RunView = serde_json::from_value(value).map_err(|e| ReportError::Parse {
        path: path.to_owned(),
        reason: format!("run report: {e}"),
    })?;
    let field = |field: String, reason: &str| ReportError::Field {
        path: path.to_owned(),
        field,
        reason: reason.to_owned(),
    };
    let backend = match run.what_ran.backend.as_str() {
        // The documented names, and the variant names of the same schema version.
        "hailort" | "HailoRt" => BackendKind::HailoRt,
        "simulator" | "Sim" => BackendKind::Sim,
        _ => {
            return Err(field(
                "what_ran.backend".into(),
                "expected `hailort` or `simulator`",
            ))
        }
    };
    let device = run
        .graphs
        .iter()
        .find_map(|g| match &g.device_fps.provenance {
            Provenance::Measured { device } => Some(device.clone()),
            Provenance::Modelled { .. } | Provenance::Published { .. } => None,
        });
    let mut graphs = Vec::with_capacity(run.graphs.len());
    for (i, g) in run.graphs.into_iter().enumerate() {
        let ops = g.ops_per_frame.ok_or_else(|| {
            field(
                format!("graphs[{i}].ops_per_frame"),
                "absent: the graph's HEF carries no computational ops; plan from a bench report (`bench --ops FILE=GOPS`)",
            )
        })?;
        let precision = g.hef_precision.ok_or_else(|| {
            field(
                format!("graphs[{i}].hef_precision"),
                "absent: the run could not read the graph's HEF",
            )
        })?;
        let mut entry = GraphUtilisation::new(g.name, g.side, precision, ops, g.device_fps);
        entry.batch = Some(u32::from(g.batch));
        entry.busy = run.switching.npu_busy.clone();
        graphs.push(entry);
    }
    let report = UtilisationReport::new(backend, device, graphs);
    report.validate(path)?;
    Ok(report)
}
