//! Feeding the decoder's inputs in the shape its first op reads them.
//!
//! tract lowers the projectors' 1×1 convolutions to matrix products over
//! `(1, 384, g·g)` and reads each `(1, 384, g, g)` input through an `IntoShape`.
//! That op takes its input by value, but a plan always hands a node a second
//! reference to its inputs, so the reshape copies the whole map (2 MB at 432,
//! 0.1 ms a map) only to rename its axes. The maps are dense and row-major, so
//! `(1, 384, g, g)` and `(1, 384, g·g)` are the same bytes: [`fold_input_reshapes`]
//! declares the input with the reshaped shape and drops the `IntoShape`, and the
//! engine sets that shape on the maps' tensors before lending them (a change of
//! metadata, no copy).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::change_axes::IntoShape;
use tract_onnx::tract_core::ops::source::TypedSource;

use super::graph_patch::single_successor;

/// Row-major strides of `dims`, in elements.
fn natural_strides(dims: &[usize]) -> TVec<isize> {
    let mut strides: TVec<isize> = dims.iter().map(|_| 1).collect();
    for i in (0..dims.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * dims[i + 1] as isize;
    }
    strides
}

/// For each model input read only by a plain reshape, makes the input that
/// shape and removes the reshape. Returns, per input, the shape it must now be
/// fed in (`None`: unchanged).
///
/// # Errors
/// When tract refuses the rewired graph.
pub(crate) fn fold_input_reshapes(model: &mut TypedModel) -> TractResult<Vec<Option<TVec<usize>>>> {
    let inputs = model.input_outlets()?.to_vec();
    let mut feeds = vec![None; inputs.len()];
    for (feed, source) in feeds.iter_mut().zip(&inputs) {
        if model.outputs.contains(source) {
            continue;
        }
        let Some(reshape) = single_successor(model, source.node) else {
            continue;
        };
        let Some(op) = reshape.op_as::<IntoShape>() else {
            continue;
        };
        let input_len: usize = model
            .outlet_fact(*source)?
            .shape
            .as_concrete()
            .map_or(0, |s| s.iter().product());
        if op.strides != natural_strides(&op.dims) || op.len != input_len {
            continue;
        }
        let dims = op.dims.clone();
        let reshape = reshape.id;
        let fact = model.outlet_fact(OutletId::new(reshape, 0))?.clone();
        model.node_mut(source.node).op = Box::new(TypedSource::new(fact.clone()));
        model.set_outlet_fact(*source, fact)?;
        if let Some(patch) = TypedModelPatch::shunt_one_op(model, model.node(reshape))? {
            patch.apply(model)?;
        }
        *feed = Some(dims);
    }
    Ok(feeds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::ops::change_axes::AxisOp;
    use tract_onnx::tract_core::ops::math;

    /// `x (1, 4, 2, 2)` reshaped to `(1, 4, 4)`, plus a constant; with
    /// `second_reader`, `x` is also read as it is, by a second op.
    fn model(second_reader: bool) -> TypedModel {
        let mut m = TypedModel::default();
        let x = m.add_source("x", f32::fact([1, 4, 2, 2])).unwrap();
        let r = m
            .wire_node(
                "r",
                AxisOp::Reshape(
                    1,
                    tvec![4.to_dim(), 2.to_dim(), 2.to_dim()],
                    tvec![4.to_dim(), 4.to_dim()],
                ),
                &[x],
            )
            .unwrap()[0];
        let c = m.add_const("c", tensor3(&[[[1f32; 4]; 4]])).unwrap();
        let y = m.wire_node("y", math::add(), &[r, c]).unwrap()[0];
        let mut outputs = vec![y];
        if second_reader {
            outputs.push(m.wire_node("twice", math::add(), &[x, x]).unwrap()[0]);
        }
        m.select_output_outlets(&outputs).unwrap();
        m
    }

    fn reshapes(m: &TypedModel) -> usize {
        m.nodes()
            .iter()
            .filter(|n| n.op_is::<IntoShape>() && m.eval_order().unwrap().contains(&n.id))
            .count()
    }

    #[test]
    fn an_input_read_only_through_a_reshape_is_fed_reshaped() {
        let mut m = model(false).into_optimized().unwrap();
        assert_eq!(reshapes(&m), 1, "tract lowers the reshape to IntoShape");
        let input: Vec<f32> = (0..16).map(|i| i as f32).collect();
        let want = m
            .clone()
            .into_runnable()
            .unwrap()
            .run(tvec![Tensor::from_shape(&[1, 4, 2, 2], &input)
                .unwrap()
                .into_tvalue()])
            .unwrap();
        let feeds = fold_input_reshapes(&mut m).unwrap();
        assert_eq!(feeds, vec![Some(tvec![1, 4, 4])]);
        assert_eq!(reshapes(&m), 0);
        let got = m
            .into_runnable()
            .unwrap()
            .run(tvec![Tensor::from_shape(&[1, 4, 4], &input)
                .unwrap()
                .into_tvalue()])
            .unwrap();
        assert_eq!(got[0], want[0]);
    }

    #[test]
    fn an_input_with_another_reader_keeps_its_shape() {
        let mut m = model(true).into_optimized().unwrap();
        let before = reshapes(&m);
        assert_eq!(fold_input_reshapes(&mut m).unwrap(), vec![None]);
        assert_eq!(reshapes(&m), before);
        assert_eq!(
            m.input_fact(0).unwrap().shape.as_concrete().unwrap(),
            &[1, 4, 2, 2]
        );
    }
}
