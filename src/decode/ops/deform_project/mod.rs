//! Deformable attention's value projection applied to the sampled rows only.
//!
//! MSDeformAttn projects every memory token, `value = memory · W + b` (S·D·D
//! multiply-adds per layer: S = 1,296 tokens at 432), and then samples a few points of
//! it per query. The bilinear taps and the attention weights are linear in the value,
//! so for head `h` (columns `h·dh .. (h+1)·dh` of `W`) and query `q`:
//!
//! `out[h, ·, q] = (Σ_p a_p Σ_t w_t · memory[t]) · W_h + b_h · Σ_p a_p Σ_t w_t`
//!
//! where the tap weights `w_t` are zero for taps outside the map (zeros padding), which
//! is why the bias is scaled by the weight sum rather than added once. That costs Lq·D·D
//! (100 or 17 queries) instead of S·D·D. [`fuse_value_projection`] finds the affine
//! chain that turns a memory `(1, S, D)` into a [`FastDeformSample`](super::deform_sample::FastDeformSample)'s value maps
//! `(H, dh, h, w)` (the `MatMul`, bias `Add` and the head reshapes and transposes),
//! reads `W` and `b` off it by running it on probe inputs, checks the reading on a
//! random input, and puts a [`FastDeformProject`] in place of both.

use std::sync::Arc;

use super::grid_sample::FastGridSample;
use super::linear::{matmul, Operand};
use tract_onnx::tract_hir::internal::*;

use crate::text::dims;

/// `Σ_p a · bilinear(memory · W + b)` per head and query, projecting only the sampled
/// rows: `memory (1, S, D)`, `grid (H, Lq, P, 2)`, `weights (H, ·, Lq, P)` ->
/// `(H, dh, Lq, 1)`, as the [`FastDeformSample`](super::deform_sample::FastDeformSample) it replaces.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastDeformProject {
    /// The sampling rule of the GridSample it replaces.
    pub sample: FastGridSample,
    /// Height and width of the map the S tokens form, row-major (token = y·w + x).
    pub map: [usize; 2],
    /// Per head, its `dh` columns of `W`: `(H, D, dh)`, row-major.
    pub weight: Arc<Tensor>,
    /// `b`, `(H·dh)`.
    pub bias: Arc<Tensor>,
    /// Whether the memory is `(1, D, S)` (channel-major, as a feature map reads)
    /// rather than `(1, S, D)`.
    pub channel_major: bool,
}

/// The operands of one [`FastDeformProject`] evaluation, flat row-major.
#[derive(Clone, Copy, Debug)]
pub struct ProjectInputs<'a> {
    /// The memory, `(S, D)` or, for a channel-major op, `(D, S)`.
    pub memory: &'a [f32],
    /// Sampling locations `(H, Lq, P, 2)`, normalised to [-1, 1].
    pub grid: &'a [f32],
    /// Attention weights `(H, Lq, P)`.
    pub weights: &'a [f32],
    /// Queries `Lq` and points per query `P`.
    pub queries: usize,
    /// Points per query.
    pub points: usize,
}

impl FastDeformProject {
    /// Heads, memory width D and head width dh.
    fn dims(&self) -> [usize; 3] {
        let s = self.weight.shape();
        [s[0], s[1], s[2]]
    }

    /// Writes `(H, dh, Lq)` into `out`.
    ///
    /// # Errors
    /// When the weight or bias tensor is not dense f32.
    pub fn sample(&self, inputs: &ProjectInputs<'_>, out: &mut [f32]) -> TractResult<()> {
        let (weight, bias) = (super::f32s(&self.weight)?, super::f32s(&self.bias)?);
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2, checked just above.
                return unsafe { self.sample_avx2(inputs, weight, bias, out) };
            }
        }
        #[cfg(target_arch = "aarch64")]
        return self.sample_with(inputs, weight, bias, out, taps::neon);
        #[cfg(not(target_arch = "aarch64"))]
        self.sample_generic(inputs, weight, bias, out)
    }

    /// [`Self::sample`] compiled for AVX2 (one-instruction `floor`), the taps summed in
    /// AVX-512 registers where the CPU has them.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn sample_avx2(
        &self,
        inputs: &ProjectInputs<'_>,
        weight: &[f32],
        bias: &[f32],
        out: &mut [f32],
    ) -> TractResult<()> {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F, checked just above.
            self.sample_with(inputs, weight, bias, out, |row, t, memory| unsafe {
                taps::avx512(row, t, memory)
            })
        } else {
            self.sample_with(inputs, weight, bias, out, taps::portable)
        }
    }

    /// The portable loops: the scalar reference of every SIMD build.
    #[cfg_attr(target_arch = "aarch64", allow(dead_code))]
    #[inline(always)]
    fn sample_generic(
        &self,
        inputs: &ProjectInputs<'_>,
        weight: &[f32],
        bias: &[f32],
        out: &mut [f32],
    ) -> TractResult<()> {
        self.sample_with(inputs, weight, bias, out, taps::portable)
    }

    /// The sampling loops with `sum_taps` (one query's weighted rows summed,
    /// [`taps::portable`]) as their inner loop, the one place a SIMD build differs; then,
    /// per head, one matrix product of the head's weighted rows `(Lq, D)` with its
    /// `W_h (D, dh)`, written as `(dh, Lq)`.
    #[inline(always)]
    fn sample_with(
        &self,
        inputs: &ProjectInputs<'_>,
        weight: &[f32],
        bias: &[f32],
        out: &mut [f32],
        sum_taps: impl Fn(&mut [f32], &[taps::Tap], &[f32]),
    ) -> TractResult<()> {
        let [heads, d, dh] = self.dims();
        let [mh, mw] = self.map;
        let (lq, points) = (inputs.queries, inputs.points);
        let token_major;
        let memory = if self.channel_major {
            let s = mh * mw;
            let mut rows = vec![0f32; s * d];
            for (k, chan) in inputs.memory.chunks_exact(s).enumerate() {
                for (t, &v) in chan.iter().enumerate() {
                    rows[t * d + k] = v;
                }
            }
            token_major = rows;
            &token_major[..]
        } else {
            inputs.memory
        };
        let mut rows = vec![0f32; lq * d];
        let mut wsum = vec![0f32; lq];
        let mut found: Vec<taps::Tap> = Vec::with_capacity(4 * points);
        for h in 0..heads {
            let w_h = &weight[h * d * dh..(h + 1) * d * dh];
            let b_h = &bias[h * dh..(h + 1) * dh];
            let dst = &mut out[h * dh * lq..(h + 1) * dh * lq];
            wsum.fill(0.0);
            for (j, row) in rows.chunks_exact_mut(d).enumerate() {
                let k0 = (h * lq + j) * points;
                found.clear();
                for k in k0..k0 + points {
                    let (idx, wts) =
                        self.sample
                            .taps(inputs.grid[2 * k], inputs.grid[2 * k + 1], mh, mw);
                    for (&i, &wt) in idx.iter().zip(&wts) {
                        let wt = wt * inputs.weights[k];
                        if wt == 0.0 {
                            continue;
                        }
                        wsum[j] += wt;
                        found.push((i, wt));
                    }
                }
                sum_taps(row, &found, memory);
            }
            // The bias, scaled by each row's in-map tap weight, then the product onto it.
            for (c, col) in dst.chunks_exact_mut(lq).enumerate() {
                for (o, &ws) in col.iter_mut().zip(&wsum) {
                    *o = b_h[c] * ws;
                }
            }
            matmul(
                Operand::new(dst, 1, lq),
                Operand::new(&rows, d, 1),
                Operand::new(w_h, dh, 1),
                [lq, d, dh],
                true,
            )?;
        }
        Ok(())
    }
}

impl super::Kernel for FastDeformProject {
    fn kernel_name(&self) -> StaticName {
        "FastDeformProject".into()
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        let (memory, grid, weights) = args_3!(inputs);
        let [heads, d, dh] = self.dims();
        let tokens = self.map[0] * self.map[1];
        let core: Vec<usize> = memory
            .shape()
            .iter()
            .copied()
            .skip_while(|&x| x == 1)
            .collect();
        let width = if self.channel_major {
            core.first()
        } else {
            core.last()
        };
        ensure!(
            memory.len() == tokens * d && width == Some(&d),
            "FastDeformProject: memory {}, expected {tokens} tokens of {d}",
            dims(memory.shape())
        );
        let gs = grid.shape();
        ensure!(
            gs.len() == 4 && gs[0] == heads && gs[3] == 2,
            "FastDeformProject: grid {} for {heads} heads",
            dims(gs)
        );
        let (queries, points) = (gs[1], gs[2]);
        ensure!(
            weights.len() == heads * queries * points,
            "FastDeformProject: weights {} for grid {}",
            dims(weights.shape()),
            dims(gs)
        );
        let mut out = Tensor::zero::<f32>(&[heads, dh, queries, 1])?;
        let inputs = ProjectInputs {
            memory: super::f32s(&memory)?,
            grid: super::f32s(&grid)?,
            weights: super::f32s(&weights)?,
            queries,
            points,
        };
        self.sample(&inputs, super::f32s_mut(&mut out)?)?;
        Ok(out)
    }

    fn output_fact(&self, inputs: &[&TypedFact]) -> TractResult<TypedFact> {
        let [heads, _, dh] = self.dims();
        let g = &inputs[1].shape;
        ensure!(g.rank() == 4, "FastDeformProject needs a 4-D grid");
        Ok(f32::fact(&[
            heads.to_dim(),
            dh.to_dim(),
            g[1].clone(),
            1.to_dim(),
        ]))
    }
}

super::tract_op!(FastDeformProject);

mod layout;
mod rewrite;
mod taps;
pub use layout::TokenMajor;
pub use rewrite::fuse_value_projection;

#[cfg(test)]
mod tests;
