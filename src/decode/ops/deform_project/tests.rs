use super::super::deform_sample::{DeformInputs, FastDeformSample};
use super::super::grid_sample::{FastGridSample, FastPadding};
use super::super::test_util::{max_abs_diff, max_diff, random};
use super::*;
use tract_onnx::tract_hir::tract_core::ops::change_axes::AxisOp;
use tract_onnx::tract_hir::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_hir::tract_core::ops::math;

const HEADS: usize = 4;
const DH: usize = 8;
const D: usize = HEADS * DH;
const MAP: [usize; 2] = [7, 6];
const S: usize = MAP[0] * MAP[1];
const LQ: usize = 37;
const P: usize = 2;

fn gs() -> FastGridSample {
    FastGridSample {
        align_corners: false,
        padding: FastPadding::Zeros,
    }
}

/// `memory · W + b` (W as `(D, D)`, x·W) laid out `(H, dh, h, w)`.
fn value_maps(memory: &[f32], w: &[f32], b: &[f32]) -> Vec<f32> {
    let mut v = vec![0f32; D * S];
    for t in 0..S {
        for k in 0..D {
            let x: f32 = (0..D).map(|r| memory[t * D + r] * w[r * D + k]).sum();
            v[k * S + t] = x + b[k];
        }
    }
    v
}

/// W `(D, D)` split per head into `(H, D, dh)`.
fn per_head(w: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; D * D];
    for h in 0..HEADS {
        for r in 0..D {
            for c in 0..DH {
                out[(h * D + r) * DH + c] = w[r * D + h * DH + c];
            }
        }
    }
    out
}

fn fused(w: &[f32], b: &[f32]) -> FastDeformProject {
    FastDeformProject {
        sample: gs(),
        map: MAP,
        weight: Arc::new(Tensor::from_shape(&[HEADS, D, DH], &per_head(w)).unwrap()),
        bias: Arc::new(Tensor::from_shape(&[D], b).unwrap()),
        channel_major: false,
    }
}

#[test]
fn equals_projecting_every_token_then_sampling() {
    let memory = random(S * D, 1, -1.0, 1.0);
    let w = random(D * D, 2, -0.3, 0.3);
    // A large bias, so that getting its share at out-of-map taps wrong shows.
    let b = random(D, 3, 1.0, 3.0);
    // Points well outside the map too: their taps read zeros, bias included.
    let grid = random(HEADS * LQ * P * 2, 4, -1.4, 1.4);
    let weights = random(HEADS * LQ * P, 5, 0.0, 1.0);
    let value = value_maps(&memory, &w, &b);
    let mut want = vec![0f32; D * LQ];
    FastDeformSample { sample: gs() }.sample(
        &DeformInputs {
            value: &value,
            value_shape: [HEADS, DH, MAP[0], MAP[1]],
            grid: &grid,
            grid_shape: [HEADS, LQ, P],
            weights: &weights,
        },
        &mut want,
    );
    let inputs = ProjectInputs {
        memory: &memory,
        grid: &grid,
        weights: &weights,
        queries: LQ,
        points: P,
    };
    let mut got = vec![0f32; D * LQ];
    fused(&w, &b).sample(&inputs, &mut got).unwrap();
    let d = max_abs_diff(&got, &want);
    assert!(d < 1e-5, "{d}");

    // Negative controls: adding the bias once per query (ignoring the taps that fall
    // outside the map), or another W, gives another result.
    let mut once = vec![0f32; D * LQ];
    fused(&w, &[0.0; D]).sample(&inputs, &mut once).unwrap();
    for k in 0..D {
        for q in 0..LQ {
            let a: f32 = (0..P).map(|p| weights[(k / DH * LQ + q) * P + p]).sum();
            once[k * LQ + q] += b[k] * a;
        }
    }
    let d_once = max_abs_diff(&once, &want);
    assert!(
        d_once > 1e-2,
        "bias through padding not exercised: {d_once}"
    );
    let mut w2 = w.clone();
    w2[5 * D + 9] += 0.5;
    let mut other = vec![0f32; D * LQ];
    fused(&w2, &b).sample(&inputs, &mut other).unwrap();
    assert!(max_abs_diff(&other, &want) > 1e-3);
}

/// `memory (1, S, D) -> EinSum(W) -> Add(b) -> heads -> FastDeformSample`, the shape of
/// MSDeformAttn's value path; `transposed_map` lays the tokens out column-major, which
/// is not the row-major map the fused op reads; `channel_major` reads a `(1, D, S)`
/// memory, the projection taking the transpose.
fn sampler_model(transposed_map: bool, channel_major: bool) -> TypedModel {
    let mut m = TypedModel::default();
    let shape = if channel_major { [1, D, S] } else { [1, S, D] };
    let memory = m.add_source("memory", f32::fact(shape)).unwrap();
    let grid = m.add_source("grid", f32::fact([HEADS, LQ, P, 2])).unwrap();
    let weights = m
        .add_source("weights", f32::fact([HEADS, 1, LQ, P]))
        .unwrap();
    let w = m
        .add_const(
            "w",
            Tensor::from_shape(&[D, D], &random(D * D, 6, -0.3, 0.3)).unwrap(),
        )
        .unwrap();
    let b = m
        .add_const(
            "b",
            Tensor::from_shape(&[1, 1, D], &random(D, 7, 1.0, 2.0)).unwrap(),
        )
        .unwrap();
    let expr = if channel_major {
        "akb,kn->abn"
    } else {
        "abk,kn->abn"
    };
    let einsum = EinSum::new(expr.parse().unwrap(), f32::datum_type());
    let mut x = m.wire_node("proj", einsum, &[memory, w]).unwrap()[0];
    x = m.wire_node("bias", math::add(), &[x, b]).unwrap()[0];
    let reshape = |from: &[usize], to: &[usize]| {
        AxisOp::Reshape(
            0,
            from.iter().map(|d| d.to_dim()).collect(),
            to.iter().map(|d| d.to_dim()).collect(),
        )
    };
    // (1, S, D) -> (1, S, H, dh) -> (1, H, dh, S)
    x = m
        .wire_node("heads", reshape(&[1, S, D], &[1, S, HEADS, DH]), &[x])
        .unwrap()[0];
    x = m.wire_node("move", AxisOp::Move(1, 3), &[x]).unwrap()[0];
    if transposed_map {
        x = m
            .wire_node(
                "cols",
                reshape(&[1, HEADS, DH, S], &[1, HEADS, DH, MAP[1], MAP[0]]),
                &[x],
            )
            .unwrap()[0];
        x = m.wire_node("swap", AxisOp::Move(3, 4), &[x]).unwrap()[0];
        x = m
            .wire_node(
                "maps",
                reshape(
                    &[1, HEADS, DH, MAP[0], MAP[1]],
                    &[HEADS, DH, MAP[0], MAP[1]],
                ),
                &[x],
            )
            .unwrap()[0];
    } else {
        x = m
            .wire_node(
                "maps",
                reshape(&[1, HEADS, DH, S], &[HEADS, DH, MAP[0], MAP[1]]),
                &[x],
            )
            .unwrap()[0];
    }
    let out = m
        .wire_node(
            "sample",
            FastDeformSample { sample: gs() },
            &[x, grid, weights],
        )
        .unwrap()[0];
    m.select_output_outlets(&[out]).unwrap();
    m
}

fn run(m: TypedModel) -> Tensor {
    let shape = m
        .input_fact(0)
        .unwrap()
        .shape
        .as_concrete()
        .unwrap()
        .to_vec();
    let inputs = tvec![
        Tensor::from_shape(&shape, &random(S * D, 8, -1.0, 1.0))
            .unwrap()
            .into_tvalue(),
        Tensor::from_shape(
            &[HEADS, LQ, P, 2],
            &random(HEADS * LQ * P * 2, 9, -1.3, 1.3)
        )
        .unwrap()
        .into_tvalue(),
        Tensor::from_shape(&[HEADS, 1, LQ, P], &random(HEADS * LQ * P, 10, 0.0, 1.0))
            .unwrap()
            .into_tvalue(),
    ];
    let out = m.into_runnable().unwrap().run(inputs).unwrap();
    out[0].clone().into_tensor()
}

fn fused_nodes(m: &TypedModel) -> usize {
    m.nodes()
        .iter()
        .filter(|n| n.op_is::<FastDeformProject>())
        .count()
}

fn token_majors(m: &TypedModel) -> usize {
    m.nodes().iter().filter(|n| n.op_is::<TokenMajor>()).count()
}

#[test]
fn the_rewrite_reads_the_projection_off_tracts_ops() {
    for channel_major in [false, true] {
        let want = run(sampler_model(false, channel_major));
        let mut m = sampler_model(false, channel_major);
        assert_eq!(fuse_value_projection(&mut m).unwrap(), 1);
        assert_eq!(fused_nodes(&m), 1);
        // A channel-major memory gets its one token-major copy; a token-major one none.
        assert_eq!(token_majors(&m), usize::from(channel_major));
        let m = m.into_decluttered().unwrap();
        assert!(
            !m.nodes().iter().any(|n| n.op_is::<EinSum>()),
            "the projection of every token is gone"
        );
        let d = max_diff(&run(m), &want);
        assert!(d < 1e-5, "{channel_major}: {d}");
    }
}

#[test]
fn a_map_in_another_token_order_is_left_alone() {
    let want = run(sampler_model(true, false));
    // Negative control: the row-major reading does not reproduce this chain, so the
    // probe check refuses it and the graph computes what it did.
    let mut m = sampler_model(true, false);
    assert_eq!(fuse_value_projection(&mut m).unwrap(), 0);
    assert_eq!(fused_nodes(&m), 0);
    assert_eq!(run(m), want);
}

#[test]
fn every_deformable_sampling_of_the_fixture_decoders_projects_sampled_rows_only() {
    // The design split's memory reaches the projection channel-major, (1, D, h, w); the
    // taps split's after the projectors' layout ops.
    for name in ["decoder_reduced_288.onnx", "decoder_reduced_taps_288.onnx"] {
        fixture_decoder_projects_sampled_rows_only(name);
    }
}

fn fixture_decoder_projects_sampled_rows_only(name: &str) {
    use super::super::deform_sample::fuse_deformable_sampling;
    use super::super::grid_sample::onnx_fast;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    let mut model = onnx_fast()
        .model_for_path(&path)
        .unwrap()
        .into_typed()
        .unwrap()
        .into_decluttered()
        .unwrap();
    let samplers = fuse_deformable_sampling(&mut model).unwrap();
    assert!(samplers > 0);
    let inputs: TVec<TValue> = (0..model.inputs.len())
        .map(|i| {
            let shape = model
                .input_fact(i)
                .unwrap()
                .shape
                .as_concrete()
                .unwrap()
                .to_vec();
            let n = shape.iter().product();
            Tensor::from_shape(&shape, &random(n, 20 + i as u64, -1.0, 1.0))
                .unwrap()
                .into_tvalue()
        })
        .collect();
    let run = |m: TypedModel| {
        m.into_optimized()
            .unwrap()
            .into_runnable()
            .unwrap()
            .run(inputs.clone())
            .unwrap()
    };
    let want = run(model.clone());
    let mut fused = model.clone();
    // The detection queries' samplings (100 queries on 576 tokens) are rewritten; the
    // keypoint branch's over every slot (1700 queries) is not, as projecting its rows
    // would cost more than projecting the memory.
    assert_eq!(
        fuse_value_projection(&mut fused).unwrap(),
        samplers / 2,
        "{name}"
    );
    // The taps split's memory reaches the samplings channel-major, after the projectors'
    // layout ops: one token-major copy serves all its samplings. The reduced design split's
    // reaches them token-major, through its adapter linear to the reduced width: none.
    let expected = usize::from(name == "decoder_reduced_taps_288.onnx");
    assert_eq!(token_majors(&fused), expected, "{name}");
    let got = run(fused.clone());
    for (g, w) in got.iter().zip(&want) {
        let d = max_diff(g, w);
        assert!(d < 1e-5, "{name}: {d}");
    }
    // Negative control: the fused ops without their bias change the outputs.
    for id in 0..fused.nodes().len() {
        if let Some(op) = fused.node(id).op_as::<FastDeformProject>() {
            let mut op = op.clone();
            op.bias = Arc::new(Tensor::zero::<f32>(op.bias.shape()).unwrap());
            fused.node_mut(id).op = Box::new(op);
        }
    }
    let broken = run(fused);
    let d: f32 = broken
        .iter()
        .zip(&want)
        .map(|(g, w)| max_diff(g, w))
        .fold(0.0, f32::max);
    assert!(d > 1e-3, "{name}: {d}");
}

#[test]
fn the_token_major_copy_is_the_transpose() {
    // Sides that are not multiples of the tile (the tiled loops), and sides in whole
    // blocks of 8 (the AVX blocks on x86-64, NEON's blocks of 4 on aarch64), one of
    // them the 432 memory's.
    for (d, s) in [(37, 53), (24, 40), (256, 1296)] {
        let src = random(d * s, 31, -1.0, 1.0);
        let op = TokenMajor {
            channels: d,
            tokens: s,
        };
        let mut dst = vec![0f32; d * s];
        op.transpose(&src, &mut dst);
        assert!(
            (0..d).all(|k| (0..s).all(|t| dst[t * d + k] == src[k * s + t])),
            "{d} x {s}"
        );
        // Negative control: the memory read as already token-major is another tensor.
        assert!(max_abs_diff(&dst, &src) > 0.1);
    }
    let (d, s) = (37, 53);
    let src = random(d * s, 31, -1.0, 1.0);
    let op = TokenMajor {
        channels: d,
        tokens: s,
    };
    // A memory of the wrong size is refused, naming the op.
    let wrong = Tensor::from_shape(&[1, d, s - 1], &src[..d * (s - 1)]).unwrap();
    let err = super::super::Kernel::run(&op, tvec![wrong.into_tvalue()]).unwrap_err();
    assert!(format!("{err}").contains("TokenMajor"), "{err}");
}

/// The SIMD build of this target (AVX2 on x86-64, NEON on aarch64) against
/// the portable loops, bit for bit (both multiply then add, lane for lane),
/// at memory and head widths around the vector widths and past the 32-wide
/// and 128-wide accumulator blocks; the negative control moves one attention weight by
/// 1e-3.
#[test]
fn simd_build_equals_the_portable_loops_bit_for_bit() {
    let (heads, lq, p) = (2, 19, 3);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    // 200: two passes of the 128-channel register block, the second masked.
    for (d, dh) in [(5, 3), (9, 5), (16, 8), (7, 13), (12, 33), (200, 16)] {
        let seed = (d * 100 + dh) as u64;
        let memory = random(S * d, seed, -1.0, 1.0);
        let weight = random(heads * d * dh, seed + 1, -0.3, 0.3);
        let bias = random(heads * dh, seed + 2, -1.0, 1.0);
        let grid = random(heads * lq * p * 2, seed + 3, -1.1, 1.1);
        let mut weights = random(heads * lq * p, seed + 4, 0.0, 1.0);
        let op = FastDeformProject {
            sample: gs(),
            map: MAP,
            weight: Arc::new(Tensor::from_shape(&[heads, d, dh], &weight).unwrap()),
            bias: Arc::new(Tensor::from_shape(&[heads * dh], &bias).unwrap()),
            channel_major: false,
        };
        let run = |weights: &[f32], simd: bool| {
            let inputs = ProjectInputs {
                memory: &memory,
                grid: &grid,
                weights,
                queries: lq,
                points: p,
            };
            let mut out = vec![f32::NAN; heads * dh * lq];
            if simd {
                op.sample(&inputs, &mut out).unwrap();
            } else {
                op.sample_generic(&inputs, &weight, &bias, &mut out)
                    .unwrap();
            }
            out
        };
        let got = run(&weights, true);
        assert_eq!(bits(&got), bits(&run(&weights, false)), "D {d}, dh {dh}");
        weights[4] += 1e-3;
        assert_ne!(
            bits(&got),
            bits(&run(&weights, false)),
            "D {d}, dh {dh}: moved weight unseen"
        );
    }
}
