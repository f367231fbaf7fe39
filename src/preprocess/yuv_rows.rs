//! Whole rows of YUYV or NV12 to RGB at the same size: no crop inside the
//! row, no resampling, only the BT.601 conversion and the RGB interleave.
//!
//! This is the path a camera that already delivers the HEF's input size takes
//! (the demo rig's 288 and 432 cameras), so it is the pipeline's per-frame
//! host cost. The AVX2 kernel (picked at run time) is bit-exact with
//! [`yuv_to_rgb`], the scalar reference and the fallback: the 8.8 fixed-point
//! sums are split as `298 = 256 + 42`, `409 = 256 + 153`, `-208 = -256 + 48`,
//! `516 = 512 + 4`, so that
//!
//! ```text
//! (298 y' + 409 e + 128) >> 8  ==  (y' + e) + ((42 y' + 153 e + 128) >> 8)
//! ```
//!
//! (an arithmetic shift is a floor division, and `floor((256 a + b) / 256) =
//! a + floor(b / 256)`), and every term then fits 16 bits: 16 pixels per
//! 256-bit vector instead of 8 in 32-bit lanes.

use super::convert::yuv_to_rgb;

/// Converts one YUYV row (`Y0 U Y1 V`, `2 * n` bytes) into `n` RGB pixels.
///
/// # Panics
/// If `dst.len()` is odd pixels or not a multiple of 3, or `src` is shorter
/// than two bytes per pixel of `dst`.
pub fn yuyv_row_to_rgb(src: &[u8], dst: &mut [u8]) {
    let n = pixels(dst);
    assert!(src.len() >= 2 * n, "YUYV row shorter than its RGB row");
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above); `src` has
            // `2 n` bytes and `dst` `3 n` (asserted above).
            let done = unsafe { avx2::yuyv(src, dst, n) };
            yuyv_row_scalar(&src[2 * done..2 * n], &mut dst[3 * done..]);
            return;
        }
    }
    yuyv_row_scalar(&src[..2 * n], dst);
}

/// Converts one NV12 row, `n` luma bytes and the `n` bytes of interleaved
/// U V pairs that cover them (one pair per two pixels), into `n` RGB pixels.
///
/// # Panics
/// As [`yuyv_row_to_rgb`], for `luma` and `uv` shorter than `n` bytes.
pub fn nv12_row_to_rgb(luma: &[u8], uv: &[u8], dst: &mut [u8]) {
    let n = pixels(dst);
    assert!(
        luma.len() >= n && uv.len() >= n,
        "NV12 rows shorter than their RGB row"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above); `luma` and
            // `uv` have `n` bytes and `dst` `3 n` (asserted above).
            let done = unsafe { avx2::nv12(luma, uv, dst, n) };
            nv12_row_scalar(&luma[done..n], &uv[done..n], &mut dst[3 * done..]);
            return;
        }
    }
    nv12_row_scalar(&luma[..n], &uv[..n], dst);
}

/// Pixels of an RGB row of an even number of pixels.
fn pixels(dst: &[u8]) -> usize {
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

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Pixels per step: one 256-bit vector of 16-bit lanes.
    const STEP: usize = 16;

    /// Converts the first whole steps of a YUYV row; returns the pixels done.
    ///
    /// # Safety
    /// The CPU supports AVX2; `src` has `2 n` bytes and `dst` `3 n`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn yuyv(src: &[u8], dst: &mut [u8], n: usize) -> usize {
        let steps = n / STEP;
        let low = _mm256_set1_epi16(0x00ff);
        for i in 0..steps {
            // SAFETY: step `i` reads bytes `32 i .. 32 i + 32` of `src`, inside
            // its `2 n` bytes since `16 (i + 1) <= n`.
            let s = unsafe { _mm256_loadu_si256(src.as_ptr().add(32 * i).cast()) };
            // Little-endian 16-bit words `Y | C << 8`: luma in the low byte,
            // the pixel's chroma (U for even pixels, V for odd) in the high one.
            let y = _mm256_and_si256(s, low);
            let c = _mm256_srli_epi16::<8>(s);
            // SAFETY: step `i` writes bytes `48 i .. 48 i + 48` of `dst`, inside
            // its `3 n` bytes; AVX2 is enabled on this function.
            unsafe { convert16(y, c, dst.as_mut_ptr().add(48 * i)) };
        }
        steps * STEP
    }

    /// Converts the first whole steps of an NV12 row; returns the pixels done.
    ///
    /// # Safety
    /// The CPU supports AVX2; `luma` and `uv` have `n` bytes, `dst` `3 n`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn nv12(luma: &[u8], uv: &[u8], dst: &mut [u8], n: usize) -> usize {
        let steps = n / STEP;
        for i in 0..steps {
            // SAFETY: step `i` reads bytes `16 i .. 16 i + 16` of `luma` and of
            // `uv`, inside their `n` bytes since `16 (i + 1) <= n`.
            let (y, c) = unsafe {
                (
                    _mm_loadu_si128(luma.as_ptr().add(STEP * i).cast()),
                    _mm_loadu_si128(uv.as_ptr().add(STEP * i).cast()),
                )
            };
            // Both widened to 16 pixels: lane 0 holds pixels 0..8 and their
            // four U V pairs, lane 1 pixels 8..16, the same arrangement as
            // the YUYV words.
            let (y, c) = (_mm256_cvtepu8_epi16(y), _mm256_cvtepu8_epi16(c));
            // SAFETY: step `i` writes bytes `48 i .. 48 i + 48` of `dst`, inside
            // its `3 n` bytes; AVX2 is enabled on this function.
            unsafe { convert16(y, c, dst.as_mut_ptr().add(48 * i)) };
        }
        steps * STEP
    }

    /// `(t + v) >> 8`, arithmetic: the floor of the fractional part.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn frac(t: __m256i, v: __m256i) -> __m256i {
        _mm256_srai_epi16::<8>(_mm256_add_epi16(t, v))
    }

    /// 16 pixels: `y` their luma, `c` in each 128-bit lane four `U, V` pairs
    /// (pair `k` for pixels `2k`, `2k + 1` of the lane), all as 16-bit lanes.
    /// Writes 48 bytes of RGB at `out`.
    ///
    /// # Safety
    /// The CPU supports AVX2; `out` is valid for 48 bytes of writes.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn convert16(y: __m256i, c: __m256i, out: *mut u8) {
        let c = _mm256_sub_epi16(c, _mm256_set1_epi16(128));
        // Each pixel's U (words 0, 0, 2, 2, ..) and V (words 1, 1, 3, 3, ..).
        let dup_u = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,
        ));
        let dup_v = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15,
        ));
        let d = _mm256_shuffle_epi8(c, dup_u);
        let e = _mm256_shuffle_epi8(c, dup_v);
        let y = _mm256_sub_epi16(y, _mm256_set1_epi16(16));
        // 42 y' + 128 in [-544, 10166]; each sum below stays within i16
        // (at most 29597 in magnitude).
        let t = _mm256_add_epi16(
            _mm256_mullo_epi16(y, _mm256_set1_epi16(42)),
            _mm256_set1_epi16(128),
        );
        let r = _mm256_add_epi16(
            _mm256_add_epi16(y, e),
            frac(t, _mm256_mullo_epi16(e, _mm256_set1_epi16(153))),
        );
        let g = _mm256_add_epi16(
            _mm256_sub_epi16(y, e),
            frac(
                t,
                _mm256_add_epi16(
                    _mm256_mullo_epi16(d, _mm256_set1_epi16(-100)),
                    _mm256_mullo_epi16(e, _mm256_set1_epi16(48)),
                ),
            ),
        );
        let b = _mm256_add_epi16(
            _mm256_add_epi16(y, _mm256_slli_epi16::<1>(d)),
            frac(t, _mm256_slli_epi16::<2>(d)),
        );
        // Saturating packs are the clamp to 0..=255. Per lane: R0..8 G0..8
        // and B0..8 twice.
        let rg = _mm256_packus_epi16(r, g);
        let bb = _mm256_packus_epi16(b, b);
        // Interleave: bytes 0..16 and 16..24 of each lane's 24 RGB bytes,
        // from R (byte i), G (byte 8 + i) and B (byte i); -128 makes a zero.
        let rg_lo = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            0, 8, -128, 1, 9, -128, 2, 10, -128, 3, 11, -128, 4, 12, -128, 5,
        ));
        let b_lo = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            -128, -128, 0, -128, -128, 1, -128, -128, 2, -128, -128, 3, -128, -128, 4, -128,
        ));
        let rg_hi = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            13, -128, 6, 14, -128, 7, 15, -128, -128, -128, -128, -128, -128, -128, -128, -128,
        ));
        let b_hi = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            -128, 5, -128, -128, 6, -128, -128, 7, -128, -128, -128, -128, -128, -128, -128, -128,
        ));
        let lo = _mm256_or_si256(
            _mm256_shuffle_epi8(rg, rg_lo),
            _mm256_shuffle_epi8(bb, b_lo),
        );
        let hi = _mm256_or_si256(
            _mm256_shuffle_epi8(rg, rg_hi),
            _mm256_shuffle_epi8(bb, b_hi),
        );
        // SAFETY: the four stores cover bytes 0..16, 16..24, 24..40 and
        // 40..48 of `out`, valid for 48 bytes by the caller's contract.
        unsafe {
            _mm_storeu_si128(out.cast(), _mm256_castsi256_si128(lo));
            _mm_storel_epi64(out.add(16).cast(), _mm256_castsi256_si128(hi));
            _mm_storeu_si128(out.add(24).cast(), _mm256_extracti128_si256::<1>(lo));
            _mm_storel_epi64(out.add(40).cast(), _mm256_extracti128_si256::<1>(hi));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic bytes (xorshift), so failures reproduce.
    fn bytes(n: usize, seed: u64) -> Vec<u8> {
        let mut s = seed | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 24) as u8
            })
            .collect()
    }

    /// Every (Y, U, V) triple, as YUYV rows of 256 pixels: the row for
    /// (u, v) carries Y = 0..=255 with that chroma.
    #[test]
    fn yuyv_equals_the_scalar_formula_for_every_triple() {
        let mut src = vec![0u8; 512];
        let mut got = vec![0u8; 768];
        for u in 0..=255u8 {
            for v in 0..=255u8 {
                for (j, m) in src.chunks_exact_mut(4).enumerate() {
                    m.copy_from_slice(&[2 * j as u8, u, 2 * j as u8 + 1, v]);
                }
                yuyv_row_to_rgb(&src, &mut got);
                for (x, px) in got.chunks_exact(3).enumerate() {
                    assert_eq!(px, yuv_to_rgb(x as u8, u, v), "y {x} u {u} v {v}");
                }
            }
        }
    }

    #[test]
    fn rows_of_any_even_length_equal_the_scalar_reference() {
        for n in [2usize, 14, 16, 18, 30, 32, 34, 288, 432, 1282] {
            let src = bytes(2 * n, n as u64);
            let mut fast = vec![0u8; 3 * n];
            let mut slow = vec![1u8; 3 * n];
            yuyv_row_to_rgb(&src, &mut fast);
            yuyv_row_scalar(&src, &mut slow);
            assert_eq!(fast, slow, "YUYV row of {n} pixels");

            let (luma, uv) = src.split_at(n);
            nv12_row_to_rgb(luma, uv, &mut fast);
            nv12_row_scalar(luma, uv, &mut slow);
            assert_eq!(fast, slow, "NV12 row of {n} pixels");
            for (x, px) in fast.chunks_exact(3).enumerate() {
                let c = &uv[x / 2 * 2..];
                assert_eq!(px, yuv_to_rgb(luma[x], c[0], c[1]), "NV12 pixel {x}");
            }
        }
    }

    /// Negative control: the comparison above notices one wrong byte, and a
    /// conversion with a different matrix (full-range Y) differs.
    #[test]
    fn the_comparison_can_fail() {
        let n = 64;
        let src = bytes(2 * n, 7);
        let mut fast = vec![0u8; 3 * n];
        let mut slow = vec![0u8; 3 * n];
        yuyv_row_to_rgb(&src, &mut fast);
        yuyv_row_scalar(&src, &mut slow);
        assert_eq!(fast, slow);
        slow[3 * 37 + 1] ^= 1;
        assert_ne!(fast, slow, "a flipped bit must be seen");
        let full_range: Vec<u8> = src
            .chunks_exact(4)
            .flat_map(|m| {
                let rgb = |y: u8| {
                    let (y, d, e) = (
                        f64::from(y),
                        f64::from(m[1]) - 128.0,
                        f64::from(m[3]) - 128.0,
                    );
                    [y + 1.402 * e, y - 0.344 * d - 0.714 * e, y + 1.772 * d]
                        .map(|c| c.round().clamp(0.0, 255.0) as u8)
                };
                [rgb(m[0]), rgb(m[2])].concat()
            })
            .collect();
        assert_ne!(fast, full_range, "a different matrix must be seen");
    }

    #[test]
    #[should_panic(expected = "not an even number of pixels")]
    fn an_odd_row_is_refused() {
        yuyv_row_to_rgb(&[0; 6], &mut [0; 9]);
    }
}
