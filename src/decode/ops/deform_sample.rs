//! Deformable-attention sampling fused into one op: GridSample, attention weights, sum.
//!
//! MSDeformAttn with one level exports as
//! `GridSample(value (N,C,H,W), grid (N,Lq,P,2)) -> (N,C,Lq,P)`, then `Mul` by the
//! attention weights `(N,1,Lq,P)` (a broadcast over C), then `ReduceSum` over P. tract
//! runs that broadcasting `Mul` through its generic path at ~20 ns per element, which on
//! the keypoint branch (N·C·Lq·P = 870 k per layer) costs more than the sampling.
//! [`fuse_deformable_sampling`] rewrites the three nodes into [`FastDeformSample`],
//! which folds each attention weight into the four bilinear weights of its point and
//! writes the (N,C,Lq,1) sum directly: same arithmetic, no intermediate tensor.

use super::graph_patch::single_successor;
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_hir::tract_core::ops::nn::{Reduce, Reducer};

use super::grid_sample::FastGridSample;
use crate::text::dims;

/// `sum_p w[n,q,p] * bilinear(value[n,c], grid[n,q,p])` into `(N, C, Lq, 1)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastDeformSample {
    /// The sampling rule (align_corners, padding) of the GridSample it replaces.
    pub sample: FastGridSample,
}

/// The operands of one [`FastDeformSample`] evaluation, flat row-major.
#[derive(Clone, Copy, Debug)]
pub struct DeformInputs<'a> {
    /// The value maps (N, C, H, W).
    pub value: &'a [f32],
    /// (N, C, H, W) of `value`.
    pub value_shape: [usize; 4],
    /// Sampling locations (N, Lq, P, 2), normalised to [-1, 1].
    pub grid: &'a [f32],
    /// (N, Lq, P) of `grid` and `weights`.
    pub grid_shape: [usize; 3],
    /// Attention weights (N, Lq, P).
    pub weights: &'a [f32],
}

impl FastDeformSample {
    /// value (N,C,H,W), grid (N,Lq,P,2), weights (N,Lq,P) -> out (N,C,Lq).
    ///
    /// Each value map is first transposed to (H·W, C) so that one tap reads C
    /// contiguous floats; a query then costs P·4 vector multiply-adds over C instead
    /// of P·4·C scalar gathers.
    pub fn sample(&self, inputs: &DeformInputs<'_>, out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2, checked just above.
                unsafe { self.sample_avx2(inputs, out) };
                return;
            }
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is the aarch64 baseline.
        self.sample_with(inputs, out, |a, w, r| unsafe {
            super::deform_neon::axpy(a, w, r)
        });
        #[cfg(not(target_arch = "aarch64"))]
        self.sample_generic(inputs, out);
    }

    /// [`Self::sample`] compiled for AVX2: 8-wide channel loops, and `floor` as one
    /// instruction instead of a libm call (the x86-64 baseline has no rounding
    /// instruction), which matters at the reduced widths where a point has few channels.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn sample_avx2(&self, inputs: &DeformInputs<'_>, out: &mut [f32]) {
        self.sample_generic(inputs, out);
    }

    /// The portable loops: the scalar reference of every SIMD build.
    #[cfg_attr(target_arch = "aarch64", allow(dead_code))]
    #[inline(always)]
    fn sample_generic(&self, inputs: &DeformInputs<'_>, out: &mut [f32]) {
        self.sample_with(inputs, out, |acc, wt, row| {
            for (a, &v) in acc.iter_mut().zip(row) {
                *a += wt * v;
            }
        });
    }

    /// The sampling loops with `axpy` (`acc += wt * row` over the channels)
    /// as the inner loop, the one place a SIMD build differs.
    #[inline(always)]
    fn sample_with(
        &self,
        inputs: &DeformInputs<'_>,
        out: &mut [f32],
        axpy: impl Fn(&mut [f32], f32, &[f32]),
    ) {
        let DeformInputs {
            value,
            value_shape: vs,
            grid,
            grid_shape: gs,
            weights,
        } = *inputs;
        let [n, c, h, w] = vs;
        let [_, lq, points] = gs;
        let plane = h * w;
        let mut rows = vec![0f32; plane * c];
        let mut acc = vec![0f32; c];
        for b in 0..n {
            let src = &value[b * c * plane..(b + 1) * c * plane];
            for (ch, chan) in src.chunks_exact(plane).enumerate() {
                for (p, &v) in chan.iter().enumerate() {
                    rows[p * c + ch] = v;
                }
            }
            let g = &grid[b * lq * points * 2..(b + 1) * lq * points * 2];
            let aw = &weights[b * lq * points..(b + 1) * lq * points];
            let dst = &mut out[b * c * lq..(b + 1) * c * lq];
            for q in 0..lq {
                acc.fill(0.0);
                for p in 0..points {
                    let k = q * points + p;
                    let (idx, wts) = self.sample.taps(g[2 * k], g[2 * k + 1], h, w);
                    for (&i, &wt) in idx.iter().zip(&wts) {
                        let row = &rows[i as usize * c..(i as usize + 1) * c];
                        axpy(&mut acc, wt * aw[k], row);
                    }
                }
                for (ch, &a) in acc.iter().enumerate() {
                    dst[ch * lq + q] = a;
                }
            }
        }
    }
}

impl super::Kernel for FastDeformSample {
    fn kernel_name(&self) -> StaticName {
        "FastDeformSample".into()
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        let (value, grid, weights) = args_3!(inputs);
        let vs: [usize; 4] = value
            .shape()
            .try_into()
            .map_err(|_| format_err!("FastDeformSample: value must be 4-D"))?;
        let gs = grid.shape();
        ensure!(
            gs.len() == 4 && gs[0] == vs[0] && gs[3] == 2,
            "FastDeformSample: grid {} for value {}",
            dims(gs),
            dims(&vs)
        );
        let (lq, points) = (gs[1], gs[2]);
        ensure!(
            weights.len() == vs[0] * lq * points,
            "FastDeformSample: weights {} for grid {}",
            dims(weights.shape()),
            dims(gs)
        );
        let mut out = Tensor::zero::<f32>(&[vs[0], vs[1], lq, 1])?;
        let inputs = DeformInputs {
            value: super::f32s(&value)?,
            value_shape: vs,
            grid: super::f32s(&grid)?,
            grid_shape: [vs[0], lq, points],
            weights: super::f32s(&weights)?,
        };
        self.sample(&inputs, super::f32s_mut(&mut out)?);
        Ok(out)
    }

    fn output_fact(&self, inputs: &[&TypedFact]) -> TractResult<TypedFact> {
        let (v, g) = (&inputs[0].shape, &inputs[1].shape);
        ensure!(
            v.rank() == 4 && g.rank() == 4,
            "FastDeformSample needs 4-D value and grid"
        );
        Ok(f32::fact(&[
            v[0].clone(),
            v[1].clone(),
            g[1].clone(),
            1.to_dim(),
        ]))
    }
}

super::tract_op!(FastDeformSample);

/// Rewrites every `FastGridSample -> Mul(weights (N,1,Lq,P)) -> ReduceSum(axis 3)` chain
/// into one [`FastDeformSample`]. Returns how many chains were fused.
///
/// Chains that do not match exactly (other fan-out, other shapes, other reduction)
/// are left alone.
///
/// # Errors
/// When tract rejects the patch (a bug; the model is unchanged then).
pub fn fuse_deformable_sampling(model: &mut TypedModel) -> TractResult<usize> {
    super::graph_patch::apply_each(model, find_one)
}

fn find_one(model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
    for gs in model.nodes() {
        let Some(op) = gs.op_as::<FastGridSample>() else {
            continue;
        };
        let Some(mul) = single_successor(model, gs.id) else {
            continue;
        };
        if !mul
            .op_as::<TypedBinOp>()
            .is_some_and(|b| b.0.name() == "Mul" && b.1.is_none())
        {
            continue;
        }
        let Some(weights) = mul.inputs.iter().find(|i| i.node != gs.id).copied() else {
            continue;
        };
        let sampled = gs.outputs[0]
            .fact
            .shape
            .as_concrete()
            .map(<[usize]>::to_vec);
        let wshape = model
            .outlet_fact(weights)?
            .shape
            .as_concrete()
            .map(<[usize]>::to_vec);
        let (Some(s), Some(ws)) = (sampled, wshape) else {
            continue;
        };
        if s.len() != 4
            || ws != [s[0], 1, s[2], s[3]]
            || mul.outputs[0].fact.shape.as_concrete() != Some(&s[..])
            || model.outlet_fact(weights)?.datum_type != f32::datum_type()
        {
            continue;
        }
        let Some(reduce) = single_successor(model, mul.id) else {
            continue;
        };
        if !reduce
            .op_as::<Reduce>()
            .is_some_and(|r| r.reducer == Reducer::Sum && r.axes[..] == [3])
        {
            continue;
        }
        let mut patch = TypedModelPatch::new(format!("fuse deformable sampling at {}", gs.name));
        let v = patch.tap_model(model, gs.inputs[0])?;
        let g = patch.tap_model(model, gs.inputs[1])?;
        let w = patch.tap_model(model, weights)?;
        let out = patch.wire_node(
            format!("{}.fused", gs.name),
            FastDeformSample { sample: op.clone() },
            &[v, g, w],
        )?[0];
        patch.shunt_outside(model, OutletId::new(reduce.id, 0), out)?;
        return Ok(Some(patch));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::super::grid_sample::FastPadding;
    use super::super::test_util::{max_abs_diff, random};
    use super::*;

    /// The operands of value `(n, c, h, w)` and `lq` queries of `p` points.
    fn inputs<'a>(
        value: &'a [f32],
        grid: &'a [f32],
        weights: &'a [f32],
        [n, c, h, w, lq, p]: [usize; 6],
    ) -> DeformInputs<'a> {
        DeformInputs {
            value,
            value_shape: [n, c, h, w],
            grid,
            grid_shape: [n, lq, p],
            weights,
        }
    }

    #[test]
    fn equals_grid_sample_times_weights_summed() {
        let (n, c, h, w, lq, p) = (2, 3, 6, 5, 293, 2);
        let value = random(n * c * h * w, 3, -1.0, 1.0);
        let grid = random(n * lq * p * 2, 4, -1.2, 1.2);
        let weights = random(n * lq * p, 5, 0.0, 1.0);
        for padding in [FastPadding::Zeros, FastPadding::Border] {
            for align_corners in [false, true] {
                let gs = FastGridSample {
                    align_corners,
                    padding,
                };
                let mut sampled = vec![0.0; n * c * lq * p];
                gs.sample(&value, [n, c, h, w], &grid, [n, lq, p], &mut sampled);
                let mut want = vec![0.0f32; n * c * lq];
                for b in 0..n {
                    for ch in 0..c {
                        for q in 0..lq {
                            want[(b * c + ch) * lq + q] = (0..p)
                                .map(|k| {
                                    sampled[((b * c + ch) * lq + q) * p + k]
                                        * weights[(b * lq + q) * p + k]
                                })
                                .sum();
                        }
                    }
                }
                let fused = FastDeformSample { sample: gs };
                let inputs = inputs(&value, &grid, &weights, [n, c, h, w, lq, p]);
                let mut got = vec![0.0; n * c * lq];
                fused.sample(&inputs, &mut got);
                let d = max_abs_diff(&got, &want);
                assert!(d < 1e-5, "{padding:?} {align_corners}: {d}");
                // Negative control: other weights give another result.
                let mut w2 = weights.clone();
                w2[3] += 0.5;
                let mut got2 = vec![0.0; n * c * lq];
                let changed = DeformInputs {
                    weights: &w2,
                    ..inputs
                };
                fused.sample(&changed, &mut got2);
                let d2 = max_abs_diff(&got2, &want);
                assert!(d2 > 1e-3, "changed weights not detected: {d2}");
            }
        }
    }

    /// The SIMD build of this target (AVX2 on x86-64, NEON on aarch64)
    /// against the portable loops, bit for bit: both multiply then add, lane
    /// for lane. Channel counts around the vector widths (tails of every
    /// length); the negative control moves one grid point by a tenth of a
    /// pixel.
    #[test]
    fn simd_build_equals_the_portable_loops_bit_for_bit() {
        let (n, h, w, lq, p) = (2, 5, 7, 61, 4);
        let grid = random(n * lq * p * 2, 14, -1.1, 1.1);
        let weights = random(n * lq * p, 15, 0.0, 1.0);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for c in [1, 3, 4, 5, 8, 9, 16, 17, 32, 35] {
            let value = random(n * c * h * w, c as u64, -1.0, 1.0);
            let fused = FastDeformSample {
                sample: FastGridSample {
                    align_corners: false,
                    padding: FastPadding::Zeros,
                },
            };
            let inputs = inputs(&value, &grid, &weights, [n, c, h, w, lq, p]);
            let (mut got, mut want) = (vec![0.0; n * c * lq], vec![1.0; n * c * lq]);
            fused.sample(&inputs, &mut got);
            fused.sample_generic(&inputs, &mut want);
            assert_eq!(bits(&got), bits(&want), "{c} channels");
            let mut g2 = grid.clone();
            g2[6] += 0.2 / w as f32;
            let moved = DeformInputs {
                grid: &g2,
                ..inputs
            };
            fused.sample_generic(&moved, &mut want);
            assert_ne!(bits(&got), bits(&want), "{c} channels: moved point unseen");
        }
    }
}
