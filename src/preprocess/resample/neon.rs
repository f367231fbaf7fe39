//! The NEON kernel of the fused sampler's vertical blend, bit-exact with
//! the scalar `blend_rows`: the same `a (256 - w) + b w` in 16-bit lanes
//! (at most `255 * 256`), and `vrshrn_n_u16::<8>` is `(x + 128) >> 8`
//! narrowed to bytes, computed without overflow. The horizontal taps are
//! gathers, which NEON has no instruction for; they stay scalar. NEON is
//! part of the aarch64 baseline, so this runs without detection.

use std::arch::aarch64::*;

/// Bytes per step: one 128-bit vector.
const STEP: usize = 16;

/// `out[i] = (a[i] * wa + b[i] * wb + 128) >> 8` over the whole steps of
/// `out`; returns the bytes done. `wa + wb == 256`.
#[target_feature(enable = "neon")]
pub fn blend_rows(out: &mut [u8], a: &[u8], b: &[u8], wa: u16, wb: u16) -> usize {
    let n = out.len().min(a.len()).min(b.len());
    let steps = n / STEP;
    let (va, vb) = (vdupq_n_u16(wa), vdupq_n_u16(wb));
    let blend8 = |x: uint8x8_t, y: uint8x8_t| {
        vrshrn_n_u16::<8>(vmlaq_u16(vmulq_u16(vmovl_u8(x), va), vmovl_u8(y), vb))
    };
    for i in 0..steps {
        // SAFETY: step `i` reads and writes bytes `16 i .. 16 i + 16` of
        // `a`, `b` and `out`, inside all three since `16 (i + 1) <= n`.
        unsafe {
            let (x, y) = (
                vld1q_u8(a.as_ptr().add(STEP * i)),
                vld1q_u8(b.as_ptr().add(STEP * i)),
            );
            let lo = blend8(vget_low_u8(x), vget_low_u8(y));
            let hi = blend8(vget_high_u8(x), vget_high_u8(y));
            vst1q_u8(out.as_mut_ptr().add(STEP * i), vcombine_u8(lo, hi));
        }
    }
    steps * STEP
}
