//! tract kernels and graph rewrites for the decoder's hot ops.
//!
//! Each rewrite finds a chain of tract ops in the loaded graph and puts one of these
//! kernels in its place; the kernels compute what the chain computes (up to float
//! rounding), and each module's tests check that against tract's own ops.
//!
//! | module | kernel | replaces |
//! |---|---|---|
//! | [`grid_sample`] | [`FastGridSample`](grid_sample::FastGridSample) | ONNX `GridSample` (bilinear), at load time |
//! | [`deform_sample`] | [`FastDeformSample`](deform_sample::FastDeformSample) | `GridSample -> Mul(weights) -> ReduceSum` |
//! | [`deform_project`] | [`FastDeformProject`](deform_project::FastDeformProject), [`TokenMajor`](deform_project::TokenMajor) | the value projection `memory · W + b` feeding a [`FastDeformSample`](deform_sample::FastDeformSample), applied to the sampled rows; one transpose of a channel-major memory for all of them |
//! | [`attention`] | [`FastAttention`](attention::FastAttention) | `Q·Kᵀ -> scale -> Softmax -> ·V` |
//! | [`linear`] | [`FastLinear`](linear::FastLinear) | `EinSum` with a constant matrix (`MatMul`), with its bias `Add` and ReLU |
//! | [`layer_norm`] | [`FastLayerNorm`](layer_norm::FastLayerNorm) | `ReduceSum -> Mul(1/n) -> Sub -> RmsNorm` |
//! | [`fast_ops`] | [`FastBroadcast`](fast_ops::FastBroadcast), [`FastSoftmax`](fast_ops::FastSoftmax) | broadcasting binary ops, short-row softmax |
//! | [`trig`] | [`FastTrig`](trig::FastTrig) | `Sin`, `Cos` (the query sine embedding) |
//! | [`gather`] | [`FastGatherElements`](gather::FastGatherElements) | `GatherElements` on f32 (the two-stage selection's rows) |
//! | `input_reshape` | (none) | the `IntoShape` after each input, folded into the fed shape |
//!
//! The kernels read and write flat f32 slices of tract's own `Tensor`s: tract owns the
//! buffers and hands them to `eval`, so viewing them as slices costs nothing, and the
//! loops index them directly because each kernel picks its own memory order.

pub mod attention;
#[cfg(target_arch = "aarch64")]
mod deform_neon;
pub mod deform_project;
pub mod deform_sample;
pub mod fast_ops;
pub mod gather;
mod graph_patch;
pub mod grid_sample;
pub(crate) mod input_reshape;
pub mod layer_norm;
#[cfg(target_arch = "aarch64")]
mod layer_norm_neon;
pub mod linear;
#[cfg(target_arch = "aarch64")]
mod softmax_neon;
pub mod trig;
#[cfg(target_arch = "aarch64")]
mod trig_neon;

use tract_onnx::tract_hir::internal::*;

/// What one of this module's tract ops computes; [`tract_op!`] turns it into tract's
/// `Op`, `EvalOp` and `TypedOp`, so each kernel states only its name, its evaluation
/// and its output fact.
pub(crate) trait Kernel {
    /// The op's name in tract's graph dumps and profiles.
    fn kernel_name(&self) -> StaticName;

    /// One output tensor from the op's inputs.
    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor>;

    /// The output fact; by default the first input's (an op that works in place).
    fn output_fact(&self, inputs: &[&TypedFact]) -> TractResult<TypedFact> {
        Ok(inputs[0].without_value())
    }

    /// Extra lines for tract's graph dumps.
    fn details(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Implements tract's `Op`, `EvalOp` and `TypedOp` for a [`Kernel`].
macro_rules! tract_op {
    ($op:ty) => {
        impl Op for $op {
            fn name(&self) -> StaticName {
                $crate::decode::ops::Kernel::kernel_name(self)
            }

            fn info(&self) -> TractResult<Vec<String>> {
                Ok($crate::decode::ops::Kernel::details(self))
            }

            op_as_typed_op!();
        }

        impl EvalOp for $op {
            op_out_of_plan!();

            fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
                Ok(tvec!(
                    $crate::decode::ops::Kernel::run(self, inputs)?.into_tvalue()
                ))
            }
        }

        impl TypedOp for $op {
            as_op!();

            fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
                Ok(tvec!($crate::decode::ops::Kernel::output_fact(
                    self, inputs
                )?))
            }
        }
    };
}
pub(crate) use tract_op;

/// Runs `apply(rows, row length)` in place on the single input of a row-wise op
/// (the last axis is the row); `name` names the op when the input is a scalar.
pub(crate) fn in_place_rows(
    name: &str,
    inputs: TVec<TValue>,
    apply: impl FnOnce(&mut [f32], usize),
) -> TractResult<Tensor> {
    let input = args_1!(inputs);
    let row = *input
        .shape()
        .last()
        .ok_or_else(|| format_err!("{name} on a scalar"))?;
    let mut t = input.into_tensor();
    if row > 0 {
        apply(f32s_mut(&mut t)?, row);
    }
    Ok(t)
}

/// The elements of a dense f32 tensor.
pub(crate) fn f32s(t: &Tensor) -> TractResult<&[f32]> {
    t.try_as_plain_ram()?.as_slice::<f32>()
}

/// The elements of a dense f32 tensor, writable.
pub(crate) fn f32s_mut(t: &mut Tensor) -> TractResult<&mut [f32]> {
    t.to_plain_array_view_mut::<f32>()?
        .into_slice()
        .ok_or_else(|| format_err!("tensor is not contiguous"))
}

/// Helpers shared by the kernel tests: seeded inputs and the largest difference.
#[cfg(test)]
pub(crate) mod test_util {
    use tract_onnx::prelude::Tensor;

    /// `n` values in `[lo, hi)` from a xorshift seeded by `seed`: repeatable inputs.
    pub fn random(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
            })
            .collect()
    }

    /// The largest absolute element difference of two f32 tensors of one shape.
    pub fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
        assert_eq!(a.shape(), b.shape());
        max_abs_diff(super::f32s(a).unwrap(), super::f32s(b).unwrap())
    }

    /// The largest absolute element difference of two slices, over the shorter.
    pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }
}
