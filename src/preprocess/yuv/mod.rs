//! Colour conversion, BT.601 limited range (what UVC cameras send and what
//! OpenCV's `COLOR_YUV2RGB_*` assume), in 8.8 fixed point.
//!
//! One family: [`yuv_to_rgb`] is the scalar reference for one pixel, and
//! the row converters below are its only vector form. Each row converter
//! has a scalar version (the reference and the fallback) and a SIMD kernel,
//! bit-exact with the scalar one: AVX2 picked at run time on x86-64, NEON
//! (the aarch64 baseline) on aarch64 (see `avx2.rs` for why 16-bit lanes
//! suffice). One dispatch point per row shape picks the kernel; the scalar
//! version finishes the tail. The three row shapes differ only in where a
//! pixel's chroma comes from: a YUYV macropixel, an NV12 U V pair shared by
//! two pixels, or one U and one V per pixel (resampled chroma).

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "aarch64")]
mod neon;

/// One pixel from Y, U (Cb), V (Cr) to R, G, B.
#[inline(always)]
pub fn yuv_to_rgb(y: u8, u: u8, v: u8) -> [u8; 3] {
    let c = 298 * (i32::from(y) - 16);
    let d = i32::from(u) - 128;
    let e = i32::from(v) - 128;
    [
        clamp8((c + 409 * e + 128) >> 8),
        clamp8((c - 100 * d - 208 * e + 128) >> 8),
        clamp8((c + 516 * d + 128) >> 8),
    ]
}

/// One pixel from R, G, B to Y, U, V (for padding YUV outputs).
pub fn rgb_to_yuv(rgb: [u8; 3]) -> [u8; 3] {
    let [r, g, b] = rgb.map(i32::from);
    [
        clamp8(((66 * r + 129 * g + 25 * b + 128) >> 8) + 16),
        clamp8(((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128),
        clamp8(((112 * r - 94 * g - 18 * b + 128) >> 8) + 128),
    ]
}

#[inline(always)]
fn clamp8(v: i32) -> u8 {
    v.clamp(0, 255) as u8
}

/// The textbook float formula, the reference the fixed-point one is tested against.
pub fn yuv_to_rgb_reference(y: u8, u: u8, v: u8) -> [f64; 3] {
    let y = (f64::from(y) - 16.0) * 255.0 / 219.0;
    let u = (f64::from(u) - 128.0) * 255.0 / 224.0;
    let v = (f64::from(v) - 128.0) * 255.0 / 224.0;
    let (kr, kb) = (0.299, 0.114);
    let kg = 1.0 - kr - kb;
    let r = y + 2.0 * (1.0 - kr) * v;
    let b = y + 2.0 * (1.0 - kb) * u;
    let g = (y - kr * r - kb * b) / kg;
    [r, g, b].map(|c| c.clamp(0.0, 255.0))
}

/// Converts one YUYV row (`Y0 U Y1 V`, `2 * n` bytes) into `n` RGB pixels.
///
/// # Panics
/// If `dst.len()` is odd pixels or not a multiple of 3, or `src` is shorter
/// than two bytes per pixel of `dst`.
pub fn yuyv_row_to_rgb(src: &[u8], dst: &mut [u8]) {
    let n = even_pixels(dst);
    assert!(src.len() >= 2 * n, "YUYV row shorter than its RGB row");
    let done = simd::yuyv(src, dst, n);
    yuyv_row_scalar(&src[2 * done..2 * n], &mut dst[3 * done..]);
}

/// Converts one NV12 row, `n` luma bytes and the `n` bytes of interleaved
/// U V pairs that cover them (one pair per two pixels), into `n` RGB pixels.
///
/// # Panics
/// As [`yuyv_row_to_rgb`], for `luma` and `uv` shorter than `n` bytes.
pub fn nv12_row_to_rgb(luma: &[u8], uv: &[u8], dst: &mut [u8]) {
    let n = even_pixels(dst);
    assert!(
        luma.len() >= n && uv.len() >= n,
        "NV12 rows shorter than their RGB row"
    );
    let done = simd::nv12(luma, uv, dst, n);
    nv12_row_scalar(&luma[done..n], &uv[done..n], &mut dst[3 * done..]);
}

/// Converts `n` pixels, each with its own Y, U and V (rows of at least `n`
/// bytes), into `n` RGB pixels; any `n`.
///
/// # Panics
/// If `dst.len()` is not a multiple of 3 or a source row is shorter than `n`.
pub fn planar_row_to_rgb(y: &[u8], u: &[u8], v: &[u8], dst: &mut [u8]) {
    assert!(
        dst.len().is_multiple_of(3),
        "RGB row of {} bytes is not whole pixels",
        dst.len()
    );
    let n = dst.len() / 3;
    assert!(
        y.len() >= n && u.len() >= n && v.len() >= n,
        "Y, U, V rows shorter than their RGB row"
    );
    let done = simd::planar(y, u, v, dst, n);
    planar_row_scalar(&y[done..n], &u[done..n], &v[done..n], &mut dst[3 * done..]);
}

/// The one dispatch point of each row shape: the target's SIMD kernel over
/// the whole steps of a row, returning the pixels done (0 where the target
/// has none); the scalar version does the rest.
mod simd {
    /// The SIMD part of [`super::yuyv_row_to_rgb`]; `src` has `2 n` bytes
    /// and `dst` `3 n`.
    pub fn yuyv(src: &[u8], dst: &mut [u8], n: usize) -> usize {
        debug_assert!(src.len() >= 2 * n && dst.len() >= 3 * n);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above); the lengths
            // are the caller's, asserted by `yuyv_row_to_rgb`.
            return unsafe { super::avx2::yuyv(src, dst, n) };
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is the aarch64 baseline; the lengths are the caller's,
        // asserted by `yuyv_row_to_rgb`.
        return unsafe { super::neon::yuyv(src, dst, n) };
        #[allow(unreachable_code)]
        0
    }

    /// The SIMD part of [`super::nv12_row_to_rgb`]; `luma` and `uv` have
    /// `n` bytes and `dst` `3 n`.
    pub fn nv12(luma: &[u8], uv: &[u8], dst: &mut [u8], n: usize) -> usize {
        debug_assert!(luma.len() >= n && uv.len() >= n && dst.len() >= 3 * n);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above); the lengths
            // are the caller's, asserted by `nv12_row_to_rgb`.
            return unsafe { super::avx2::nv12(luma, uv, dst, n) };
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is the aarch64 baseline; the lengths are the caller's,
        // asserted by `nv12_row_to_rgb`.
        return unsafe { super::neon::nv12(luma, uv, dst, n) };
        #[allow(unreachable_code)]
        0
    }

    /// The SIMD part of [`super::planar_row_to_rgb`]; `y`, `u` and `v` have
    /// `n` bytes and `dst` `3 n`.
    pub fn planar(y: &[u8], u: &[u8], v: &[u8], dst: &mut [u8], n: usize) -> usize {
        debug_assert!(y.len() >= n && u.len() >= n && v.len() >= n && dst.len() >= 3 * n);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above); the lengths
            // are the caller's, asserted by `planar_row_to_rgb`.
            return unsafe { super::avx2::planar(y, u, v, dst, n) };
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is the aarch64 baseline; the lengths are the caller's,
        // asserted by `planar_row_to_rgb`.
        return unsafe { super::neon::planar(y, u, v, dst, n) };
        #[allow(unreachable_code)]
        0
    }
}

/// Pixels of an RGB row of an even number of pixels.
fn even_pixels(dst: &[u8]) -> usize {
    assert!(
        dst.len().is_multiple_of(6),
        "RGB row of {} bytes is not an even number of pixels",
        dst.len()
    );
    dst.len() / 3
}

/// The scalar reference (and fallback) of [`yuyv_row_to_rgb`].
pub fn yuyv_row_scalar(src: &[u8], dst: &mut [u8]) {
    for (px, m) in dst.chunks_exact_mut(6).zip(src.chunks_exact(4)) {
        px[..3].copy_from_slice(&yuv_to_rgb(m[0], m[1], m[3]));
        px[3..].copy_from_slice(&yuv_to_rgb(m[2], m[1], m[3]));
    }
}

/// The scalar reference (and fallback) of [`nv12_row_to_rgb`].
pub fn nv12_row_scalar(luma: &[u8], uv: &[u8], dst: &mut [u8]) {
    for ((px, y), c) in dst
        .chunks_exact_mut(6)
        .zip(luma.chunks_exact(2))
        .zip(uv.chunks_exact(2))
    {
        px[..3].copy_from_slice(&yuv_to_rgb(y[0], c[0], c[1]));
        px[3..].copy_from_slice(&yuv_to_rgb(y[1], c[0], c[1]));
    }
}

/// The scalar reference (and fallback) of [`planar_row_to_rgb`].
pub fn planar_row_scalar(y: &[u8], u: &[u8], v: &[u8], dst: &mut [u8]) {
    for (((px, &y), &u), &v) in dst.chunks_exact_mut(3).zip(y).zip(u).zip(v) {
        px.copy_from_slice(&yuv_to_rgb(y, u, v));
    }
}

#[cfg(test)]
mod tests;
