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

/// `row = Σ w · memory[i · d ..][.. d]` over `taps`, `d = row.len()`, as the portable
/// loops compute it.
///
/// # Panics
/// When a tap's row lies outside `memory` (the caller's taps come from a map of
/// `memory.len() / d` tokens, so none does).
#[inline(always)]
pub(super) fn portable(row: &mut [f32], taps: &[Tap], memory: &[f32]) {
    let d = row.len();
    row.fill(0.0);
    for &(i, wt) in taps {
        let src = &memory[i as usize * d..(i as usize + 1) * d];
        for (a, &v) in row.iter_mut().zip(src) {
            *a += wt * v;
        }
    }
}

/// [`portable`] with NEON rows (aarch64's baseline).
#[cfg(target_arch = "aarch64")]
pub(super) fn neon(row: &mut [f32], taps: &[Tap], memory: &[f32]) {
    let d = row.len();
    row.fill(0.0);
    for &(i, wt) in taps {
        let src = &memory[i as usize * d..(i as usize + 1) * d];
        // SAFETY: NEON is the aarch64 baseline.
        unsafe { super::super::deform_neon::axpy(row, wt, src) };
    }
}

/// [`portable`] on AVX-512 when the CPU has it (the row held in registers), else
/// `None`.
#[cfg(target_arch = "x86_64")]
pub(super) fn avx512(row: &mut [f32], taps: &[Tap], memory: &[f32]) -> Option<()> {
    let d = row.len();
    let inside = taps
        .iter()
        .all(|&(i, _)| (i as usize + 1) * d <= memory.len());
    if !inside || !std::arch::is_x86_feature_detected!("avx512f") {
        return None;
    }
    // SAFETY: the CPU supports AVX-512F, checked just above, and every tap's row lies
    // inside `memory`.
    unsafe { avx512_rows(row, taps, memory) };
    Some(())
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
