//! Reference ONNX models: the float graph behind a HEF, run on the CPU with
//! tract so the simulator's outputs are the features the device would give
//! (up to quantisation).
//!
//! Contract: the ONNX has one f32 input per HEF input, in the HEF's order,
//! shaped `[1, height, width, features]` (NHWC, as the host buffers are), and
//! one f32 output per HEF output, named like the last component of the
//! output's stream name ([`hef::layer_name`]), with the output's element count.
//!
//! The device computes on quantised inputs: a FLOAT32 user input goes through
//! HailoRT's input transform first ([`quantize_input`]), so the reference sees
//! the values the part would see, not the user's floats.

use std::path::PathBuf;

use super::model_spec::{ModelSpec, StreamSpec, FORMAT_TYPE_FLOAT32, FORMAT_TYPE_UINT16};

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

    /// The graph's output names, in its order.
    pub fn output_names(&self) -> &[String] {
        #[cfg(feature = "sim-onnx")]
        return &self.output_names;
        #[cfg(not(feature = "sim-onnx"))]
        return &[];
    }

    /// The index among the graph's outputs of the output that HEF output `stream` pairs
    /// with: the one named like the stream's last component.
    ///
    /// # Errors
    /// [`ReferenceError::MissingOutput`] listing the graph's outputs.
    pub fn output_for(&self, stream: &str) -> Result<usize, ReferenceError> {
        let name = hef::layer_name(stream);
        let names = self.output_names();
        names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| ReferenceError::MissingOutput {
                stream: stream.to_owned(),
                name: name.to_owned(),
                outputs: names.join(", "),
            })
    }

    /// Runs one frame as the device would: the user's input buffers go through HailoRT's
    /// input transform and the device's dequantisation ([`device_input_values`]), the
    /// float graph runs on them, and the real outputs come back in the HEF's output order.
    ///
    /// # Errors
    /// As [`ReferenceModel::run_values`].
    pub fn run(&self, spec: &ModelSpec, inputs: &[&[u8]]) -> Result<Vec<Vec<f32>>, ReferenceError> {
        let values = spec
            .inputs
            .iter()
            .zip(inputs)
            .map(|(stream, data)| device_input_values(stream, data))
            .collect();
        self.run_values(&spec.inputs, values, &spec.outputs)
    }

    /// Runs the float graph on real input values (one vector per HEF input, NHWC) and
    /// returns one vector per HEF output, in the HEF's order, paired by name.
    ///
    /// # Errors
    /// [`ReferenceError::NmsInput`], [`ReferenceError::InputShape`],
    /// [`ReferenceError::Run`], [`ReferenceError::OutputCount`],
    /// [`ReferenceError::MissingOutput`], [`ReferenceError::OutputType`],
    /// [`ReferenceError::OutputSize`]; [`ReferenceError::NoRuntime`] without `sim-onnx`.
    #[cfg(feature = "sim-onnx")]
    pub fn run_values(
        &self,
        inputs: &[StreamSpec],
        values: Vec<Vec<f32>>,
        outputs: &[StreamSpec],
    ) -> Result<Vec<Vec<f32>>, ReferenceError> {
        let mut tensors: TVec<TValue> = tvec!();
        for (stream, values) in inputs.iter().zip(values) {
            tensors.push(input_tensor(stream, values)?.into());
        }
        let results = self
            .plan
            .run(tensors)
            .map_err(|e| ReferenceError::Run(e.to_string()))?;
        if results.len() != outputs.len() {
            return Err(ReferenceError::OutputCount {
                got: results.len(),
                expected: outputs.len(),
            });
        }
        outputs
            .iter()
            .map(|stream| {
                let t = &results[self.output_for(&stream.name)?];
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
    pub fn run_values(
        &self,
        _inputs: &[StreamSpec],
        _values: Vec<Vec<f32>>,
        _outputs: &[StreamSpec],
    ) -> Result<Vec<Vec<f32>>, ReferenceError> {
        Err(ReferenceError::NoRuntime)
    }
}

/// One input's values as the `[1, height, width, features]` tensor the graph reads.
#[cfg(feature = "sim-onnx")]
fn input_tensor(stream: &StreamSpec, values: Vec<f32>) -> Result<Tensor, ReferenceError> {
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
    tract_ndarray::Array4::from_shape_vec((1, h, w, f), values)
        .map(Tensor::from)
        .map_err(|e| ReferenceError::InputShape {
            stream: stream.name.clone(),
            height: h,
            width: w,
            features: f,
            detail: e.to_string(),
        })
}

/// HailoRT's input transform of one real value into the device type, with the stream's
/// first quant info as HailoRT takes it (HailoRT 5.2.0, `transform.cpp`
/// `InputTransformContext::quantize_stream` passes `m_dst_quant_infos[0]`;
/// `quantization.hpp` `quantize_input_buffer` / `quantize_input`): unless the quant info is
/// the identity (scale 1, zero point 0), the value is clipped to
/// `[limvals_min, limvals_max]`; then divided by the scale, the zero point added, and
/// rounded to nearest, ties to even (`rintf` under `FE_TONEAREST`). HailoRT then casts to
/// the device type; here the result saturates to `[0, q_max]` (a value outside it is
/// undefined in C++, and the limvals of a compiled stream keep it inside).
pub fn quantize_input(q: &hef::QuantInfo, x: f32, q_max: f32) -> f32 {
    let identity = q.scale == 1.0 && q.zp == 0.0;
    let x = if identity {
        x
    } else if x >= q.limvals_max {
        q.limvals_max
    } else if x <= q.limvals_min {
        q.limvals_min
    } else {
        x
    };
    (x / q.scale + q.zp).round_ties_even().clamp(0.0, q_max)
}

/// The real values the device computes on for one user input buffer: a FLOAT32 buffer is
/// quantised by HailoRT's input transform ([`quantize_input`]) to the device type, and
/// the device's quantised elements are read back with the stream's quant info (per
/// feature when the HEF has one per feature). UINT8 and UINT16 buffers are the device's
/// quantised elements already.
pub fn device_input_values(stream: &StreamSpec, data: &[u8]) -> Vec<f32> {
    match stream.format_type {
        FORMAT_TYPE_FLOAT32 => {
            let first = stream.quant_of(0);
            let q_max = stream.q_max();
            data.chunks_exact(4)
                .enumerate()
                .map(|(i, c)| {
                    let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                    stream
                        .quant_of(i)
                        .dequantize(quantize_input(&first, x, q_max))
                })
                .collect()
        }
        FORMAT_TYPE_UINT16 => data
            .chunks_exact(2)
            .enumerate()
            .map(|(i, c)| {
                stream
                    .quant_of(i)
                    .dequantize(f32::from(u16::from_le_bytes([c[0], c[1]])))
            })
            .collect(),
        _ => data
            .iter()
            .enumerate()
            .map(|(i, &b)| stream.quant_of(i).dequantize(f32::from(b)))
            .collect(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn q(zp: f32, scale: f32, min: f32, max: f32) -> hef::QuantInfo {
        hef::QuantInfo {
            zp,
            scale,
            limvals_min: min,
            limvals_max: max,
        }
    }

    #[test]
    fn inputs_quantise_as_hailort_does() {
        let qi = q(10.0, 0.5, -5.0, 100.0);
        // Divide by the scale, add the zero point, round to nearest.
        assert_eq!(quantize_input(&qi, 3.2, 255.0), 16.0);
        // Ties go to even: 2.25 / 0.5 + 10 = 14.5 -> 14; 2.75 -> 15.5 -> 16.
        assert_eq!(quantize_input(&qi, 2.25, 255.0), 14.0);
        assert_eq!(quantize_input(&qi, 2.75, 255.0), 16.0);
        // Clipped to the limvals first: 500 -> 100 -> 210, -9 -> -5 -> 0.
        assert_eq!(quantize_input(&qi, 500.0, 255.0), 210.0);
        assert_eq!(quantize_input(&qi, -9.0, 255.0), 0.0);
        // The identity quant info is not clipped (HailoRT skips the limvals for it); the
        // device type still bounds it here.
        let identity = q(0.0, 1.0, 0.0, 1.0);
        assert_eq!(quantize_input(&identity, 7.4, 255.0), 7.0);
        assert_eq!(quantize_input(&identity, 300.0, 255.0), 255.0);
    }

    #[test]
    fn float_inputs_reach_the_device_quantised_with_the_first_quant_info() {
        let stream = StreamSpec {
            name: "g/input".into(),
            shape: hef::StreamShape::Image {
                height: 1,
                width: 1,
                features: 2,
            },
            device_type: hef::DataType::Uint8,
            format_type: FORMAT_TYPE_FLOAT32,
            format_order: 0,
            quant: vec![q(0.0, 0.1, 0.0, 25.5), q(100.0, 0.2, -20.0, 31.0)],
        };
        let bytes: Vec<u8> = [0.26f32, 0.26]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let values = device_input_values(&stream, &bytes);
        // Both elements quantise with the first quant info (0.26 / 0.1 -> 3), then the
        // device reads each with its own feature's: 0.3 and (3 - 100) * 0.2.
        assert!((values[0] - 0.3).abs() < 1e-6, "{values:?}");
        assert!((values[1] - (3.0 - 100.0) * 0.2).abs() < 1e-4, "{values:?}");
        // A UINT8 buffer is the device's elements already.
        let stream = StreamSpec {
            format_type: super::super::model_spec::FORMAT_TYPE_UINT8,
            ..stream
        };
        let values = device_input_values(&stream, &[3, 101]);
        assert!((values[0] - 0.3).abs() < 1e-6 && (values[1] - 0.2).abs() < 1e-6);
    }
}
