//! NEON kernels of [`FastSoftmax`] and [`exp_approx`] for aarch64, where
//! NEON is the baseline (no detection).
//!
//! [`exp4`] is [`exp_approx`] on four lanes with the same operations in the
//! same order (separate multiplies and adds, as the scalar code compiles:
//! Rust never fuses them), so it is bit-exact. Rows of two are then
//! bit-exact too. Longer rows differ from the scalar path only in the order
//! of each row's sum (four running lanes instead of one): for `n` positive
//! terms both sums are within `(n - 1) u` of the exact one (`u = 2^-24`), so
//! each output is within about `(2 n + 2) u` of the scalar one, relatively.
//!
//! [`FastSoftmax`]: super::fast_ops::FastSoftmax
//! [`exp_approx`]: super::fast_ops::exp_approx

use std::arch::aarch64::*;

use super::fast_ops::{exp_approx, exp_consts::*};

/// Lanes per vector.
const LANES: usize = 4;

/// [`exp_approx`] of four lanes, bit for bit.
#[inline]
#[target_feature(enable = "neon")]
pub fn exp4(x: float32x4_t) -> float32x4_t {
    // `f32::max` ignores a NaN operand, as `vmaxnmq_f32` does.
    let x = vmaxnmq_f32(x, vdupq_n_f32(-87.0));
    let round = vdupq_n_f32(ROUND);
    let shifted = vaddq_f32(vmulq_f32(x, vdupq_n_f32(LOG2E)), round);
    let n = vsubq_f32(shifted, round);
    let n_bits = vsubq_u32(vreinterpretq_u32_f32(shifted), vdupq_n_u32(ROUND.to_bits()));
    let r = vsubq_f32(
        vsubq_f32(x, vmulq_f32(n, vdupq_n_f32(LN2_HI))),
        vmulq_f32(n, vdupq_n_f32(LN2_LO)),
    );
    // 1 + r (1 + r (1/2 + r (1/6 + r (1/24 + r (1/120 + r / 720))))).
    let mut p = vdupq_n_f32(1.0 / 720.0);
    for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = vaddq_f32(vdupq_n_f32(c), vmulq_f32(r, p));
    }
    let scale = vreinterpretq_f32_u32(vshlq_n_u32::<23>(vaddq_u32(n_bits, vdupq_n_u32(127))));
    vmulq_f32(p, scale)
}

/// [`exp_approx`] of every element of `data`, in place.
#[target_feature(enable = "neon")]
pub fn exp_in_place(data: &mut [f32]) {
    let mut chunks = data.chunks_exact_mut(LANES);
    for c in &mut chunks {
        // SAFETY: `c` holds exactly four f32, read and written once each.
        unsafe { vst1q_f32(c.as_mut_ptr(), exp4(vld1q_f32(c.as_ptr()))) };
    }
    for v in chunks.into_remainder() {
        *v = exp_approx(*v);
    }
}

/// Softmax of every `row`-long run of `data`, in place: the passes of
/// `FastSoftmax::apply`, four lanes at a time.
#[target_feature(enable = "neon")]
pub fn softmax(data: &mut [f32], row: usize) {
    if row == 2 {
        return pairs(data);
    }
    for r in data.chunks_exact_mut(row) {
        let max = fold(
            r,
            |a, b| vmaxnmq_f32(a, b),
            |a| vmaxnmvq_f32(a),
            f32::NEG_INFINITY,
            f32::max,
        );
        for v in r.iter_mut() {
            *v -= max;
        }
    }
    exp_in_place(data);
    for r in data.chunks_exact_mut(row) {
        let inv = 1.0
            / fold(
                r,
                |a, b| vaddq_f32(a, b),
                |a| vaddvq_f32(a),
                0.0,
                |a, b| a + b,
            );
        for v in r.iter_mut() {
            *v *= inv;
        }
    }
}

/// `x` reduced by `op` in four running lanes (`reduce` joins them), then the
/// tail by `scalar`, from `init`.
#[inline]
#[target_feature(enable = "neon")]
fn fold(
    x: &[f32],
    op: impl Fn(float32x4_t, float32x4_t) -> float32x4_t,
    reduce: impl Fn(float32x4_t) -> f32,
    init: f32,
    scalar: impl Fn(f32, f32) -> f32,
) -> f32 {
    let mut chunks = x.chunks_exact(LANES);
    let mut acc = vdupq_n_f32(init);
    for c in &mut chunks {
        // SAFETY: `c` holds exactly four f32.
        acc = op(acc, unsafe { vld1q_f32(c.as_ptr()) });
    }
    chunks
        .remainder()
        .iter()
        .fold(reduce(acc), |a, &b| scalar(a, b))
}

/// Rows of two: the closed form of `FastSoftmax::apply`, four pairs at a
/// time, bit for bit.
#[target_feature(enable = "neon")]
fn pairs(data: &mut [f32]) {
    let mut chunks = data.chunks_exact_mut(2 * LANES);
    for c in &mut chunks {
        // SAFETY: `c` holds exactly eight f32, read as four pairs and
        // written back in place.
        unsafe {
            let ab = vld2q_f32(c.as_ptr());
            let (a, b) = (ab.0, ab.1);
            let d = vsubq_f32(a, b);
            let e = exp4(vnegq_f32(vabsq_f32(d)));
            let one = vdupq_n_f32(1.0);
            let hi = vdivq_f32(one, vaddq_f32(one, e));
            let lo = vmulq_f32(e, hi);
            // NaN in, NaN out: `d` is NaN exactly where `d != d`.
            let nan = vbslq_f32(vceqq_f32(d, d), vdupq_n_f32(0.0), vdupq_n_f32(f32::NAN));
            let a_wins = vcgeq_f32(a, b);
            let first = vaddq_f32(vbslq_f32(a_wins, hi, lo), nan);
            let second = vaddq_f32(vbslq_f32(a_wins, lo, hi), nan);
            vst2q_f32(c.as_mut_ptr(), float32x4x2_t(first, second));
        }
    }
    for pair in chunks.into_remainder().chunks_exact_mut(2) {
        super::fast_ops::FastSoftmax::pair(pair);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`exp4`] equals [`exp_approx`] bit for bit: on a fine grid over the
    /// whole argument range, the clamp, zero, infinities and NaN, through
    /// [`exp_in_place`] with tails of every length.
    #[test]
    fn exp4_is_bit_exact_with_exp_approx() {
        let mut x: Vec<f32> = (0..=200_000).map(|i| -(i as f32) * 4.5e-4).collect();
        x.extend([
            -87.0,
            -87.5,
            -1e30,
            0.0,
            -0.0,
            f32::NEG_INFINITY,
            f32::NAN,
            1.0,
            3.5,
        ]);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for tail in 0..4 {
            let x = &x[tail..];
            let mut got = x.to_vec();
            // SAFETY: NEON is the aarch64 baseline.
            unsafe { exp_in_place(&mut got) };
            let want: Vec<f32> = x.iter().map(|&v| exp_approx(v)).collect();
            assert_eq!(bits(&got), bits(&want), "tail {tail}");
        }
        // Negative control: the same polynomial with fused multiply-adds, a
        // plausible but different vector build, differs in some bits.
        let fused = |x: f32| {
            let x = x.max(-87.0);
            let shifted = x.mul_add(LOG2E, ROUND);
            let n = shifted - ROUND;
            let n_bits = shifted.to_bits().wrapping_sub(ROUND.to_bits());
            let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, x));
            let p = [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0]
                .iter()
                .fold(1.0f32 / 720.0, |p, &c| r.mul_add(p, c));
            p * f32::from_bits(n_bits.wrapping_add(127) << 23)
        };
        let differ = x
            .iter()
            .filter(|&&v| fused(v).to_bits() != exp_approx(v).to_bits())
            .count();
        assert!(differ > 1000, "fused build differs in only {differ} values");
    }
}
