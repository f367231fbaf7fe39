//! `GatherElements` over f32 data with strided loops.
//!
//! The two-stage selection gathers the 100 chosen memory rows with ONNX `GatherElements`
//! and an index broadcast along the channels (upstream's `torch.gather`). tract's kernel
//! takes a flat path only when the gathered axis is the last one; otherwise it indexes
//! every element through a dynamic-rank coordinate, about 0.3 ms for the 100 x 256
//! rows at 288. [`FastGatherElements`] walks the index tensor row by row with plain
//! strides instead, for any axis.

use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_core::ops::array::GatherElements;

use super::graph_patch::apply_each;
use crate::text::dims;

/// ONNX `GatherElements` on f32 data: `out[c] = data[c with axis := indices[c]]` over every
/// coordinate `c` of `indices`; a negative index counts from the end of the axis.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastGatherElements {
    /// The gathered axis.
    pub axis: usize,
}

impl FastGatherElements {
    /// Gathers `data` of shape `data_shape` at `indices` of shape `index_shape` (same
    /// rank, no larger than `data_shape` off the axis) into `out`.
    ///
    /// # Errors
    /// An index outside the axis, naming it and its position.
    pub fn gather(
        &self,
        data: &[f32],
        data_shape: &[usize],
        indices: &[i64],
        index_shape: &[usize],
        out: &mut [f32],
    ) -> TractResult<()> {
        let rank = data_shape.len();
        ensure!(
            index_shape.len() == rank
                && self.axis < rank
                && (0..rank).all(|a| a == self.axis || index_shape[a] <= data_shape[a])
                && out.len() == indices.len(),
            "GatherElements: data {}, indices {}, axis {}",
            dims(data_shape),
            dims(index_shape),
            self.axis
        );
        if indices.is_empty() {
            return Ok(());
        }
        let mut strides = vec![1usize; rank];
        for a in (0..rank.saturating_sub(1)).rev() {
            strides[a] = strides[a + 1] * data_shape[a + 1];
        }
        let axis_len = data_shape[self.axis] as i64;
        let axis_stride = strides[self.axis];
        // Walk the index tensor one last-axis row at a time; `coords` holds the row's
        // leading coordinates, `base` its data offset without the gathered axis.
        let row = index_shape[rank - 1];
        let last_stride = if self.axis == rank - 1 {
            0
        } else {
            strides[rank - 1]
        };
        let mut coords = vec![0usize; rank - 1];
        for (r, (idx_row, out_row)) in indices
            .chunks_exact(row)
            .zip(out.chunks_exact_mut(row))
            .enumerate()
        {
            let base: usize = coords
                .iter()
                .enumerate()
                .filter(|&(a, _)| a != self.axis)
                .map(|(a, &c)| c * strides[a])
                .sum();
            for (j, (&i, o)) in idx_row.iter().zip(out_row.iter_mut()).enumerate() {
                let at = if i < 0 { i + axis_len } else { i };
                ensure!(
                    (0..axis_len).contains(&at),
                    "GatherElements: index {i} at row {r}, column {j} outside axis {} of length {axis_len}",
                    self.axis
                );
                *o = data[base + j * last_stride + at as usize * axis_stride];
            }
            // Next row: odometer over the leading axes of the index shape.
            for a in (0..rank - 1).rev() {
                coords[a] += 1;
                if coords[a] < index_shape[a] {
                    break;
                }
                coords[a] = 0;
            }
        }
        Ok(())
    }
}

impl super::Kernel for FastGatherElements {
    fn kernel_name(&self) -> StaticName {
        "FastGatherElements".into()
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        let (data, indices) = args_2!(inputs);
        let indices = indices.cast_to::<i64>()?;
        let mut out = Tensor::zero::<f32>(indices.shape())?;
        self.gather(
            super::f32s(&data)?,
            data.shape(),
            indices.try_as_plain_ram()?.as_slice::<i64>()?,
            indices.shape(),
            super::f32s_mut(&mut out)?,
        )?;
        Ok(out)
    }

    fn output_fact(&self, inputs: &[&TypedFact]) -> TractResult<TypedFact> {
        Ok(f32::fact(inputs[1].shape.clone()))
    }
}

super::tract_op!(FastGatherElements);

/// Puts a [`FastGatherElements`] in place of every `GatherElements` on f32 data with
/// static shapes; returns how many.
///
/// # Errors
/// When tract rejects a patch.
pub fn fast_gather(model: &mut TypedModel) -> TractResult<usize> {
    apply_each(model, |model| {
        for node in model.nodes() {
            let Some(op) = node.op_as::<GatherElements>() else {
                continue;
            };
            let facts = model.node_input_facts(node.id)?;
            if facts[0].datum_type != f32::datum_type()
                || facts.iter().any(|f| f.shape.as_concrete().is_none())
            {
                continue;
            }
            let fast = FastGatherElements { axis: op.axis };
            return TypedModelPatch::replace_single_op(model, node, &node.inputs, fast).map(Some);
        }
        Ok(None)
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_util::random;
    use super::*;

    /// tract's own `GatherElements` and the fast one on the same operands.
    fn both(data: &Tensor, indices: &Tensor, axis: usize) -> (TractResult<Tensor>, Tensor) {
        let ours = super::super::Kernel::run(
            &FastGatherElements { axis },
            tvec!(data.clone().into_tvalue(), indices.clone().into_tvalue()),
        );
        let theirs = GatherElements { axis }
            .eval_out_of_plan(tvec!(
                data.clone().into_tvalue(),
                indices.clone().into_tvalue()
            ))
            .unwrap()
            .unwrap()
            .remove(0)
            .into_tensor();
        (ours, theirs)
    }

    fn indices(shape: &[usize], len: usize, seed: u64) -> Tensor {
        let n = shape.iter().product();
        let v: Vec<i64> = random(n, seed, 0.0, 1.0)
            .iter()
            .enumerate()
            // Every other index counted from the end.
            .map(|(i, &r)| {
                let i0 = (r * len as f32) as i64 % len as i64;
                if i % 2 == 0 {
                    i0
                } else {
                    i0 - len as i64
                }
            })
            .collect();
        Tensor::from_shape(shape, &v).unwrap()
    }

    #[test]
    fn matches_tracts_gather_elements_on_every_axis() {
        let shape = [2, 7, 5];
        let data = Tensor::from_shape(&shape, &random(70, 3, -1.0, 1.0)).unwrap();
        for axis in 0..3 {
            // Smaller than the data off the axis, longer than it on the axis.
            let mut index_shape = [2, 6, 4];
            index_shape[axis] = 9;
            let idx = indices(&index_shape, shape[axis], axis as u64 + 1);
            let (ours, theirs) = both(&data, &idx, axis);
            let ours = ours.unwrap();
            assert_eq!(ours.shape(), theirs.shape(), "axis {axis}");
            assert_eq!(
                super::super::f32s(&ours).unwrap(),
                super::super::f32s(&theirs).unwrap(),
                "axis {axis}"
            );
        }
    }

    #[test]
    fn gathers_rows_as_the_two_stage_selection_does() {
        // (1, tokens, width) data, the row index broadcast along the width.
        let (tokens, width, picked) = (576, 256, 100);
        let data =
            Tensor::from_shape(&[1, tokens, width], &random(tokens * width, 5, -2.0, 2.0)).unwrap();
        let rows: Vec<i64> = (0..picked).map(|i| (i * 37 % tokens) as i64).collect();
        let idx: Vec<i64> = rows
            .iter()
            .flat_map(|&r| std::iter::repeat_n(r, width))
            .collect();
        let idx = Tensor::from_shape(&[1, picked, width], &idx).unwrap();
        let (ours, theirs) = both(&data, &idx, 1);
        let ours = ours.unwrap();
        assert_eq!(ours, theirs);
        let d = super::super::f32s(&data).unwrap();
        let o = super::super::f32s(&ours).unwrap();
        assert_eq!(&o[width..2 * width], &d[37 * width..38 * width]);
    }

    #[test]
    fn an_index_outside_the_axis_is_an_error() {
        let data = Tensor::from_shape(&[1, 4, 2], &random(8, 1, 0.0, 1.0)).unwrap();
        for bad in [4i64, -5] {
            let idx = Tensor::from_shape(&[1, 1, 2], &[0i64, bad]).unwrap();
            let err = super::super::Kernel::run(
                &FastGatherElements { axis: 1 },
                tvec!(data.clone().into_tvalue(), idx.into_tvalue()),
            )
            .unwrap_err()
            .to_string();
            assert!(
                err.contains(&format!("index {bad}")) && err.contains("length 4"),
                "{err}"
            );
        }
    }
}
