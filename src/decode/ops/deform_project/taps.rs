//! The sum of one query's weighted memory rows, `row = Σ_t w_t · memory[i_t]`, over the
//! bilinear taps of its sampling points in one head.
//!
//! The portable loops (and NEON on aarch64) zero the row and add one tap at a time, which
//! loads and stores the whole 256-wide row once per tap: eight taps per query and head in
//! the decoder, so most of the sampling's memory traffic is the row itself. With AVX-512
//! the row stays in registers, 128 channels at a time, across all the taps, and is
//! stored once. Each tap is a multiply then an add, lane for lane and in the same order
//! as the portable loop, so every build gives the same bits.

/// One tap: the memory row it reads and its weight (bilinear weight times attention
/// weight), zero-weight taps left out.
pub(super) type Tap = (u32, f32);

/// `row = Σ w · memory[i · d ..][.. d]` over `taps`, `d = row.len()`, one `axpy`
/// (`acc += w · src`, a multiply then an add) per tap.
///
/// # Panics
/// When a tap's row lies outside `memory` (the caller's taps come from a map of
/// `memory.len() / d` tokens, so none does).
#[inline(always)]
pub(super) fn sum_with(
    row: &mut [f32],
    taps: &[Tap],
    memory: &[f32],
    axpy: impl Fn(&mut [f32], f32, &[f32]),
) {
    let d = row.len();
    row.fill(0.0);
    for &(i, wt) in taps {
        axpy(row, wt, &memory[i as usize * d..(i as usize + 1) * d]);
    }
}

/// [`sum_with`] on plain loops: the reference every SIMD build equals bit for bit.
#[inline(always)]
pub(super) fn portable(row: &mut [f32], taps: &[Tap], memory: &[f32]) {
    sum_with(row, taps, memory, |acc, wt, src| {
        for (a, &v) in acc.iter_mut().zip(src) {
            *a += wt * v;
        }
    });
}

/// [`sum_with`] with NEON rows (aarch64's baseline).
#[cfg(target_arch = "aarch64")]
pub(super) fn neon(row: &mut [f32], taps: &[Tap], memory: &[f32]) {
    // SAFETY: NEON is the aarch64 baseline.
    sum_with(row, taps, memory, |acc, wt, src| unsafe {
        super::super::deform_neon::axpy(acc, wt, src)
    });
}

/// [`portable`] with the row held in AVX-512 registers; a tap whose row lies outside
/// `memory` sends the call to [`portable`] (which reports it).
///
/// # Safety
/// The CPU must support AVX-512F (the caller checks once, not per query).
#[cfg(target_arch = "x86_64")]
pub(super) unsafe fn avx512(row: &mut [f32], taps: &[Tap], memory: &[f32]) {
    let d = row.len();
    if taps
        .iter()
        .all(|&(i, _)| (i as usize + 1) * d <= memory.len())
    {
        // SAFETY: the CPU supports AVX-512F (the caller's contract) and every tap's row
        // lies inside `memory`, checked just above.
        unsafe { avx512_rows(row, taps, memory) };
    } else {
        portable(row, taps, memory);
    }
}

/// Channels per pass: eight registers of 16 lanes.
#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 128;

/// # Safety
/// The CPU must support AVX-512F; every tap's row `i · d .. (i + 1) · d` lies inside
/// `memory`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512_rows(row: &mut [f32], taps: &[Tap], memory: &[f32]) {
    use std::arch::x86_64::*;
    let d = row.len();
    let mask = |left: usize| -> __mmask16 {
        if left >= 16 {
            0xffff
        } else {
            ((1u32 << left) - 1) as __mmask16
        }
    };
    for c0 in (0..d).step_by(BLOCK) {
        let width = (d - c0).min(BLOCK);
        let regs = width.div_ceil(16);
        let mut acc = [_mm512_setzero_ps(); BLOCK / 16];
        for &(i, wt) in taps {
            let w = _mm512_set1_ps(wt);
            // SAFETY: the row of tap `i` is inside `memory` (the caller's contract);
            // lanes past `width` are masked off.
            let src = unsafe { memory.as_ptr().add(i as usize * d + c0) };
            for (r, a) in acc.iter_mut().enumerate().take(regs) {
                // SAFETY: lanes 16 r .. width of the tap's block lie inside its row.
                let x = unsafe { _mm512_maskz_loadu_ps(mask(width - 16 * r), src.add(16 * r)) };
                *a = _mm512_add_ps(*a, _mm512_mul_ps(w, x));
            }
        }
        for (r, a) in acc.iter().enumerate().take(regs) {
            // SAFETY: channels c0 + 16 r .. c0 + width lie inside `row`; the rest of the
            // register is masked off.
            unsafe {
                _mm512_mask_storeu_ps(row.as_mut_ptr().add(c0 + 16 * r), mask(width - 16 * r), *a)
            };
        }
    }
}
