//! Sine and cosine of the query position embedding, vectorised.
//!
//! tract evaluates ONNX `Sin` and `Cos` with the scalar libm call per element; the sine
//! embedding of the query boxes (100 queries x 4 coordinates x 128 frequencies, both
//! functions) then costs milliseconds per view. [`FastTrig`] computes the same functions
//! branch-free, so the loop vectorises: quadrant reduction by π/2 in three parts
//! (Cody-Waite), and the minimax polynomials of Cephes' `sinf` / `cosf` on [-π/4, π/4].
//! The error stays within 2 ulp of the correctly rounded result for |x| ≤ [`FAST_RANGE`];
//! a tensor holding a larger finite argument is evaluated with libm instead.

use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_core::ops::element_wise::ElementWiseOp;

/// Largest |x| the three-part reduction keeps exact enough (q · π/2 with q < 2^13).
pub const FAST_RANGE: f32 = 8192.0;

/// ONNX `Sin` or `Cos` on f32 (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastTrig {
    /// Cosine rather than sine.
    pub cos: bool,
}

/// π/2 in three parts (Cephes' split of π/4, doubled): the first two have few enough
/// mantissa bits that q · part is exact; the third is the f32 nearest the remainder.
pub(super) const PIO2: [f32; 3] = [
    1.570_312_5,
    4.837_513e-4,
    (std::f64::consts::FRAC_PI_2 - 1.570_312_5 - 4.837_512_969_970_703e-4) as f32,
];
pub(super) const TWO_OVER_PI: f32 = std::f32::consts::FRAC_2_PI;
/// 1.5 · 2^23, the rounding constant of [`exp_approx`](super::fast_ops::exp_approx).
pub(super) const ROUND: f32 = super::fast_ops::exp_consts::ROUND;

/// `sin(x)` or, with `quarter` = 1, `cos(x) = sin(x + π/2)`, for |x| ≤ [`FAST_RANGE`].
#[inline(always)]
pub(super) fn sin_quadrant(x: f32, quarter: u32) -> f32 {
    let shifted = x * TWO_OVER_PI + ROUND;
    let q = shifted - ROUND;
    let n = shifted
        .to_bits()
        .wrapping_sub(ROUND.to_bits())
        .wrapping_add(quarter);
    let r = x - q * PIO2[0] - q * PIO2[1] - q * PIO2[2];
    let z = r * r;
    let s = r + r * z * (-1.666_665_5e-1 + z * (8.332_161e-3 + z * -1.951_529_6e-4));
    let c = 1.0 - 0.5 * z + z * z * (4.166_664_6e-2 + z * (-1.388_731_6e-3 + z * 2.443_315_7e-5));
    let v = if n & 1 == 0 { s } else { c };
    f32::from_bits(v.to_bits() ^ ((n & 2) << 30))
}

impl FastTrig {
    /// The function applied to every element of `data`, in place.
    pub fn apply(&self, data: &mut [f32]) {
        // NaN and infinities go the libm way too.
        if data.iter().any(|x| x.is_nan() || x.abs() > FAST_RANGE) {
            let f = if self.cos { f32::cos } else { f32::sin };
            data.iter_mut().for_each(|x| *x = f(*x));
            return;
        }
        let quarter = u32::from(self.cos);
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU supports AVX-512F, checked just above.
                unsafe { apply_avx512(data, quarter) };
                return;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2, checked just above.
                unsafe { apply_avx2(data, quarter) };
                return;
            }
        }
        // SAFETY: NEON is the aarch64 baseline.
        #[cfg(target_arch = "aarch64")]
        unsafe {
            super::trig_neon::apply(data, quarter)
        };
        #[cfg(not(target_arch = "aarch64"))]
        apply_generic(data, quarter);
    }
}

/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn apply_avx512(data: &mut [f32], quarter: u32) {
    apply_generic(data, quarter);
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn apply_avx2(data: &mut [f32], quarter: u32) {
    apply_generic(data, quarter);
}

/// The portable loop: the scalar reference of every SIMD build.
#[cfg_attr(target_arch = "aarch64", allow(dead_code))]
#[inline(always)]
fn apply_generic(data: &mut [f32], quarter: u32) {
    for x in data.iter_mut() {
        *x = sin_quadrant(*x, quarter);
    }
}

impl super::Kernel for FastTrig {
    fn kernel_name(&self) -> StaticName {
        if self.cos { "FastCos" } else { "FastSin" }.into()
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        let mut t = args_1!(inputs).into_tensor();
        self.apply(super::f32s_mut(&mut t)?);
        Ok(t)
    }
}

super::tract_op!(FastTrig);

/// Puts a [`FastTrig`] in place of every f32 `Sin` and `Cos`; returns how many.
///
/// # Errors
/// When tract rejects a patch.
pub fn fast_trig(model: &mut TypedModel) -> TractResult<usize> {
    super::graph_patch::apply_each(model, |model| {
        for node in model.nodes() {
            let Some(op) = node.op_as::<ElementWiseOp>() else {
                continue;
            };
            let cos = match op.0.name().as_ref() {
                "Sin" => false,
                "Cos" => true,
                _ => continue,
            };
            if op.1.is_some() || model.outlet_fact(node.inputs[0])?.datum_type != f32::datum_type()
            {
                continue;
            }
            return TypedModelPatch::replace_single_op(model, node, &node.inputs, FastTrig { cos })
                .map(Some);
        }
        Ok(None)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_hir::tract_core::ops::math;

    /// Largest error in ulp of the result's magnitude (at least that of 1e-3, so values
    /// near a zero of the function are judged on an absolute scale).
    fn worst_ulp(cos: bool, xs: impl Iterator<Item = f32>) -> f64 {
        let op = FastTrig { cos };
        let xs: Vec<f32> = xs.collect();
        let mut got = xs.clone();
        op.apply(&mut got);
        xs.iter()
            .zip(&got)
            .map(|(&x, &g)| {
                let want = if cos {
                    f64::from(x).cos()
                } else {
                    f64::from(x).sin()
                };
                let ulp = f64::from(f32::EPSILON) * want.abs().max(1e-3);
                (f64::from(g) - want).abs() / ulp
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn sin_and_cos_are_within_two_ulp() {
        for cos in [false, true] {
            let near = (-200_000..=200_000).map(|i| i as f32 * 1e-4);
            assert!(worst_ulp(cos, near) <= 2.0, "{cos}");
            let far = (-4096..=4096).map(|i| i as f32 * 1.999 + 0.37);
            assert!(worst_ulp(cos, far) <= 2.0, "{cos}");
        }
        // Negative control: the sine read as the cosine is far off.
        let xs: Vec<f32> = (0..100).map(|i| i as f32 * 0.1).collect();
        let mut got = xs.clone();
        FastTrig { cos: false }.apply(&mut got);
        let off = xs.iter().zip(&got).map(|(x, g)| (x.cos() - g).abs());
        assert!(off.fold(0.0, f32::max) > 0.5);
    }

    #[test]
    fn large_and_special_arguments_follow_libm() {
        let xs = [1e6f32, -3e7, 0.5, f32::INFINITY, f32::NAN, 0.0, -0.0];
        for cos in [false, true] {
            let mut got = xs;
            FastTrig { cos }.apply(&mut got);
            for (x, g) in xs.iter().zip(got) {
                let want = if cos { x.cos() } else { x.sin() };
                assert!(
                    (want.is_nan() && g.is_nan()) || (want - g).abs() <= 1e-6,
                    "{cos} {x}: {g} vs {want}"
                );
            }
        }
    }

    #[test]
    fn the_rewrite_replaces_sin_and_cos_only() {
        let mut m = TypedModel::default();
        let x = m.add_source("x", f32::fact([3, 50])).unwrap();
        let s = m.wire_node("sin", math::sin(), &[x]).unwrap()[0];
        let c = m.wire_node("cos", math::cos(), &[s]).unwrap()[0];
        let e = m.wire_node("exp", math::exp(), &[c]).unwrap()[0];
        m.select_output_outlets(&[e]).unwrap();
        let input: Vec<f32> = (0..150).map(|i| i as f32 * 0.37 - 20.0).collect();
        let input = tvec![Tensor::from_shape(&[3, 50], &input).unwrap().into_tvalue()];
        let want = m
            .clone()
            .into_runnable()
            .unwrap()
            .run(input.clone())
            .unwrap();
        assert_eq!(fast_trig(&mut m).unwrap(), 2);
        let names: Vec<String> = m
            .nodes()
            .iter()
            .map(|n| n.op().name().to_string())
            .collect();
        assert!(names.contains(&"FastSin".into()) && names.contains(&"FastCos".into()));
        let got = m.into_runnable().unwrap().run(input).unwrap();
        let d = super::super::test_util::max_diff(&got[0], &want[0]);
        assert!(d < 1e-6, "{d}");
    }

    /// The SIMD build of this target against the portable loop: NEON on
    /// aarch64 bit for bit, AVX2 or AVX-512 on x86-64 within 1e-6, over the whole fast
    /// range with tails of every length; the negative control, libm's sine
    /// (within 2 ulp of it), differs in some bits.
    #[test]
    fn simd_build_equals_the_portable_loop() {
        let x: Vec<f32> = (0..=400_000)
            .map(|i| (i as f32 - 200_000.0) * (FAST_RANGE / 200_000.0))
            .collect();
        // One value past the range would send the whole tensor to libm, and the
        // comparison below would then test libm, not the SIMD build.
        assert!(x.iter().all(|v| v.abs() <= FAST_RANGE));
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for cos in [false, true] {
            for tail in 0..4 {
                let n = x.len() - tail;
                let (mut got, mut want) = (x[..n].to_vec(), x[..n].to_vec());
                FastTrig { cos }.apply(&mut got);
                apply_generic(&mut want, u32::from(cos));
                if cfg!(target_arch = "aarch64") {
                    assert_eq!(bits(&got), bits(&want), "cos {cos}, tail {tail}");
                } else {
                    // The x86-64 builds are checked to the accuracy the module
                    // promises, in absolute terms (2 ulp of values at most 1
                    // each, so within 1e-6 of each other; near a zero the ulp
                    // distance itself can be large).
                    let worst = super::super::test_util::max_abs_diff(&got, &want);
                    assert!(worst <= 1e-6, "cos {cos}, tail {tail}: {worst}");
                }
            }
        }
        let mut want = x.clone();
        apply_generic(&mut want, 0);
        let differ = x
            .iter()
            .zip(&want)
            .filter(|(v, w)| v.sin().to_bits() != w.to_bits())
            .count();
        assert!(differ > 1000, "libm's sine differs in only {differ} values");
    }
}
