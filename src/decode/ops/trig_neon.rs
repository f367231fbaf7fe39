//! The NEON build of [`FastTrig`] on aarch64 (the baseline there, no
//! detection): `sin_quadrant` on four lanes with the same operations in the
//! same order (separate multiplies and adds, as the scalar code compiles),
//! so it is bit-exact with the portable loop.
//!
//! [`FastTrig`]: super::trig::FastTrig

use std::arch::aarch64::*;

use super::trig::{sin_quadrant, PIO2, ROUND, TWO_OVER_PI};

/// Lanes per NEON register of f32.
const LANES: usize = 4;

/// `sin_quadrant` of four lanes, bit for bit.
#[inline]
#[target_feature(enable = "neon")]
fn sin4(x: float32x4_t, quarter: u32) -> float32x4_t {
    let mul = |a, b| vmulq_f32(a, b);
    let add = |a, b| vaddq_f32(a, b);
    let sub = |a, b| vsubq_f32(a, b);
    let dup = |a| vdupq_n_f32(a);
    let round = dup(ROUND);
    let shifted = add(mul(x, dup(TWO_OVER_PI)), round);
    let q = sub(shifted, round);
    let n = vaddq_u32(
        vsubq_u32(vreinterpretq_u32_f32(shifted), vdupq_n_u32(ROUND.to_bits())),
        vdupq_n_u32(quarter),
    );
    let r = sub(
        sub(sub(x, mul(q, dup(PIO2[0]))), mul(q, dup(PIO2[1]))),
        mul(q, dup(PIO2[2])),
    );
    let z = mul(r, r);
    let poly = |c: [f32; 3]| add(dup(c[0]), mul(z, add(dup(c[1]), mul(z, dup(c[2])))));
    let s = add(
        r,
        mul(
            mul(r, z),
            poly([-1.666_665_5e-1, 8.332_161e-3, -1.951_529_6e-4]),
        ),
    );
    let c = add(
        sub(dup(1.0), mul(dup(0.5), z)),
        mul(
            mul(z, z),
            poly([4.166_664_6e-2, -1.388_731_6e-3, 2.443_315_7e-5]),
        ),
    );
    let odd = vtstq_u32(n, vdupq_n_u32(1));
    let v = vreinterpretq_u32_f32(vbslq_f32(odd, c, s));
    let sign = vshlq_n_u32::<30>(vandq_u32(n, vdupq_n_u32(2)));
    vreinterpretq_f32_u32(veorq_u32(v, sign))
}

/// `sin_quadrant` of every element of `data`, in place.
#[target_feature(enable = "neon")]
pub fn apply(data: &mut [f32], quarter: u32) {
    let mut chunks = data.chunks_exact_mut(LANES);
    for c in &mut chunks {
        // SAFETY: `c` holds exactly four f32, read and written once each.
        unsafe { vst1q_f32(c.as_mut_ptr(), sin4(vld1q_f32(c.as_ptr()), quarter)) };
    }
    for x in chunks.into_remainder() {
        *x = sin_quadrant(*x, quarter);
    }
}
