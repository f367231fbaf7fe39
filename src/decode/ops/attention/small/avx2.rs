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

/// The register and mask types [`block_kernels`] works on.
type Vector = __m256;
type Mask = __m256;

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

/// `op` folded over the lanes of `v`, the result in every lane: halves, then pairs,
/// then neighbours.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn across_lanes(v: __m256, op: impl Fn(__m256, __m256) -> __m256) -> __m256 {
    let v = op(v, _mm256_permute2f128_ps::<1>(v, v));
    let v = op(v, _mm256_permute_ps::<0b0100_1110>(v));
    op(v, _mm256_permute_ps::<0b1011_0001>(v))
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

/// # Safety
/// `p` reads [`LANES`] f32.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn load(p: *const f32) -> __m256 {
    // SAFETY: the caller's bound; an unaligned load.
    unsafe { _mm256_loadu_ps(p) }
}

/// # Safety
/// `p` writes [`LANES`] f32.
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn store(p: *mut f32, v: __m256) {
    // SAFETY: the caller's bound; an unaligned store.
    unsafe { _mm256_storeu_ps(p, v) }
}

/// `acc + a b`, one rounding per lane.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn fma(acc: __m256, a: __m256, b: __m256) -> __m256 {
    _mm256_fmadd_ps(a, b, acc)
}

/// Two-operand functions of `__m256`, one intrinsic each.
macro_rules! lanewise {
    ($($name:ident = $op:ident;)+) => {$(
        #[target_feature(enable = "avx2,fma")]
        #[inline]
        fn $name(a: __m256, b: __m256) -> __m256 {
            $op(a, b)
        }
    )+};
}

lanewise! {
    mul = _mm256_mul_ps;
    add = _mm256_add_ps;
    sub = _mm256_sub_ps;
    max = _mm256_max_ps;
}

/// The largest lane.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn max_all(v: __m256) -> f32 {
    _mm256_cvtss_f32(across_lanes(v, |a, b| _mm256_max_ps(a, b)))
}

/// The sum of the lanes.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn sum_all(v: __m256) -> f32 {
    _mm256_cvtss_f32(across_lanes(v, |a, b| _mm256_add_ps(a, b)))
}

/// `v` with the lanes outside `tail` set to `f32::MIN`.
#[target_feature(enable = "avx2,fma")]
#[inline]
fn keep(v: __m256, tail: __m256) -> __m256 {
    _mm256_blendv_ps(_mm256_set1_ps(f32::MIN), v, tail)
}

block_kernels!("avx2,fma");
