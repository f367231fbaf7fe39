//! The NEON kernels of the row converters, bit-exact with [`yuv_to_rgb`] by
//! the same 16-bit split as the AVX2 ones (see `avx2.rs`):
//!
//! ```text
//! (298 y' + 409 e + 128) >> 8  ==  (y' + e) + ((42 y' + 153 e + 128) >> 8)
//! ```
//!
//! with every term inside i16. NEON's structured loads and stores do the
//! (de)interleaving the AVX2 kernels do with byte shuffles: `vld4q_u8`
//! splits 16 YUYV macropixels into Y0, U, Y1, V, `vld2_u8` splits NEON's U V
//! pairs, and `vst3q_u8` writes R G B interleaved. NEON is part of the
//! aarch64 baseline, so these run without detection (the `target_feature`
//! attributes only let the intrinsics be called safely).
//!
//! [`yuv_to_rgb`]: super::yuv_to_rgb

use std::arch::aarch64::*;

/// Pixels per step of the NV12 and planar kernels (one 128-bit vector of bytes).
const STEP: usize = 16;

/// Converts the first whole 32-pixel steps of a YUYV row; returns the pixels done.
///
/// # Safety
/// `src` has `2 n` bytes and `dst` `3 n`.
#[target_feature(enable = "neon")]
pub unsafe fn yuyv(src: &[u8], dst: &mut [u8], n: usize) -> usize {
    let steps = n / (2 * STEP);
    for i in 0..steps {
        // SAFETY: step `i` reads bytes `64 i .. 64 i + 64` of `src`, inside its
        // `2 n` bytes since `32 (i + 1) <= n`.
        let m = unsafe { vld4q_u8(src.as_ptr().add(64 * i)) };
        // Even pixels take Y0, odd ones Y1; both share the macropixel's U, V.
        let even = convert16(m.0, m.1, m.3);
        let odd = convert16(m.2, m.1, m.3);
        let zip = |a: uint8x16_t, b: uint8x16_t| (vzip1q_u8(a, b), vzip2q_u8(a, b));
        let (r, g, b) = (zip(even.0, odd.0), zip(even.1, odd.1), zip(even.2, odd.2));
        // SAFETY: step `i` writes bytes `96 i .. 96 i + 96` of `dst`, inside its
        // `3 n` bytes.
        unsafe {
            let out = dst.as_mut_ptr().add(96 * i);
            vst3q_u8(out, uint8x16x3_t(r.0, g.0, b.0));
            vst3q_u8(out.add(48), uint8x16x3_t(r.1, g.1, b.1));
        }
    }
    steps * 2 * STEP
}

/// Converts the first whole steps of an NV12 row; returns the pixels done.
///
/// # Safety
/// `luma` and `uv` have `n` bytes, `dst` `3 n`.
#[target_feature(enable = "neon")]
pub unsafe fn nv12(luma: &[u8], uv: &[u8], dst: &mut [u8], n: usize) -> usize {
    let steps = n / STEP;
    for i in 0..steps {
        // SAFETY: step `i` reads bytes `16 i .. 16 i + 16` of `luma` and of
        // `uv`, inside their `n` bytes since `16 (i + 1) <= n`.
        let (y, c) = unsafe {
            (
                vld1q_u8(luma.as_ptr().add(STEP * i)),
                vld2_u8(uv.as_ptr().add(STEP * i)),
            )
        };
        // Each of the eight U V pairs covers two pixels.
        let twice = |x: uint8x8_t| vcombine_u8(vzip1_u8(x, x), vzip2_u8(x, x));
        let rgb = convert16(y, twice(c.0), twice(c.1));
        // SAFETY: step `i` writes bytes `48 i .. 48 i + 48` of `dst`, inside
        // its `3 n` bytes.
        unsafe {
            vst3q_u8(
                dst.as_mut_ptr().add(48 * i),
                uint8x16x3_t(rgb.0, rgb.1, rgb.2),
            )
        };
    }
    steps * STEP
}

/// Converts the first whole steps of a row with one U and one V per pixel;
/// returns the pixels done.
///
/// # Safety
/// `y`, `u` and `v` have `n` bytes, `dst` `3 n`.
#[target_feature(enable = "neon")]
pub unsafe fn planar(y: &[u8], u: &[u8], v: &[u8], dst: &mut [u8], n: usize) -> usize {
    let steps = n / STEP;
    for i in 0..steps {
        // SAFETY: step `i` reads bytes `16 i .. 16 i + 16` of `y`, `u` and `v`,
        // inside their `n` bytes since `16 (i + 1) <= n`.
        let (y, u, v) = unsafe {
            (
                vld1q_u8(y.as_ptr().add(STEP * i)),
                vld1q_u8(u.as_ptr().add(STEP * i)),
                vld1q_u8(v.as_ptr().add(STEP * i)),
            )
        };
        let rgb = convert16(y, u, v);
        // SAFETY: step `i` writes bytes `48 i .. 48 i + 48` of `dst`, inside
        // its `3 n` bytes.
        unsafe {
            vst3q_u8(
                dst.as_mut_ptr().add(48 * i),
                uint8x16x3_t(rgb.0, rgb.1, rgb.2),
            )
        };
    }
    steps * STEP
}

/// 16 pixels from their Y, U and V bytes to their R, G and B bytes.
#[inline]
#[target_feature(enable = "neon")]
fn convert16(y: uint8x16_t, u: uint8x16_t, v: uint8x16_t) -> (uint8x16_t, uint8x16_t, uint8x16_t) {
    let lo = convert8(vget_low_u8(y), vget_low_u8(u), vget_low_u8(v));
    let hi = convert8(vget_high_u8(y), vget_high_u8(u), vget_high_u8(v));
    (
        vcombine_u8(lo.0, hi.0),
        vcombine_u8(lo.1, hi.1),
        vcombine_u8(lo.2, hi.2),
    )
}

/// 8 pixels in 16-bit lanes: the sums of `avx2::convert16`, lane for lane.
#[inline]
#[target_feature(enable = "neon")]
fn convert8(y: uint8x8_t, u: uint8x8_t, v: uint8x8_t) -> (uint8x8_t, uint8x8_t, uint8x8_t) {
    let wide = |x: uint8x8_t| vreinterpretq_s16_u16(vmovl_u8(x));
    let bias = vdupq_n_s16(128);
    let (d, e) = (vsubq_s16(wide(u), bias), vsubq_s16(wide(v), bias));
    let y = vsubq_s16(wide(y), vdupq_n_s16(16));
    // 42 y' + 128 in [-544, 10166]; each sum below stays within i16 (at most
    // 29597 in magnitude).
    let t = vaddq_s16(vmulq_n_s16(y, 42), bias);
    // `(t + x) >> 8`, arithmetic: the floor of the fractional part.
    let frac = |x: int16x8_t| vshrq_n_s16::<8>(vaddq_s16(t, x));
    let r = vaddq_s16(vaddq_s16(y, e), frac(vmulq_n_s16(e, 153)));
    let g = vaddq_s16(
        vsubq_s16(y, e),
        frac(vaddq_s16(vmulq_n_s16(d, -100), vmulq_n_s16(e, 48))),
    );
    let b = vaddq_s16(vaddq_s16(y, vshlq_n_s16::<1>(d)), frac(vshlq_n_s16::<2>(d)));
    // Saturating narrows are the clamp to 0..=255.
    (vqmovun_s16(r), vqmovun_s16(g), vqmovun_s16(b))
}
