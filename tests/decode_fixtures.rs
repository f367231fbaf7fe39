//! The committed reduced-width decoder fixtures load and run with every engine this
//! build has, the fast kernels change no result, and the maps reach the decoder by name.

mod common;

use std::path::PathBuf;

use common::fixture;
use hailo_edge::decode::engine::tract::{TractDecoder, TractKernels};
use hailo_edge::decode::keypoints::{top_detections, AffineMapping};
use hailo_edge::decode::{Decoder, FeatureMaps, MapSpec, Split};
use hailo_edge::metrics::ops::device_half::stand_in_onnx;

/// The reduced-width design-split decoder fixture at `side`.
fn decoder(side: usize) -> PathBuf {
    fixture(&format!("decoder_reduced_{side}.onnx"))
}

fn fill(maps: &mut FeatureMaps, seed: u64) {
    let mut s = seed | 1;
    for i in 0..maps.len() {
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
        let mut dec = TractDecoder::load(&decoder(side), TractKernels::Fast).unwrap();
        assert_eq!(
            dec.inputs(),
            [
                MapSpec::new("features", 256, grid, grid),
                MapSpec::new("cross_attn_features", 256, grid, grid)
            ]
        );
        assert_eq!(dec.split(), Some(Split::Design));
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
    let path = decoder(288);
    let mut fast = TractDecoder::load(&path, TractKernels::Fast).unwrap();
    let mut stock = TractDecoder::load(&path, TractKernels::Stock).unwrap();
    let mut maps = fast.new_maps();
    fill(&mut maps, 9);
    let (d, changed) = agreement(&mut fast, &mut stock, &mut maps, (1, 12));
    assert!(d < 1e-4, "fast kernels vs stock tract: {d}");
    // Negative control: a one-element change of one input map shows up.
    assert!(changed > 1e-5);
}

/// The largest output difference of decoders `a` and `b` on the same maps, and that
/// of `a` before and after adding 5 to channel `channel` of map `map` (a whole plane:
/// one token of the design split's memory may lie where no query samples).
fn agreement(
    a: &mut dyn Decoder,
    b: &mut dyn Decoder,
    maps: &mut FeatureMaps,
    (map, channel): (usize, usize),
) -> (f32, f32) {
    let x = a.run(maps).unwrap();
    let y = b.run(maps).unwrap();
    maps.map_mut(map)
        .index_axis_mut(ndarray::Axis(1), channel)
        .mapv_inplace(|v| v + 5.0);
    let z = a.run(maps).unwrap();
    (x.max_abs_diff(&y).unwrap(), x.max_abs_diff(&z).unwrap())
}

#[test]
fn the_taps_split_fixture_reads_four_named_taps() {
    let dec = TractDecoder::load(
        &fixture("decoder_reduced_taps_288.onnx"),
        TractKernels::Fast,
    )
    .unwrap();
    let names: Vec<&str> = dec.inputs().iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["tap0", "tap1", "tap2", "tap3"]);
    assert!(dec.inputs().iter().all(|m| m.shape == [1, 384, 24, 24]));
    assert_eq!(dec.split(), Some(Split::Taps));
}

#[test]
fn maps_of_another_split_are_refused_by_name() {
    let mut dec = TractDecoder::load(&decoder(288), TractKernels::Fast).unwrap();
    let taps: Vec<MapSpec> = Split::Taps
        .input_names()
        .iter()
        .map(|n| MapSpec::new(*n, 384, 24, 24))
        .collect();
    let err = dec
        .run(&mut FeatureMaps::new(&taps))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("tap0 (1, 384, 24, 24)") && err.contains("features (1, 256, 24, 24)"),
        "{err}"
    );
    // The same names in another order are refused too: maps are the graph's, in its order.
    let mut swapped = dec.inputs().to_vec();
    swapped.reverse();
    assert!(dec.run(&mut FeatureMaps::new(&swapped)).is_err());
}

#[test]
fn bad_paths_and_graphs_are_named() {
    let err = TractDecoder::load(&fixture("no_such.onnx"), TractKernels::Fast).unwrap_err();
    assert!(err.to_string().contains("no_such.onnx"), "{err}");
    // The device half's stand-in is a valid ONNX but not a decoder.
    let dir = tempfile::tempdir().unwrap();
    let stand_in = dir.path().join("device_half_288.onnx");
    std::fs::write(&stand_in, stand_in_onnx(288).unwrap()).unwrap();
    let err = TractDecoder::load(&stand_in, TractKernels::Fast).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("device_half_288.onnx") && msg.contains("dets"),
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
    let path = decoder(288);
    let mut ort = OrtDecoder::load(&path, 1).unwrap();
    let mut tract = TractDecoder::load(&path, TractKernels::Fast).unwrap();
    let mut maps = tract.new_maps();
    fill(&mut maps, 5);
    let (d, changed) = agreement(&mut ort, &mut tract, &mut maps, (0, 7));
    assert!(d < 1e-3, "ort vs tract: {d}");
    assert!(changed > 1e-5, "negative control");
}

/// The whole decode path: the device half's stand-in -> quantised NHWC device buffers ->
/// pairing by name -> dequantised NCHW maps -> decoder -> top detection in camera pixels.
#[test]
fn device_half_to_keypoints_through_quantised_buffers() {
    use std::collections::BTreeMap;

    use hailo_edge::decode::input::DeviceMap;
    use hailo_edge::decode::pairing::{DeviceOutput, PairingSides};
    use hailo_edge::decode::Pairing;
    use hailo_edge::hef::{DataType, QuantInfo, Quantization};
    use tract_onnx::prelude::*;

    let (side, g, c) = (288usize, 24usize, 256usize);
    let device_half = tract_onnx::onnx()
        .model_for_read(&mut std::io::Cursor::new(stand_in_onnx(side).unwrap()))
        .unwrap()
        .into_optimized()
        .unwrap()
        .into_runnable()
        .unwrap();
    let pixels: Vec<f32> = (0..side * side * 3)
        .map(|i| ((i * 31) % 256) as f32 / 255.0)
        .collect();
    let image = Tensor::from_shape(&[1, side, side, 3], &pixels).unwrap();
    let maps = device_half.run(tvec!(image.into_tvalue())).unwrap();

    // Quantise each map to UINT8 as the device would, with its own range; the device
    // returns them in the other order than the decoder reads them.
    let streams = ["backbone_288/features", "backbone_288/cross_attn_features"];
    let mut quants = Vec::new();
    let mut buffers = Vec::new();
    let mut floats = Vec::new();
    for t in &maps {
        let v: Vec<f32> = t
            .to_plain_array_view::<f32>()
            .unwrap()
            .iter()
            .copied()
            .collect();
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
        floats.push(v);
    }
    let order = [1usize, 0];
    let outputs: Vec<DeviceOutput> = order
        .iter()
        .map(|&i| DeviceOutput {
            stream: streams[i].into(),
            height: g,
            width: g,
            channels: c,
        })
        .collect();

    let path = decoder(side);
    let mut dec = TractDecoder::load(&path, TractKernels::Fast).unwrap();
    let sides = PairingSides {
        hef: "backbone_288.hef".into(),
        onnx: path.clone(),
        key: "graph[0].inputs".into(),
    };
    let pairing = Pairing::by_name(&sides, &outputs, dec.inputs(), &BTreeMap::new()).unwrap();
    let device: Vec<DeviceMap<'_>> = pairing
        .pairs()
        .iter()
        .map(|p| {
            let i = order[p.output];
            DeviceMap {
                stream: streams[i],
                bytes: &buffers[i],
                data_type: DataType::Uint8,
                quant: &quants[i],
            }
        })
        .collect();
    let mut maps = dec.new_maps();
    maps.fill_from_device(&device).unwrap();
    // Each decoder input holds its own map (NHWC -> NCHW) within half a quantisation step,
    // and not the other one.
    for (input, source) in [(0usize, 0usize), (1, 1)] {
        let step = match &quants[source] {
            Quantization::Uniform(q) => q.scale,
            Quantization::PerFeature(_) => unreachable!(),
        };
        let map = maps.map(input);
        let error = |f: &[f32]| {
            (0..g * g * c)
                .map(|i| (map[[0, i % c, i / c / g, i / c % g]] - f[i]).abs())
                .fold(0.0, f32::max)
        };
        let worst = error(&floats[source]);
        assert!(
            worst <= 0.51 * step,
            "input {input}: error {worst} vs step {step}"
        );
        assert!(
            error(&floats[1 - source]) > 10.0 * step,
            "input {input} got the other map"
        );
    }

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
