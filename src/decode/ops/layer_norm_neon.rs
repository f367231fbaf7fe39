//! The NEON row sums of [`FastLayerNorm`] on aarch64 (the baseline there,
//! no detection): the portable `lane_sum`'s eight partial sums held in two
//! 4-lane registers, each element squared (or not) and added exactly as the
//! scalar lanes do, then joined in the same order. So the NEON path is
//! bit-exact with the portable one.
//!
//! [`FastLayerNorm`]: super::layer_norm::FastLayerNorm

use std::arch::aarch64::*;

/// `sum x` (or `sum x²` when `squared`) with the eight partial sums of the
/// portable `lane_sum`, bit for bit.
#[inline]
#[target_feature(enable = "neon")]
pub fn lane_sum(x: &[f32], squared: bool) -> f32 {
    let f = |v: float32x4_t| if squared { vmulq_f32(v, v) } else { v };
    let chunks = x.chunks_exact(8);
    let tail: f32 = chunks
        .remainder()
        .iter()
        .map(|&v| if squared { v * v } else { v })
        .sum();
    let (mut lo, mut hi) = (vdupq_n_f32(0.0), vdupq_n_f32(0.0));
    for c in chunks {
        // SAFETY: `c` holds exactly eight f32.
        unsafe {
            lo = vaddq_f32(lo, f(vld1q_f32(c.as_ptr())));
            hi = vaddq_f32(hi, f(vld1q_f32(c.as_ptr().add(4))));
        }
    }
    let mut lanes = [0f32; 8];
    // SAFETY: `lanes` holds exactly two registers.
    unsafe {
        vst1q_f32(lanes.as_mut_ptr(), lo);
        vst1q_f32(lanes.as_mut_ptr().add(4), hi);
    }
    lanes.iter().sum::<f32>() + tail
}
