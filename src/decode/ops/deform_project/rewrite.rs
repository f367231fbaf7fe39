//! Finding a deformable sampling's value projection and reading `W` and `b` off it.

use std::sync::Arc;

use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_hir::tract_core::ops::change_axes::AxisOp;
use tract_onnx::tract_hir::tract_core::ops::einsum::EinSum;

use super::super::deform_sample::FastDeformSample;
use super::layout::TokenMajor;
use super::FastDeformProject;

/// Ops not longer than this are followed from the value maps back to the memory.
const MAX_CHAIN: usize = 12;

/// Rewrites every [`FastDeformSample`] whose value maps are an affine projection of a
/// memory `([1,] S, D)` or `([1,] D, S)` (with S ≥ D) into one [`FastDeformProject`] reading the memory.
/// Returns how many were rewritten.
///
/// A chain is taken only when the projection read off it reproduces the chain's own
/// output on a random memory; anything else is left alone.
///
/// # Errors
/// When tract fails to run a chain or rejects the patch.
pub fn fuse_value_projection(model: &mut TypedModel) -> TractResult<usize> {
    super::super::graph_patch::apply_each(model, find_one)
}

/// The ops from a memory outlet to a sampler's value maps.
struct ValueChain {
    /// The memory `(1, S, D)`.
    memory: OutletId,
    /// The chain's nodes, memory side first.
    nodes: Vec<usize>,
}

fn find_one(model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
    for node in model.nodes() {
        let Some(op) = node.op_as::<FastDeformSample>() else {
            continue;
        };
        if !fewer_queries_than_tokens(model, node)? {
            continue;
        }
        let Some(chain) = value_chain(model, node.inputs[0])? else {
            continue;
        };
        let Some(mut fused) = read_projection(model, &chain, op)? else {
            continue;
        };
        let mut patch = TypedModelPatch::new(format!("project sampled rows at {}", node.name));
        let m = if fused.channel_major {
            fused.channel_major = false;
            token_major(model, &mut patch, chain.memory, &fused)?
        } else {
            patch.tap_model(model, chain.memory)?
        };
        let g = patch.tap_model(model, node.inputs[1])?;
        let w = patch.tap_model(model, node.inputs[2])?;
        let out = patch.wire_node(format!("{}.projected", node.name), fused, &[m, g, w])?[0];
        patch.shunt_outside(model, OutletId::new(node.id, 0), out)?;
        return Ok(Some(patch));
    }
    Ok(None)
}

/// The token-major copy of a channel-major `memory` in `patch`: the [`TokenMajor`] node
/// an earlier rewrite wired on it, or a new one. One transpose per memory and view,
/// however many samplings read it.
fn token_major(
    model: &TypedModel,
    patch: &mut TypedModelPatch,
    memory: OutletId,
    fused: &FastDeformProject,
) -> TractResult<OutletId> {
    let existing = model
        .outlet_successors(memory)
        .iter()
        .find(|s| model.node(s.node).op_is::<TokenMajor>());
    if let Some(s) = existing {
        return patch.tap_model(model, OutletId::new(s.node, 0));
    }
    let m = patch.tap_model(model, memory)?;
    let op = TokenMajor {
        channels: fused.weight.shape()[1],
        tokens: fused.map[0] * fused.map[1],
    };
    Ok(patch.wire_node(
        format!("{}.token_major", model.node(memory.node).name),
        op,
        &[m],
    )?[0])
}

/// Whether projecting the sampled rows (Lq·D² per head group) is cheaper than projecting
/// the memory (S·D²): fewer queries than memory tokens. The keypoint branch of every slot
/// (1700 queries on 576 tokens) is not; the top slot's (17) and the detection queries' (100)
/// are.
fn fewer_queries_than_tokens(model: &TypedModel, node: &TypedNode) -> TractResult<bool> {
    let value = model
        .outlet_fact(node.inputs[0])?
        .shape
        .as_concrete()
        .map(<[usize]>::to_vec);
    let grid = model
        .outlet_fact(node.inputs[1])?
        .shape
        .as_concrete()
        .map(<[usize]>::to_vec);
    Ok(match (value.as_deref(), grid.as_deref()) {
        (Some([_, _, h, w]), Some([_, lq, _, _])) => lq < &(h * w),
        _ => false,
    })
}

/// Whether `op` is one the chain may hold: layout changes, and affine ops whose other
/// operands are constants.
fn affine_op(node: &TypedNode) -> bool {
    node.op_is::<AxisOp>()
        || node.op_is::<EinSum>()
        || node
            .op_as::<TypedBinOp>()
            .is_some_and(|b| matches!(b.0.name(), "Add" | "Sub" | "Mul"))
}

/// Follows `value` back through single-reader affine ops with one non-constant input up
/// to and including the first `EinSum`; its non-constant input is the memory.
fn value_chain(model: &TypedModel, value: OutletId) -> TractResult<Option<ValueChain>> {
    let mut nodes = Vec::new();
    let mut at = value;
    loop {
        let node = model.node(at.node);
        if nodes.len() == MAX_CHAIN
            || !affine_op(node)
            || node.outputs.len() != 1
            || node.outputs[0].successors.len() != 1
        {
            return Ok(None);
        }
        let mut dynamic = Vec::new();
        for i in &node.inputs {
            if model.outlet_fact(*i)?.konst.is_none() {
                dynamic.push(*i);
            }
        }
        let [input] = dynamic[..] else {
            return Ok(None);
        };
        nodes.push(node.id);
        at = input;
        if node.op_is::<EinSum>() {
            break;
        }
    }
    nodes.reverse();
    Ok(Some(ValueChain { memory: at, nodes }))
}

/// The chain as a model of its own: memory in, value maps out.
fn chain_model(model: &TypedModel, chain: &ValueChain) -> TractResult<TypedModel> {
    let mut m = TypedModel::default();
    let fact = model.outlet_fact(chain.memory)?.without_value();
    let mut wire = m.add_source("memory", fact)?;
    for &id in &chain.nodes {
        let node = model.node(id);
        let mut inputs = TVec::new();
        for (k, i) in node.inputs.iter().enumerate() {
            inputs.push(match &model.outlet_fact(*i)?.konst {
                Some(c) => m.add_const(format!("{}.{k}", node.name), c.clone())?,
                None => wire,
            });
        }
        wire = m.wire_node(&node.name, node.op.clone(), &inputs)?[0];
    }
    m.select_output_outlets(&[wire])?;
    Ok(m)
}

/// `W` `(H, D, dh)` and `b` read off the chain, if it is `memory · W + b` laid out as
/// `(H, dh, h, w)` with token `y·w + x` and channel `h·dh + c`, checked on a random
/// memory.
fn read_projection(
    model: &TypedModel,
    chain: &ValueChain,
    op: &FastDeformSample,
) -> TractResult<Option<FastDeformProject>> {
    let memory_fact = model.outlet_fact(chain.memory)?;
    let Some(&last) = chain.nodes.last() else {
        return Ok(None);
    };
    let value_fact = model.outlet_fact(OutletId::new(last, 0))?;
    let (Some(ms), Some(vs)) = (
        memory_fact.shape.as_concrete(),
        value_fact.shape.as_concrete(),
    ) else {
        return Ok(None);
    };
    let &[heads, dh, mh, mw] = vs else {
        return Ok(None);
    };
    let (s, d) = (mh * mw, heads * dh);
    // Leading unit axes dropped: (S, D), (h, w, D), (D, S) or (D, h, w).
    let core: Vec<usize> = ms.iter().copied().skip_while(|&x| x == 1).collect();
    let channel_major = match core[..] {
        [a, b] if (a, b) == (s, d) => false,
        [y, x, b] if (y, x, b) == (mh, mw, d) => false,
        [a, b] if (a, b) == (d, s) => true,
        [a, y, x] if (a, y, x) == (d, mh, mw) => true,
        _ => return Ok(None),
    };
    if memory_fact.datum_type != f32::datum_type() || s < d || d == 0 {
        return Ok(None);
    }
    // Element (token t, channel k) of the memory.
    let mem_at = |t: usize, k: usize| if channel_major { k * s + t } else { t * d + k };
    let plan = chain_model(model, chain)?.into_runnable()?;
    let run = |x: Vec<f32>| -> TractResult<Vec<f32>> {
        let out = plan.run(tvec![Tensor::from_shape(ms, &x)?.into_tvalue()])?;
        Ok(super::super::f32s(&out[0])?.to_vec())
    };
    // value[h, c, token] sits at (h·dh + c)·S + token.
    let at = |v: &[f32], k: usize, token: usize| v[k * s + token];
    let zero = run(vec![0.0; s * d])?;
    let bias: Vec<f32> = (0..d).map(|k| at(&zero, k, 0)).collect();
    if (0..d).any(|k| (0..s).any(|t| at(&zero, k, t) != bias[k])) {
        return Ok(None);
    }
    // Token t < D holds the unit vector along t, so it reads row t of W.
    let mut unit = vec![0.0; s * d];
    for t in 0..d {
        unit[mem_at(t, t)] = 1.0;
    }
    let rows = run(unit)?;
    let mut weight = vec![0f32; d * d];
    for h in 0..heads {
        for row in 0..d {
            for c in 0..dh {
                let k = h * dh + c;
                weight[(h * d + row) * dh + c] = at(&rows, k, row) - bias[k];
            }
        }
    }
    let fused = FastDeformProject {
        sample: op.sample.clone(),
        map: [mh, mw],
        weight: Arc::new(Tensor::from_shape(&[heads, d, dh], &weight)?),
        bias: Arc::new(Tensor::from_shape(&[d], &bias)?),
        channel_major,
    };
    let probe = random_probe(s * d);
    let want = run(probe.clone())?;
    Ok(reproduces(&fused, &probe, mem_at, &want).then_some(fused))
}

/// Whether `memory · W + b` of `fused` equals `want` `(H, dh, S)` on every seventh
/// token, within float rounding; `mem_at(token, channel)` indexes the memory.
fn reproduces(
    fused: &FastDeformProject,
    memory: &[f32],
    mem_at: impl Fn(usize, usize) -> usize,
    want: &[f32],
) -> bool {
    let [heads, d, dh] = [
        fused.weight.shape()[0],
        fused.weight.shape()[1],
        fused.weight.shape()[2],
    ];
    let s = memory.len() / d;
    let (Ok(weight), Ok(bias)) = (
        super::super::f32s(&fused.weight),
        super::super::f32s(&fused.bias),
    ) else {
        return false;
    };
    for t in (0..s).step_by(7) {
        for h in 0..heads {
            for c in 0..dh {
                let k = h * dh + c;
                let got: f32 = (0..d)
                    .map(|row| memory[mem_at(t, row)] * weight[(h * d + row) * dh + c])
                    .sum::<f32>()
                    + bias[k];
                let w = want[k * s + t];
                if (got - w).abs() > 1e-4 * (1.0 + w.abs()) {
                    return false;
                }
            }
        }
    }
    true
}

/// `n` values in [-1, 1) from a fixed-seed xorshift: a memory no layout or affine
/// misreading reproduces by chance.
fn random_probe(n: usize) -> Vec<f32> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}
