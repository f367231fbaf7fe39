//! Register-blocked loops for attention with narrow heads (K and D up to
//! [`MAX_HEAD`]), as in the keypoint branch: 800 items of 17 query rows, 18 keys and
//! 8-wide heads. Two builds of the same blocking: AVX2 + FMA (`avx2`, detected at
//! run time) and NEON (`neon`, the aarch64 baseline), where each 8-lane register
//! of the AVX2 build is a pair of 4-lane NEON registers.
//!
//! At that size the row-at-a-time loops of [`super::kernel`] spend most of their
//! time on overhead: a horizontal add per score, one short `axpy` per (row, key)
//! that loads and stores its accumulator, scalar output writes. Here every phase
//! keeps a block of rows in registers:
//! - scores: Kᵀ gathered once per item (8×8 register transposes when K's rows are
//!   contiguous), then `S = scale · Q Kᵀ` by broadcast-FMA, a block of query rows
//!   by up to three key registers of accumulators (at most 11, so none spills);
//! - softmax: when the keys fit those three registers (N <= 24), on the
//!   accumulators themselves, the block's rows interleaved; otherwise row by row
//!   over the stored scores. The padding lanes are masked to `f32::MIN` and
//!   [`exp_approx`](super::super::fast_ops::exp_approx) runs vectorised with the
//!   same reduction and polynomial;
//! - `P V`: up to eight (D <= 8) or four (D <= 16) rows of accumulators held
//!   across the key loop, scaled by the softmax's `1 / sum` and stored straight to
//!   the output rows when they are contiguous.
//!
//! Blocks are sized to cover the rows evenly (17 rows: six blocks of 3 for the
//! scores, three of 6 for `P V`); when they still do not divide the rows the last
//! block overlaps its predecessor: every phase writes its rows rather than
//! accumulating into them, so computing a row twice gives the same result.

use super::kernel::{pad, Operands, Scratch, LANES};
use super::Dims;

/// Widest K and D the path takes (two registers).
pub(super) const MAX_HEAD: usize = 2 * LANES;

/// Key registers per pass of the scores.
const SCORE_REGS: usize = 3;

/// Query rows per block of the scores over `nb` key registers: at most 11
/// accumulators, so that with the key registers and the broadcasts they fit the 16
/// registers (12 spill one, and its store and reload lengthen every step).
fn score_rows(nb: usize) -> usize {
    if nb >= 3 {
        3
    } else {
        4
    }
}

/// Largest element index `(a - 1) * w[0] + (b - 1) * w[1]` an operand of `a × b`
/// elements with strides `w` reads, `None` on overflow.
fn last_index(w: [usize; 2], a: usize, b: usize) -> Option<usize> {
    (a - 1)
        .checked_mul(w[0])?
        .checked_add((b - 1).checked_mul(w[1])?)
}

/// Whether [`one`] takes this item: K and D at most [`MAX_HEAD`], and every
/// element the loops read or write within the operands, the output and the scratch
/// (so the raw loads and stores below stay in bounds).
pub(super) fn accepts(ops: &Operands, dims: Dims, scratch: &Scratch, out_len: usize) -> bool {
    let Dims { m0, m1, n, k, d } = dims;
    if n == 0 || k == 0 || d == 0 || m0 >= m1 || k > MAX_HEAD || d > MAX_HEAD {
        return false;
    }
    let rows = m1 - m0;
    let (np, dp) = (pad(n), pad(d));
    let within = |w: [usize; 2], a: usize, b: usize, len: usize| {
        last_index(w, a, b).is_some_and(|i| i < len)
    };
    within(ops.qw, m1, k, ops.q.len())
        && within(ops.kw, n, k, ops.k.len())
        && within(ops.vw, n, d, ops.v.len())
        && within(ops.ow, rows, d, out_len)
        && scratch.kt.len() >= k * np
        && scratch.vv.len() >= n * dp
        && scratch.s.len() >= rows * np
        && scratch.inv.len() >= rows
}

/// Starts of `size`-row blocks covering `rows >= size` rows, the last one moved
/// back to end at `rows` (overlapping its predecessor) when `size` does not divide
/// `rows`.
fn blocks(rows: usize, size: usize) -> impl Iterator<Item = usize> {
    (0..rows / size)
        .map(move |b| b * size)
        .chain((!rows.is_multiple_of(size)).then_some(rows - size))
}

/// Rows per block so that blocks of at most `max` rows cover `rows` evenly (17 rows
/// in blocks of at most 8: three of 6).
fn block_rows(rows: usize, max: usize) -> usize {
    rows.div_ceil(rows.div_ceil(max))
}

/// Kᵀ into `kt` (`k` rows of `np`) by element copies.
fn copy_kt(ops: &Operands, n: usize, k: usize, np: usize, kt: &mut [f32]) {
    for j in 0..n {
        let src = ops.k[j * ops.kw[0]..].iter().step_by(ops.kw[1]);
        for (t, &x) in kt[j..].iter_mut().step_by(np).zip(src.take(k)) {
            *t = x;
        }
    }
}

/// V's rows as the `P V` loops read them, and their stride: in place when they are
/// contiguous whole registers, otherwise copied into `vv` at stride `pad(d)`.
fn v_rows(ops: &Operands, n: usize, d: usize, vv: &mut [f32]) -> (*const f32, usize) {
    let dp = pad(d);
    if ops.vw[1] == 1 && d == dp {
        return (ops.v.as_ptr(), ops.vw[0]);
    }
    for j in 0..n {
        let src = ops.v[j * ops.vw[0]..].iter().step_by(ops.vw[1]);
        for (t, &x) in vv[j * dp..j * dp + d].iter_mut().zip(src) {
            *t = x;
        }
    }
    (vv.as_ptr(), dp)
}

/// `$f::<A, B>$args` for the listed `(A, B)` equal to `$sel`: const-generic block
/// sizes picked at run time. The callers compute `$sel` within the list; a pair
/// outside it is a bug in this module, not bad input.
macro_rules! dispatch {
    ($f:ident $args:tt for $sel:expr; $(($a:literal, $b:literal)),+ $(,)?) => {
        match $sel {
            $(($a, $b) => $f::<$a, $b> $args,)+
            other => unreachable!("{} has no block {:?}", stringify!($f), other),
        }
    };
}

/// The body of [`avx2::one`] and [`neon::one`]: one batch item in three phases
/// (module docs). Each build supplies `gather_kt`, `splat`, `tail_mask` and the
/// block kernels (`scores`, `scores_softmax`, `softmax_row`, `av`) under these
/// names; the body is written once so that the two builds cannot drift apart.
macro_rules! one_item {
    ($ops:ident, $dims:ident, $scratch:ident, $out:ident) => {{
        let (ops, dims, scratch, out) = ($ops, $dims, $scratch, $out);
        let Dims { m0, m1, n, k, d } = dims;
        let rows = m1 - m0;
        let (np, dp) = (pad(n), pad(d));
        let nb = np / LANES;
        gather_kt(ops, n, k, np, &mut scratch.kt);
        let (v, vstride) = v_rows(ops, n, d, &mut scratch.vv);
        let q = ops.q[m0 * ops.qw[0]..].as_ptr();
        let kt = scratch.kt.as_ptr();
        let s = scratch.s.as_mut_ptr();
        let inv = scratch.inv.as_mut_ptr();
        let scale = splat(ops.scale);
        let tail_mask = tail_mask(n - (nb - 1) * LANES);
        let qw = ops.qw;
        if nb <= SCORE_REGS {
            // Whole rows of scores fit the accumulators: the softmax runs on them in
            // registers, several rows interleaved.
            let r = block_rows(rows, score_rows(nb));
            for r0 in blocks(rows, r) {
                // SAFETY: rows r0..r0 + r <= rows of Q lie within `accepts`' bound, of
                // S (P) within rows × np, of 1 / sum within rows; Kᵀ is k × np.
                unsafe {
                    let (qb, pb, ib) = (q.add(r0 * qw[0]), s.add(r0 * np), inv.add(r0));
                    dispatch!(scores_softmax(qb, qw, k, kt, np, scale, tail_mask, pb, ib) for (r, nb);
                        (1, 1), (2, 1), (3, 1), (4, 1),
                        (1, 2), (2, 2), (3, 2), (4, 2),
                        (1, 3), (2, 3), (3, 3));
                }
            }
        } else {
            // Scores a block of rows by SCORE_REGS key registers at a time, then the
            // softmax row by row.
            let r = if rows >= 3 { 3 } else { 1 };
            for r0 in blocks(rows, r) {
                for g in (0..nb).step_by(SCORE_REGS) {
                    // SAFETY: rows r0..r0 + r <= rows of Q lie within `accepts`' bound;
                    // registers g.. of Kᵀ and of S's rows within k × np and rows × np.
                    unsafe {
                        let (qb, ktg, sb) = (
                            q.add(r0 * qw[0]),
                            kt.add(g * LANES),
                            s.add(r0 * np + g * LANES),
                        );
                        dispatch!(scores(qb, qw, k, ktg, np, scale, sb) for (r, (nb - g).min(SCORE_REGS));
                            (1, 1), (1, 2), (1, 3), (3, 1), (3, 2), (3, 3));
                    }
                }
            }
            for r in 0..rows {
                // SAFETY: row r of S lies within rows × np, its 1 / sum within rows.
                unsafe { *inv.add(r) = softmax_row(s.add(r * np), nb, tail_mask) };
            }
        }

        // P V, scaled by 1 / sum, into the output rows.
        let (p, inv) = (s.cast_const(), inv.cast_const());
        let o = out.as_mut_ptr();
        let r = block_rows(rows, if dp > LANES { 4 } else { 8 });
        for r0 in blocks(rows, r) {
            // SAFETY: rows r0..r0 + r <= rows of P and of 1 / sum; V's n rows of dp (in
            // place: within `accepts`' bound, as d == dp; or the gathered copy); output
            // rows r0.. within `accepts`' bound.
            unsafe {
                let (pb, ib, ob) = (p.add(r0 * np), inv.add(r0), o.add(r0 * ops.ow[0]));
                dispatch!(av(pb, np, n, v, vstride, ib, ob, ops.ow, d) for (r, dp / LANES);
                    (1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1), (8, 1),
                    (1, 2), (2, 2), (3, 2), (4, 2));
            }
        }
    }};
}

/// The block kernels of both builds: `dot_block`, `scores`, `scores_softmax`,
/// `softmax_row` and `av`, written once over the primitives each build defines
/// under the same names (`Vector`, `Mask`, `splat`, `load`, `store`, `fma`, `mul`,
/// `add`, `sub`, `max`, `max_all`, `sum_all`, `exp8`, `keep`), with `$feature` as
/// their target features.
macro_rules! block_kernels {
    ($feature:literal) => {
        /// `Σ_kk Q[r, kk] Kᵀ[kk, 0..8 NB]` for `R` rows, the `R × NB` accumulators in
        /// registers across the `kk` loop.
        ///
        /// # Safety
        /// As [`scores`].
        #[target_feature(enable = $feature)]
        #[inline]
        unsafe fn dot_block<const R: usize, const NB: usize>(
            q: *const f32,
            qw: [usize; 2],
            k: usize,
            kt: *const f32,
            np: usize,
        ) -> [[Vector; NB]; R] {
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
        #[target_feature(enable = $feature)]
        #[inline]
        unsafe fn scores<const R: usize, const NB: usize>(
            q: *const f32,
            qw: [usize; 2],
            k: usize,
            kt: *const f32,
            np: usize,
            scale: Vector,
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
        #[target_feature(enable = $feature)]
        #[inline]
        unsafe fn scores_softmax<const R: usize, const NB: usize>(
            q: *const f32,
            qw: [usize; 2],
            k: usize,
            kt: *const f32,
            np: usize,
            scale: Vector,
            tail: Mask,
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
        #[target_feature(enable = $feature)]
        #[inline]
        unsafe fn softmax_row(row: *mut f32, nb: usize, tail: Mask) -> f32 {
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
        #[target_feature(enable = $feature)]
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
    };
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "aarch64")]
mod neon;

#[cfg(target_arch = "x86_64")]
pub(super) use avx2::one;
#[cfg(target_arch = "aarch64")]
pub(super) use neon::one;

#[cfg(test)]
mod tests;
