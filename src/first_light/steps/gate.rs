//! The gate step: each HEF against its reference ONNX on the same frames, outputs paired by
//! name (`hailo-edge gate`).

use std::path::Path;

use super::super::{Context, Outcome, Step};
use crate::gate::{self, FrameSource, GateConfig, GateReport};

/// Frames the gate compares in the chain: rendered ones, so a box with no camera runs it too.
const SYNTHETIC_FRAMES: usize = 4;

/// `hailo-edge gate` for every `--hef` with the `--onnx` at the same place in the list.
///
/// With no `--onnx` the step is skipped and says so: nothing was compared. A number of ONNX
/// files other than the number of HEFs fails, since the pairing would be a guess.
pub struct GateStep;

impl Step for GateStep {
    fn name(&self) -> &'static str {
        "gate"
    }

    fn run(&mut self, ctx: &mut Context) -> Outcome {
        let config = &ctx.config;
        if config.onnx.is_empty() {
            return Outcome::skipped(
                "no --onnx given: no HEF was compared with its reference ONNX",
            );
        }
        if config.onnx.len() != config.hefs.len() {
            return Outcome::failed(
                format!(
                    "{} HEF(s) and {} ONNX file(s): the gate pairs them in order",
                    config.hefs.len(),
                    config.onnx.len()
                ),
                "give one --onnx per --hef, in the same order",
            );
        }
        let mut out = Outcome::passed();
        for (i, (hef, onnx)) in config.hefs.iter().zip(&config.onnx).enumerate() {
            let mut gc = GateConfig::new(
                hef,
                onnx,
                FrameSource::Synthetic {
                    frames: SYNTHETIC_FRAMES,
                },
            );
            gc.backend = config.backend.clone();
            let report = match gate::run(&gc) {
                Ok(report) => report,
                Err(e) => {
                    return Outcome::failed(
                        format!("gating {} against {}: {e}", hef.display(), onnx.display()),
                        "give the ONNX the HEF was compiled from (one NHWC input, one output \
                         named like each HEF output); `hailo-edge gate --help`",
                    )
                }
            };
            let path = config.out.join(format!("gate_{i}.json"));
            if let Err(e) = report.write_json(&path) {
                return Outcome::failed(
                    e.to_string(),
                    "give an --out directory this user can write",
                );
            }
            out.files.push(path.clone());
            out.notes.extend(report.lines());
            if !report.passed() {
                return failed_gate(&report, &path, out);
            }
        }
        out
    }
}

/// The step's failure: the outputs out of bound, with the report's path.
fn failed_gate(report: &GateReport, path: &Path, passed_so_far: Outcome) -> Outcome {
    let names: Vec<&str> = report.failures().map(|o| o.stream.as_str()).collect();
    let mut out = Outcome::failed(
        format!(
            "{} differs from {} beyond the bound in {} (see {})",
            report.hef.display(),
            report.onnx.display(),
            names.join(", "),
            path.display()
        ),
        "check that the HEF was compiled from this ONNX and that its calibration covers the \
         frames' range (the report gives each output's range against its limvals); a bound \
         other than the default is `hailo-edge gate --rel-bound`",
    );
    out.notes = passed_so_far.notes;
    out.files = passed_so_far.files;
    out
}
