//! The AVX2 + FMA build of the narrow-head loops (see the parent module).

use std::arch::x86_64::*;

use super::super::kernel::{pad, Operands, Scratch, LANES};
use super::super::Dims;
use super::{block_rows, blocks, copy_kt, score_rows, v_rows, MAX_HEAD, SCORE_REGS};

/// One batch item, as [`one_generic`](super::super::kernel::one_generic) computes it.
///
/// # Safety
/// The CPU must support AVX2 and FMA, and [`accepts`](super::accepts) must hold for these
/// arguments (`out_len = out.len()`).
#[target_feature(enable = "avx2,fma")]
pub(in super::super) unsafe fn one(
    ops: &Operands,
    dims: Dims,
    scratch: &mut Scratch,
    out: &mut [f32],
) {
    one_item!(ops, dims, scratch, out)
}

/// `x` in every lane.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn splat(x: f32) -> __m256 {
    _mm256_set1_ps(x)
}

/// All bits set in the first `keys` lanes (`1..=LANES`), clear in the others.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn tail_mask(keys: usize) -> __m256 {
    _mm256_castsi256_ps(_mm256_cmpgt_epi32(
        _mm256_set1_epi32(keys as i32),
        _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
    ))
}

/// Kᵀ into `kt` (`k` rows of `np`): 8×8 register transposes over blocks of keys
/// when K's rows are contiguous whole registers, element copies otherwise.
#[target_feature(enable = "avx2,fma")]
fn gather_kt(ops: &Operands, n: usize, k: usize, np: usize, kt: &mut [f32]) {
    if ops.kw[1] == 1 && k.is_multiple_of(LANES) {
        for j0 in (0..n).step_by(LANES) {
            // Keys beyond `n` (the last block's padding) transpose as zeros.
            let keys = (n - j0).min(LANES);
            for kk in (0..k).step_by(LANES) {
                let mut r = [_mm256_setzero_ps(); LANES];
                for (t, reg) in r[..keys].iter_mut().enumerate() {
                    let row = &ops.k[(j0 + t) * ops.kw[0] + kk..][..LANES];
                    // SAFETY: `row` is one register long.
                    *reg = unsafe { _mm256_loadu_ps(row.as_ptr()) };
                }
                let c = transpose8(r);
                for (t, col) in c.iter().enumerate() {
                    let dst = &mut kt[(kk + t) * np + j0..][..LANES];
                    // SAFETY: `dst` is one register long.
                    unsafe { _mm256_storeu_ps(dst.as_mut_ptr(), *col) };
                }
            }
        }
        return;
    }
    copy_kt(ops, n, k, np, kt);
}

/// The transpose of eight registers as the rows of an 8×8 block.
#[target_feature(enable = "avx2,fma")]
fn transpose8(r: [__m256; LANES]) -> [__m256; LANES] {
    // Pairs of rows interleaved, then pairs of pairs: each 128-bit half holds four
    // rows of one column; the halves are then recombined across registers.
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(u0, u4),
        _mm256_permute2f128_ps::<0x20>(u1, u5),
        _mm256_permute2f128_ps::<0x20>(u2, u6),
        _mm256_permute2f128_ps::<0x20>(u3, u7),
        _mm256_permute2f128_ps::<0x31>(u0, u4),
        _mm256_permute2f128_ps::<0x31>(u1, u5),
        _mm256_permute2f128_ps::<0x31>(u2, u6),
        _mm256_permute2f128_ps::<0x31>(u3, u7),
    ]
}

/// `Σ_kk Q[r, kk] Kᵀ[kk, 0..8 NB]` for `R` rows, the `R × NB` accumulators in
/// registers across the `kk` loop.
///
/// # Safety
/// As [`scores`].
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn dot_block<const R: usize, const NB: usize>(
    q: *const f32,
    qw: [usize; 2],
    k: usize,
    kt: *const f32,
    np: usize,
) -> [[__m256; NB]; R] {
    let mut acc = [[_mm256_setzero_ps(); NB]; R];
    for kk in 0..k {
        let mut kv = [_mm256_setzero_ps(); NB];
        for (b, x) in kv.iter_mut().enumerate() {
            // SAFETY: row kk < k, register b < NB of Kᵀ (the caller's bound).
            *x = unsafe { _mm256_loadu_ps(kt.add(kk * np + b * LANES)) };
        }
        for (r, a) in acc.iter_mut().enumerate() {
            // SAFETY: row r < R, column kk < k of Q (the caller's bound).
            let qv = unsafe { _mm256_broadcast_ss(&*q.add(r * qw[0] + kk * qw[1])) };
            for (a, &x) in a.iter_mut().zip(&kv) {
                *a = _mm256_fmadd_ps(qv, x, *a);
            }
        }
    }
    acc
}

/// `S[r, 0..8 NB] = scale · Σ_kk Q[r, kk] Kᵀ[kk, 0..8 NB]` for `R` rows, all
/// `R × NB` accumulators in registers across the `kk` loop.
///
/// # Safety
/// AVX2 + FMA; `q` reads rows `< R` and columns `< k` through `qw`; `kt` reads
/// `k` rows of stride `np`, `NB` registers each; `s` writes `R` rows of stride
/// `np`, `NB` registers each.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn scores<const R: usize, const NB: usize>(
    q: *const f32,
    qw: [usize; 2],
    k: usize,
    kt: *const f32,
    np: usize,
    scale: __m256,
    s: *mut f32,
) {
    // SAFETY: the caller's bounds.
    let acc = unsafe { dot_block::<R, NB>(q, qw, k, kt, np) };
    for (r, a) in acc.iter().enumerate() {
        for (b, &x) in a.iter().enumerate() {
            // SAFETY: row r < R, register b < NB of S (the caller's bound).
            unsafe { _mm256_storeu_ps(s.add(r * np + b * LANES), _mm256_mul_ps(x, scale)) };
        }
    }
}

/// [`scores`] for whole rows (`NB` registers cover the `n` keys), then the softmax
/// on the accumulators: the padding lanes of the last register (outside
/// `tail_mask`) set to `f32::MIN`, `exp(x - max)` stored to `p`, `1 / Σ` to `inv`.
/// The `R` rows' reductions and exponentials are independent, so they overlap.
///
/// # Safety
/// As [`scores`], with `p` for `s`; `inv` writes `R` values.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn scores_softmax<const R: usize, const NB: usize>(
    q: *const f32,
    qw: [usize; 2],
    k: usize,
    kt: *const f32,
    np: usize,
    scale: __m256,
    tail_mask: __m256,
    p: *mut f32,
    inv: *mut f32,
) {
    // SAFETY: the caller's bounds, as for `scores`.
    let mut acc = unsafe { dot_block::<R, NB>(q, qw, k, kt, np) };
    let mut mx = [_mm256_setzero_ps(); R];
    for (a, mx) in acc.iter_mut().zip(&mut mx) {
        for x in a.iter_mut() {
            *x = _mm256_mul_ps(*x, scale);
        }
        a[NB - 1] = _mm256_blendv_ps(_mm256_set1_ps(f32::MIN), a[NB - 1], tail_mask);
        let mut m = _mm256_set1_ps(f32::MIN);
        for &x in a.iter() {
            m = _mm256_max_ps(m, x);
        }
        *mx = max_all(m);
    }
    for (r, (a, &mx)) in acc.iter().zip(&mx).enumerate() {
        let mut sum = _mm256_setzero_ps();
        for (b, &x) in a.iter().enumerate() {
            let e = exp8(_mm256_sub_ps(x, mx));
            // SAFETY: row r < R, register b < NB of P (the caller's bound).
            unsafe { _mm256_storeu_ps(p.add(r * np + b * LANES), e) };
            sum = _mm256_add_ps(sum, e);
        }
        // SAFETY: r < R values of `inv`.
        unsafe { *inv.add(r) = 1.0 / _mm256_cvtss_f32(sum_all(sum)) };
    }
}

/// One row of `nb` registers of scores into unnormalised probabilities
/// `exp(x - max)`, the padding lanes of the last register (outside `tail_mask`)
/// first set to `f32::MIN`; returns `1 / Σ`.
///
/// # Safety
/// AVX2 + FMA; `row` holds `nb >= 1` registers.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn softmax_row(row: *mut f32, nb: usize, tail_mask: __m256) -> f32 {
    let last = row.wrapping_add((nb - 1) * LANES);
    // SAFETY: `last` is the row's last register.
    unsafe {
        let x = _mm256_loadu_ps(last);
        _mm256_storeu_ps(
            last,
            _mm256_blendv_ps(_mm256_set1_ps(f32::MIN), x, tail_mask),
        );
    }
    let mut mx = _mm256_set1_ps(f32::MIN);
    for b in 0..nb {
        // SAFETY: register b < nb of the row.
        mx = _mm256_max_ps(mx, unsafe { _mm256_loadu_ps(row.add(b * LANES)) });
    }
    let mx = max_all(mx);
    let mut sum = _mm256_setzero_ps();
    for b in 0..nb {
        // SAFETY: register b < nb of the row.
        unsafe {
            let e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row.add(b * LANES)), mx));
            _mm256_storeu_ps(row.add(b * LANES), e);
            sum = _mm256_add_ps(sum, e);
        }
    }
    1.0 / _mm256_cvtss_f32(sum_all(sum))
}

/// `op` folded over the lanes of `v`, the result in every lane: halves, then pairs,
/// then neighbours.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn across_lanes(v: __m256, op: impl Fn(__m256, __m256) -> __m256) -> __m256 {
    let v = op(v, _mm256_permute2f128_ps::<1>(v, v));
    let v = op(v, _mm256_permute_ps::<0b0100_1110>(v));
    op(v, _mm256_permute_ps::<0b1011_0001>(v))
}

/// The largest lane of `v`, in every lane.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn max_all(v: __m256) -> __m256 {
    across_lanes(v, |a, b| _mm256_max_ps(a, b))
}

/// The sum of the lanes of `v`, in every lane.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn sum_all(v: __m256) -> __m256 {
    across_lanes(v, |a, b| _mm256_add_ps(a, b))
}

/// [`exp_approx`](super::super::super::fast_ops::exp_approx) on eight lanes: the same
/// clamp, Cody-Waite reduction, degree-6 polynomial and exponent-bit scaling.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exp8(x: __m256) -> __m256 {
    use super::super::super::fast_ops::exp_consts::*;
    let round = _mm256_set1_ps(ROUND);
    let x = _mm256_max_ps(x, _mm256_set1_ps(-87.0));
    let shifted = _mm256_fmadd_ps(x, _mm256_set1_ps(LOG2E), round);
    let n = _mm256_sub_ps(shifted, round);
    let n_bits = _mm256_sub_epi32(_mm256_castps_si256(shifted), _mm256_castps_si256(round));
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
    let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
    let mut p = _mm256_set1_ps(1.0 / 720.0);
    for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
    }
    let two_n = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(
        n_bits,
        _mm256_set1_epi32(127),
    )));
    _mm256_mul_ps(p, two_n)
}

/// `O[r, :] = inv[r] · Σ_j P[r, j] V[j, :]` for `R` rows of `DB` registers, the
/// accumulators in registers across the key loop; stored in place when the output
/// rows are contiguous whole registers, element by element otherwise.
///
/// # Safety
/// AVX2 + FMA; `p` reads `R` rows of stride `np`, columns `< n`; `v` reads `n`
/// rows of stride `vstride`, `DB` registers each; `inv` reads `R` values; `o`
/// writes rows `< R`, columns `< d <= 8 DB` through `ow`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
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
    let mut acc = [[_mm256_setzero_ps(); DB]; R];
    for j in 0..n {
        let mut vv = [_mm256_setzero_ps(); DB];
        for (b, x) in vv.iter_mut().enumerate() {
            // SAFETY: row j < n, register b < DB of V (the caller's bound).
            *x = unsafe { _mm256_loadu_ps(v.add(j * vstride + b * LANES)) };
        }
        for (r, a) in acc.iter_mut().enumerate() {
            // SAFETY: row r < R, column j < n of P.
            let pv = unsafe { _mm256_broadcast_ss(&*p.add(r * np + j)) };
            for (a, &x) in a.iter_mut().zip(&vv) {
                *a = _mm256_fmadd_ps(pv, x, *a);
            }
        }
    }
    let direct = ow[1] == 1 && d == DB * LANES;
    for (r, a) in acc.iter().enumerate() {
        // SAFETY: r < R values of `inv`.
        let iv = unsafe { _mm256_broadcast_ss(&*inv.add(r)) };
        if direct {
            for (b, &x) in a.iter().enumerate() {
                // SAFETY: row r < R, columns b * 8.. < d of a contiguous output row.
                unsafe { _mm256_storeu_ps(o.add(r * ow[0] + b * LANES), _mm256_mul_ps(x, iv)) };
            }
        } else {
            let mut row = [0f32; MAX_HEAD];
            for (b, &x) in a.iter().enumerate() {
                // SAFETY: `row` holds DB <= 2 registers.
                unsafe { _mm256_storeu_ps(row.as_mut_ptr().add(b * LANES), _mm256_mul_ps(x, iv)) };
            }
            for (c, &x) in row[..d].iter().enumerate() {
                // SAFETY: row r < R, column c < d of the output (the caller's bound).
                unsafe { *o.add(r * ow[0] + c * ow[1]) = x };
            }
        }
    }
}
