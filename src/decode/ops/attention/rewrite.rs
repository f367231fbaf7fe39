//! Finding the attention chain in a decluttered model and wiring [`FastAttention`].

use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_core::ops::array::Slice;
use tract_onnx::tract_hir::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_hir::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_hir::tract_core::ops::nn::{Softmax, SoftmaxKind};

use super::super::graph_patch::scalar_const;
use super::{FastAttention, Role};

/// Replaces every `EinSum(Q,K) -> [Mul(scalar)] -> Softmax -> [Slice of rows] ->
/// EinSum(·,V)` chain of a decluttered f32 model with [`FastAttention`]. Returns how
/// many `AV` products were replaced. Chains whose axes do not read as attention
/// (more than one axis per role, broadcasting, a softmax over another axis) are left
/// alone.
///
/// # Errors
/// When tract rejects a patch (a bug; the model is unchanged then).
pub fn fuse_attention(model: &mut TypedModel) -> TractResult<usize> {
    crate::decode::ops::graph_patch::apply_each(model, find_one)
}

fn f32_einsum(node: &TypedNode) -> Option<&EinSum> {
    node.op_as::<EinSum>()
        .filter(|e| e.q_params.is_none() && e.operating_dt == f32::datum_type())
}

fn concrete(model: &TypedModel, o: OutletId) -> TractResult<Option<TVec<usize>>> {
    let fact = model.outlet_fact(o)?;
    Ok((fact.datum_type == f32::datum_type())
        .then(|| fact.shape.as_concrete().map(TVec::from))
        .flatten())
}

/// The QKᵀ product's roles: (Q roles, K roles, S roles), or None when the product is
/// not a single-M/N/K batched product without broadcasting.
type QkRoles = (TVec<Role>, TVec<Role>, TVec<Role>);

fn qk_roles(e: &EinSum, q: &[usize], k: &[usize], s: &[usize]) -> Option<QkRoles> {
    let mut rq: TVec<Role> = tvec![Role::Unit; q.len()];
    let mut rk: TVec<Role> = tvec![Role::Unit; k.len()];
    let mut rs: TVec<Role> = tvec![Role::Unit; s.len()];
    let (mut batches, mut counts) = (0u8, [0usize; 3]);
    for axis in e.axes.iter_all_axes() {
        if axis.inputs.len() != 2 || axis.outputs.len() != 1 {
            return None;
        }
        let (pq, pk, ps) = (&axis.inputs[0], &axis.inputs[1], &axis.outputs[0]);
        if pq.len() > 1 || pk.len() > 1 || ps.len() > 1 {
            return None;
        }
        match (pq.first(), pk.first(), ps.first()) {
            (Some(&a), Some(&b), Some(&c)) => {
                if q[a] != k[b] || batches >= 4 {
                    return None;
                }
                let r = Role::Batch(batches);
                batches += 1;
                (rq[a], rk[b], rs[c]) = (r, r, r);
            }
            (Some(&a), None, Some(&c)) => {
                (rq[a], rs[c]) = (Role::M, Role::M);
                counts[0] += 1;
            }
            (None, Some(&b), Some(&c)) => {
                (rk[b], rs[c]) = (Role::N, Role::N);
                counts[1] += 1;
            }
            (Some(&a), Some(&b), None) => {
                if q[a] != k[b] {
                    return None;
                }
                (rq[a], rk[b]) = (Role::K, Role::K);
                counts[2] += 1;
            }
            // Any other axis must have length 1 wherever it appears.
            (a, b, c) => {
                if a.is_some_and(|&a| q[a] != 1)
                    || b.is_some_and(|&b| k[b] != 1)
                    || c.is_some_and(|&c| s[c] != 1)
                {
                    return None;
                }
            }
        }
    }
    (counts == [1, 1, 1]).then_some((rq, rk, rs))
}

/// The AV product's roles: (V roles, O roles), given the roles of its P operand.
fn av_roles(
    e: &EinSum,
    p_slot: usize,
    rp: &[Role],
    p: &[usize],
    v: &[usize],
    o: &[usize],
    rows: usize,
) -> Option<(TVec<Role>, TVec<Role>)> {
    let v_slot = 1 - p_slot;
    let mut rv: TVec<Role> = tvec![Role::Unit; v.len()];
    let mut ro: TVec<Role> = tvec![Role::Unit; o.len()];
    let (mut d_count, mut n_seen, mut m_seen) = (0, false, false);
    for axis in e.axes.iter_all_axes() {
        if axis.inputs.len() != 2 || axis.outputs.len() != 1 {
            return None;
        }
        let (pp, pv, po) = (&axis.inputs[p_slot], &axis.inputs[v_slot], &axis.outputs[0]);
        if pp.len() > 1 || pv.len() > 1 || po.len() > 1 {
            return None;
        }
        let role = pp.first().map(|&a| rp[a]);
        match (pp.first(), pv.first(), po.first()) {
            (Some(&a), Some(&b), Some(&c)) => {
                let Some(Role::Batch(i)) = role else {
                    return None;
                };
                if p[a] != v[b] || p[a] != o[c] {
                    return None;
                }
                (rv[b], ro[c]) = (Role::Batch(i), Role::Batch(i));
            }
            (Some(&a), Some(&b), None) => {
                if role != Some(Role::N) || p[a] != v[b] {
                    return None;
                }
                rv[b] = Role::N;
                n_seen = true;
            }
            (Some(&a), None, Some(&c)) => {
                if role != Some(Role::M) || p[a] != o[c] {
                    return None;
                }
                ro[c] = Role::M;
                m_seen = true;
            }
            (None, Some(&b), Some(&c)) => {
                if v[b] != o[c] {
                    return None;
                }
                (rv[b], ro[c]) = (Role::D, Role::D);
                d_count += 1;
            }
            (Some(&a), None, None) => {
                // Query rows dropped from the output: only when one row is kept.
                match role {
                    Some(Role::M) if rows == 1 => m_seen = true,
                    Some(Role::Unit) => {}
                    _ if p[a] == 1 && role != Some(Role::N) => {}
                    _ => return None,
                }
            }
            (None, b, c) => {
                if b.is_some_and(|&b| v[b] != 1) || c.is_some_and(|&c| o[c] != 1) {
                    return None;
                }
            }
        }
    }
    // Every batch axis of P must be carried through.
    let p_batches = rp.iter().filter(|r| matches!(r, Role::Batch(_))).count();
    let v_batches = rv.iter().filter(|r| matches!(r, Role::Batch(_))).count();
    (d_count == 1 && n_seen && m_seen && p_batches == v_batches).then_some((rv, ro))
}

fn find_one(model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
    for sm in model.nodes() {
        let Some(softmax) = sm.op_as::<Softmax>() else {
            continue;
        };
        if softmax.kind != SoftmaxKind::Softmax
            || softmax.quant_output_dt.is_some()
            || softmax.axes.len() != 1
        {
            continue;
        }
        // Producer side: [Mul by a scalar constant] <- EinSum(Q, K).
        let mut src = model.node(sm.inputs[0].node);
        let mut scale = 1.0f32;
        if let Some(bin) = src.op_as::<TypedBinOp>() {
            if bin.0.name() != "Mul" || bin.1.is_some() || src.inputs.len() != 2 {
                continue;
            }
            let Some(c) = src
                .inputs
                .iter()
                .position(|&i| scalar_const(model, i).is_some())
            else {
                continue;
            };
            scale = scalar_const(model, src.inputs[c]).unwrap_or(1.0);
            src = model.node(src.inputs[1 - c].node);
        }
        let Some(qk) = f32_einsum(src) else {
            continue;
        };
        if src.inputs.len() != 2 {
            continue;
        }
        let (Some(qs), Some(ks), Some(ss)) = (
            concrete(model, src.inputs[0])?,
            concrete(model, src.inputs[1])?,
            concrete(model, OutletId::new(src.id, 0))?,
        ) else {
            continue;
        };
        let Some((rq, rk, rs)) = qk_roles(qk, &qs, &ks, &ss) else {
            continue;
        };
        if rs.get(softmax.axes[0]) != Some(&Role::N) {
            continue;
        }
        let m_axis = rs.iter().position(|&r| r == Role::M);
        // Consumer side: each successor is the AV product, directly or through a
        // slice of query rows.
        for succ in &sm.outputs[0].successors {
            let mut node = model.node(succ.node);
            let mut p_outlet = OutletId::new(sm.id, 0);
            let mut rows = (0, m_axis.map_or(1, |a| ss[a]));
            if let Some(slice) = node.op_as::<Slice>() {
                let (Ok(start), Ok(end)) = (slice.start.to_usize(), slice.end.to_usize()) else {
                    continue;
                };
                if Some(slice.axis) != m_axis || start >= end {
                    continue;
                }
                rows = (start, end);
                p_outlet = OutletId::new(node.id, 0);
                let [next] = &node.outputs[0].successors[..] else {
                    continue;
                };
                node = model.node(next.node);
            }
            let Some(av) = f32_einsum(node) else {
                continue;
            };
            if node.inputs.len() != 2 {
                continue;
            }
            let Some(p_slot) = node.inputs.iter().position(|&i| i == p_outlet) else {
                continue;
            };
            let v_outlet = node.inputs[1 - p_slot];
            if v_outlet == p_outlet {
                continue;
            }
            let (Some(ps), Some(vs), Some(os)) = (
                concrete(model, p_outlet)?,
                concrete(model, v_outlet)?,
                concrete(model, OutletId::new(node.id, 0))?,
            ) else {
                continue;
            };
            let Some((rv, ro)) = av_roles(av, p_slot, &rs, &ps, &vs, &os, rows.1 - rows.0) else {
                continue;
            };
            let op = FastAttention {
                scale_bits: scale.to_bits(),
                rows,
                q: rq.clone(),
                k: rk.clone(),
                v: rv,
                o: ro,
                out_shape: os.clone(),
            };
            let mut patch = TypedModelPatch::new(format!("fuse attention at {}", node.name));
            let q = patch.tap_model(model, src.inputs[0])?;
            let k = patch.tap_model(model, src.inputs[1])?;
            let v = patch.tap_model(model, v_outlet)?;
            let out = patch.wire_node(format!("{}.attention", node.name), op, &[q, k, v])?[0];
            patch.shunt_outside(model, OutletId::new(node.id, 0), out)?;
            return Ok(Some(patch));
        }
    }
    Ok(None)
}
