//! The AVX2 kernels of the row converters, bit-exact with [`yuv_to_rgb`]:
//! the 8.8 fixed-point sums are split as `298 = 256 + 42`, `409 = 256 + 153`,
//! `-208 = -256 + 48`, `516 = 512 + 4`, so that
//!
//! ```text
//! (298 y' + 409 e + 128) >> 8  ==  (y' + e) + ((42 y' + 153 e + 128) >> 8)
//! ```
//!
//! (an arithmetic shift is a floor division, and `floor((256 a + b) / 256) =
//! a + floor(b / 256)`), and every term then fits 16 bits: 16 pixels per
//! 256-bit vector instead of 8 in 32-bit lanes.
//!
//! [`yuv_to_rgb`]: super::yuv_to_rgb

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
        let (u, v) = shared_chroma(c);
        // SAFETY: step `i` writes bytes `48 i .. 48 i + 48` of `dst`, inside
        // its `3 n` bytes; AVX2 is enabled on this function.
        unsafe { convert16(y, u, v, dst.as_mut_ptr().add(48 * i)) };
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
        let (u, v) = shared_chroma(c);
        // SAFETY: step `i` writes bytes `48 i .. 48 i + 48` of `dst`, inside
        // its `3 n` bytes; AVX2 is enabled on this function.
        unsafe { convert16(y, u, v, dst.as_mut_ptr().add(48 * i)) };
    }
    steps * STEP
}

/// `(t + v) >> 8`, arithmetic: the floor of the fractional part.
#[inline]
#[target_feature(enable = "avx2")]
fn frac(t: __m256i, v: __m256i) -> __m256i {
    _mm256_srai_epi16::<8>(_mm256_add_epi16(t, v))
}

/// Converts the first whole steps of a row with one U and one V per
/// pixel; returns the pixels done.
///
/// # Safety
/// The CPU supports AVX2; `y`, `u` and `v` have `n` bytes, `dst` `3 n`.
#[target_feature(enable = "avx2")]
pub unsafe fn planar(y: &[u8], u: &[u8], v: &[u8], dst: &mut [u8], n: usize) -> usize {
    let steps = n / STEP;
    for i in 0..steps {
        // SAFETY: step `i` reads bytes `16 i .. 16 i + 16` of `y`, `u` and
        // `v`, inside their `n` bytes since `16 (i + 1) <= n`.
        let (y16, u16, v16) = unsafe {
            (
                _mm_loadu_si128(y.as_ptr().add(STEP * i).cast()),
                _mm_loadu_si128(u.as_ptr().add(STEP * i).cast()),
                _mm_loadu_si128(v.as_ptr().add(STEP * i).cast()),
            )
        };
        let (y16, u16, v16) = (
            _mm256_cvtepu8_epi16(y16),
            _mm256_cvtepu8_epi16(u16),
            _mm256_cvtepu8_epi16(v16),
        );
        // SAFETY: step `i` writes bytes `48 i .. 48 i + 48` of `dst`, inside
        // its `3 n` bytes; AVX2 is enabled on this function.
        unsafe { convert16(y16, u16, v16, dst.as_mut_ptr().add(48 * i)) };
    }
    steps * STEP
}

/// Each pixel's U and V from `c`, which holds in each 128-bit lane four
/// `U, V` pairs as 16-bit lanes (pair `k` for pixels `2k`, `2k + 1` of the
/// lane).
#[inline]
#[target_feature(enable = "avx2")]
fn shared_chroma(c: __m256i) -> (__m256i, __m256i) {
    // U from words 0, 0, 2, 2, .. and V from words 1, 1, 3, 3, ..
    let dup_u = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,
    ));
    let dup_v = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15,
    ));
    (_mm256_shuffle_epi8(c, dup_u), _mm256_shuffle_epi8(c, dup_v))
}

/// 16 pixels: `y`, `u` and `v` their Y, U and V as 16-bit lanes (pixels
/// 0..8 in the low 128-bit lane, 8..16 in the high one). Writes 48 bytes
/// of RGB at `out`.
///
/// # Safety
/// The CPU supports AVX2; `out` is valid for 48 bytes of writes.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn convert16(y: __m256i, u: __m256i, v: __m256i, out: *mut u8) {
    let bias = _mm256_set1_epi16(128);
    let (d, e) = (_mm256_sub_epi16(u, bias), _mm256_sub_epi16(v, bias));
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
