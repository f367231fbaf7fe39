//! The work of each hot decoder node, counted from the shapes the prepared graph gives it.
//!
//! Each count follows the loop structure of the kernel it describes (see each function);
//! matrix products take tract's own count ([`TypedOp::cost`], `Cost::FMA`).

use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::{format_err, Cost, TypedOp};

use super::{Kernel, Work};
use crate::decode::ops::attention::{FastAttention, Role};
use crate::decode::ops::deform_project::FastDeformProject;
use crate::decode::ops::deform_sample::FastDeformSample;
use crate::decode::ops::fast_ops::FastSoftmax;
use crate::decode::ops::linear::FastLinear;

/// f32 bytes.
const F32: u64 = 4;

/// Corners of one bilinear tap.
const CORNERS: u64 = 4;

/// Values a register tile of the matrix-product kernels reuses each loaded element for
/// (8 x 8 tiles: 16 loads per 64 multiply-adds).
const MATMUL_REUSE: u64 = 8;

/// The kernel and work of one node of a prepared decoder graph.
///
/// # Errors
/// When a hot kernel's input shapes are not concrete (the decoder's always are).
pub fn of_node(model: &TypedModel, node: &TypedNode) -> TractResult<(Kernel, Work)> {
    let facts = model.node_input_facts(node.id)?;
    let shape = |i: usize| -> TractResult<Vec<u64>> {
        let fact = facts
            .get(i)
            .ok_or_else(|| format_err!("{}: no input {i}", node.name))?;
        let dims = fact
            .shape
            .as_concrete()
            .ok_or_else(|| format_err!("{}: input {i} has a symbolic shape", node.name))?;
        Ok(dims.iter().map(|&d| d as u64).collect())
    };
    if let Some(op) = node.op_as::<FastAttention>() {
        return Ok((
            Kernel::Attention,
            attention(op, &shape(0)?, &shape(1)?, &shape(2)?),
        ));
    }
    if node.op_as::<FastDeformSample>().is_some() {
        return Ok((Kernel::DeformSample, deform_sample(&shape(0)?, &shape(1)?)));
    }
    if let Some(op) = node.op_as::<FastDeformProject>() {
        let weight: Vec<u64> = op.weight.shape().iter().map(|&d| d as u64).collect();
        return Ok((Kernel::DeformSample, deform_project(&weight, &shape(1)?)));
    }
    if let Some(op) = node.op_as::<FastLinear>() {
        return Ok((Kernel::Linear, matmul(op.macs())));
    }
    if node.op_as::<FastSoftmax>().is_some() {
        return Ok((Kernel::Softmax, softmax(&shape(0)?)));
    }
    let name = node.op().name();
    if ["MatMul", "EinSum", "Conv", "Gemm"]
        .iter()
        .any(|m| name.contains(m))
    {
        let macs = fma_count(node.op.as_ref(), &facts)?;
        if macs > 0 {
            return Ok((Kernel::MatMul, matmul(macs)));
        }
    }
    Ok((Kernel::Other, Work::default()))
}

/// tract's own count of the multiply-adds of a node.
fn fma_count(op: &dyn TypedOp, facts: &[&TypedFact]) -> TractResult<u64> {
    let mut macs = 0u64;
    for (cost, count) in op.cost(facts)? {
        if matches!(cost, Cost::FMA(_)) {
            macs += count.to_i64()? as u64;
        }
    }
    Ok(macs)
}

/// The length of the axis of `shape` with `role` (1 when absent).
fn axis(shape: &[u64], roles: &[Role], role: Role) -> u64 {
    roles
        .iter()
        .zip(shape)
        .find_map(|(&r, &d)| (r == role).then_some(d))
        .unwrap_or(1)
}

/// `softmax(scale · Q Kᵀ) V` for the op's query rows: per batch item and row, N dot
/// products of length K and N value rows of width D, one exponential per score.
/// Each multiply-add streams one K or V element (the query row stays in registers).
pub fn attention(op: &FastAttention, q: &[u64], k: &[u64], v: &[u64]) -> Work {
    let batch: u64 =
        op.o.iter()
            .zip(&op.out_shape)
            .filter(|(r, _)| matches!(r, Role::Batch(_)))
            .map(|(_, &d)| d as u64)
            .product();
    let rows = (op.rows.1 - op.rows.0) as u64;
    let n = axis(k, &op.k, Role::N);
    let depth = axis(q, &op.q, Role::K);
    let width = axis(v, &op.v, Role::D);
    let scores = batch * rows * n;
    let macs = scores * (depth + width);
    Work {
        elements: batch * rows * width,
        macs,
        exps: scores,
        load_bytes: macs * F32,
        ..Work::default()
    }
}

/// value `(N, C, H, W)`, grid `(N, Lq, P, 2)`: per head, query and point, four corner
/// taps of C channels, each a multiply-add with the folded weight.
pub fn deform_sample(value: &[u64], grid: &[u64]) -> Work {
    let (heads, channels) = (value[0], value[1]);
    let (queries, points) = (grid[1], grid[2]);
    let macs = heads * queries * points * CORNERS * channels;
    Work {
        elements: heads * channels * queries,
        macs,
        load_bytes: macs * F32,
        ..Work::default()
    }
}

/// weight `(H, D, dh)`, grid `(H, Lq, P, 2)`: per head and query, the taps over the
/// memory's D channels, then the sampled rows times the head's `D x dh` projection
/// (one matrix product per head, on register tiles).
pub fn deform_project(weight: &[u64], grid: &[u64]) -> Work {
    let (heads, depth, width) = (weight[0], weight[1], weight[2]);
    let (queries, points) = (grid[1], grid[2]);
    let taps = heads * queries * points * CORNERS * depth;
    let projection = heads * queries * depth * width;
    Work {
        elements: heads * width * queries,
        macs: taps + projection,
        load_bytes: (taps + projection / MATMUL_REUSE) * F32,
        ..Work::default()
    }
}

/// Softmax in three passes over every element: max, exponential, normalisation.
pub fn softmax(shape: &[u64]) -> Work {
    let elements: u64 = shape.iter().product();
    Work {
        elements,
        exps: elements,
        load_bytes: 3 * elements * F32,
        ..Work::default()
    }
}

/// A matrix product of `macs` multiply-adds on register tiles.
pub fn matmul(macs: u64) -> Work {
    Work {
        macs,
        load_bytes: macs * F32 / MATMUL_REUSE,
        ..Work::default()
    }
}
