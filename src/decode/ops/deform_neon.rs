//! The NEON inner loop of [`FastDeformSample`] and [`FastDeformProject`] on
//! aarch64 (the baseline there, no detection): `acc += wt * row`, four lanes
//! at a time, as a multiply then an add. That is the scalar loop's
//! arithmetic lane for lane (Rust never fuses a multiply and an add), so the
//! NEON paths are bit-exact with the portable ones.
//!
//! [`FastDeformSample`]: super::deform_sample::FastDeformSample
//! [`FastDeformProject`]: super::deform_project::FastDeformProject

use std::arch::aarch64::*;

/// Lanes per NEON register of f32.
const LANES: usize = 4;

/// `acc[i] += wt * row[i]`, unfused, over the shorter of the two.
#[inline]
#[target_feature(enable = "neon")]
pub fn axpy(acc: &mut [f32], wt: f32, row: &[f32]) {
    let n = acc.len().min(row.len());
    let whole = n / LANES * LANES;
    let w = vdupq_n_f32(wt);
    for i in (0..whole).step_by(LANES) {
        // SAFETY: i + LANES <= whole <= both lengths; unaligned loads and stores.
        unsafe {
            let a = acc.as_mut_ptr().add(i);
            vst1q_f32(
                a,
                vaddq_f32(vld1q_f32(a), vmulq_f32(w, vld1q_f32(row.as_ptr().add(i)))),
            );
        }
    }
    for (a, &v) in acc[whole..n].iter_mut().zip(&row[whole..n]) {
        *a += wt * v;
    }
}
