//! ONNX `LayerNormalization`'s centring and scaling as one op.
//!
//! tract loads `LayerNormalization` as `ReduceSum -> Mul(1/n) -> Sub -> RmsNorm`, then
//! the affine `Mul(gamma) -> Add(beta)`. The decoder has 31 of them (50 in the
//! upstream graph), most over 1,700 keypoint tokens, and the first four ops each make
//! a pass over the tensor with per-row overhead on 64- or 256-long rows.
//! [`fuse_layer_norm`] replaces those four with [`FastLayerNorm`], one pass per row
//! that keeps the row in L1; tract's own affine op stays.

use super::graph_patch::{bin_op, scalar_const, single_successor};
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_core::ops::nn::{Reduce, Reducer, RmsNorm};

/// `(x - mean(x)) / sqrt(mean((x - mean)²) + eps)` along the last axis.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastLayerNorm {
    /// `f32::to_bits` of the factor turning a row sum into its mean (1 / row length,
    /// as the graph gives it).
    pub mean_scale_bits: u32,
    /// `f32::to_bits` of the variance epsilon.
    pub eps_bits: u32,
}

impl FastLayerNorm {
    /// Normalises every `row`-long run of `data` in place.
    pub fn apply(&self, data: &mut [f32], row: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2, checked just above.
                unsafe { self.apply_avx2(data, row) };
                return;
            }
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is the aarch64 baseline.
        self.apply_with(data, row, |r, sq| unsafe {
            super::layer_norm_neon::lane_sum(r, sq)
        });
        #[cfg(not(target_arch = "aarch64"))]
        self.apply_generic(data, row);
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn apply_avx2(&self, data: &mut [f32], row: usize) {
        self.apply_generic(data, row);
    }

    /// The portable loops: the scalar reference of every SIMD build.
    #[cfg_attr(target_arch = "aarch64", allow(dead_code))]
    #[inline(always)]
    fn apply_generic(&self, data: &mut [f32], row: usize) {
        self.apply_with(data, row, |r, squared| {
            if squared {
                lane_sum(r, |x| x * x)
            } else {
                lane_sum(r, |x| x)
            }
        });
    }

    /// The normalisation with `sum(row, squared)` (the row's sum, or sum of
    /// squares) as its reductions, the one place a SIMD build differs.
    #[inline(always)]
    fn apply_with(&self, data: &mut [f32], row: usize, sum: impl Fn(&[f32], bool) -> f32) {
        let scale = f32::from_bits(self.mean_scale_bits);
        let eps = f32::from_bits(self.eps_bits);
        for r in data.chunks_exact_mut(row) {
            let mean = sum(r, false) * scale;
            for x in r.iter_mut() {
                *x -= mean;
            }
            let var = sum(r, true) / row as f32;
            let inv = 1.0 / (var + eps).sqrt();
            for x in r.iter_mut() {
                *x *= inv;
            }
        }
    }
}

/// `sum f(x)` with eight partial sums, so the loop vectorises without reordering a
/// single accumulator's additions.
#[inline(always)]
fn lane_sum(x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0f32; 8];
    let chunks = x.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().map(|&v| f(v)).sum();
    for c in chunks {
        for l in 0..8 {
            lanes[l] += f(c[l]);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

impl super::Kernel for FastLayerNorm {
    fn kernel_name(&self) -> StaticName {
        "FastLayerNorm".into()
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        super::in_place_rows("FastLayerNorm", inputs, |data, row| self.apply(data, row))
    }
}

super::tract_op!(FastLayerNorm);

/// Replaces every `ReduceSum(last axis) -> Mul(1/n) -> Sub -> RmsNorm` chain of a
/// decluttered f32 model with [`FastLayerNorm`]. Returns how many were replaced.
///
/// # Errors
/// When tract rejects a patch (a bug; the model is unchanged then).
pub fn fuse_layer_norm(model: &mut TypedModel) -> TractResult<usize> {
    super::graph_patch::apply_each(model, find_one)
}

fn find_one(model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
    for reduce in model.nodes() {
        let Some(op) = reduce.op_as::<Reduce>() else {
            continue;
        };
        let x = reduce.inputs[0];
        let fact = model.outlet_fact(x)?;
        let Some(shape) = fact.shape.as_concrete() else {
            continue;
        };
        let last = shape.len().saturating_sub(1);
        if op.reducer != Reducer::Sum
            || op.axes[..] != [last]
            || fact.datum_type != f32::datum_type()
            || shape.is_empty()
        {
            continue;
        }
        let Some(mul) = single_successor(model, reduce.id).and_then(|n| bin_op(n, "Mul")) else {
            continue;
        };
        let sum_out = OutletId::new(reduce.id, 0);
        let Some(scale) = mul
            .inputs
            .iter()
            .find(|&&i| i != sum_out)
            .and_then(|&i| scalar_const(model, i))
        else {
            continue;
        };
        if (scale * shape[last] as f32 - 1.0).abs() > 1e-6 {
            continue;
        }
        let Some(sub) = single_successor(model, mul.id).and_then(|n| bin_op(n, "Sub")) else {
            continue;
        };
        if sub.inputs[..] != [x, OutletId::new(mul.id, 0)] {
            continue;
        }
        let Some(norm) = single_successor(model, sub.id) else {
            continue;
        };
        let Some(rms) = norm.op_as::<RmsNorm>() else {
            continue;
        };
        let Ok(eps) = rms.eps.cast_to_scalar::<f32>() else {
            continue;
        };
        if rms.axis != last {
            continue;
        }
        let op = FastLayerNorm {
            mean_scale_bits: scale.to_bits(),
            eps_bits: eps.to_bits(),
        };
        let mut patch = TypedModelPatch::new(format!("fuse layer norm at {}", reduce.name));
        let input = patch.tap_model(model, x)?;
        let out = patch.wire_node(format!("{}.layer_norm", reduce.name), op, &[input])?[0];
        patch.shunt_outside(model, OutletId::new(norm.id, 0), out)?;
        return Ok(Some(patch));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{max_diff, random};
    use super::*;
    use tract_onnx::tract_hir::tract_core::ops::math;

    const SHAPE: [usize; 3] = [5, 7, 67];

    /// The chain tract makes of `LayerNormalization` (without the affine part),
    /// reducing over `axis`.
    fn model(axis: usize) -> TypedModel {
        let mut m = TypedModel::default();
        let x = m.add_source("x", f32::fact(SHAPE)).unwrap();
        let sum = m
            .wire_node("sum", Reduce::new(tvec![axis], Reducer::Sum), &[x])
            .unwrap()[0];
        let c = m
            .add_const("inv_n", tensor3(&[[[1.0 / SHAPE[axis] as f32]]]))
            .unwrap();
        let mean = m.wire_node("mean", math::mul(), &[sum, c]).unwrap()[0];
        let d = m.wire_node("d", math::sub(), &[x, mean]).unwrap()[0];
        let rms = RmsNorm {
            axis,
            eps: rctensor0(1e-5f32),
        };
        let y = m.wire_node("rms", rms, &[d]).unwrap()[0];
        m.select_output_outlets(&[y]).unwrap();
        m
    }

    fn run(m: &TypedModel) -> Tensor {
        let n: usize = SHAPE.iter().product();
        let x = Tensor::from_shape(&SHAPE, &random(n, 31, -3.0, 5.0)).unwrap();
        SimplePlan::new(m.clone())
            .unwrap()
            .run(tvec!(x.into_tvalue()))
            .unwrap()
            .remove(0)
            .into_tensor()
    }

    #[test]
    fn matches_tracts_layer_norm_chain() {
        let stock = model(2);
        let want = run(&stock);
        let mut fused = stock.clone();
        assert_eq!(fuse_layer_norm(&mut fused).unwrap(), 1);
        let got = run(&fused);
        assert!(max_diff(&got, &want) < 1e-5, "{}", max_diff(&got, &want));
        // Negative control: another epsilon visibly changes the result.
        for node in fused.nodes_mut() {
            if let Some(op) = node.op_as_mut::<FastLayerNorm>() {
                op.eps_bits = 1.0f32.to_bits();
            }
        }
        assert!(max_diff(&run(&fused), &want) > 1e-2);
    }

    #[test]
    fn leaves_other_axes_alone() {
        let mut m = model(1);
        assert_eq!(fuse_layer_norm(&mut m).unwrap(), 0);
    }

    /// The SIMD build of this target (AVX2 on x86-64, NEON on aarch64)
    /// against the portable loops, bit for bit (the same eight partial sums,
    /// joined in the same order), at row lengths around the 8-lane width; the
    /// negative control, a single running sum, differs in some bits.
    #[test]
    fn simd_build_equals_the_portable_loops_bit_for_bit() {
        let op = FastLayerNorm {
            mean_scale_bits: 0,
            eps_bits: 1e-5f32.to_bits(),
        };
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for row in [1usize, 3, 7, 8, 9, 15, 16, 17, 64, 67, 256] {
            let op = FastLayerNorm {
                mean_scale_bits: (1.0 / row as f32).to_bits(),
                ..op.clone()
            };
            let x = super::super::test_util::random(row * 13, row as u64, -3.0, 5.0);
            let (mut got, mut want) = (x.clone(), x.clone());
            op.apply(&mut got, row);
            op.apply_generic(&mut want, row);
            assert_eq!(bits(&got), bits(&want), "rows of {row}");
            if row >= 16 {
                // One running sum instead of eight partial ones.
                let mut serial = x.clone();
                op.apply_with(&mut serial, row, |r, squared| {
                    r.iter().map(|&v| if squared { v * v } else { v }).sum()
                });
                assert_ne!(bits(&got), bits(&serial), "rows of {row}: order unseen");
            }
        }
    }
}
