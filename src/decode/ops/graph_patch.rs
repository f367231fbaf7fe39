//! What the graph rewrites of this module share.

use tract_onnx::prelude::*;

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
