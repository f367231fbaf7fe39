//! The committed decoder fixtures load and run with every engine this build has, and
//! the fast GridSample changes no result.

use std::path::PathBuf;

use hailo_edge::decode::engine::tract::{TractDecoder, TractKernels};
use hailo_edge::decode::keypoints::{top_detections, AffineMapping};
use hailo_edge::decode::{Decoder, FeatureMaps, TAPS};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

fn fill(maps: &mut FeatureMaps, seed: u64) {
    let mut s = seed | 1;
    for i in 0..TAPS {
        for v in maps.map_mut(i) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            *v = ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
        }
    }
}

#[test]
fn decoder_fixtures_have_the_real_output_shapes() {
    for (side, grid) in [(288, 24), (432, 36)] {
        let mut dec = TractDecoder::load(
            &fixture(&format!("decoder_{side}.onnx")),
            TractKernels::Fast,
        )
        .unwrap();
        assert_eq!(dec.input_shape(), [1, 384, grid, grid]);
        let mut maps = dec.new_maps();
        fill(&mut maps, 3);
        let out = dec.run(&mut maps).unwrap();
        assert_eq!(out.queries(), 100);
        assert_eq!(out.classes(), 91);
        assert_eq!(out.keypoints_per_query(), 17);
        assert!(out.keypoints.iter().all(|v| v.is_finite()));
        let top = top_detections(
            &out,
            0,
            1,
            (side as f32, side as f32),
            &AffineMapping::IDENTITY,
        );
        assert_eq!(top[0].keypoints.len(), 17);
        // The buffers come back to the maps after a run: the next fill writes in place.
        let before = maps.map(0).as_ptr();
        fill(&mut maps, 4);
        assert_eq!(maps.map(0).as_ptr(), before);
        // Different inputs give different outputs (the graph really reads its inputs).
        let out2 = dec.run(&mut maps).unwrap();
        assert!(out.max_abs_diff(&out2).unwrap() > 1e-4);
    }
}

#[test]
fn fast_kernels_match_tracts_own_on_the_decoder() {
    let path = fixture("decoder_288.onnx");
    let mut fast = TractDecoder::load(&path, TractKernels::Fast).unwrap();
    let mut stock = TractDecoder::load(&path, TractKernels::Stock).unwrap();
    let mut maps = fast.new_maps();
    fill(&mut maps, 9);
    let (d, changed) = agreement(&mut fast, &mut stock, &mut maps, (2, 1234));
    assert!(d < 1e-4, "fast kernels vs stock tract: {d}");
    // Negative control: a one-element change of one input map shows up.
    assert!(changed > 1e-5);
}

/// The largest output difference of decoders `a` and `b` on the same maps, and that
/// of `a` before and after adding 5 to element `at` (row-major) of map `map`.
fn agreement(
    a: &mut dyn Decoder,
    b: &mut dyn Decoder,
    maps: &mut FeatureMaps,
    (map, at): (usize, usize),
) -> (f32, f32) {
    let x = a.run(maps).unwrap();
    let y = b.run(maps).unwrap();
    *maps.map_mut(map).iter_mut().nth(at).unwrap() += 5.0;
    let z = a.run(maps).unwrap();
    (x.max_abs_diff(&y).unwrap(), x.max_abs_diff(&z).unwrap())
}

#[test]
fn reference_backbone_fixtures_have_the_hef_shapes() {
    use tract_onnx::prelude::*;
    for (side, grid) in [(288usize, 24usize), (432, 36)] {
        let model = tract_onnx::onnx()
            .model_for_path(fixture(&format!("backbone_{side}.onnx")))
            .unwrap()
            .into_optimized()
            .unwrap()
            .into_runnable()
            .unwrap();
        let image =
            Tensor::from_shape(&[1, side, side, 3], &vec![128.0f32; side * side * 3]).unwrap();
        let out = model.run(tvec!(image.into_tvalue())).unwrap();
        assert_eq!(out.len(), 4);
        for t in &out {
            assert_eq!(t.shape(), &[1, grid, grid, 384]);
        }
    }
}

#[test]
fn bad_paths_and_graphs_are_named() {
    let err = TractDecoder::load(&fixture("no_such.onnx"), TractKernels::Fast).unwrap_err();
    assert!(err.to_string().contains("no_such.onnx"), "{err}");
    // The backbone is a valid ONNX but not a decoder.
    let err = TractDecoder::load(&fixture("backbone_288.onnx"), TractKernels::Fast).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("backbone_288.onnx") && msg.contains("dets"),
        "{msg}"
    );
}

#[cfg(feature = "ort")]
#[test]
fn ort_engine_agrees_with_tract_when_the_library_is_there() {
    use hailo_edge::decode::engine::ort::{available, OrtDecoder};
    if let Err(why) = available() {
        eprintln!("skipping the ONNX Runtime comparison: {why}");
        return;
    }
    let path = fixture("decoder_288.onnx");
    let mut ort = OrtDecoder::load(&path, 1).unwrap();
    let mut tract = TractDecoder::load(&path, TractKernels::Fast).unwrap();
    let mut maps = tract.new_maps();
    fill(&mut maps, 5);
    let (d, changed) = agreement(&mut ort, &mut tract, &mut maps, (0, 7));
    assert!(d < 1e-3, "ort vs tract: {d}");
    assert!(changed > 1e-5, "negative control");
}

/// The whole decode path on the fixtures: reference backbone -> quantised NHWC device
/// buffers -> dequantised NCHW maps -> decoder -> top detection in camera pixels.
#[test]
fn backbone_to_keypoints_through_quantised_buffers() {
    use hailo_edge::decode::input::DeviceMap;
    use hailo_edge::hef::{DataType, QuantInfo, Quantization};
    use tract_onnx::prelude::*;

    let side = 288usize;
    let backbone = tract_onnx::onnx()
        .model_for_path(fixture("backbone_288.onnx"))
        .unwrap()
        .into_optimized()
        .unwrap()
        .into_runnable()
        .unwrap();
    let pixels: Vec<f32> = (0..side * side * 3)
        .map(|i| ((i * 31) % 256) as f32)
        .collect();
    let image = Tensor::from_shape(&[1, side, side, 3], &pixels).unwrap();
    let taps = backbone.run(tvec!(image.into_tvalue())).unwrap();

    // Quantise each tap to UINT8 as the device would, with its own range.
    let mut quants = Vec::new();
    let mut buffers = Vec::new();
    for t in &taps {
        let v = t
            .try_as_plain_ram()
            .unwrap()
            .as_slice::<f32>()
            .unwrap()
            .to_vec();
        let (lo, hi) = v
            .iter()
            .fold((f32::MAX, f32::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        let scale = (hi - lo) / 255.0;
        let q = QuantInfo {
            zp: (-lo / scale).round(),
            scale,
            limvals_min: lo,
            limvals_max: hi,
        };
        buffers.push(
            v.iter()
                .map(|&x| q.quantize(x).clamp(0.0, 255.0) as u8)
                .collect::<Vec<u8>>(),
        );
        quants.push(Quantization::Uniform(q));
    }
    let names = ["tap0", "tap1", "tap2", "tap3"];
    let device: [DeviceMap<'_>; TAPS] = std::array::from_fn(|i| DeviceMap {
        stream: names[i],
        bytes: &buffers[i],
        data_type: DataType::Uint8,
        quant: &quants[i],
    });

    let mut dec = TractDecoder::load(&fixture("decoder_288.onnx"), TractKernels::Fast).unwrap();
    let mut maps = dec.new_maps();
    maps.fill_from_device(&device).unwrap();
    // Dequantised maps are the float taps (NHWC -> NCHW) within half a quantisation step.
    let float0 = taps[0]
        .try_as_plain_ram()
        .unwrap()
        .as_slice::<f32>()
        .unwrap()
        .to_vec();
    let (g, c) = (24, 384);
    let step = match &quants[0] {
        Quantization::Uniform(q) => q.scale,
        Quantization::PerFeature(_) => unreachable!(),
    };
    let map0 = maps.map(0);
    let worst = (0..g * g * c)
        .map(|i| (map0[[0, i % c, i / c / g, i / c % g]] - float0[i]).abs())
        .fold(0.0, f32::max);
    assert!(
        worst <= 0.51 * step,
        "dequantisation error {worst} vs step {step}"
    );

    let out = dec.run(&mut maps).unwrap();
    // A 1920x1080 camera centre-cropped to 1080x1080 and resized to 288.
    let s = 1080.0 / 288.0;
    let to_camera = |x: f32, y: f32| (x * s + 420.0, y * s);
    let top = top_detections(&out, 0, 1, (288.0, 288.0), &to_camera);
    let kp = top[0].keypoints[0];
    let raw = out.keypoint(top[0].query, 0);
    assert!((kp.x - (raw[0] * 288.0 * s + 420.0)).abs() < 1e-3);
    assert!((kp.y - raw[1] * 288.0 * s).abs() < 1e-3);
    assert!((0.0..=1.0).contains(&kp.visibility) && (0.0..=1.0).contains(&kp.score));
}
