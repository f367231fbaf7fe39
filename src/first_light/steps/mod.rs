//! The steps of the default chain.

mod bench;
mod gate;
mod plan;

pub use bench::{BenchStep, SwitchCostStep};
pub use gate::GateStep;
pub use plan::PlanStep;

use super::{Context, Outcome, Step};
use crate::doctor::budget::{graphs_from_hefs, Rig, ShapeSource};
use crate::doctor::{run_checks, DoctorConfig, SysRoot, Verdict};

/// Writes `value` as JSON to `name` in the output directory and adds the file to `out`; a file
/// that cannot be written fails the step.
fn write_json(
    ctx: &Context,
    name: &str,
    value: &impl serde::Serialize,
    mut out: Outcome,
) -> Outcome {
    let path = ctx.config.out.join(name);
    let written = serde_json::to_string_pretty(value)
        .map_err(|e| e.to_string())
        .and_then(|json| std::fs::write(&path, json).map_err(|e| e.to_string()));
    match written {
        Ok(()) => {
            out.files.push(path);
            out
        }
        Err(e) => Outcome::failed(
            format!("writing {}: {e}", path.display()),
            "give an --out directory this user can write",
        ),
    }
}

/// `hailo-edge doctor` on this box, with the link budget of the chain's cameras and HEFs.
///
/// On a real part a failed check stops the chain with its fix. On the simulator the failures
/// concern a part the run does not use: they are recorded in `doctor.json` and listed, and the
/// chain goes on.
pub struct DoctorStep;

impl Step for DoctorStep {
    fn name(&self) -> &'static str {
        "doctor"
    }

    fn run(&mut self, ctx: &mut Context) -> Outcome {
        let rig = graphs_from_hefs(&ctx.config.hefs).and_then(|graphs| {
            Rig::with_graphs(ctx.config.cameras.clone(), graphs, ShapeSource::Hef)
        });
        let rig = match rig {
            Ok(rig) => rig,
            Err(e) => {
                return Outcome::failed(
                    format!("the link budget of the cameras and HEFs: {e}"),
                    "give HEFs whose input sides the cameras have (--camera SIDE@FPS)",
                )
            }
        };
        let mut doctor = DoctorConfig::host(rig);
        if let Some(dir) = &ctx.config.doctor_root {
            doctor.root = SysRoot::new(dir);
        }
        doctor.backend = ctx.config.backend.clone();
        doctor.hefs = ctx.config.hefs.clone();
        let report = run_checks(&doctor);
        let failed: Vec<_> = report
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Fail)
            .collect();
        let out = match (failed.first(), ctx.on_part()) {
            (Some(first), true) => Outcome::failed(
                format!("{}: {}", first.id, first.detail),
                first
                    .fix
                    .clone()
                    .unwrap_or_else(|| "see doctor.json".into()),
            ),
            _ => Outcome::passed(),
        };
        let mut out = write_json(ctx, "doctor.json", &report, out);
        out.notes.push(format!(
            "{} checks: {} failed, worst {}",
            report.checks.len(),
            failed.len(),
            report.worst()
        ));
        if !ctx.on_part() && !failed.is_empty() {
            out.notes.push(
                "the simulator ran, so the failed checks (which concern the part) do not stop the chain:"
                    .into(),
            );
            for c in &failed {
                out.notes.push(format!("{}: {}", c.id, c.detail));
            }
        }
        out
    }
}

/// A gate step given as a function, in place of [`GateStep`] (a chain that gates another way,
/// or a test of the chain).
pub type GateFn = Box<dyn FnMut(&mut Context) -> Outcome>;

/// The gate step as [`GateFn`] runs it.
pub struct GateSlot {
    gate: GateFn,
}

impl GateSlot {
    /// The step running `gate`.
    pub fn with(gate: GateFn) -> Self {
        Self { gate }
    }
}

impl Step for GateSlot {
    fn name(&self) -> &'static str {
        "gate"
    }

    fn run(&mut self, ctx: &mut Context) -> Outcome {
        (self.gate)(ctx)
    }
}
