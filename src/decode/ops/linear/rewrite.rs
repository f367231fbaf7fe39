//! Finding `EinSum(x, W) [-> Add(b)] [-> Max(0)]` with a constant `W` and reading the
//! [`FastLinear`] off it.

use std::sync::Arc;

use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_core::ops::einsum::EinSum;

use super::super::graph_patch::{apply_each, bin_op, scalar_const, single_successor};
use super::{FastLinear, MatrixLayout};

/// Replaces every product of an f32 tensor with a constant matrix in a decluttered model
/// (an `EinSum` contracting one axis of each) by a [`FastLinear`], taking in the bias
/// `Add` and the ReLU (`Max` with 0) that follow it alone. Returns how many were replaced.
///
/// A product whose layout two strides cannot describe ([`MatrixLayout::along`]) is left
/// to tract.
///
/// # Errors
/// When tract rejects a patch (a bug; the model is unchanged then).
pub fn fuse_linear(model: &mut TypedModel) -> TractResult<usize> {
    apply_each(model, find_one)
}

fn find_one(model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
    for node in model.nodes() {
        let Some((x, op, n_axis)) = product(model, node)? else {
            continue;
        };
        let mut op = op;
        let mut last = node;
        if let Some(add) = single_successor(model, last.id) {
            if let Some(bias) = bias_add(model, add, &op, n_axis)? {
                op.bias = Some(Arc::new(bias));
                last = add;
            }
        }
        if let Some(max) =
            single_successor(model, last.id).filter(|s| is_relu(model, s, &op.output.shape))
        {
            op.relu = true;
            last = max;
        }
        op.check()?;
        let op = op.packed()?;
        let mut patch = TypedModelPatch::new(format!("linear at {}", node.name));
        let input = patch.tap_model(model, x)?;
        let out = patch.wire_node(format!("{}.linear", node.name), op, &[input])?[0];
        patch.shunt_outside(model, OutletId::new(last.id, 0), out)?;
        return Ok(Some(patch));
    }
    Ok(None)
}

/// The non-constant input, the op without bias or ReLU and the output's `n` axis, when
/// `node` is an f32 `EinSum` of a tensor with a constant matrix that contracts one axis
/// of each and keeps the other axes in order.
fn product(
    model: &TypedModel,
    node: &TypedNode,
) -> TractResult<Option<(OutletId, FastLinear, usize)>> {
    let Some(einsum) = node.op_as::<EinSum>() else {
        return Ok(None);
    };
    if einsum.q_params.is_some()
        || einsum.operating_dt != f32::datum_type()
        || node.inputs.len() != 2
        || einsum.axes.input_count() != 2
    {
        return Ok(None);
    }
    let facts = [
        model.outlet_fact(node.inputs[0])?,
        model.outlet_fact(node.inputs[1])?,
    ];
    let Some((wi, weight)) = (0..2).find_map(|i| {
        let k = facts[i].konst.as_ref()?;
        (k.rank() >= 2).then(|| (i, k.clone()))
    }) else {
        return Ok(None);
    };
    let xi = 1 - wi;
    let (Some(x_shape), Some(out_shape)) = (
        facts[xi].shape.as_concrete(),
        model
            .outlet_fact(OutletId::new(node.id, 0))?
            .shape
            .as_concrete(),
    ) else {
        return Ok(None);
    };
    if facts[xi].konst.is_some()
        || facts[xi].datum_type != f32::datum_type()
        || weight.datum_type() != f32::datum_type()
    {
        return Ok(None);
    }
    let Some(roles) = Roles::read(einsum, [x_shape, weight.shape(), out_shape], xi, wi) else {
        return Ok(None);
    };
    let (Some(input), Some(output)) = (
        MatrixLayout::along_axes(x_shape, roles.x_k.clone()),
        MatrixLayout::along(out_shape, roles.out_n),
    ) else {
        return Ok(None);
    };
    let k_dims = &x_shape[roles.x_k.clone()];
    let k: usize = k_dims.iter().product();
    let n = out_shape[roles.out_n];
    let w = weight.cast_to::<f32>()?;
    let w = w.to_plain_array_view::<f32>()?;
    // Packed as K rows of N whatever the constant's own axis order (its other axes
    // hold one element).
    let mut at = vec![0usize; w.ndim()];
    let mut packed = Vec::with_capacity(k * n);
    for p in 0..k {
        // The contracted axes run in one order in `x` and `W`: `p` row-major over them.
        let mut rest = p;
        for (a, &d) in roles.w_k.clone().zip(k_dims).rev() {
            at[a] = rest % d;
            rest /= d;
        }
        for j in 0..n {
            at[roles.w_n] = j;
            packed.push(w[&at[..]]);
        }
    }
    let weight = Tensor::from_shape(&[k, n], &packed)?;
    Ok(Some((
        node.inputs[xi],
        FastLinear {
            weight: Arc::new(weight),
            bias: None,
            relu: false,
            input,
            output,
        },
        roles.out_n,
    )))
}

/// Where the contracted axes `k` and the weight's output axis `n` sit.
struct Roles {
    /// The contracted axes in `x`, adjacent.
    x_k: std::ops::Range<usize>,
    /// The contracted axes in `W`, adjacent and in `x`'s order.
    w_k: std::ops::Range<usize>,
    w_n: usize,
    out_n: usize,
}

impl Roles {
    /// The roles of `einsum`'s axes, when it is a plain matrix product: axes in `x` and
    /// `W` only (`k`: one, or several adjacent in both in one order, as when tract folds
    /// a head split into the product), one in `W` and the output only (`n`), every other
    /// axis of more than one element once in `x` and once in the output, in the same
    /// order. Axes of one element (the unit batch axis ONNX `MatMul` broadcasting gives
    /// the weight) take no part. `shapes` are those of `x`, `W` and the output.
    fn read(einsum: &EinSum, shapes: [&[usize]; 3], xi: usize, wi: usize) -> Option<Self> {
        let mut k = Vec::new();
        let mut n = None;
        let mut kept = Vec::new();
        for axis in einsum.axes.iter_all_axes() {
            let (x, w, out) = (&axis.inputs[xi], &axis.inputs[wi], &axis.outputs[0]);
            if x.len() > 1 || w.len() > 1 || out.len() > 1 {
                return None;
            }
            let size = [x, w, out]
                .iter()
                .zip(shapes)
                .find_map(|(at, shape)| at.first().map(|&a| shape[a]));
            if size == Some(1) {
                continue;
            }
            match (x.first(), w.first(), out.first()) {
                (Some(&xp), Some(&wp), None) => k.push((xp, wp)),
                (None, Some(&wp), Some(&op)) if n.is_none() => n = Some((wp, op)),
                (Some(&xp), None, Some(&op)) => kept.push((xp, op)),
                _ => return None,
            }
        }
        let (w_n, out_n) = n?;
        k.sort_unstable();
        let adjacent = k
            .windows(2)
            .all(|p| p[1].0 == p[0].0 + 1 && p[1].1 == p[0].1 + 1);
        let (first, last) = (k.first()?, k.last()?);
        if !adjacent {
            return None;
        }
        let (x_k, w_k) = (first.0..last.0 + 1, first.1..last.1 + 1);
        kept.sort_unstable();
        kept.windows(2).all(|p| p[0].1 < p[1].1).then_some(Self {
            x_k,
            w_k,
            w_n,
            out_n,
        })
    }
}

/// The bias `(N)` when `node` adds a constant that varies along the output's `n` axis
/// only and leaves the product's shape unchanged.
fn bias_add(
    model: &TypedModel,
    node: &TypedNode,
    op: &FastLinear,
    n_axis: usize,
) -> TractResult<Option<Tensor>> {
    if bin_op(node, "Add").is_none() {
        return Ok(None);
    }
    let out = model.outlet_fact(OutletId::new(node.id, 0))?;
    if out.shape.as_concrete() != Some(&*op.output.shape) {
        return Ok(None);
    }
    let n = op.weight.shape()[1];
    let rank = op.output.shape.len();
    for i in 0..2 {
        let Some(b) = &model.outlet_fact(node.inputs[i])?.konst else {
            continue;
        };
        let shape = b.shape();
        if b.datum_type() != f32::datum_type() || shape.len() > rank || b.len() != n {
            continue;
        }
        // Aligned from the right, as broadcasting aligns it: N at the n axis, 1 elsewhere.
        let offset = rank - shape.len();
        let along_n = shape
            .iter()
            .enumerate()
            .all(|(a, &d)| d == 1 || a + offset == n_axis);
        if along_n {
            return Ok(Some((**b).clone().into_shape(&[n])?));
        }
    }
    Ok(None)
}

/// Whether `node` is `max(x, 0)` with a constant zero (tract's ReLU) that keeps the
/// product's shape.
fn is_relu(model: &TypedModel, node: &TypedNode, shape: &[usize]) -> bool {
    let same_shape = model
        .outlet_fact(OutletId::new(node.id, 0))
        .is_ok_and(|f| f.shape.as_concrete() == Some(shape));
    bin_op(node, "Max").is_some()
        && node
            .inputs
            .iter()
            .any(|&i| scalar_const(model, i) == Some(0.0))
        && same_shape
}
