//! The steps of the default chain.

mod bench;
mod plan;

use std::time::Duration;

pub use bench::{BenchStep, SwitchCostStep};
pub use plan::PlanStep;

use super::{Context, Outcome, Step};
use crate::doctor::budget::{graphs_from_hefs, Rig, ShapeSource};
use crate::doctor::{
    diagnose, hailort_compiled_in, Environment, GetIfAddrs, HostUsb, ProcessAccess, SysRoot,
    SysfsUsb, UsbBus, Verdict, DEFAULT_CARD_ADDR,
};

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

/// How long the doctor waits for the card's TCP handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(1000);

/// The doctor's view of this box (or of the tree under `root`).
fn environment(root: SysRoot, usb: &dyn UsbBus) -> Environment<'_> {
    Environment {
        hailort_linked: hailort_compiled_in(),
        card: DEFAULT_CARD_ADDR,
        connect_timeout: CONNECT_TIMEOUT,
        net: &GetIfAddrs,
        access: &ProcessAccess,
        root,
        usb,
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
        let report = match &ctx.config.doctor_root {
            Some(dir) => {
                let usb = SysfsUsb(SysRoot::new(dir));
                diagnose(&environment(SysRoot::new(dir), &usb), &rig)
            }
            None => diagnose(&environment(SysRoot::host(), &HostUsb), &rig),
        };
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

/// What the gate runs: the HEF on the device and its ONNX on the same inputs.
pub type GateFn = Box<dyn FnMut(&mut Context) -> Outcome>;

/// The slot of the gate step: `hailo-edge gate` fills it with [`GateSlot::with`]; until then
/// [`GateSlot::pending`] reports the step as skipped, saying so.
pub struct GateSlot {
    gate: Option<GateFn>,
}

impl GateSlot {
    /// The slot with no gate in it.
    pub fn pending() -> Self {
        Self { gate: None }
    }

    /// The slot running `gate`.
    pub fn with(gate: GateFn) -> Self {
        Self { gate: Some(gate) }
    }
}

impl Step for GateSlot {
    fn name(&self) -> &'static str {
        "gate"
    }

    fn run(&mut self, ctx: &mut Context) -> Outcome {
        match &mut self.gate {
            Some(gate) => gate(ctx),
            None => {
                let mut out = Outcome::skipped(
                    "the gate is not in this build's chain: no HEF was compared with its ONNX",
                );
                if !ctx.config.onnx.is_empty() {
                    out.notes.push(format!(
                        "{} ONNX file(s) given and not compared",
                        ctx.config.onnx.len()
                    ));
                }
                out
            }
        }
    }
}
