//! The memory in the layout [`FastDeformProject`](super::FastDeformProject) gathers from.
//!
//! The design split's memory reaches the decoder channel-major, `(1, D, S)`, while the
//! projection gathers whole token rows of D channels. Every deformable sampling of a view
//! reads the same memory, so the rewrite transposes it once, with [`TokenMajor`], and
//! feeds the token-major copy to all of them instead of transposing it in each.

use tract_onnx::tract_hir::internal::*;

use crate::text::dims;

/// Side of the square tiles the transpose walks: a tile's rows and columns both stay in
/// the L1 cache, so neither the reads nor the strided writes miss on every element.
const TILE: usize = 16;

/// `(1, D, S...)` channel-major -> `(1, S, D)` token-major, S the product of the
/// trailing axes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenMajor {
    /// Channels D.
    pub channels: usize,
    /// Tokens S.
    pub tokens: usize,
}

impl TokenMajor {
    /// Writes the transpose of `src` `(D, S)` into `dst` `(S, D)`.
    pub fn transpose(&self, src: &[f32], dst: &mut [f32]) {
        let (d, s) = (self.channels, self.tokens);
        #[cfg(target_arch = "x86_64")]
        {
            if d.is_multiple_of(8)
                && s.is_multiple_of(8)
                && src.len() >= d * s
                && dst.len() >= d * s
                && std::arch::is_x86_feature_detected!("avx")
            {
                // SAFETY: the CPU supports AVX, both slices hold d x s elements and both
                // sides are whole blocks of 8, all checked just above.
                unsafe { transpose_avx(src, dst, d, s) };
                return;
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            if d.is_multiple_of(4)
                && s.is_multiple_of(4)
                && src.len() >= d * s
                && dst.len() >= d * s
            {
                // SAFETY: NEON is the aarch64 baseline; both slices hold d x s elements and
                // both sides are whole blocks of 4, all checked just above.
                unsafe { transpose_neon(src, dst, d, s) };
                return;
            }
        }
        for k0 in (0..d).step_by(TILE) {
            for t0 in (0..s).step_by(TILE) {
                for k in k0..(k0 + TILE).min(d) {
                    let row = &src[k * s..(k + 1) * s];
                    for t in t0..(t0 + TILE).min(s) {
                        dst[t * d + k] = row[t];
                    }
                }
            }
        }
    }
}

/// The transpose in 4 x 4 blocks held in NEON registers: four rows of `src` loaded,
/// transposed by 32-bit then 64-bit lane transposes (`trn1`/`trn2`), stored as four
/// rows of `dst`.
///
/// # Safety
/// `src` and `dst` hold at least `d * s` elements; `d` and `s` are multiples of 4.
#[cfg(target_arch = "aarch64")]
#[target_feature(enable = "neon")]
unsafe fn transpose_neon(src: &[f32], dst: &mut [f32], d: usize, s: usize) {
    use std::arch::aarch64::*;
    let (f64s, f32s) = (
        |x: float32x4_t| vreinterpretq_f64_f32(x),
        |x: float64x2_t| vreinterpretq_f32_f64(x),
    );
    for k0 in (0..d).step_by(4) {
        for t0 in (0..s).step_by(4) {
            // SAFETY: rows k0..k0+4 of `src` from column t0, rows t0..t0+4 of `dst` from
            // column k0: all inside d x s (the caller's contract).
            unsafe {
                let r: [float32x4_t; 4] =
                    std::array::from_fn(|i| vld1q_f32(src.as_ptr().add((k0 + i) * s + t0)));
                // [a0 b0 a2 b2], [a1 b1 a3 b3], [c0 d0 c2 d2], [c1 d1 c3 d3]
                let (a, b) = (vtrn1q_f32(r[0], r[1]), vtrn2q_f32(r[0], r[1]));
                let (c, e) = (vtrn1q_f32(r[2], r[3]), vtrn2q_f32(r[2], r[3]));
                let out = [
                    f32s(vtrn1q_f64(f64s(a), f64s(c))),
                    f32s(vtrn1q_f64(f64s(b), f64s(e))),
                    f32s(vtrn2q_f64(f64s(a), f64s(c))),
                    f32s(vtrn2q_f64(f64s(b), f64s(e))),
                ];
                for (j, col) in out.iter().enumerate() {
                    vst1q_f32(dst.as_mut_ptr().add((t0 + j) * d + k0), *col);
                }
            }
        }
    }
}

/// The transpose in 8 x 8 blocks held in AVX registers: eight rows of `src` loaded,
/// transposed by unpacks, shuffles and lane permutes, stored as eight rows of `dst`.
///
/// # Safety
/// The CPU must support AVX; `src` and `dst` hold at least `d * s` elements; `d` and
/// `s` are multiples of 8.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn transpose_avx(src: &[f32], dst: &mut [f32], d: usize, s: usize) {
    use std::arch::x86_64::*;
    for k0 in (0..d).step_by(8) {
        for t0 in (0..s).step_by(8) {
            // SAFETY: rows k0..k0+8 of `src` from column t0, rows t0..t0+8 of `dst`
            // from column k0: all inside d x s (the caller's contract).
            unsafe {
                let r: [__m256; 8] =
                    std::array::from_fn(|i| _mm256_loadu_ps(src.as_ptr().add((k0 + i) * s + t0)));
                let a0 = _mm256_unpacklo_ps(r[0], r[1]);
                let a1 = _mm256_unpackhi_ps(r[0], r[1]);
                let a2 = _mm256_unpacklo_ps(r[2], r[3]);
                let a3 = _mm256_unpackhi_ps(r[2], r[3]);
                let a4 = _mm256_unpacklo_ps(r[4], r[5]);
                let a5 = _mm256_unpackhi_ps(r[4], r[5]);
                let a6 = _mm256_unpacklo_ps(r[6], r[7]);
                let a7 = _mm256_unpackhi_ps(r[6], r[7]);
                let b0 = _mm256_shuffle_ps::<0x44>(a0, a2);
                let b1 = _mm256_shuffle_ps::<0xEE>(a0, a2);
                let b2 = _mm256_shuffle_ps::<0x44>(a1, a3);
                let b3 = _mm256_shuffle_ps::<0xEE>(a1, a3);
                let b4 = _mm256_shuffle_ps::<0x44>(a4, a6);
                let b5 = _mm256_shuffle_ps::<0xEE>(a4, a6);
                let b6 = _mm256_shuffle_ps::<0x44>(a5, a7);
                let b7 = _mm256_shuffle_ps::<0xEE>(a5, a7);
                let out = [
                    _mm256_permute2f128_ps::<0x20>(b0, b4),
                    _mm256_permute2f128_ps::<0x20>(b1, b5),
                    _mm256_permute2f128_ps::<0x20>(b2, b6),
                    _mm256_permute2f128_ps::<0x20>(b3, b7),
                    _mm256_permute2f128_ps::<0x31>(b0, b4),
                    _mm256_permute2f128_ps::<0x31>(b1, b5),
                    _mm256_permute2f128_ps::<0x31>(b2, b6),
                    _mm256_permute2f128_ps::<0x31>(b3, b7),
                ];
                for (j, v) in out.into_iter().enumerate() {
                    _mm256_storeu_ps(dst.as_mut_ptr().add((t0 + j) * d + k0), v);
                }
            }
        }
    }
}

impl super::super::Kernel for TokenMajor {
    fn kernel_name(&self) -> StaticName {
        "TokenMajor".into()
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        let memory = args_1!(inputs);
        let (d, s) = (self.channels, self.tokens);
        ensure!(
            memory.len() == d * s && memory.shape().iter().find(|&&x| x != 1) == Some(&d),
            "TokenMajor: memory {}, expected {d} channels of {s} tokens",
            dims(memory.shape())
        );
        let mut out = Tensor::zero::<f32>(&[1, s, d])?;
        self.transpose(
            super::super::f32s(&memory)?,
            super::super::f32s_mut(&mut out)?,
        );
        Ok(out)
    }

    fn output_fact(&self, _inputs: &[&TypedFact]) -> TractResult<TypedFact> {
        Ok(f32::fact([1, self.tokens, self.channels]))
    }
}

super::super::tract_op!(TokenMajor);
