//! NEON rows for the general attention loops on aarch64 (the baseline there,
//! so no detection): each [`LANES`]-wide step is two 4-lane registers, with
//! fused multiply-adds as in the AVX2 rows. They differ from the portable
//! loops only in rounding (one rounding per multiply-add, and the order of
//! each sum); the attention tests bound that difference.

use super::kernel::{Rows, LANES};

/// Half a [`LANES`] step: one NEON register of f32.
const HALF: usize = LANES / 2;

/// NEON intrinsics, one pair of registers per [`LANES`].
pub(super) struct Neon;

impl Rows for Neon {
    #[inline(always)]
    fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
        // SAFETY: NEON is the aarch64 baseline.
        unsafe { rows::axpy(y, a, x) }
    }

    #[inline(always)]
    fn max(x: &[f32]) -> f32 {
        // SAFETY: NEON is the aarch64 baseline.
        unsafe { rows::max(x) }
    }

    #[inline(always)]
    fn sum(x: &[f32]) -> f32 {
        // SAFETY: NEON is the aarch64 baseline.
        unsafe { rows::sum(x) }
    }

    #[inline(always)]
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: NEON is the aarch64 baseline.
        unsafe { rows::dot(a, b) }
    }
}

/// The NEON loops behind [`Neon`].
mod rows {
    use std::arch::aarch64::*;

    use super::{HALF, LANES};

    #[inline]
    #[target_feature(enable = "neon")]
    pub fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
        let n = y.len().min(x.len()) / HALF * HALF;
        let av = vdupq_n_f32(a);
        for i in (0..n).step_by(HALF) {
            // SAFETY: i + HALF <= n, within both slices; unaligned loads and stores.
            unsafe {
                let yp = y.as_mut_ptr().add(i);
                vst1q_f32(
                    yp,
                    vfmaq_f32(vld1q_f32(yp), av, vld1q_f32(x.as_ptr().add(i))),
                );
            }
        }
        for (y, &x) in y[n..].iter_mut().zip(&x[n..]) {
            *y += a * x;
        }
    }

    #[inline]
    #[target_feature(enable = "neon")]
    pub fn max(x: &[f32]) -> f32 {
        let n = x.len() / HALF * HALF;
        let mut m = vdupq_n_f32(f32::MIN);
        for i in (0..n).step_by(HALF) {
            // SAFETY: i + HALF <= x.len().
            m = vmaxq_f32(m, unsafe { vld1q_f32(x.as_ptr().add(i)) });
        }
        x[n..].iter().copied().fold(vmaxvq_f32(m), f32::max)
    }

    #[inline]
    #[target_feature(enable = "neon")]
    pub fn sum(x: &[f32]) -> f32 {
        let n = x.len() / HALF * HALF;
        let mut s = vdupq_n_f32(0.0);
        for i in (0..n).step_by(HALF) {
            // SAFETY: i + HALF <= x.len().
            s = vaddq_f32(s, unsafe { vld1q_f32(x.as_ptr().add(i)) });
        }
        x[n..].iter().fold(vaddvq_f32(s), |a, b| a + b)
    }

    #[inline]
    #[target_feature(enable = "neon")]
    pub fn dot(a: &[f32], b: &[f32]) -> f32 {
        let len = a.len().min(b.len());
        let n = len / LANES * LANES;
        // Two accumulators, so consecutive multiply-adds do not wait on each other.
        let (mut s0, mut s1) = (vdupq_n_f32(0.0), vdupq_n_f32(0.0));
        for i in (0..n).step_by(LANES) {
            // SAFETY: i + LANES <= n <= both lengths.
            unsafe {
                let (pa, pb) = (a.as_ptr().add(i), b.as_ptr().add(i));
                s0 = vfmaq_f32(s0, vld1q_f32(pa), vld1q_f32(pb));
                s1 = vfmaq_f32(s1, vld1q_f32(pa.add(HALF)), vld1q_f32(pb.add(HALF)));
            }
        }
        let tail: f32 = a[n..len].iter().zip(&b[n..len]).map(|(x, y)| x * y).sum();
        vaddvq_f32(vaddq_f32(s0, s1)) + tail
    }
}
