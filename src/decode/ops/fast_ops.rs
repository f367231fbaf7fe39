//! Replacements for two tract kernels that are slow on the decoder's shapes.
//!
//! Profiling the RF-DETR decoder in tract 0.23 (thread CPU time, after the GridSample
//! fix) left two avoidable costs outside the matrix products:
//!
//! - **broadcasting binary ops** that tract cannot specialise (`(1,1700,16,2,2) +
//!   (1,1700,1,2,2)` when computing sampling locations) run at tens of ns per
//!   element; [`FastBroadcast`] merges the axes and runs a plain strided loop;
//! - **softmax over very short rows** (2 sampling points per head, 1700·16 rows per
//!   layer) is dominated by per-row overhead; [`FastSoftmax`] is a plain loop.
//!
//! [`speed_up`] swaps them into an optimised model. Both compute exactly what they
//! replace (up to float rounding) and are checked against tract's ops in the tests.

use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_hir::tract_core::ops::nn::{Softmax, SoftmaxKind};

use crate::text::dims;

/// Longest softmax row [`FastSoftmax`] takes over.
const SHORT_ROW: usize = 16;

/// An elementwise f32 operation with numpy broadcasting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinKind {
    Add,
    Sub,
    Mul,
    Div,
}

impl BinKind {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "Add" => Self::Add,
            "Sub" => Self::Sub,
            "Mul" => Self::Mul,
            "Div" => Self::Div,
            _ => return None,
        })
    }

    /// The ONNX operator's name.
    fn name(self) -> &'static str {
        match self {
            Self::Add => "Add",
            Self::Sub => "Sub",
            Self::Mul => "Mul",
            Self::Div => "Div",
        }
    }
}

/// Broadcasting f32 binary op (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastBroadcast {
    pub kind: BinKind,
    /// Output shape (both inputs broadcast to it).
    pub shape: TVec<usize>,
}

impl super::Kernel for FastBroadcast {
    fn kernel_name(&self) -> StaticName {
        format!("FastBroadcast{}", self.kind.name()).into()
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        let (a, b) = args_2!(inputs);
        let mut out = Tensor::zero::<f32>(&self.shape)?;
        let dst = super::f32s_mut(&mut out)?;
        let (x, y) = (super::f32s(&a)?, super::f32s(&b)?);
        match self.kind {
            BinKind::Add => broadcast(x, a.shape(), y, b.shape(), &self.shape, dst, |p, q| p + q),
            BinKind::Sub => broadcast(x, a.shape(), y, b.shape(), &self.shape, dst, |p, q| p - q),
            BinKind::Mul => broadcast(x, a.shape(), y, b.shape(), &self.shape, dst, |p, q| p * q),
            BinKind::Div => broadcast(x, a.shape(), y, b.shape(), &self.shape, dst, |p, q| p / q),
        }?;
        Ok(out)
    }

    fn output_fact(&self, _inputs: &[&TypedFact]) -> TractResult<TypedFact> {
        Ok(f32::fact(&self.shape[..]))
    }
}

super::tract_op!(FastBroadcast);

/// Element strides of a dense tensor of `shape` read as `out` (0 along broadcast axes).
fn broadcast_strides(shape: &[usize], out: &[usize]) -> TractResult<Vec<usize>> {
    ensure!(
        shape.len() == out.len(),
        "cannot broadcast {} to {}: the ranks differ",
        dims(shape),
        dims(out)
    );
    let mut strides = vec![0; out.len()];
    let mut s = 1;
    for i in (0..out.len()).rev() {
        if shape[i] == out[i] {
            strides[i] = s;
        } else {
            ensure!(
                shape[i] == 1,
                "cannot broadcast {} to {}",
                dims(shape),
                dims(out)
            );
        }
        s *= shape[i];
    }
    Ok(strides)
}

/// `dst = f(a, b)` with numpy broadcasting. Adjacent axes that both inputs walk
/// alike are merged first, so the loop nest is as shallow as the broadcast allows.
fn broadcast(
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    out: &[usize],
    dst: &mut [f32],
    f: impl Fn(f32, f32) -> f32,
) -> TractResult<()> {
    let sa = broadcast_strides(a_shape, out)?;
    let sb = broadcast_strides(b_shape, out)?;
    // Merge axis i into i+1 when both strides are contiguous across the pair.
    let mut dims: Vec<(usize, usize, usize)> = Vec::new();
    for i in 0..out.len() {
        if out[i] == 1 {
            continue;
        }
        match dims.last_mut() {
            Some(last) if last.1 == sa[i] * out[i] && last.2 == sb[i] * out[i] => {
                *last = (last.0 * out[i], sa[i], sb[i]);
            }
            _ => dims.push((out[i], sa[i], sb[i])),
        }
    }
    let (inner, ia, ib) = dims.pop().unwrap_or((1, 0, 0));
    let outer: usize = dims.iter().map(|d| d.0).product();
    let mut idx = vec![0usize; dims.len()];
    let (mut pa, mut pb) = (0usize, 0usize);
    for o in 0..outer {
        let row = &mut dst[o * inner..(o + 1) * inner];
        for (k, d) in row.iter_mut().enumerate() {
            *d = f(a[pa + k * ia], b[pb + k * ib]);
        }
        // Odometer over the outer axes.
        for j in (0..dims.len()).rev() {
            idx[j] += 1;
            pa += dims[j].1;
            pb += dims[j].2;
            if idx[j] < dims[j].0 {
                break;
            }
            pa -= dims[j].1 * dims[j].0;
            pb -= dims[j].2 * dims[j].0;
            idx[j] = 0;
        }
    }
    Ok(())
}

/// Softmax over the last axis of an f32 tensor with short rows.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastSoftmax;

impl FastSoftmax {
    /// Softmax of every `row`-long run of `data`, in place.
    ///
    /// Three passes so the exponential runs over the whole buffer at once (where it
    /// vectorises) instead of row by row: subtract each row's max, exponentiate
    /// everything with [`exp_approx`], normalise each row.
    ///
    /// Rows of two (the deformable attention's two sampling points) take a closed
    /// form instead: `p = 1 / (1 + e^-|a-b|)` for the larger element, `1 - p` for the
    /// other, with no per-row passes.
    ///
    /// The one dispatch point: AVX2 where the x86-64 CPU has it, NEON on
    /// aarch64 (`softmax_neon`), else the portable loops.
    pub fn apply(data: &mut [f32], row: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2, checked just above.
                unsafe { Self::apply_avx2(data, row) };
                return;
            }
        }
        // SAFETY: NEON is the aarch64 baseline.
        #[cfg(target_arch = "aarch64")]
        unsafe {
            super::softmax_neon::softmax(data, row)
        };
        #[cfg(not(target_arch = "aarch64"))]
        Self::apply_generic(data, row);
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn apply_avx2(data: &mut [f32], row: usize) {
        Self::apply_generic(data, row);
    }

    /// The closed form of a row of two, in place.
    #[inline(always)]
    pub(super) fn pair(pair: &mut [f32]) {
        let (a, b) = (pair[0], pair[1]);
        let e = exp_approx(-(a - b).abs());
        let hi = 1.0 / (1.0 + e);
        let lo = e * hi;
        // NaN in, NaN out, as the general path.
        let nan = if (a - b).is_nan() { f32::NAN } else { 0.0 };
        (pair[0], pair[1]) = if a >= b { (hi, lo) } else { (lo, hi) };
        pair[0] += nan;
        pair[1] += nan;
    }

    /// The portable loops: the scalar reference of every SIMD build.
    #[cfg_attr(target_arch = "aarch64", allow(dead_code))]
    #[inline(always)]
    fn apply_generic(data: &mut [f32], row: usize) {
        if row == 2 {
            data.chunks_exact_mut(2).for_each(Self::pair);
            return;
        }
        for r in data.chunks_exact_mut(row) {
            let max = r.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            for v in r.iter_mut() {
                *v -= max;
            }
        }
        for v in data.iter_mut() {
            *v = exp_approx(*v);
        }
        for r in data.chunks_exact_mut(row) {
            let inv = 1.0 / r.iter().sum::<f32>();
            for v in r.iter_mut() {
                *v *= inv;
            }
        }
    }
}

/// The constants of [`exp_approx`], shared with its vector builds.
pub(crate) mod exp_consts {
    pub(crate) const LOG2E: f32 = std::f32::consts::LOG2_E;
    /// ln 2 in two parts (Cody-Waite): `n · LN2_HI` is exact for the n in range.
    pub(crate) const LN2_HI: f32 = 0.693_145_75;
    pub(crate) const LN2_LO: f32 = 1.428_606_8e-6;
    /// 1.5 · 2^23: adding and subtracting it rounds to the nearest integer with
    /// plain SSE2 arithmetic (f32::round would be a libm call, which stops
    /// vectorisation).
    pub(crate) const ROUND: f32 = 12_582_912.0;
}

/// `e^x` for x <= 0 (softmax arguments after the max is subtracted), branch-free so
/// loops over it vectorise: Cody-Waite range reduction to r in [-ln2/2, ln2/2], a
/// degree-6 polynomial, and the power of two through the exponent bits. Relative
/// error below 3e-7 on [-87, 0]; smaller arguments are clamped to -87 (e^-87 ≈ 1.6e-38,
/// nothing next to the row's maximum of 1).
#[inline]
pub fn exp_approx(x: f32) -> f32 {
    use exp_consts::*;
    let x = x.max(-87.0);
    let shifted = x * LOG2E + ROUND;
    let n = shifted - ROUND;
    // The integer n sits in the low mantissa bits of `shifted`: no float-to-int cast.
    let n_bits = shifted.to_bits().wrapping_sub(ROUND.to_bits());
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    p * f32::from_bits(n_bits.wrapping_add(127) << 23)
}

impl super::Kernel for FastSoftmax {
    fn kernel_name(&self) -> StaticName {
        "FastSoftmax".into()
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        super::in_place_rows("FastSoftmax", inputs, Self::apply)
    }
}

super::tract_op!(FastSoftmax);

/// Swaps [`FastBroadcast`] and [`FastSoftmax`] into an optimised model where they
/// apply (f32, static shapes). Returns how many nodes were replaced.
///
/// # Errors
/// When tract rejects a patch (a bug; such a node is left unchanged is not possible,
/// the error is returned).
pub fn speed_up(model: &mut TypedModel) -> TractResult<usize> {
    super::graph_patch::apply_each(model, next_patch)
}

fn next_patch(model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
    for node in model.nodes() {
        let facts: TVec<&TypedFact> = model.node_input_facts(node.id)?;
        if facts.iter().any(|f| f.datum_type != f32::datum_type()) {
            continue;
        }
        if let Some(bin) = node.op_as::<TypedBinOp>() {
            let Some(kind) = BinKind::from_name(bin.0.name()).filter(|_| bin.1.is_none()) else {
                continue;
            };
            let (Some(a), Some(b), Some(out)) = (
                facts[0].shape.as_concrete(),
                facts.get(1).and_then(|f| f.shape.as_concrete()),
                node.outputs[0].fact.shape.as_concrete(),
            ) else {
                continue;
            };
            // Only true broadcasts of equal rank; unicast and scalar cases are ones
            // tract already specialises.
            if a == b
                || a.len() != b.len()
                || a.iter().product::<usize>() <= 1
                || b.iter().product::<usize>() <= 1
            {
                continue;
            }
            let op = FastBroadcast {
                kind,
                shape: out.into(),
            };
            return TypedModelPatch::replace_single_op(model, node, &node.inputs, op).map(Some);
        } else if let Some(sm) = node.op_as::<Softmax>() {
            let Some(shape) = facts[0].shape.as_concrete() else {
                continue;
            };
            let last = shape.len().saturating_sub(1);
            if sm.kind == SoftmaxKind::Softmax
                && sm.quant_output_dt.is_none()
                && sm.axes[..] == [last]
                && shape[last] <= SHORT_ROW
            {
                return TypedModelPatch::replace_single_op(model, node, &node.inputs, FastSoftmax)
                    .map(Some);
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::super::test_util::max_diff;
    use super::*;
    use tract_onnx::tract_hir::tract_core::ops::math;

    fn ramp(shape: &[usize], k: f32) -> Tensor {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|i| (i as f32 * k).sin() * 3.0).collect();
        Tensor::from_shape(shape, &v).unwrap()
    }

    fn eval(op: &dyn TypedOp, inputs: &[&Tensor]) -> Tensor {
        let v = inputs.iter().map(|t| (*t).clone().into_tvalue()).collect();
        op.eval_out_of_plan(v).unwrap().unwrap()[0]
            .clone()
            .into_tensor()
    }

    #[test]
    fn broadcast_ops_match_tracts() {
        let a = ramp(&[1, 7, 4, 2, 2], 0.37);
        let b = ramp(&[1, 7, 1, 2, 2], 0.91);
        let shape: TVec<usize> = tvec![1, 7, 4, 2, 2];
        // Both sides broadcast, on different axes.
        let c = ramp(&[3, 1, 5], 0.21);
        let d = ramp(&[1, 4, 5], 0.77);
        let want = eval(&math::add(), &[&c, &d]);
        let got = eval(
            &FastBroadcast {
                kind: BinKind::Add,
                shape: tvec![3, 4, 5],
            },
            &[&c, &d],
        );
        assert!(max_diff(&got, &want) < 1e-6);
        let cases: [(BinKind, TypedBinOp); 4] = [
            (BinKind::Add, math::add()),
            (BinKind::Sub, math::sub()),
            (BinKind::Mul, math::mul()),
            (BinKind::Div, math::div()),
        ];
        for (kind, theirs) in cases {
            let ours = FastBroadcast {
                kind,
                shape: shape.clone(),
            };
            let want = eval(&theirs, &[&a, &b]);
            let got = eval(&ours, &[&a, &b]);
            assert!(max_diff(&got, &want) < 1e-5, "{kind:?}");
            // Negative control: swapped operands differ for the non-commutative ones.
            if matches!(kind, BinKind::Sub | BinKind::Div) {
                let swapped = eval(&ours, &[&b, &a]);
                assert!(max_diff(&swapped, &want) > 1e-3, "{kind:?}");
            }
        }
    }

    #[test]
    fn exp_approx_is_accurate() {
        let mut worst = (0.0f64, 0.0f32);
        for i in 0..=87_000 {
            let x = (-(i as f32) * 1e-3).max(-87.0);
            let want = f64::from(x).exp();
            let rel = ((f64::from(exp_approx(x)) - want) / want).abs();
            if rel > worst.0 {
                worst = (rel, x);
            }
        }
        assert!(worst.0 < 5e-7, "relative error {} at {}", worst.0, worst.1);
        // Negative control: a plain truncated series is visibly worse, so the check can fail.
        let x = -3.0f32;
        let crude = 1.0 + x + x * x / 2.0;
        assert!(((crude - x.exp()) / x.exp()).abs() > 5e-7);
    }

    #[test]
    fn softmax_matches_tracts() {
        for shape in [[5usize, 3, 2], [40, 9, 2], [4, 2, 16], [3, 7, 18]] {
            let x = ramp(&shape, 0.53);
            let theirs = Softmax::new(tvec![2], None, SoftmaxKind::Softmax);
            let want = eval(&theirs, &[&x]);
            let got = eval(&FastSoftmax, &[&x]);
            assert!(max_diff(&got, &want) < 1e-6, "{shape:?}");
            // Negative control: the softmax over another axis is not what we compute.
            let other = eval(&Softmax::new(tvec![1], None, SoftmaxKind::Softmax), &[&x]);
            assert!(max_diff(&got, &other) > 1e-3);
        }
        // A NaN in a row of two poisons that row only, as in the general path.
        let mut rows = [1.0, f32::NAN, 0.5, 0.25];
        FastSoftmax::apply(&mut rows, 2);
        assert!(rows[0].is_nan() && rows[1].is_nan());
        assert!((rows[2] + rows[3] - 1.0).abs() < 1e-6 && rows[2] > rows[3]);
    }

    /// The largest `|got - want| / (want · u)` over all elements, `u = 2^-24`.
    fn worst_units(got: &[f32], want: &[f32]) -> f64 {
        got.iter()
            .zip(want)
            .map(|(&g, &w)| (f64::from(g) - f64::from(w)).abs() / (f64::from(w) * 2f64.powi(-24)))
            .fold(0.0, f64::max)
    }

    /// The SIMD softmax of this target (AVX2 build on x86-64, NEON on
    /// aarch64) against the portable loops: bit for bit for rows of two,
    /// and within `(2 n + 2) u` of each output for rows of `n` (only the
    /// order of each row's sum differs: both sums of positive terms are
    /// within `(n - 1) u` of the exact one, and the division and product
    /// add a rounding each).
    #[test]
    fn simd_softmax_equals_the_portable_loops() {
        let mut worst = 0.0f64;
        for row in [2usize, 1, 3, 4, 5, 7, 8, 9, 15, 16] {
            for rows in [1usize, 3, 4, 5, 17, 1700] {
                let x = super::super::test_util::random(
                    row * rows,
                    (row * 1000 + rows) as u64,
                    -12.0,
                    12.0,
                );
                let (mut got, mut want) = (x.clone(), x.clone());
                FastSoftmax::apply(&mut got, row);
                FastSoftmax::apply_generic(&mut want, row);
                if row == 2 {
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{rows} rows of two");
                    continue;
                }
                let units = worst_units(&got, &want);
                assert!(
                    units <= (2 * row + 2) as f64,
                    "{rows} rows of {row}: {units} u"
                );
                worst = worst.max(units);
                // Negative control: the smallest input of a row moved by 1e-3
                // (its probability is at most 1 / n, so its output moves by at
                // least (1 - 1 / n) 1e-3 relatively) is far outside the bound.
                let mut moved = x.clone();
                let r = &mut moved[row * (rows / 2)..][..row];
                let min = r.iter().copied().fold(f32::INFINITY, f32::min);
                *r.iter_mut().find(|v| **v == min).unwrap() += 1e-3;
                FastSoftmax::apply_generic(&mut moved, row);
                if row > 1 {
                    let seen = worst_units(&got, &moved);
                    assert!(
                        seen > 100.0 * (2 * row + 2) as f64,
                        "{rows} rows of {row}: {seen} u"
                    );
                }
            }
        }
        eprintln!("softmax, SIMD against portable: worst {worst} u");
    }
}
