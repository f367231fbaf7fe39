//! What a gate run reports: what ran, the pairing, the figures per output, the verdict.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::compare::{Bound, OutputFigures};
use super::frames::FrameInfo;
use super::GateError;
use crate::npu::sim::OutputKind;
use crate::npu::RanOn;

/// One HEF output and the reference output it is compared with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PairLine {
    /// The HEF's output stream, `<network group>/<name>`.
    pub stream: String,
    /// The reference ONNX output of the same name.
    pub onnx_output: String,
    /// Its index among the ONNX's outputs.
    pub onnx_index: usize,
}

/// The outcome of [`super::run`].
#[derive(Debug, Clone, Serialize)]
pub struct GateReport {
    /// The HEF that ran on the device.
    pub hef: PathBuf,
    /// Its network group.
    pub network_group: String,
    /// The reference ONNX.
    pub onnx: PathBuf,
    /// The backend and device the HEF ran on (flattened: `backend`, `device`
    /// naming it with, on the simulator, its profile and clock, and
    /// `backend_warning` when `auto` fell back to the simulator beside a part).
    #[serde(flatten)]
    pub ran_on: RanOn,
    /// Where the device's outputs came from: the part, or the simulator's quantised
    /// reference path.
    pub device_outputs: OutputKind,
    /// On the simulator, the ONNX its reference path ran (the gate's own unless another
    /// is given).
    pub sim_onnx: Option<PathBuf>,
    /// The engine that ran the reference ONNX.
    pub engine: &'static str,
    /// `images`, `recording`, `camera` or `synthetic`.
    pub input_source: &'static str,
    /// The HEF input the frames were preprocessed into.
    pub input_stream: String,
    /// The frames, in order.
    pub frames: Vec<FrameInfo>,
    /// HEF outputs paired with reference outputs by name.
    pub pairing: Vec<PairLine>,
    /// The bound every output is held to.
    pub bound: Bound,
    /// Figures per HEF output, in the HEF's order.
    pub outputs: Vec<OutputFigures>,
    /// Whether every output is within the bound (as [`GateReport::passed`], for the JSON).
    pub(crate) passed: bool,
}

impl GateReport {
    /// Whether every output is within the bound (the exit status of `hailo-edge gate`).
    pub fn passed(&self) -> bool {
        self.outputs.iter().all(|o| o.passed)
    }

    /// The outputs outside the bound.
    pub fn failures(&self) -> impl Iterator<Item = &OutputFigures> {
        self.outputs.iter().filter(|o| !o.passed)
    }

    /// The report as lines of text: what ran, the pairing, one line per output, the verdict.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![
            format!(
                "gate: {} ({}) against {}",
                self.hef.display(),
                self.network_group,
                self.onnx.display()
            ),
            format!(
                "device: {} ({})",
                self.ran_on.device,
                outputs_text(self.device_outputs)
            ),
            format!("reference: {}", self.engine),
            format!(
                "inputs: {} frame(s) from {} into {}",
                self.frames.len(),
                self.input_source,
                self.input_stream
            ),
        ];
        if let Some(sim) = &self.sim_onnx {
            lines.push(format!("simulator's device half: {}", sim.display()));
        }
        lines.push("pairing (by name):".into());
        for p in &self.pairing {
            lines.push(format!(
                "  {} -> {} (ONNX output {})",
                p.stream, p.onnx_output, p.onnx_index
            ));
        }
        lines.push(format!(
            "bound: relative error <= {}, max|diff| <= {} quantisation steps",
            self.bound.rel, self.bound.max_steps
        ));
        for o in &self.outputs {
            lines.push(format!(
                "  {}: max|diff| {:.6} ({:.2} steps), relative error {:.5} over {} frame(s): {}",
                o.stream,
                o.max_abs,
                o.max_steps,
                o.rel,
                o.frames,
                if o.passed { "ok" } else { "OUT OF BOUND" }
            ));
            lines.push(format!(
                "    reference in [{}, {}], limvals [{}, {}], {:.3} % clipped",
                o.reference_range[0],
                o.reference_range[1],
                o.limvals[0],
                o.limvals[1],
                100.0 * o.clipped
            ));
        }
        lines.push(if self.passed {
            "verdict: pass".into()
        } else {
            let names: Vec<&str> = self.failures().map(|o| o.stream.as_str()).collect();
            format!("verdict: FAIL ({})", names.join(", "))
        });
        lines
    }

    /// Writes the report as JSON (non-finite figures are `null`).
    ///
    /// # Errors
    /// [`GateError::Write`] naming the file.
    pub fn write_json(&self, path: &Path) -> Result<(), GateError> {
        let write = || -> std::io::Result<()> {
            let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
            std::fs::write(path, json)
        };
        write().map_err(|source| GateError::Write {
            path: path.to_path_buf(),
            source,
        })
    }
}

fn outputs_text(kind: OutputKind) -> &'static str {
    match kind {
        OutputKind::Device => "outputs measured on the part",
        OutputKind::SimReference => {
            "outputs modelled: the simulator's reference path, quantised with the HEF's quant info"
        }
        OutputKind::SimSynthetic => "synthetic outputs",
    }
}
