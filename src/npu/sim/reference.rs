//! Reference ONNX models: the float graph behind a HEF, run on the CPU with
//! tract so the simulator's outputs are the features the device would give
//! (up to quantisation).
//!
//! Contract: the ONNX has one f32 input per HEF input, in the HEF's order,
//! shaped `[1, height, width, features]` (NHWC, as the host buffers are), and
//! one f32 output per HEF output, in order, with the output's element count.

use std::path::PathBuf;

use super::model_spec::{dequantize_input, ModelSpec};

#[cfg(feature = "sim-onnx")]
use tract_onnx::prelude::*;

/// Why a reference model could not be loaded or run. Runtime details are
/// tract's own messages.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReferenceError {
    #[error("{}: cannot read the reference ONNX: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        #[source]
        source: Box<ReferenceError>,
    },
    #[error("not a readable ONNX model: {0}")]
    NotOnnx(String),
    #[error("ONNX model has unknown shapes or types: {0}")]
    UnknownShapes(String),
    #[error("ONNX model cannot be planned: {0}")]
    Unplannable(String),
    #[error("built without the `sim-onnx` feature: no ONNX runtime")]
    NoRuntime,
    #[error("input '{stream}' is an NMS stream: NMS inputs are not supported, the reference takes images")]
    NmsInput { stream: String },
    #[error(
        "input '{stream}' does not fill a [1, {height}, {width}, {features}] tensor: {detail}"
    )]
    InputShape {
        stream: String,
        height: usize,
        width: usize,
        features: usize,
        detail: String,
    },
    #[error("reference ONNX run failed: {0}")]
    Run(String),
    #[error(
        "the reference ONNX has no output named \"{name}\" for HEF output {stream} \
         (its outputs: {outputs}); outputs are paired by name"
    )]
    MissingOutput {
        stream: String,
        name: String,
        outputs: String,
    },
    #[error("reference ONNX gives {got} outputs, the HEF has {expected}")]
    OutputCount { got: usize, expected: usize },
    #[error("reference output for '{stream}' is not f32: {detail}")]
    OutputType { stream: String, detail: String },
    #[error("reference output for '{stream}' has {got} elements, the HEF stream {expected}")]
    OutputSize {
        stream: String,
        got: usize,
        expected: usize,
    },
}

/// A graph's reference model, ready to run.
pub struct ReferenceModel {
    #[cfg(feature = "sim-onnx")]
    plan: Arc<TypedSimplePlan>,
    /// The graph's output names, in its order: each HEF output takes the output named
    /// like the last component of its stream name.
    #[cfg(feature = "sim-onnx")]
    output_names: Vec<String>,
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
    pub fn from_onnx_bytes(bytes: &[u8]) -> Result<ReferenceModel, ReferenceError> {
        let model = tract_onnx::onnx()
            .model_for_read(&mut std::io::Cursor::new(bytes))
            .map_err(|e| ReferenceError::NotOnnx(e.to_string()))?;
        let typed = model
            .into_typed()
            .and_then(|m| m.into_decluttered())
            .map_err(|e| ReferenceError::UnknownShapes(e.to_string()))?;
        let ops_per_frame = count_ops(&typed);
        let output_names = typed
            .output_outlets()
            .map_err(|e| ReferenceError::UnknownShapes(e.to_string()))?
            .iter()
            .map(|o| {
                typed
                    .outlet_label(*o)
                    .unwrap_or(&typed.node(o.node).name)
                    .to_owned()
            })
            .collect();
        let plan = typed
            .into_optimized()
            .and_then(|m| m.into_runnable())
            .map_err(|e| ReferenceError::Unplannable(e.to_string()))?;
        Ok(ReferenceModel {
            plan,
            output_names,
            ops_per_frame,
        })
    }

    /// Without the `sim-onnx` feature there is no ONNX runtime.
    #[cfg(not(feature = "sim-onnx"))]
    pub fn from_onnx_bytes(_bytes: &[u8]) -> Result<ReferenceModel, ReferenceError> {
        Err(ReferenceError::NoRuntime)
    }

    /// Loads an ONNX model from a file.
    pub fn from_onnx_file(
        path: impl AsRef<std::path::Path>,
    ) -> Result<ReferenceModel, ReferenceError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| ReferenceError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        ReferenceModel::from_onnx_bytes(&bytes).map_err(|e| ReferenceError::File {
            path: path.to_path_buf(),
            source: Box::new(e),
        })
    }

    /// Operations per frame (2 x multiply-accumulates) counted from the graph.
    pub fn ops_per_frame(&self) -> Option<u64> {
        self.ops_per_frame
    }

    /// Runs one frame: dequantises the inputs, returns the real outputs.
    #[cfg(feature = "sim-onnx")]
    pub fn run(&self, spec: &ModelSpec, inputs: &[&[u8]]) -> Result<Vec<Vec<f32>>, ReferenceError> {
        let mut tensors: TVec<TValue> = tvec!();
        for (stream, data) in spec.inputs.iter().zip(inputs) {
            let values = dequantize_input(stream, data);
            let (h, w, f) = match stream.shape {
                hef::StreamShape::Image {
                    height,
                    width,
                    features,
                } => (height as usize, width as usize, features as usize),
                hef::StreamShape::Nms { .. } => {
                    return Err(ReferenceError::NmsInput {
                        stream: stream.name.clone(),
                    })
                }
            };
            let tensor = Tensor::from_shape(&[1, h, w, f], &values).map_err(|e| {
                ReferenceError::InputShape {
                    stream: stream.name.clone(),
                    height: h,
                    width: w,
                    features: f,
                    detail: e.to_string(),
                }
            })?;
            tensors.push(tensor.into());
        }
        let outputs = self
            .plan
            .run(tensors)
            .map_err(|e| ReferenceError::Run(e.to_string()))?;
        if outputs.len() != spec.outputs.len() {
            return Err(ReferenceError::OutputCount {
                got: outputs.len(),
                expected: spec.outputs.len(),
            });
        }
        spec.outputs
            .iter()
            .map(|stream| {
                let name = hef::layer_name(&stream.name);
                let index = self
                    .output_names
                    .iter()
                    .position(|n| n == name)
                    .ok_or_else(|| ReferenceError::MissingOutput {
                        stream: stream.name.clone(),
                        name: name.to_owned(),
                        outputs: self.output_names.join(", "),
                    })?;
                let t = &outputs[index];
                let view =
                    t.to_plain_array_view::<f32>()
                        .map_err(|e| ReferenceError::OutputType {
                            stream: stream.name.clone(),
                            detail: e.to_string(),
                        })?;
                if view.len() != stream.elements() {
                    return Err(ReferenceError::OutputSize {
                        stream: stream.name.clone(),
                        got: view.len(),
                        expected: stream.elements(),
                    });
                }
                Ok(view.iter().copied().collect())
            })
            .collect()
    }

    /// Without the `sim-onnx` feature there is no ONNX runtime.
    #[cfg(not(feature = "sim-onnx"))]
    pub fn run(
        &self,
        _spec: &ModelSpec,
        _inputs: &[&[u8]],
    ) -> Result<Vec<Vec<f32>>, ReferenceError> {
        let _ = dequantize_input;
        Err(ReferenceError::NoRuntime)
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
