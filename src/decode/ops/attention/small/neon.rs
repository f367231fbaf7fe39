//! The NEON build of the narrow-head loops on aarch64, where NEON is the baseline
//! (no detection): the AVX2 build's blocking, block sizes and phases, each 8-lane
//! register of it a pair of 4-lane NEON registers ([`V8`]), with fused
//! multiply-adds as there. Kᵀ is gathered by element copies (NEON has no 8×8
//! register transpose to mirror). It differs from the portable loops only in
//! rounding (fused multiply-adds, the order of each sum), and the tests hold it to
//! the AVX2 build's bound.

use std::arch::aarch64::*;

use super::super::super::softmax_neon::exp4;
use super::super::kernel::{pad, Operands, Scratch, LANES};
use super::super::Dims;
use super::copy_kt as gather_kt;
use super::{block_rows, blocks, score_rows, v_rows, MAX_HEAD, SCORE_REGS};

/// Half of a [`LANES`]-wide register: one NEON register of f32.
const HALF: usize = LANES / 2;

/// One [`LANES`]-wide register of the AVX2 build, as two NEON registers.
#[derive(Clone, Copy)]
struct V8([float32x4_t; 2]);

/// The lanes of the last key register that hold keys (the others are padding).
#[derive(Clone, Copy)]
struct Tail([uint32x4_t; 2]);

#[inline]
#[target_feature(enable = "neon")]
fn splat(x: f32) -> V8 {
    V8([vdupq_n_f32(x); 2])
}

/// # Safety
/// `p` reads [`LANES`] f32.
#[inline]
#[target_feature(enable = "neon")]
unsafe fn load(p: *const f32) -> V8 {
    // SAFETY: the caller's bound; unaligned loads.
    unsafe { V8([vld1q_f32(p), vld1q_f32(p.add(HALF))]) }
}

/// # Safety
/// `p` writes [`LANES`] f32.
#[inline]
#[target_feature(enable = "neon")]
unsafe fn store(p: *mut f32, v: V8) {
    // SAFETY: the caller's bound; unaligned stores.
    unsafe {
        vst1q_f32(p, v.0[0]);
        vst1q_f32(p.add(HALF), v.0[1]);
    }
}

/// `acc + a b`, one rounding per lane.
#[inline]
#[target_feature(enable = "neon")]
fn fma(acc: V8, a: V8, b: V8) -> V8 {
    V8([
        vfmaq_f32(acc.0[0], a.0[0], b.0[0]),
        vfmaq_f32(acc.0[1], a.0[1], b.0[1]),
    ])
}

/// Two-operand functions of [`V8`], each one intrinsic on both halves.
macro_rules! lanewise {
    ($($name:ident = $op:ident;)+) => {$(
        #[inline]
        #[target_feature(enable = "neon")]
        fn $name(a: V8, b: V8) -> V8 {
            V8([$op(a.0[0], b.0[0]), $op(a.0[1], b.0[1])])
        }
    )+};
}

lanewise! {
    mul = vmulq_f32;
    add = vaddq_f32;
    sub = vsubq_f32;
    max = vmaxq_f32;
}

/// The largest lane.
#[inline]
#[target_feature(enable = "neon")]
fn max_all(v: V8) -> f32 {
    vmaxvq_f32(vmaxq_f32(v.0[0], v.0[1]))
}

/// The sum of the lanes.
#[inline]
#[target_feature(enable = "neon")]
fn sum_all(v: V8) -> f32 {
    vaddvq_f32(vaddq_f32(v.0[0], v.0[1]))
}

/// [`exp_approx`](super::super::super::fast_ops::exp_approx) of every lane, bit for bit.
#[inline]
#[target_feature(enable = "neon")]
fn exp8(x: V8) -> V8 {
    V8([exp4(x.0[0]), exp4(x.0[1])])
}

/// The first `keys` lanes (`1..=LANES`) of a register, the ones that hold keys.
#[inline]
#[target_feature(enable = "neon")]
fn tail_mask(keys: usize) -> Tail {
    let (lo, hi): ([u32; HALF], [u32; HALF]) = ([0, 1, 2, 3], [4, 5, 6, 7]);
    let keys = vdupq_n_u32(keys as u32);
    // SAFETY: `lo` and `hi` hold one register each.
    let (lo, hi) = unsafe { (vld1q_u32(lo.as_ptr()), vld1q_u32(hi.as_ptr())) };
    Tail([vcltq_u32(lo, keys), vcltq_u32(hi, keys)])
}

/// `v` with the lanes outside `tail` set to `f32::MIN`.
#[inline]
#[target_feature(enable = "neon")]
fn keep(v: V8, tail: Tail) -> V8 {
    let min = vdupq_n_f32(f32::MIN);
    V8([
        vbslq_f32(tail.0[0], v.0[0], min),
        vbslq_f32(tail.0[1], v.0[1], min),
    ])
}

/// One batch item, as [`one_generic`](super::super::kernel::one_generic) computes it.
///
/// # Safety
/// [`accepts`](super::accepts) must hold for these arguments (`out_len = out.len()`).
#[target_feature(enable = "neon")]
pub(in super::super) unsafe fn one(
    ops: &Operands,
    dims: Dims,
    scratch: &mut Scratch,
    out: &mut [f32],
) {
    one_item!(ops, dims, scratch, out)
}

/// `Σ_kk Q[r, kk] Kᵀ[kk, 0..8 NB]` for `R` rows, the `R × NB` accumulators in
/// registers across the `kk` loop.
///
/// # Safety
/// As [`scores`].
#[target_feature(enable = "neon")]
#[inline]
unsafe fn dot_block<const R: usize, const NB: usize>(
    q: *const f32,
    qw: [usize; 2],
    k: usize,
    kt: *const f32,
    np: usize,
) -> [[V8; NB]; R] {
    let mut acc = [[splat(0.0); NB]; R];
    for kk in 0..k {
        let mut kv = [splat(0.0); NB];
        for (b, x) in kv.iter_mut().enumerate() {
            // SAFETY: row kk < k, register b < NB of Kᵀ (the caller's bound).
            *x = unsafe { load(kt.add(kk * np + b * LANES)) };
        }
        for (r, a) in acc.iter_mut().enumerate() {
            // SAFETY: row r < R, column kk < k of Q (the caller's bound).
            let qv = splat(unsafe { *q.add(r * qw[0] + kk * qw[1]) });
            for (a, &x) in a.iter_mut().zip(&kv) {
                *a = fma(*a, qv, x);
            }
        }
    }
    acc
}

/// `S[r, 0..8 NB] = scale · Σ_kk Q[r, kk] Kᵀ[kk, 0..8 NB]` for `R` rows.
///
/// # Safety
/// `q` reads rows `< R` and columns `< k` through `qw`; `kt` reads `k` rows of
/// stride `np`, `NB` registers each; `s` writes `R` rows of stride `np`, `NB`
/// registers each.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn scores<const R: usize, const NB: usize>(
    q: *const f32,
    qw: [usize; 2],
    k: usize,
    kt: *const f32,
    np: usize,
    scale: V8,
    s: *mut f32,
) {
    // SAFETY: the caller's bounds.
    let acc = unsafe { dot_block::<R, NB>(q, qw, k, kt, np) };
    for (r, a) in acc.iter().enumerate() {
        for (b, &x) in a.iter().enumerate() {
            // SAFETY: row r < R, register b < NB of S (the caller's bound).
            unsafe { store(s.add(r * np + b * LANES), mul(x, scale)) };
        }
    }
}

/// [`scores`] for whole rows, then the softmax on the accumulators: the padding
/// lanes (outside `tail`) set to `f32::MIN`, `exp(x - max)` stored to `p`,
/// `1 / Σ` to `inv`.
///
/// # Safety
/// As [`scores`], with `p` for `s`; `inv` writes `R` values.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "neon")]
#[inline]
unsafe fn scores_softmax<const R: usize, const NB: usize>(
    q: *const f32,
    qw: [usize; 2],
    k: usize,
    kt: *const f32,
    np: usize,
    scale: V8,
    tail: Tail,
    p: *mut f32,
    inv: *mut f32,
) {
    // SAFETY: the caller's bounds, as for `scores`.
    let mut acc = unsafe { dot_block::<R, NB>(q, qw, k, kt, np) };
    let mut mx = [splat(0.0); R];
    for (a, mx) in acc.iter_mut().zip(&mut mx) {
        for x in a.iter_mut() {
            *x = mul(*x, scale);
        }
        a[NB - 1] = keep(a[NB - 1], tail);
        let m = a.iter().fold(splat(f32::MIN), |m, &x| max(m, x));
        *mx = splat(max_all(m));
    }
    for (r, (a, &mx)) in acc.iter().zip(&mx).enumerate() {
        let mut sum = splat(0.0);
        for (b, &x) in a.iter().enumerate() {
            let e = exp8(sub(x, mx));
            // SAFETY: row r < R, register b < NB of P (the caller's bound).
            unsafe { store(p.add(r * np + b * LANES), e) };
            sum = add(sum, e);
        }
        // SAFETY: r < R values of `inv`.
        unsafe { *inv.add(r) = 1.0 / sum_all(sum) };
    }
}

/// One row of `nb` registers of scores into unnormalised probabilities
/// `exp(x - max)`, the padding lanes (outside `tail`) first set to `f32::MIN`;
/// returns `1 / Σ`.
///
/// # Safety
/// `row` holds `nb >= 1` registers.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn softmax_row(row: *mut f32, nb: usize, tail: Tail) -> f32 {
    let last = row.wrapping_add((nb - 1) * LANES);
    // SAFETY: `last` is the row's last register.
    unsafe { store(last, keep(load(last), tail)) };
    let mut mx = splat(f32::MIN);
    for b in 0..nb {
        // SAFETY: register b < nb of the row.
        mx = max(mx, unsafe { load(row.add(b * LANES)) });
    }
    let mx = splat(max_all(mx));
    let mut sum = splat(0.0);
    for b in 0..nb {
        // SAFETY: register b < nb of the row.
        unsafe {
            let e = exp8(sub(load(row.add(b * LANES)), mx));
            store(row.add(b * LANES), e);
            sum = add(sum, e);
        }
    }
    1.0 / sum_all(sum)
}

/// `O[r, :] = inv[r] · Σ_j P[r, j] V[j, :]` for `R` rows of `DB` registers.
///
/// # Safety
/// `p` reads `R` rows of stride `np`, columns `< n`; `v` reads `n` rows of stride
/// `vstride`, `DB` registers each; `inv` reads `R` values; `o` writes rows `< R`,
/// columns `< d <= 8 DB` through `ow`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "neon")]
#[inline]
unsafe fn av<const R: usize, const DB: usize>(
    p: *const f32,
    np: usize,
    n: usize,
    v: *const f32,
    vstride: usize,
    inv: *const f32,
    o: *mut f32,
    ow: [usize; 2],
    d: usize,
) {
    let mut acc = [[splat(0.0); DB]; R];
    for j in 0..n {
        let mut vv = [splat(0.0); DB];
        for (b, x) in vv.iter_mut().enumerate() {
            // SAFETY: row j < n, register b < DB of V (the caller's bound).
            *x = unsafe { load(v.add(j * vstride + b * LANES)) };
        }
        for (r, a) in acc.iter_mut().enumerate() {
            // SAFETY: row r < R, column j < n of P.
            let pv = splat(unsafe { *p.add(r * np + j) });
            for (a, &x) in a.iter_mut().zip(&vv) {
                *a = fma(*a, pv, x);
            }
        }
    }
    let direct = ow[1] == 1 && d == DB * LANES;
    for (r, a) in acc.iter().enumerate() {
        // SAFETY: r < R values of `inv`.
        let iv = splat(unsafe { *inv.add(r) });
        if direct {
            for (b, &x) in a.iter().enumerate() {
                // SAFETY: row r < R, columns b * 8.. < d of a contiguous output row.
                unsafe { store(o.add(r * ow[0] + b * LANES), mul(x, iv)) };
            }
        } else {
            let mut row = [0f32; MAX_HEAD];
            for (b, &x) in a.iter().enumerate() {
                // SAFETY: `row` holds DB <= 2 registers.
                unsafe { store(row.as_mut_ptr().add(b * LANES), mul(x, iv)) };
            }
            for (c, &x) in row[..d].iter().enumerate() {
                // SAFETY: row r < R, column c < d of the output (the caller's bound).
                unsafe { *o.add(r * ow[0] + c * ow[1]) = x };
            }
        }
    }
}
