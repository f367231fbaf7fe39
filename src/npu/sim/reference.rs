//! Reference ONNX models: the float graph behind a HEF, run on the CPU with
//! tract so the simulator's outputs are the features the device would give
//! (up to quantisation).
//!
//! Contract: the ONNX has one f32 input per HEF input, in the HEF's order,
//! shaped `[1, height, width, features]` (NHWC, as the host buffers are), and
//! one f32 output per HEF output, in order, with the output's element count.

use super::model::{dequantize_input, ModelSpec};

#[cfg(feature = "sim-onnx")]
use tract_onnx::prelude::*;

/// A graph's reference model, ready to run.
pub struct ReferenceModel {
    #[cfg(feature = "sim-onnx")]
    plan: Arc<TypedSimplePlan>,
    ops_per_frame: Option<u64>,
}

impl std::fmt::Debug for ReferenceModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReferenceModel")
            .field("ops_per_frame", &self.ops_per_frame)
            .finish_non_exhaustive()
    }
}

impl ReferenceModel {
    /// Loads an ONNX model from memory.
    #[cfg(feature = "sim-onnx")]
    pub fn from_onnx_bytes(bytes: &[u8]) -> Result<ReferenceModel, String> {
        let model = tract_onnx::onnx()
            .model_for_read(&mut std::io::Cursor::new(bytes))
            .map_err(|e| format!("not a readable ONNX model: {e}"))?;
        let typed = model
            .into_typed()
            .and_then(|m| m.into_decluttered())
            .map_err(|e| format!("ONNX model has unknown shapes or types: {e}"))?;
        let ops_per_frame = count_ops(&typed);
        let plan = typed
            .into_optimized()
            .and_then(|m| m.into_runnable())
            .map_err(|e| format!("ONNX model cannot be planned: {e}"))?;
        Ok(ReferenceModel {
            plan,
            ops_per_frame,
        })
    }

    /// Without the `sim-onnx` feature there is no ONNX runtime.
    #[cfg(not(feature = "sim-onnx"))]
    pub fn from_onnx_bytes(_bytes: &[u8]) -> Result<ReferenceModel, String> {
        Err("built without the `sim-onnx` feature: no ONNX runtime".into())
    }

    /// Loads an ONNX model from a file.
    pub fn from_onnx_file(path: impl AsRef<std::path::Path>) -> Result<ReferenceModel, String> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        ReferenceModel::from_onnx_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Operations per frame (2 x multiply-accumulates) counted from the graph.
    pub fn ops_per_frame(&self) -> Option<u64> {
        self.ops_per_frame
    }

    /// Runs one frame: dequantises the inputs, returns the real outputs.
    #[cfg(feature = "sim-onnx")]
    pub fn run(&self, spec: &ModelSpec, inputs: &[&[u8]]) -> Result<Vec<Vec<f32>>, String> {
        let mut tensors: TVec<TValue> = tvec!();
        for (stream, data) in spec.inputs.iter().zip(inputs) {
            let values = dequantize_input(stream, data);
            let (h, w, f) = match stream.shape {
                hef::StreamShape::Image {
                    height,
                    width,
                    features,
                } => (height as usize, width as usize, features as usize),
                hef::StreamShape::Nms { .. } => return Err("NMS inputs are not supported".into()),
            };
            let tensor = Tensor::from_shape(&[1, h, w, f], &values).map_err(|e| e.to_string())?;
            tensors.push(tensor.into());
        }
        let outputs = self.plan.run(tensors).map_err(|e| e.to_string())?;
        if outputs.len() != spec.outputs.len() {
            return Err(format!(
                "reference ONNX gives {} outputs, the HEF has {}",
                outputs.len(),
                spec.outputs.len()
            ));
        }
        outputs
            .iter()
            .zip(&spec.outputs)
            .map(|(t, stream)| {
                let view = t.to_plain_array_view::<f32>().map_err(|e| e.to_string())?;
                if view.len() != stream.elements() {
                    return Err(format!(
                        "reference output for '{}' has {} elements, the HEF stream {}",
                        stream.name,
                        view.len(),
                        stream.elements()
                    ));
                }
                Ok(view.iter().copied().collect())
            })
            .collect()
    }

    /// Without the `sim-onnx` feature there is no ONNX runtime.
    #[cfg(not(feature = "sim-onnx"))]
    pub fn run(&self, _spec: &ModelSpec, _inputs: &[&[u8]]) -> Result<Vec<Vec<f32>>, String> {
        let _ = dequantize_input;
        Err("built without the `sim-onnx` feature".into())
    }
}

/// 2 x the multiply-accumulates tract's cost model counts, if it can.
#[cfg(feature = "sim-onnx")]
fn count_ops(model: &TypedModel) -> Option<u64> {
    let mut fma: i64 = 0;
    for node in model.nodes() {
        let facts = model.node_input_facts(node.id).ok()?;
        for (cost, count) in node.op.cost(&facts).ok()? {
            if let tract_onnx::tract_core::ops::Cost::FMA(_) = cost {
                fma += count.to_i64().ok()?;
            }
        }
    }
    u64::try_from(fma).ok().map(|f| 2 * f)
}
