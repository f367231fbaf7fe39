//! A figure of the first-light report, labelled by where it comes from, and the report's
//! short markdown summary.

use std::fmt::Write as _;

use serde::Serialize;

use super::FirstLightReport;
use crate::metrics::figure::{Figure, Provenance};

/// Where a figure of the report comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// Measured on the part.
    Measured,
    /// Computed by a model (the simulator's timing model, the planner's formula).
    Modelled,
    /// An input of a model, not computed from anything (the simulator's 1 ms switch cost).
    Assumed,
    /// Derived from measurements published for other models on the same part (the model zoo).
    Published,
}

impl Label {
    /// The word in the summary.
    pub fn word(self) -> &'static str {
        match self {
            Label::Measured => "measured",
            Label::Modelled => "modelled",
            Label::Assumed => "assumed",
            Label::Published => "published",
        }
    }
}

/// One figure of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureEntry {
    /// What it is, e.g. `backbone_288 fps`.
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Its unit, as the metrics name it.
    pub unit: String,
    /// Measured, modelled or assumed.
    pub label: Label,
    /// Where exactly: the device it was measured on, or the assumptions it rests on.
    pub source: String,
    /// How it was obtained, when that is not a direct reading.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

impl FigureEntry {
    /// The entry of `figure`: measured when its provenance is, modelled otherwise.
    pub fn of(name: impl Into<String>, figure: &Figure) -> Self {
        Self::new(
            name,
            figure.value,
            figure.unit.to_string(),
            &figure.provenance,
        )
    }

    /// An entry of `value` in `unit` with `provenance`: measured when it is, modelled otherwise.
    pub fn new(
        name: impl Into<String>,
        value: f64,
        unit: impl Into<String>,
        provenance: &Provenance,
    ) -> Self {
        let label = match provenance {
            Provenance::Measured { .. } => Label::Measured,
            Provenance::Modelled { .. } => Label::Modelled,
            Provenance::Published { .. } => Label::Published,
        };
        Self {
            name: name.into(),
            value,
            unit: unit.into(),
            label,
            source: provenance.to_string(),
            method: None,
        }
    }

    /// The same entry labelled assumed: an input of a model, not computed.
    pub fn assumed(mut self) -> Self {
        self.label = Label::Assumed;
        self
    }

    /// The same entry with the method it was obtained by.
    pub fn with_method(mut self, method: impl Into<String>) -> Self {
        self.method = Some(method.into());
        self
    }
}

/// The report's summary: what ran, each step's outcome, then every figure with its label.
pub fn markdown(report: &FirstLightReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# first-light\n");
    let _ = writeln!(s, "device: {}\n", report.device);
    let _ = writeln!(
        s,
        "{}\n",
        if report.on_part {
            "Figures marked measured come from the part."
        } else {
            "No part ran: device figures are MODELLED by the simulator."
        }
    );
    let _ = writeln!(s, "| step | outcome |\n|---|---|");
    for step in &report.steps {
        let outcome = step.outcome.status.summary(true);
        let _ = writeln!(s, "| {} | {} |", step.name, outcome.replace('|', "/"));
    }
    for step in &report.steps {
        if step.outcome.notes.is_empty() && step.outcome.files.is_empty() {
            continue;
        }
        let _ = writeln!(s, "\n## {}\n", step.name);
        for n in &step.outcome.notes {
            let _ = writeln!(s, "- {n}");
        }
        for f in &step.outcome.files {
            let _ = writeln!(s, "- wrote {}", f.display());
        }
    }
    let _ = writeln!(
        s,
        "\n## Figures\n\n| figure | value | unit | label | source |\n|---|---|---|---|---|"
    );
    for f in report.figures() {
        let source = match &f.method {
            Some(m) => format!("{}; method: {m}", f.source),
            None => f.source.clone(),
        };
        let _ = writeln!(
            s,
            "| {} | {:.4} | {} | {} | {} |",
            f.name,
            f.value,
            f.unit,
            f.label.word(),
            source.replace('|', "/")
        );
    }
    s
}
