//! `hailo-edge first-light`: from a new box to a measured utilisation in one command.
//!
//! A chain of [`Step`]s runs in order: doctor, gate, bench, switch cost, plan. The first step
//! that fails stops the chain; the report names it, says what fixes it and lists the steps
//! that did not run. Every figure the steps produce is an [`entry::FigureEntry`] labelled
//! measured on the part, modelled, or assumed.
//!
//! | step | module | what it gives |
//! |---|---|---|
//! | `doctor` | [`steps::DoctorStep`] | the box's checks; on the simulator its failures are recorded, not fatal |
//! | `gate` | [`steps::GateStep`] | `hailo-edge gate`: each HEF against its `--onnx`, by name |
//! | `bench` | [`steps::BenchStep`] | fps, compute share and busy per graph, with plots |
//! | `switch-cost` | [`steps::SwitchCostStep`] | the time per switch between the two graphs |
//! | `plan` | [`steps::PlanStep`] | the rig's share of one part, planned from the bench report |

pub mod entry;
pub mod steps;

use std::path::PathBuf;

use serde::Serialize;

use crate::metrics::plan::CameraMode;
use crate::npu::{Backend, BackendKind, Device, NpuError, RanOn};
pub use entry::{FigureEntry, Label};

/// The schema tag of the first-light report.
pub const SCHEMA: &str = "hailo-edge.first-light/1";

/// Errors of the chain itself (a step's failure is not one: it is in the report).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FirstLightError {
    /// The inputs are impossible.
    #[error("first-light: {0}")]
    Config(String),
    /// The output directory or a report file could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The file or directory.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// What first-light runs on and with.
#[derive(Debug, Clone)]
pub struct FirstLightConfig {
    /// The HEFs (the first two make the pair of the bench and the switch cost).
    pub hefs: Vec<PathBuf>,
    /// Reference ONNX files for the gate.
    pub onnx: Vec<PathBuf>,
    /// Output directory (created).
    pub out: PathBuf,
    /// Which device.
    pub backend: Backend,
    /// The rig's cameras, for the plan.
    pub cameras: Vec<CameraMode>,
    /// Run time of each bench point (device time on the simulator's virtual clock).
    pub bench_seconds: f64,
    /// Cycles of the switch-cost inference.
    pub switch_cycles: u32,
    /// Read `/sys`, `/dev` and `/etc` under this directory in the doctor step.
    pub doctor_root: Option<PathBuf>,
}

/// What the steps share: the inputs, the device and what earlier steps left.
pub struct Context {
    /// The inputs.
    pub config: FirstLightConfig,
    /// The backend the chain runs on (the one [`Backend::Auto`] resolved to)
    /// and its device.
    pub ran_on: RanOn,
    /// `report.json` of the bench step, for the plan.
    pub bench_report: Option<PathBuf>,
}

impl Context {
    /// Opens a fresh device of the chain's backend.
    ///
    /// # Errors
    /// The device's error.
    pub fn open(&self) -> Result<Device, NpuError> {
        Device::open(self.config.backend.clone())
    }

    /// True when the chain runs on a real part.
    pub fn on_part(&self) -> bool {
        self.ran_on.on_part()
    }
}

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Status {
    /// It ran and passed.
    Passed,
    /// It did not apply, and why.
    Skipped {
        /// Why.
        reason: String,
    },
    /// It failed: what was found and what fixes it. The chain stops here.
    Failed {
        /// What failed.
        error: String,
        /// The command or step that fixes it.
        fix: String,
    },
    /// An earlier step failed, so it did not run.
    NotRun,
}

impl Status {
    /// One line for a table: the outcome, and for a failure its error (and fix, when asked).
    pub fn summary(&self, with_fix: bool) -> String {
        match self {
            Status::Passed => "passed".to_owned(),
            Status::Skipped { reason } => format!("skipped: {reason}"),
            Status::Failed { error, fix } if with_fix => format!("FAILED: {error}; fix: {fix}"),
            Status::Failed { error, .. } => format!("FAILED: {error}"),
            Status::NotRun => "not run".to_owned(),
        }
    }
}

/// What one step gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// How it ended.
    #[serde(flatten)]
    pub status: Status,
    /// Lines for the summary.
    pub notes: Vec<String>,
    /// Its figures.
    pub figures: Vec<FigureEntry>,
    /// Files it wrote.
    pub files: Vec<PathBuf>,
}

impl Outcome {
    /// A passed step with nothing yet.
    pub fn passed() -> Self {
        Self::with(Status::Passed)
    }

    /// A skipped step.
    pub fn skipped(reason: impl Into<String>) -> Self {
        Self::with(Status::Skipped {
            reason: reason.into(),
        })
    }

    /// A failed step.
    pub fn failed(error: impl Into<String>, fix: impl Into<String>) -> Self {
        Self::with(Status::Failed {
            error: error.into(),
            fix: fix.into(),
        })
    }

    fn with(status: Status) -> Self {
        Self {
            status,
            notes: Vec::new(),
            figures: Vec::new(),
            files: Vec::new(),
        }
    }
}

/// One step of the chain.
pub trait Step {
    /// Its name in the report (`doctor`, `gate`, ...).
    fn name(&self) -> &'static str;
    /// Runs it. A failure is an [`Outcome`] with [`Status::Failed`], never a panic.
    fn run(&mut self, ctx: &mut Context) -> Outcome;
}

/// One step's record in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRecord {
    /// The step.
    pub name: &'static str,
    /// What it gave.
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// The first-light report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstLightReport {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// What ran: backend and device.
    pub device: String,
    /// True when the figures come from a real part.
    pub on_part: bool,
    /// Every step, in order, the ones that did not run included.
    pub steps: Vec<StepRecord>,
    /// The step that failed, when one did.
    pub stopped_at: Option<&'static str>,
}

impl FirstLightReport {
    /// True when no step failed.
    pub fn passed(&self) -> bool {
        self.stopped_at.is_none()
    }

    /// Every figure of every step.
    pub fn figures(&self) -> impl Iterator<Item = &FigureEntry> {
        self.steps.iter().flat_map(|s| s.outcome.figures.iter())
    }

    /// The failed step's fix, when one failed.
    pub fn fix(&self) -> Option<&str> {
        self.steps.iter().find_map(|s| match &s.outcome.status {
            Status::Failed { fix, .. } => Some(fix.as_str()),
            _ => None,
        })
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| unreachable!("plain data serialises: {e}"))
    }
}

/// The default chain: doctor, gate, bench, switch cost, plan.
pub fn default_steps() -> Vec<Box<dyn Step>> {
    vec![
        Box::new(steps::DoctorStep),
        Box::new(steps::GateStep),
        Box::new(steps::BenchStep),
        Box::new(steps::SwitchCostStep),
        Box::new(steps::PlanStep),
    ]
}

/// Resolves the backend, runs `steps` in order until one fails, and writes
/// `first-light.json` and `first-light.md` into the output directory.
///
/// # Errors
/// [`FirstLightError`] when the inputs are impossible, the device cannot be opened at all, or
/// the report cannot be written.
pub fn run(
    config: FirstLightConfig,
    steps: &mut [Box<dyn Step>],
) -> Result<FirstLightReport, FirstLightError> {
    if config.hefs.is_empty() {
        return Err(FirstLightError::Config(
            "no HEF: give --hef FILE (twice for the pair)".into(),
        ));
    }
    std::fs::create_dir_all(&config.out).map_err(|source| FirstLightError::Write {
        path: config.out.display().to_string(),
        source,
    })?;
    let ran_on = match Device::open(config.backend.clone()) {
        Ok(d) => d.ran_on(),
        Err(e) => RanOn {
            backend: BackendKind::HailoRt,
            device: format!("no device opened: {e}"),
            backend_warning: None,
        },
    };
    let mut ctx = Context {
        config,
        ran_on,
        bench_report: None,
    };
    let mut records = Vec::with_capacity(steps.len());
    let mut stopped_at = None;
    for step in steps.iter_mut() {
        let outcome = if stopped_at.is_some() {
            Outcome::with(Status::NotRun)
        } else {
            log::info!("first-light: {}", step.name());
            step.run(&mut ctx)
        };
        if matches!(outcome.status, Status::Failed { .. }) {
            stopped_at = Some(step.name());
        }
        records.push(StepRecord {
            name: step.name(),
            outcome,
        });
    }
    let report = FirstLightReport {
        schema: SCHEMA,
        device: ctx.ran_on.device.clone(),
        on_part: ctx.on_part(),
        steps: records,
        stopped_at,
    };
    let write = |name: &str, text: String| {
        let path = ctx.config.out.join(name);
        std::fs::write(&path, text).map_err(|source| FirstLightError::Write {
            path: path.display().to_string(),
            source,
        })
    };
    write("first-light.json", report.to_json())?;
    write("first-light.md", entry::markdown(&report))?;
    Ok(report)
}
