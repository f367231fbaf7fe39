//! Checks of the exported graph: which operators it uses, and what tract computes from it.

use ndarray::ArrayD;
use prost::Message;
use tract_onnx::pb;
use tract_onnx::prelude::*;

use super::UnrolledError;

/// The operators the backbone compiled, which the unrolled graph may use.
pub const ALLOWED_OPS: [&str; 9] = [
    "MatMul",
    "Gather",
    "Mul",
    "Add",
    "ReduceSum",
    "Min",
    "Where",
    "Concat",
    "Reshape",
];

fn bad_model(what: String) -> UnrolledError {
    UnrolledError::Shape {
        op: "onnx".into(),
        tensor: "unrolled_fit".into(),
        what,
    }
}

/// The model proto of ONNX `bytes`.
///
/// # Errors
/// [`UnrolledError::Shape`] when the bytes are not an ONNX model.
pub fn decode(bytes: &[u8]) -> Result<pb::ModelProto, UnrolledError> {
    pb::ModelProto::decode(bytes).map_err(|e| bad_model(e.to_string()))
}

/// Operator types of the graph outside [`ALLOWED_OPS`], with their node counts.
///
/// # Errors
/// As [`decode`].
pub fn disallowed_ops(bytes: &[u8]) -> Result<Vec<(String, usize)>, UnrolledError> {
    let model = decode(bytes)?;
    let mut out: std::collections::BTreeMap<String, usize> = Default::default();
    for n in model.graph.iter().flat_map(|g| &g.node) {
        if !ALLOWED_OPS.contains(&n.op_type.as_str()) {
            *out.entry(n.op_type.clone()).or_default() += 1;
        }
    }
    Ok(out.into_iter().collect())
}

/// Runs the graph in tract on `inputs` (rotations, translation, targets, confidence); returns
/// its outputs (rotations, translation, keypoints).
///
/// # Errors
/// [`UnrolledError::Shape`] naming what tract refused.
pub fn run_tract(
    bytes: &[u8],
    inputs: &[ArrayD<f32>; 4],
) -> Result<Vec<ArrayD<f32>>, UnrolledError> {
    let tract = |e: TractError| bad_model(format!("tract: {e}"));
    let plan = tract_onnx::onnx()
        .model_for_read(&mut std::io::Cursor::new(bytes))
        .map_err(tract)?
        .into_optimized()
        .map_err(tract)?
        .into_runnable()
        .map_err(tract)?;
    let values: TVec<TValue> = inputs
        .iter()
        .map(|a| Tensor::from(a.clone()).into_tvalue())
        .collect();
    let out = plan.run(values).map_err(tract)?;
    out.iter()
        .map(|t| {
            t.to_plain_array_view::<f32>()
                .map(|v| v.to_owned())
                .map_err(tract)
        })
        .collect()
}
