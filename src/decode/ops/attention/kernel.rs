//! The per-item loops of [`super::FastAttention`]: portable, AVX2 + FMA on x86-64,
//! and NEON on aarch64 (`neon.rs`).

use tract_onnx::prelude::TractResult;

use super::super::fast_ops::exp_approx;
use super::super::linear::{matmul, Operand};
use super::Dims;

/// Scratch buffers reused across batch items. Rows of Kᵀ, V and the scores are
/// padded with zeros to whole [`LANES`] so the inner loops run on full vectors.
pub(super) struct Scratch {
    /// Kᵀ, `k` rows of `pad(n)`.
    pub(super) kt: Vec<f32>,
    /// V, `n` rows of `pad(d)`.
    pub(super) vv: Vec<f32>,
    /// Scores then probabilities, one row of `pad(n)` per query row.
    pub(super) s: Vec<f32>,
    /// Output rows, one of `pad(d)` per query row, before normalisation.
    pub(super) acc: Vec<f32>,
    /// 1 / the softmax denominator of each query row.
    pub(super) inv: Vec<f32>,
}

impl Scratch {
    /// Zeroed buffers for items of `dims` (the padding stays zero: no loop writes it).
    pub(super) fn new(dims: Dims) -> Self {
        let rows = dims.m1 - dims.m0;
        Scratch {
            kt: vec![0.0; dims.k * pad(dims.n)],
            vv: vec![0.0; dims.n * pad(dims.d)],
            s: vec![0.0; rows * pad(dims.n)],
            acc: vec![0.0; rows * pad(dims.d)],
            inv: vec![0.0; rows],
        }
    }
}

/// Vector width the inner loops are written for (8 f32: one AVX register).
pub(super) const LANES: usize = 8;

pub(super) fn pad(x: usize) -> usize {
    x.div_ceil(LANES) * LANES
}

/// Operations on padded rows (lengths are whole [`LANES`]): portable loops, or AVX2
/// with FMA where the CPU has it.
pub(super) trait Rows {
    /// `y += a * x`.
    fn axpy(y: &mut [f32], a: f32, x: &[f32]);
    /// The largest element.
    fn max(x: &[f32]) -> f32;
    /// The sum of the elements.
    fn sum(x: &[f32]) -> f32;
    /// `sum a[i] * b[i]` (any length).
    fn dot(a: &[f32], b: &[f32]) -> f32;
    /// `out[j] = scale * dot(q, k[j * stride..][..q.len()])` for `j < n` (`out` is
    /// padded; its tail is left for the caller).
    #[inline(always)]
    fn scores(q: &[f32], k: &[f32], stride: usize, n: usize, scale: f32, out: &mut [f32]) {
        for (j, x) in out[..n].iter_mut().enumerate() {
            *x = Self::dot(q, &k[j * stride..j * stride + q.len()]) * scale;
        }
    }
}

/// Plain loops (the compiler vectorises them as the target allows).
#[cfg_attr(target_arch = "aarch64", allow(dead_code))]
pub(super) struct Portable;

impl Rows for Portable {
    #[inline(always)]
    fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
        for (y, &x) in y.iter_mut().zip(x) {
            *y += a * x;
        }
    }

    #[inline(always)]
    fn max(x: &[f32]) -> f32 {
        x.iter().copied().fold(f32::MIN, f32::max)
    }

    #[inline(always)]
    fn sum(x: &[f32]) -> f32 {
        x.iter().sum()
    }

    #[inline(always)]
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }
}

/// AVX2 + FMA intrinsics: one register per [`LANES`]. Left to itself the compiler
/// vectorises these short loops across rows and runs the 3-lane-long rows of this
/// op through its scalar remainder.
#[cfg(target_arch = "x86_64")]
struct Avx2;

#[cfg(target_arch = "x86_64")]
impl Rows for Avx2 {
    #[inline(always)]
    fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
        // SAFETY: `Avx2` is only used below `one_avx2`, which runs only on CPUs with
        // AVX2 and FMA.
        unsafe { avx2::axpy(y, a, x) }
    }

    #[inline(always)]
    fn max(x: &[f32]) -> f32 {
        // SAFETY: as in `axpy`.
        unsafe { avx2::max(x) }
    }

    #[inline(always)]
    fn sum(x: &[f32]) -> f32 {
        // SAFETY: as in `axpy`.
        unsafe { avx2::sum(x) }
    }

    #[inline(always)]
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: as in `axpy`.
        unsafe { avx2::dot(a, b) }
    }

    #[inline(always)]
    fn scores(q: &[f32], k: &[f32], stride: usize, n: usize, scale: f32, out: &mut [f32]) {
        if q.len().is_multiple_of(LANES) && out.len().is_multiple_of(LANES) && out.len() >= n {
            // SAFETY: as in `axpy`; the lengths are what `avx2::scores` asks for.
            unsafe { avx2::scores(q, k, stride, n, scale, out) }
        } else {
            for (j, x) in out[..n].iter_mut().enumerate() {
                *x = Self::dot(q, &k[j * stride..j * stride + q.len()]) * scale;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::LANES;

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
        let n = y.len().min(x.len()) / LANES * LANES;
        let av = _mm256_set1_ps(a);
        for i in (0..n).step_by(LANES) {
            // SAFETY: i + LANES <= n, within both slices; unaligned loads and stores.
            unsafe {
                let yp = y.as_mut_ptr().add(i);
                let xv = _mm256_loadu_ps(x.as_ptr().add(i));
                _mm256_storeu_ps(yp, _mm256_fmadd_ps(av, xv, _mm256_loadu_ps(yp)));
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn reduce(v: __m256, f: impl Fn(f32, f32) -> f32, init: f32) -> f32 {
        let mut lanes = [0f32; LANES];
        // SAFETY: `lanes` holds exactly one register.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) };
        lanes.iter().copied().fold(init, f)
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub fn max(x: &[f32]) -> f32 {
        let mut m = _mm256_set1_ps(f32::MIN);
        for i in (0..x.len() / LANES * LANES).step_by(LANES) {
            // SAFETY: i + LANES <= x.len().
            m = _mm256_max_ps(m, unsafe { _mm256_loadu_ps(x.as_ptr().add(i)) });
        }
        reduce(m, f32::max, f32::MIN)
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub fn sum(x: &[f32]) -> f32 {
        let mut s = _mm256_setzero_ps();
        for i in (0..x.len() / LANES * LANES).step_by(LANES) {
            // SAFETY: i + LANES <= x.len().
            s = _mm256_add_ps(s, unsafe { _mm256_loadu_ps(x.as_ptr().add(i)) });
        }
        reduce(s, |a, b| a + b, 0.0)
    }

    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub fn dot(a: &[f32], b: &[f32]) -> f32 {
        let len = a.len().min(b.len());
        let whole = len / LANES * LANES;
        let mut s = _mm256_setzero_ps();
        for i in (0..whole).step_by(LANES) {
            // SAFETY: i + LANES <= whole <= both lengths.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_ps(a.as_ptr().add(i)),
                    _mm256_loadu_ps(b.as_ptr().add(i)),
                )
            };
            s = _mm256_fmadd_ps(x, y, s);
        }
        let tail: f32 = a[whole..len]
            .iter()
            .zip(&b[whole..len])
            .map(|(x, y)| x * y)
            .sum();
        reduce(s, |a, b| a + b, 0.0) + tail
    }

    /// Eight scores per step: eight dot-product registers, then their horizontal sums
    /// in one register through three rounds of pairwise adds, instead of eight
    /// separate reductions. `q.len()` and `out.len()` must be whole lanes and
    /// `out.len() >= n`; scores at `j >= n` are written as 0.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub fn scores(q: &[f32], k: &[f32], stride: usize, n: usize, scale: f32, out: &mut [f32]) {
        let kdim = q.len();
        let sc = _mm256_set1_ps(scale);
        for j0 in (0..out.len() / LANES * LANES).step_by(LANES) {
            let mut v = [_mm256_setzero_ps(); LANES];
            for (t, acc) in v.iter_mut().enumerate() {
                let j = j0 + t;
                if j >= n {
                    continue;
                }
                let kr = &k[j * stride..j * stride + kdim];
                for i in (0..kdim / LANES * LANES).step_by(LANES) {
                    // SAFETY: i + LANES <= kdim = q.len() = kr.len().
                    let (a, b) = unsafe {
                        (
                            _mm256_loadu_ps(q.as_ptr().add(i)),
                            _mm256_loadu_ps(kr.as_ptr().add(i)),
                        )
                    };
                    *acc = _mm256_fmadd_ps(a, b, *acc);
                }
            }
            // hadd(a, b) = [a01 a23 b01 b23 | a45 a67 b45 b67]: after two rounds each
            // 128-bit half holds partial sums of four registers; adding the halves
            // gives the eight totals in order.
            let g1 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
            let g2 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
            let r = _mm256_add_ps(
                _mm256_permute2f128_ps::<0x20>(g1, g2),
                _mm256_permute2f128_ps::<0x31>(g1, g2),
            );
            // SAFETY: j0 + LANES <= out.len().
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(j0), _mm256_mul_ps(r, sc)) };
        }
    }
}

/// One batch item's operands, each from its first element, with its strides.
pub(super) struct Operands<'a> {
    pub(super) q: &'a [f32],
    pub(super) k: &'a [f32],
    pub(super) v: &'a [f32],
    /// Strides of Q along (M, K), K along (N, K), V along (N, D), O along (M, D).
    pub(super) qw: [usize; 2],
    pub(super) kw: [usize; 2],
    pub(super) vw: [usize; 2],
    pub(super) ow: [usize; 2],
    pub(super) scale: f32,
}

/// Query rows from which an item's products go to `gemm` ([`one_gemm`]): below it the
/// two calls' fixed cost outweighs their faster kernels.
const GEMM_ROWS: usize = 4;

/// One batch item; where the CPU has AVX2 and FMA, the register-blocked loops of
/// [`super::small`] for narrow heads; items of [`GEMM_ROWS`] rows or more on `gemm`
/// ([`one_gemm`]); the rest on the general loops (AVX2 or NEON rows).
///
/// # Errors
/// When an operand's strides reach past its data (a product's check).
pub(super) fn one(
    ops: &Operands,
    dims: Dims,
    scratch: &mut Scratch,
    out: &mut [f32],
) -> TractResult<()> {
    let on_gemm = dims.m1 - dims.m0 >= GEMM_ROWS;
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            if super::small::accepts(ops, dims, scratch, out.len()) {
                // SAFETY: the CPU supports AVX2 and FMA, checked just above, and
                // `accepts` holds.
                unsafe { super::small::one(ops, dims, scratch, out) };
                return Ok(());
            }
            // SAFETY: the CPU supports AVX2 and FMA, checked just above.
            return unsafe { one_avx2(ops, dims, scratch, out, on_gemm) };
        }
    }
    #[cfg(target_arch = "aarch64")]
    if super::small::accepts(ops, dims, scratch, out.len()) {
        // SAFETY: NEON is the aarch64 baseline, and `accepts` holds.
        unsafe { super::small::one(ops, dims, scratch, out) };
        return Ok(());
    }
    #[cfg(target_arch = "aarch64")]
    type Native = super::neon::Neon;
    #[cfg(not(target_arch = "aarch64"))]
    type Native = Portable;
    if on_gemm {
        return one_gemm::<Native>(ops, dims, scratch, out);
    }
    one_generic::<Native>(ops, dims, scratch, out);
    Ok(())
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn one_avx2(
    ops: &Operands,
    dims: Dims,
    scratch: &mut Scratch,
    out: &mut [f32],
    on_gemm: bool,
) -> TractResult<()> {
    if on_gemm {
        return one_gemm::<Avx2>(ops, dims, scratch, out);
    }
    one_generic::<Avx2>(ops, dims, scratch, out);
    Ok(())
}

/// One batch item with both products on `gemm`'s kernels: `S = Q Kᵀ` (Kᵀ read through
/// K's strides), the softmax of `scale · S` on the stored rows, `P V` into the padded
/// accumulator rows, then the rows scaled by `1 / sum` into the output. The detection
/// layers' self-attention (100 rows, 100 keys, heads 32 wide) runs at several times
/// the speed of the row-vector loops this way.
///
/// # Errors
/// When an operand's strides reach past its data.
#[inline(always)]
pub(super) fn one_gemm<R: Rows>(
    ops: &Operands,
    dims: Dims,
    scratch: &mut Scratch,
    out: &mut [f32],
) -> TractResult<()> {
    let Dims { m0, m1, n, k, d } = dims;
    let (rows, np, dp) = (m1 - m0, pad(n), pad(d));
    let Scratch { s, acc, inv, .. } = scratch;
    matmul(
        Operand::new(&mut s[..], np, 1),
        Operand::new(&ops.q[m0 * ops.qw[0]..], ops.qw[0], ops.qw[1]),
        Operand::new(ops.k, ops.kw[1], ops.kw[0]),
        [rows, k, n],
        false,
    )?;
    for (row, inv) in s.chunks_exact_mut(np).zip(inv.iter_mut()) {
        // Padding exponentiates to ~1e-38: nothing next to the row maximum's 1.
        row[n..].fill(f32::MIN);
        let max = R::max(row);
        for x in row.iter_mut() {
            *x = exp_approx((*x - max) * ops.scale);
        }
        *inv = 1.0 / R::sum(row);
    }
    matmul(
        Operand::new(&mut acc[..], dp, 1),
        Operand::new(&s[..], np, 1),
        Operand::new(ops.v, ops.vw[0], ops.vw[1]),
        [rows, n, d],
        false,
    )?;
    write_rows(acc, inv, d, ops.ow, out);
    Ok(())
}

/// Output row `r` = accumulator row `r` (padded to whole lanes) times `inv[r]`, written
/// through the output's strides.
#[inline(always)]
fn write_rows(acc: &[f32], inv: &[f32], d: usize, ow: [usize; 2], out: &mut [f32]) {
    let dp = pad(d);
    for (r, (a, &inv)) in acc.chunks_exact(dp).zip(inv.iter()).enumerate() {
        let dst = out[r * ow[0]..].iter_mut().step_by(ow[1]);
        for (o, &x) in dst.zip(&a[..d]) {
            *o = x * inv;
        }
    }
}

/// Computes all rows of one batch item together: the scores (dot products of
/// contiguous rows, or row-vector updates over N from a gathered Kᵀ), the softmax,
/// the outputs as row-vector updates over D (V read in place or gathered). The
/// row-vector loops run over whole lanes of contiguous, padded rows, and consecutive
/// updates go to different rows, so they are bound by throughput rather than by
/// the latency of one accumulator.
#[inline(always)]
pub(super) fn one_generic<R: Rows>(
    ops: &Operands,
    dims: Dims,
    scratch: &mut Scratch,
    out: &mut [f32],
) {
    let Dims { m0, m1, n, k, d } = dims;
    let (np, dp) = (pad(n), pad(d));
    let Scratch {
        kt,
        vv,
        s,
        acc,
        inv,
    } = scratch;
    // Rows of Q and K contiguous (the usual head layout): scores as dot products,
    // read in place. Otherwise Kᵀ is gathered and the scores built by row updates.
    let direct_qk = ops.qw[1] == 1 && ops.kw[1] == 1;
    // Rows of V contiguous and whole lanes: read in place.
    let direct_v = ops.vw[1] == 1 && d % LANES == 0;
    for j in 0..n {
        if !direct_qk {
            let src = ops.k[j * ops.kw[0]..].iter().step_by(ops.kw[1]);
            for (t, &x) in kt[j..].iter_mut().step_by(np).zip(src.take(k)) {
                *t = x;
            }
        }
        if !direct_v {
            let src = ops.v[j * ops.vw[0]..].iter().step_by(ops.vw[1]);
            for (t, &x) in vv[j * dp..j * dp + d].iter_mut().zip(src) {
                *t = x;
            }
        }
    }
    if direct_qk {
        for (m, row) in (m0..m1).zip(s.chunks_exact_mut(np)) {
            let qr = &ops.q[m * ops.qw[0]..m * ops.qw[0] + k];
            R::scores(qr, ops.k, ops.kw[0], n, ops.scale, row);
        }
    } else {
        s.fill(0.0);
        for kk in 0..k {
            let kr = &kt[kk * np..(kk + 1) * np];
            for (m, row) in (m0..m1).zip(s.chunks_exact_mut(np)) {
                R::axpy(row, ops.q[m * ops.qw[0] + kk * ops.qw[1]] * ops.scale, kr);
            }
        }
    }
    for (row, inv) in s.chunks_exact_mut(np).zip(inv.iter_mut()) {
        // Padding exponentiates to ~1e-38: nothing next to the row maximum's 1.
        row[n..].fill(f32::MIN);
        let max = R::max(row);
        for x in row.iter_mut() {
            *x = exp_approx(*x - max);
        }
        *inv = 1.0 / R::sum(row);
    }
    acc.fill(0.0);
    for j in 0..n {
        let vr = if direct_v {
            &ops.v[j * ops.vw[0]..j * ops.vw[0] + d]
        } else {
            &vv[j * dp..(j + 1) * dp]
        };
        for (a, row) in acc.chunks_exact_mut(dp).zip(s.chunks_exact(np)) {
            R::axpy(a, row[j], vr);
        }
    }
    write_rows(acc, inv, d, ops.ow, out);
}
