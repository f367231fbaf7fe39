//! Scaled dot-product attention over short sequences as one op.
//!
//! The decoder's attention blocks export as `MatMul(Q, Kᵀ) -> Mul(scale) -> Softmax ->
//! MatMul(·, V)`. In the keypoint branch that is 100 instances × 8 heads of 18 tokens
//! each: 800 tiny products. tract runs each `MatMul` as a batched packed product
//! (packing A and B per batch item, then the kernel) and its `Softmax` pays per-row
//! overhead on 18-long rows; per layer that cost several times ONNX Runtime's, most of
//! it overhead rather than arithmetic.
//!
//! [`fuse_attention`] finds the chain in a decluttered model (after tract has folded
//! the head transposes into its `EinSum` axes) and replaces every consumer of the
//! softmax, the `AV` product, by a [`FastAttention`] that reads Q, K and V through their
//! strides and computes, per batch item, `softmax(scale · Q Kᵀ) V` in small contiguous
//! scratch buffers. When tract has split the `AV` product by query rows (it pushes
//! slices of the output through the product), each part becomes its own op over its
//! rows: attention rows are independent, so nothing is computed twice.

use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_core::ops::array::Slice;
use tract_onnx::tract_hir::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_hir::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_hir::tract_core::ops::nn::{Softmax, SoftmaxKind};

use super::fast_ops::exp_approx;

/// What one axis of an operand means in the attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The i-th independent batch axis (instances, heads).
    Batch(u8),
    /// Query rows.
    M,
    /// Key / value rows (the softmax axis).
    N,
    /// The query-key dot product axis.
    K,
    /// Value columns.
    D,
    /// An axis of length 1 that takes no part.
    Unit,
}

/// `O = softmax(scale · Q Kᵀ) V` over batch axes, for query rows `rows` (see the
/// module docs). Each operand's axes are described by [`Role`]s, so any layout tract
/// left (heads before or after tokens) is read in place.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastAttention {
    /// `f32::to_bits` of the factor applied to `Q Kᵀ` before the softmax.
    pub scale_bits: u32,
    /// Query rows computed (`start..end` of Q's M axis).
    pub rows: (usize, usize),
    pub q: TVec<Role>,
    pub k: TVec<Role>,
    pub v: TVec<Role>,
    pub o: TVec<Role>,
    /// Shape of the output.
    pub out_shape: TVec<usize>,
}

/// Strides (in elements) of a dense tensor's axes, gathered by role.
#[derive(Default)]
struct Walk {
    batch: [usize; 4],
    m: usize,
    n: usize,
    k: usize,
    d: usize,
}

fn walk(shape: &[usize], roles: &[Role]) -> TractResult<Walk> {
    ensure!(
        shape.len() == roles.len(),
        "rank {shape:?} vs roles {roles:?}"
    );
    let mut w = Walk::default();
    let mut stride = 1;
    for (&dim, &role) in shape.iter().zip(roles).rev() {
        match role {
            Role::Batch(i) => *w.batch.get_mut(usize::from(i)).context("batch axis")? = stride,
            Role::M => w.m = stride,
            Role::N => w.n = stride,
            Role::K => w.k = stride,
            Role::D => w.d = stride,
            Role::Unit => ensure!(dim == 1, "unit axis of length {dim}"),
        }
        stride *= dim;
    }
    Ok(w)
}

/// Length of the axis with `role` (1 when absent).
fn dim_of(shape: &[usize], roles: &[Role], role: Role) -> usize {
    roles
        .iter()
        .position(|&r| r == role)
        .map_or(1, |p| shape[p])
}

/// Sizes of one attention problem.
#[derive(Clone, Copy)]
struct Dims {
    m0: usize,
    m1: usize,
    n: usize,
    k: usize,
    d: usize,
}

/// Scratch buffers reused across batch items. Rows of Kᵀ, V and the scores are
/// padded with zeros to whole [`LANES`] so the inner loops run on full vectors.
struct Scratch {
    /// Kᵀ, `k` rows of `pad(n)`.
    kt: Vec<f32>,
    /// V, `n` rows of `pad(d)`.
    vv: Vec<f32>,
    /// Scores then probabilities, one row of `pad(n)` per query row.
    s: Vec<f32>,
    /// Output rows, one of `pad(d)` per query row, before normalisation.
    acc: Vec<f32>,
    /// 1 / the softmax denominator of each query row.
    inv: Vec<f32>,
}

/// Vector width the inner loops are written for (8 f32: one AVX register).
const LANES: usize = 8;

fn pad(x: usize) -> usize {
    x.div_ceil(LANES) * LANES
}

/// Operations on padded rows (lengths are whole [`LANES`]): portable loops, or AVX2
/// with FMA where the CPU has it.
trait Rows {
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
struct Portable;

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

impl FastAttention {
    fn scale(&self) -> f32 {
        f32::from_bits(self.scale_bits)
    }

    /// Computes the output from dense Q, K, V of the given shapes.
    ///
    /// # Errors
    /// When the shapes do not fit the roles.
    pub fn compute(
        &self,
        q: (&[f32], &[usize]),
        k: (&[f32], &[usize]),
        v: (&[f32], &[usize]),
        out: &mut [f32],
    ) -> TractResult<()> {
        let (qw, kw, vw) = (
            walk(q.1, &self.q)?,
            walk(k.1, &self.k)?,
            walk(v.1, &self.v)?,
        );
        let ow = walk(&self.out_shape, &self.o)?;
        let dims = Dims {
            m0: self.rows.0,
            m1: self.rows.1,
            n: dim_of(k.1, &self.k, Role::N),
            k: dim_of(q.1, &self.q, Role::K),
            d: dim_of(v.1, &self.v, Role::D),
        };
        ensure!(
            dims.m1 <= dim_of(q.1, &self.q, Role::M)
                && dims.m0 < dims.m1
                && dim_of(k.1, &self.k, Role::K) == dims.k
                && dim_of(v.1, &self.v, Role::N) == dims.n,
            "attention operands {:?} {:?} {:?} do not fit rows {:?}",
            q.1,
            k.1,
            v.1,
            self.rows
        );
        let batches: Vec<usize> = (0u8..)
            .map_while(|i| {
                self.q
                    .iter()
                    .position(|&r| r == Role::Batch(i))
                    .map(|p| q.1[p])
            })
            .collect();
        for (i, &len) in batches.iter().enumerate() {
            let role = Role::Batch(i as u8);
            ensure!(
                dim_of(k.1, &self.k, role) == len
                    && dim_of(v.1, &self.v, role) == len
                    && dim_of(&self.out_shape, &self.o, role) == len,
                "batch axis {i} differs between attention operands"
            );
        }
        ensure!(
            q.0.len() == q.1.iter().product::<usize>()
                && k.0.len() == k.1.iter().product::<usize>()
                && v.0.len() == v.1.iter().product::<usize>()
                && out.len() == self.out_shape.iter().product::<usize>(),
            "attention operand lengths do not match their shapes"
        );
        if out.is_empty() {
            return Ok(());
        }
        let mut scratch = Scratch {
            kt: vec![0.0; dims.k * pad(dims.n)],
            vv: vec![0.0; dims.n * pad(dims.d)],
            s: vec![0.0; (dims.m1 - dims.m0) * pad(dims.n)],
            acc: vec![0.0; (dims.m1 - dims.m0) * pad(dims.d)],
            inv: vec![0.0; dims.m1 - dims.m0],
        };
        let scale = self.scale();
        let mut idx = vec![0usize; batches.len()];
        let total: usize = batches.iter().product();
        let (mut pq, mut pk, mut pv, mut po) = (0usize, 0usize, 0usize, 0usize);
        for _ in 0..total {
            let ops = Operands {
                q: &q.0[pq..],
                k: &k.0[pk..],
                v: &v.0[pv..],
                qw: [qw.m, qw.k],
                kw: [kw.n, kw.k],
                vw: [vw.n, vw.d],
                ow: [ow.m, ow.d],
                scale,
            };
            one(&ops, dims, &mut scratch, &mut out[po..]);
            // Odometer over the batch axes.
            for j in (0..batches.len()).rev() {
                idx[j] += 1;
                pq += qw.batch[j];
                pk += kw.batch[j];
                pv += vw.batch[j];
                po += ow.batch[j];
                if idx[j] < batches[j] {
                    break;
                }
                pq -= qw.batch[j] * batches[j];
                pk -= kw.batch[j] * batches[j];
                pv -= vw.batch[j] * batches[j];
                po -= ow.batch[j] * batches[j];
                idx[j] = 0;
            }
        }
        Ok(())
    }
}

/// One batch item's operands, each from its first element, with its strides.
struct Operands<'a> {
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    /// Strides of Q along (M, K), K along (N, K), V along (N, D), O along (M, D).
    qw: [usize; 2],
    kw: [usize; 2],
    vw: [usize; 2],
    ow: [usize; 2],
    scale: f32,
}

/// One batch item; the AVX2 build of the same loops where the CPU has it.
fn one(ops: &Operands, dims: Dims, scratch: &mut Scratch, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU supports AVX2 and FMA, checked just above.
            unsafe { one_avx2(ops, dims, scratch, out) };
            return;
        }
    }
    one_generic::<Portable>(ops, dims, scratch, out);
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn one_avx2(ops: &Operands, dims: Dims, scratch: &mut Scratch, out: &mut [f32]) {
    one_generic::<Avx2>(ops, dims, scratch, out);
}

/// Computes all rows of one batch item together: the scores (dot products of
/// contiguous rows, or row-vector updates over N from a gathered Kᵀ), the softmax,
/// the outputs as row-vector updates over D (V read in place or gathered). The
/// row-vector loops run over whole lanes of contiguous, padded rows, and consecutive
/// updates go to different rows, so they are bound by throughput rather than by
/// the latency of one accumulator.
#[inline(always)]
fn one_generic<R: Rows>(ops: &Operands, dims: Dims, scratch: &mut Scratch, out: &mut [f32]) {
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
    for (r, (a, &inv)) in acc.chunks_exact(dp).zip(inv.iter()).enumerate() {
        let dst = out[r * ops.ow[0]..].iter_mut().step_by(ops.ow[1]);
        for (o, &x) in dst.zip(&a[..d]) {
            *o = x * inv;
        }
    }
}

impl Op for FastAttention {
    fn name(&self) -> StaticName {
        "FastAttention".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastAttention {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (q, k, v) = args_3!(inputs);
        let mut out = Tensor::zero::<f32>(&self.out_shape)?;
        self.compute(
            (super::f32s(&q)?, q.shape()),
            (super::f32s(&k)?, k.shape()),
            (super::f32s(&v)?, v.shape()),
            super::f32s_mut(&mut out)?,
        )?;
        Ok(tvec!(out.into_tvalue()))
    }
}

impl TypedOp for FastAttention {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(f32::fact(&self.out_shape[..])))
    }
}

/// Replaces every `EinSum(Q,K) -> [Mul(scalar)] -> Softmax -> [Slice of rows] ->
/// EinSum(·,V)` chain of a decluttered f32 model with [`FastAttention`]. Returns how
/// many `AV` products were replaced. Chains whose axes do not read as attention
/// (more than one axis per role, broadcasting, a softmax over another axis) are left
/// alone.
///
/// # Errors
/// When tract rejects a patch (a bug; the model is unchanged then).
pub fn fuse_attention(model: &mut TypedModel) -> TractResult<usize> {
    let mut fused = 0;
    while let Some(patch) = find_one(model)? {
        patch.apply(model)?;
        fused += 1;
    }
    Ok(fused)
}

fn f32_einsum(node: &TypedNode) -> Option<&EinSum> {
    node.op_as::<EinSum>()
        .filter(|e| e.q_params.is_none() && e.operating_dt == f32::datum_type())
}

fn concrete(model: &TypedModel, o: OutletId) -> TractResult<Option<TVec<usize>>> {
    let fact = model.outlet_fact(o)?;
    Ok((fact.datum_type == f32::datum_type())
        .then(|| fact.shape.as_concrete().map(TVec::from))
        .flatten())
}

/// The scalar value of a constant outlet, if it is one.
fn scalar_const(model: &TypedModel, o: OutletId) -> Option<f32> {
    let k = model.outlet_fact(o).ok()?.konst.clone()?;
    (k.len() == 1 && k.datum_type() == f32::datum_type())
        .then(|| k.cast_to_scalar::<f32>().ok())
        .flatten()
}

/// The QKᵀ product's roles: (Q roles, K roles, S roles), or None when the product is
/// not a single-M/N/K batched product without broadcasting.
type QkRoles = (TVec<Role>, TVec<Role>, TVec<Role>);

fn qk_roles(e: &EinSum, q: &[usize], k: &[usize], s: &[usize]) -> Option<QkRoles> {
    let mut rq: TVec<Role> = tvec![Role::Unit; q.len()];
    let mut rk: TVec<Role> = tvec![Role::Unit; k.len()];
    let mut rs: TVec<Role> = tvec![Role::Unit; s.len()];
    let (mut batches, mut counts) = (0u8, [0usize; 3]);
    for axis in e.axes.iter_all_axes() {
        if axis.inputs.len() != 2 || axis.outputs.len() != 1 {
            return None;
        }
        let (pq, pk, ps) = (&axis.inputs[0], &axis.inputs[1], &axis.outputs[0]);
        if pq.len() > 1 || pk.len() > 1 || ps.len() > 1 {
            return None;
        }
        match (pq.first(), pk.first(), ps.first()) {
            (Some(&a), Some(&b), Some(&c)) => {
                if q[a] != k[b] || batches >= 4 {
                    return None;
                }
                let r = Role::Batch(batches);
                batches += 1;
                (rq[a], rk[b], rs[c]) = (r, r, r);
            }
            (Some(&a), None, Some(&c)) => {
                (rq[a], rs[c]) = (Role::M, Role::M);
                counts[0] += 1;
            }
            (None, Some(&b), Some(&c)) => {
                (rk[b], rs[c]) = (Role::N, Role::N);
                counts[1] += 1;
            }
            (Some(&a), Some(&b), None) => {
                if q[a] != k[b] {
                    return None;
                }
                (rq[a], rk[b]) = (Role::K, Role::K);
                counts[2] += 1;
            }
            // Any other axis must have length 1 wherever it appears.
            (a, b, c) => {
                if a.is_some_and(|&a| q[a] != 1)
                    || b.is_some_and(|&b| k[b] != 1)
                    || c.is_some_and(|&c| s[c] != 1)
                {
                    return None;
                }
            }
        }
    }
    (counts == [1, 1, 1]).then_some((rq, rk, rs))
}

/// The AV product's roles: (V roles, O roles), given the roles of its P operand.
fn av_roles(
    e: &EinSum,
    p_slot: usize,
    rp: &[Role],
    p: &[usize],
    v: &[usize],
    o: &[usize],
    rows: usize,
) -> Option<(TVec<Role>, TVec<Role>)> {
    let v_slot = 1 - p_slot;
    let mut rv: TVec<Role> = tvec![Role::Unit; v.len()];
    let mut ro: TVec<Role> = tvec![Role::Unit; o.len()];
    let (mut d_count, mut n_seen, mut m_seen) = (0, false, false);
    for axis in e.axes.iter_all_axes() {
        if axis.inputs.len() != 2 || axis.outputs.len() != 1 {
            return None;
        }
        let (pp, pv, po) = (&axis.inputs[p_slot], &axis.inputs[v_slot], &axis.outputs[0]);
        if pp.len() > 1 || pv.len() > 1 || po.len() > 1 {
            return None;
        }
        let role = pp.first().map(|&a| rp[a]);
        match (pp.first(), pv.first(), po.first()) {
            (Some(&a), Some(&b), Some(&c)) => {
                let Some(Role::Batch(i)) = role else {
                    return None;
                };
                if p[a] != v[b] || p[a] != o[c] {
                    return None;
                }
                (rv[b], ro[c]) = (Role::Batch(i), Role::Batch(i));
            }
            (Some(&a), Some(&b), None) => {
                if role != Some(Role::N) || p[a] != v[b] {
                    return None;
                }
                rv[b] = Role::N;
                n_seen = true;
            }
            (Some(&a), None, Some(&c)) => {
                if role != Some(Role::M) || p[a] != o[c] {
                    return None;
                }
                ro[c] = Role::M;
                m_seen = true;
            }
            (None, Some(&b), Some(&c)) => {
                if v[b] != o[c] {
                    return None;
                }
                (rv[b], ro[c]) = (Role::D, Role::D);
                d_count += 1;
            }
            (Some(&a), None, None) => {
                // Query rows dropped from the output: only when one row is kept.
                match role {
                    Some(Role::M) if rows == 1 => m_seen = true,
                    Some(Role::Unit) => {}
                    _ if p[a] == 1 && role != Some(Role::N) => {}
                    _ => return None,
                }
            }
            (None, b, c) => {
                if b.is_some_and(|&b| v[b] != 1) || c.is_some_and(|&c| o[c] != 1) {
                    return None;
                }
            }
        }
    }
    // Every batch axis of P must be carried through.
    let p_batches = rp.iter().filter(|r| matches!(r, Role::Batch(_))).count();
    let v_batches = rv.iter().filter(|r| matches!(r, Role::Batch(_))).count();
    (d_count == 1 && n_seen && m_seen && p_batches == v_batches).then_some((rv, ro))
}

fn find_one(model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
    for sm in model.nodes() {
        let Some(softmax) = sm.op_as::<Softmax>() else {
            continue;
        };
        if softmax.kind != SoftmaxKind::Softmax
            || softmax.quant_output_dt.is_some()
            || softmax.axes.len() != 1
        {
            continue;
        }
        // Producer side: [Mul by a scalar constant] <- EinSum(Q, K).
        let mut src = model.node(sm.inputs[0].node);
        let mut scale = 1.0f32;
        if let Some(bin) = src.op_as::<TypedBinOp>() {
            if bin.0.name() != "Mul" || bin.1.is_some() || src.inputs.len() != 2 {
                continue;
            }
            let Some(c) = src
                .inputs
                .iter()
                .position(|&i| scalar_const(model, i).is_some())
            else {
                continue;
            };
            scale = scalar_const(model, src.inputs[c]).unwrap_or(1.0);
            src = model.node(src.inputs[1 - c].node);
        }
        let Some(qk) = f32_einsum(src) else {
            continue;
        };
        if src.inputs.len() != 2 {
            continue;
        }
        let (Some(qs), Some(ks), Some(ss)) = (
            concrete(model, src.inputs[0])?,
            concrete(model, src.inputs[1])?,
            concrete(model, OutletId::new(src.id, 0))?,
        ) else {
            continue;
        };
        let Some((rq, rk, rs)) = qk_roles(qk, &qs, &ks, &ss) else {
            continue;
        };
        if rs.get(softmax.axes[0]) != Some(&Role::N) {
            continue;
        }
        let m_axis = rs.iter().position(|&r| r == Role::M);
        // Consumer side: each successor is the AV product, directly or through a
        // slice of query rows.
        for succ in &sm.outputs[0].successors {
            let mut node = model.node(succ.node);
            let mut p_outlet = OutletId::new(sm.id, 0);
            let mut rows = (0, m_axis.map_or(1, |a| ss[a]));
            if let Some(slice) = node.op_as::<Slice>() {
                let (Ok(start), Ok(end)) = (slice.start.to_usize(), slice.end.to_usize()) else {
                    continue;
                };
                if Some(slice.axis) != m_axis || start >= end {
                    continue;
                }
                rows = (start, end);
                p_outlet = OutletId::new(node.id, 0);
                let [next] = &node.outputs[0].successors[..] else {
                    continue;
                };
                node = model.node(next.node);
            }
            let Some(av) = f32_einsum(node) else {
                continue;
            };
            if node.inputs.len() != 2 {
                continue;
            }
            let Some(p_slot) = node.inputs.iter().position(|&i| i == p_outlet) else {
                continue;
            };
            let v_outlet = node.inputs[1 - p_slot];
            if v_outlet == p_outlet {
                continue;
            }
            let (Some(ps), Some(vs), Some(os)) = (
                concrete(model, p_outlet)?,
                concrete(model, v_outlet)?,
                concrete(model, OutletId::new(node.id, 0))?,
            ) else {
                continue;
            };
            let Some((rv, ro)) = av_roles(av, p_slot, &rs, &ps, &vs, &os, rows.1 - rows.0) else {
                continue;
            };
            let op = FastAttention {
                scale_bits: scale.to_bits(),
                rows,
                q: rq.clone(),
                k: rk.clone(),
                v: rv,
                o: ro,
                out_shape: os.clone(),
            };
            let mut patch = TypedModelPatch::new(format!("fuse attention at {}", node.name));
            let q = patch.tap_model(model, src.inputs[0])?;
            let k = patch.tap_model(model, src.inputs[1])?;
            let v = patch.tap_model(model, v_outlet)?;
            let out = patch.wire_node(format!("{}.attention", node.name), op, &[q, k, v])?[0];
            patch.shunt_outside(model, OutletId::new(node.id, 0), out)?;
            return Ok(Some(patch));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{max_diff, random};
    use super::*;
    use tract_onnx::tract_hir::tract_core::ops::math;

    /// Q, K, V (instances, tokens, heads, head width) and the attention chain as tract
    /// leaves it after decluttering. `split`: the AV product in two row ranges, the
    /// first with its single row dropped from the output, as tract splits it when a
    /// slice of the output follows. `softmax_axis`: 3 is the key axis (attention);
    /// another axis makes a chain that is not attention. `transposed`: the operands
    /// as (instances, heads, head width, tokens), so no row is contiguous and the
    /// gathering paths run.
    fn model(split: bool, softmax_axis: usize, transposed: bool) -> TypedModel {
        let shape = if transposed {
            [3, 4, 8, 18]
        } else {
            [3, 18, 4, 8]
        };
        let (q_in, k_in, v_in) = if transposed {
            ("abkm", "abkn", "abkn")
        } else {
            ("ambk", "anbk", "anbk")
        };
        let mut m = TypedModel::default();
        let q = m.add_source("q", f32::fact(shape)).unwrap();
        let k = m.add_source("k", f32::fact(shape)).unwrap();
        let v = m.add_source("v", f32::fact(shape)).unwrap();
        let einsum = |e: String| EinSum::new(e.parse().unwrap(), f32::datum_type());
        let s = m
            .wire_node("qk", einsum(format!("{q_in},{k_in}->abmn")), &[q, k])
            .unwrap()[0];
        let c = m.add_const("scale", tensor4(&[[[[0.35f32]]]])).unwrap();
        let s = m.wire_node("scaled", math::mul(), &[s, c]).unwrap()[0];
        let p = m
            .wire_node(
                "softmax",
                Softmax::new(tvec![softmax_axis], None, SoftmaxKind::Softmax),
                &[s],
            )
            .unwrap()[0];
        // In the V operand the head width plays D: rename k to d.
        let v_in = v_in.replace('k', "d");
        let outputs = if split {
            let p0 = m.wire_node("p0", Slice::new(2, 0, 1), &[p]).unwrap()[0];
            let p1 = m.wire_node("p1", Slice::new(2, 1, 18), &[p]).unwrap()[0];
            vec![
                m.wire_node("av0", einsum(format!("abmn,{v_in}->abd")), &[p0, v])
                    .unwrap()[0],
                // V first and an unusual output layout.
                m.wire_node("av1", einsum(format!("{v_in},abmn->dmba")), &[v, p1])
                    .unwrap()[0],
            ]
        } else {
            vec![
                m.wire_node("av", einsum(format!("abmn,{v_in}->ambd")), &[p, v])
                    .unwrap()[0],
            ]
        };
        m.select_output_outlets(&outputs).unwrap();
        m
    }

    fn run(m: &TypedModel) -> TVec<Tensor> {
        let inputs: TVec<TValue> = (0..3)
            .map(|i| {
                let fact = m.input_fact(i).unwrap();
                let shape = fact.shape.as_concrete().unwrap();
                let n: usize = shape.iter().product();
                Tensor::from_shape(shape, &random(n, 20 + i as u64, -2.0, 2.0))
                    .unwrap()
                    .into_tvalue()
            })
            .collect();
        let plan = SimplePlan::new(m.clone()).unwrap();
        plan.run(inputs)
            .unwrap()
            .into_iter()
            .map(|t| t.into_tensor())
            .collect()
    }

    fn fused_nodes(m: &TypedModel) -> usize {
        m.eval_order()
            .unwrap()
            .iter()
            .filter(|&&n| m.node(n).op_is::<FastAttention>())
            .count()
    }

    #[test]
    fn matches_tracts_einsum_softmax_chain() {
        for (split, transposed) in [(false, false), (true, false), (false, true), (true, true)] {
            let stock = model(split, 3, transposed);
            let want = run(&stock);
            let mut fused = stock.clone();
            let n = fuse_attention(&mut fused).unwrap();
            assert_eq!(n, if split { 2 } else { 1 });
            assert_eq!(fused_nodes(&fused), n, "stock products left running");
            let got = run(&fused);
            for (g, w) in got.iter().zip(&want) {
                let d = max_diff(g, w);
                assert!(d < 1e-5, "split {split}, transposed {transposed}: {d}");
            }
            // Negative control: the same op with another scale disagrees.
            let mut off = fused.clone();
            for node in off.nodes_mut() {
                if let Some(op) = node.op_as_mut::<FastAttention>() {
                    op.scale_bits = (0.7f32).to_bits();
                }
            }
            let wrong = run(&off);
            assert!(max_diff(&wrong[0], &want[0]) > 1e-3);
        }
    }

    #[test]
    fn portable_loops_agree_with_the_dispatched_ones() {
        // One item: Q (17, 16), K (18, 16), V (18, 8) in row-major order; both the
        // in-place and the gathering layouts (strides (1, row) read the transposes).
        let (m, n, k, d) = (17, 18, 16, 8);
        let q = random(m * k, 1, -2.0, 2.0);
        let kk = random(n * k, 2, -2.0, 2.0);
        let v = random(n * d, 3, -2.0, 2.0);
        let dims = Dims {
            m0: 1,
            m1: m,
            n,
            k,
            d,
        };
        for (qw, kw, vw) in [([k, 1], [k, 1], [d, 1]), ([1, m], [1, n], [1, n])] {
            let ops = Operands {
                q: &q,
                k: &kk,
                v: &v,
                qw,
                kw,
                vw,
                ow: [d, 1],
                scale: 0.3,
            };
            let scratch = || Scratch {
                kt: vec![0.0; k * pad(n)],
                vv: vec![0.0; n * pad(d)],
                s: vec![0.0; (m - 1) * pad(n)],
                acc: vec![0.0; (m - 1) * pad(d)],
                inv: vec![0.0; m - 1],
            };
            let mut a = vec![0.0; (m - 1) * d];
            let mut b = vec![1.0; (m - 1) * d];
            one(&ops, dims, &mut scratch(), &mut a);
            one_generic::<Portable>(&ops, dims, &mut scratch(), &mut b);
            let diff = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f32::max);
            assert!(diff < 1e-5, "{diff}");
            // Rows are distributions over V's rows: bounded by V's range.
            assert!(a.iter().all(|x| x.abs() <= 2.0));
        }
    }

    #[test]
    fn leaves_a_softmax_over_query_rows_alone() {
        let mut m = model(false, 2, false);
        assert_eq!(fuse_attention(&mut m).unwrap(), 0);
        assert_eq!(fused_nodes(&m), 0);
    }
}
