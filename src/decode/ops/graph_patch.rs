//! What the graph rewrites of this module share.

use tract_onnx::prelude::*;
use tract_onnx::tract_hir::tract_core::ops::binary::TypedBinOp;

/// Applies the patch `find` proposes until it proposes none; returns how many
/// were applied. One at a time: a patch renumbers the nodes, so patches
/// prepared against the same model would not compose when two rewritten nodes
/// are neighbours.
pub(crate) fn apply_each(
    model: &mut TypedModel,
    find: impl Fn(&TypedModel) -> TractResult<Option<TypedModelPatch>>,
) -> TractResult<usize> {
    let mut applied = 0;
    while let Some(patch) = find(model)? {
        patch.apply(model)?;
        applied += 1;
    }
    Ok(applied)
}

/// The node that alone reads `node`'s only output, if that is how it is wired.
pub(crate) fn single_successor(model: &TypedModel, node: usize) -> Option<&TypedNode> {
    let outs = &model.node(node).outputs;
    (outs.len() == 1 && outs[0].successors.len() == 1)
        .then(|| model.node(outs[0].successors[0].node))
}

/// `node` when it is the plain (unquantised) binary op `name`, `"Add"` or `"Max"` say.
pub(crate) fn bin_op<'a>(node: &'a TypedNode, name: &str) -> Option<&'a TypedNode> {
    node.op_as::<TypedBinOp>()
        .is_some_and(|b| b.0.name() == name && b.1.is_none() && node.inputs.len() == 2)
        .then_some(node)
}

/// The scalar value of a constant f32 outlet, if it is one.
pub(crate) fn scalar_const(model: &TypedModel, o: OutletId) -> Option<f32> {
    let k = model.outlet_fact(o).ok()?.konst.clone()?;
    (k.len() == 1 && k.datum_type() == f32::datum_type())
        .then(|| k.cast_to_scalar::<f32>().ok())
        .flatten()
}
