use super::super::test_util::{max_abs_diff, random};
use super::*;
use tract_onnx::tract_hir::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_hir::tract_core::ops::math;

/// `x · W + b`, ReLU, by the definition: `x` as M rows of K at `(rs, cs)`, the output
/// as M rows of N at `(ors, ocs)`.
#[allow(clippy::too_many_arguments)]
fn reference(
    x: &[f32],
    (rs, cs): (usize, usize),
    w: &[f32],
    b: Option<&[f32]>,
    relu: bool,
    (m, k, n): (usize, usize, usize),
    (ors, ocs): (usize, usize),
) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = b.map_or(0.0, |b| b[j]) as f64;
            for p in 0..k {
                acc += x[i * rs + p * cs] as f64 * w[p * n + j] as f64;
            }
            let v = acc as f32;
            out[i * ors + j * ocs] = if relu { v.max(0.0) } else { v };
        }
    }
    out
}

/// What `op`, its weight row-major, computes on `x`, by the definition.
fn definition(op: &FastLinear, x: &[f32]) -> Vec<f32> {
    let (k, n) = (op.weight.shape()[0], op.weight.shape()[1]);
    reference(
        x,
        (op.input.row_stride, op.input.col_stride),
        super::super::f32s(&op.weight).unwrap(),
        op.bias.as_ref().map(|b| super::super::f32s(b).unwrap()),
        op.relu,
        (x.len() / k, k, n),
        (op.output.row_stride, op.output.col_stride),
    )
}

fn op(
    x_shape: &[usize],
    k_axis: usize,
    out_shape: &[usize],
    n_axis: usize,
    bias: bool,
    relu: bool,
) -> FastLinear {
    let (k, n) = (x_shape[k_axis], out_shape[n_axis]);
    FastLinear {
        weight: Arc::new(Tensor::from_shape(&[k, n], &random(k * n, 1, -1.0, 1.0)).unwrap()),
        bias: bias.then(|| Arc::new(Tensor::from_shape(&[n], &random(n, 2, -1.0, 1.0)).unwrap())),
        relu,
        input: MatrixLayout::along(x_shape, k_axis).unwrap(),
        output: MatrixLayout::along(out_shape, n_axis).unwrap(),
    }
}

#[test]
fn products_match_the_definition_on_odd_sizes_and_both_layouts() {
    // (input shape, k axis, output shape, n axis): rows then columns, and columns first.
    let cases: [(&[usize], usize, &[usize], usize); 5] = [
        (&[1, 7, 5], 2, &[1, 7, 3], 2),
        (&[1, 100, 256], 2, &[1, 100, 2048], 2),
        (&[1, 33, 17], 1, &[1, 17, 19], 2), // x channel-major: K first, M = 17 after it
        (&[1, 13, 9], 2, &[1, 11, 13], 1),  // output column-major
        (&[1, 1, 64], 2, &[1, 1, 31], 2),   // one row (the top slot)
    ];
    for (xs, ka, os, na) in cases {
        for (bias, relu) in [(false, false), (true, false), (true, true), (false, true)] {
            let op = op(xs, ka, os, na, bias, relu);
            op.check().unwrap();
            let x = random(xs.iter().product(), 3, -1.0, 1.0);
            let mut out = vec![f32::NAN; os.iter().product()];
            op.apply(&x, &mut out).unwrap();
            let k = xs[ka];
            let want = definition(&op, &x);
            let d = max_abs_diff(&out, &want);
            assert!(
                d < 1e-4 * (k as f32).sqrt(),
                "{xs:?} -> {os:?} bias {bias} relu {relu}: {d}"
            );
            if relu {
                assert!(out.iter().all(|&v| v >= 0.0));
            }
        }
    }
}

#[test]
fn column_panels_give_the_products_of_the_matrix() {
    // Products of 32 rows or more read and written along contiguous rows take the panels
    // where the CPU has AVX-512: whole and cut-short panels, every block of rows.
    let cases: [(&[usize], &[usize]); 4] = [
        (&[1, 100, 256], &[1, 100, 2048]),
        (&[1, 45, 64], &[1, 45, 40]), // 45 rows: 3 blocks of 12, then 8, then 1
        (&[1, 576, 256], &[1, 576, 91]),
        (&[1, 39, 7], &[1, 39, 33]),
    ];
    for (xs, os) in cases {
        for (bias, relu) in [(false, false), (true, false), (true, true), (false, true)] {
            let plain = op(xs, 2, os, 2, bias, relu);
            let packed = plain.clone().packed().unwrap();
            #[cfg(target_arch = "x86_64")]
            assert_eq!(
                packed.weight.rank() == 3,
                std::arch::is_x86_feature_detected!("avx512f"),
                "{xs:?} -> {os:?}"
            );
            packed.check().unwrap();
            assert_eq!(packed.macs(), plain.macs());
            let x = random(xs.iter().product(), 3, -1.0, 1.0);
            let mut out = vec![f32::NAN; os.iter().product()];
            packed.apply(&x, &mut out).unwrap();
            let (k, n) = (xs[2], os[2]);
            let want = definition(&plain, &x);
            let d = max_abs_diff(&out, &want);
            assert!(
                d < 1e-4 * (k as f32).sqrt(),
                "{xs:?} -> {os:?} bias {bias} relu {relu}: {d}"
            );
            // Negative control: the panels of another matrix give other products.
            let mut other = plain.clone();
            let w: Vec<f32> = super::super::f32s(&plain.weight)
                .unwrap()
                .iter()
                .map(|v| v + 0.05)
                .collect();
            other.weight = Arc::new(Tensor::from_shape(&[k, n], &w).unwrap());
            let mut moved = vec![0f32; out.len()];
            other.packed().unwrap().apply(&x, &mut moved).unwrap();
            assert!(max_abs_diff(&moved, &want) > 0.05, "{xs:?} -> {os:?}");
        }
    }
    // Few rows, or rows read across their elements, stay with gemm.
    let few = op(&[1, 17, 256], 2, &[1, 17, 1024], 2, true, false);
    assert_eq!(few.packed().unwrap().weight.rank(), 2);
    let across = op(&[1, 64, 40], 1, &[1, 40, 19], 2, true, false);
    assert_eq!(across.packed().unwrap().weight.rank(), 2);
}

#[test]
fn a_wrong_layout_is_caught_by_the_comparison() {
    // Negative control: reading a k-last input as k-first gives other numbers.
    let good = op(&[1, 9, 9], 2, &[1, 9, 5], 2, true, false);
    let mut bad = good.clone();
    bad.input = MatrixLayout::along(&[1, 9, 9], 1).unwrap();
    let x = random(81, 4, -1.0, 1.0);
    let (mut a, mut b) = (vec![0f32; 45], vec![0f32; 45]);
    good.apply(&x, &mut a).unwrap();
    bad.apply(&x, &mut b).unwrap();
    assert!(max_abs_diff(&a, &b) > 0.1);
}

#[test]
fn layouts_with_axes_on_both_sides_and_bad_sizes_are_refused() {
    assert!(MatrixLayout::along(&[2, 3, 4], 1).is_none());
    assert!(MatrixLayout::along(&[1, 3, 4], 1).is_some());
    let mut op = op(&[1, 7, 5], 2, &[1, 7, 3], 2, true, false);
    op.bias = Some(Arc::new(Tensor::from_shape(&[4], &[0f32; 4]).unwrap()));
    assert!(op.check().is_err(), "bias of 4 for 3 columns");
    let good = super::tests::op(&[1, 7, 5], 2, &[1, 7, 3], 2, false, false);
    let mut out = vec![0f32; 21];
    assert!(
        good.apply(&[0f32; 34], &mut out).is_err(),
        "input of 34 for 35"
    );
    let x = Tensor::from_shape(&[1, 5, 7], &[0f32; 35]).unwrap();
    let err = super::super::Kernel::run(&good, tvec![x.into_tvalue()]).unwrap_err();
    assert!(
        format!("{err}").contains("input (1, 5, 7), built for (1, 7, 5)"),
        "{err}"
    );
}

/// `x -> EinSum(axes, W) -> Add(b) -> Max(0)` as tract's ONNX loader wires a linear
/// layer (40 weights, 4 outputs) and a ReLU, with the axes as `axes` names them.
fn linear_model(axes: &str, x_shape: &[usize], w_shape: &[usize], bias: bool) -> TypedModel {
    let mut model = TypedModel::default();
    let x = model.add_source("x", f32::fact(x_shape)).unwrap();
    let w = Tensor::from_shape(w_shape, &random(40, 5, -1.0, 1.0)).unwrap();
    let w = model.add_const("w", w).unwrap();
    let axes: AxesMapping = axes.parse().unwrap();
    let mut y = model
        .wire_node("mm", EinSum::new(axes, f32::datum_type()), &[x, w])
        .unwrap()[0];
    if bias {
        let rank = model.outlet_fact(y).unwrap().rank();
        let mut b_shape = vec![1; rank];
        b_shape[rank - 1] = 4;
        let b = Tensor::from_shape(&b_shape, &random(4, 6, -1.0, 1.0)).unwrap();
        let b = model.add_const("b", b).unwrap();
        y = model.wire_node("add", math::add(), &[y, b]).unwrap()[0];
    }
    let rank = model.outlet_fact(y).unwrap().rank();
    let zero = model
        .add_const("zero", Tensor::from_shape(&vec![1; rank], &[0f32]).unwrap())
        .unwrap();
    y = model.wire_node("relu", math::max(), &[y, zero]).unwrap()[0];
    model.select_output_outlets(&[y]).unwrap();
    model
}

fn run(model: TypedModel, x: &Tensor) -> Tensor {
    let plan = model.into_runnable().unwrap();
    plan.run(tvec![x.clone().into_tvalue()]).unwrap()[0]
        .clone()
        .into_tensor()
}

#[test]
fn the_rewrite_takes_the_bias_and_relu_and_keeps_the_result() {
    // W as (K, N), as (N, K), with the unit batch axis of ONNX broadcasting, and with
    // the contraction over two axes (a head axis and its width, channel-last and
    // channel-first).
    let cases: [(&str, &[usize], &[usize]); 5] = [
        ("amk,kn->amn", &[1, 6, 10], &[10, 4]),
        ("amk,nk->amn", &[1, 6, 10], &[4, 10]),
        ("amk,akn->amn", &[1, 6, 10], &[1, 10, 4]),
        ("mbk,bkn->mn", &[6, 2, 5], &[2, 5, 4]),
        ("bkm,bkn->mn", &[2, 5, 6], &[2, 5, 4]),
    ];
    for (axes, x_shape, w_shape) in cases {
        let x = Tensor::from_shape(x_shape, &random(60, 7, -1.0, 1.0)).unwrap();
        for bias in [true, false] {
            let model = linear_model(axes, x_shape, w_shape, bias);
            let want = run(model.clone(), &x);
            let mut fused = model;
            assert_eq!(fuse_linear(&mut fused).unwrap(), 1, "{axes}");
            let fused = fused.into_decluttered().unwrap();
            let ops: Vec<_> = fused.nodes().iter().map(|n| n.op.name()).collect();
            assert!(ops.iter().any(|o| o == "FastLinear"), "{ops:?}");
            for gone in ["EinSum", "Add", "Max"] {
                assert!(
                    !ops.iter().any(|o| o.contains(gone)),
                    "{gone} left in {ops:?}"
                );
            }
            let got = run(fused, &x);
            let d = super::super::test_util::max_diff(&got, &want);
            assert!(d < 1e-5, "{axes} bias {bias}: {d}");
        }
    }
}

#[test]
fn a_product_of_two_variables_is_left_to_tract() {
    // Negative control: no constant operand, nothing replaced.
    let mut model = TypedModel::default();
    let a = model.add_source("a", f32::fact([1, 6, 10])).unwrap();
    let b = model.add_source("b", f32::fact([10, 4])).unwrap();
    let axes: AxesMapping = "amk,kn->amn".parse().unwrap();
    let y = model
        .wire_node("mm", EinSum::new(axes, f32::datum_type()), &[a, b])
        .unwrap();
    model.select_output_outlets(&y).unwrap();
    assert_eq!(fuse_linear(&mut model).unwrap(), 0);
}

/// The products of a tensor with a constant matrix in `model`.
fn constant_products(model: &TypedModel) -> usize {
    model
        .nodes()
        .iter()
        .filter(|n| n.op_is::<EinSum>())
        .filter(|n| {
            n.inputs.iter().any(|&i| {
                model
                    .outlet_fact(i)
                    .is_ok_and(|f| f.konst.as_ref().is_some_and(|k| k.rank() >= 2))
            })
        })
        .count()
}

#[test]
fn every_constant_product_of_the_fixture_decoders_is_replaced() {
    use crate::decode::engine::tract::{declutter, fuse_hot_ops, read, TractKernels};
    for side in [288, 432] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(format!("decoder_reduced_{side}.onnx"));
        // Decluttered as `prepare` declutters it.
        let mut model = read(&path, TractKernels::Fast).unwrap();
        declutter(&mut model).unwrap();
        // The count can say no: the decluttered graph holds such products.
        assert!(
            constant_products(&model) > 10,
            "{side}: {}",
            constant_products(&model)
        );
        let line = fuse_hot_ops(&mut model).unwrap();
        assert_eq!(constant_products(&model), 0, "{side}: {line}");
    }
}
