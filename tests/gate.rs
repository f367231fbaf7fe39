//! `gate`: the 288 backbone fixture on the simulator against the device half's stand-in
//! ONNX. The honest run passes with a non-zero quantisation error; a device that swaps
//! two same-shape outputs or perturbs one is caught; the simulator quantises FLOAT32
//! inputs as HailoRT's input transform does.
#![cfg(feature = "sim-onnx")]

mod common;

use std::path::{Path, PathBuf};

use common::fixture;
use hailo_edge::gate::{self, Bound, FrameSource, GateConfig, GateError};
use hailo_edge::metrics::ops::device_half::stand_in_onnx;
use hailo_edge::npu::sim::{DeviceProfile, SimProfile, TimeBase};
use hailo_edge::npu::Backend;
use prost::Message;
use tract_onnx::pb;

const FEATURES: &str = "features";
const CROSS: &str = "cross_attn_features";

fn stand_in() -> pb::ModelProto {
    pb::ModelProto::decode(stand_in_onnx(288).unwrap().as_slice()).unwrap()
}

fn write(dir: &Path, name: &str, model: &pb::ModelProto) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, model.encode_to_vec()).unwrap();
    path
}

/// Renames the tensor `name` to `<name>.inner` wherever the graph makes or reads it, so
/// that a new node can make `name` from it.
fn detach(graph: &mut pb::GraphProto, name: &str) -> String {
    let inner = format!("{name}.inner");
    for node in &mut graph.node {
        for t in node.output.iter_mut().chain(node.input.iter_mut()) {
            if t == name {
                inner.clone_into(t);
            }
        }
    }
    inner
}

fn node(op: &str, inputs: &[&str], output: &str) -> pb::NodeProto {
    pb::NodeProto {
        name: format!("{output}.{op}"),
        op_type: op.into(),
        input: inputs.iter().map(|s| (*s).to_owned()).collect(),
        output: vec![output.into()],
        ..Default::default()
    }
}

/// The stand-in whose `features` output is its `cross_attn_features` map and back:
/// a device that returns two same-shape maps under each other's names.
fn swapped() -> pb::ModelProto {
    let mut model = stand_in();
    let graph = model.graph.as_mut().unwrap();
    let f = detach(graph, FEATURES);
    let c = detach(graph, CROSS);
    graph.node.push(node("Identity", &[&c], FEATURES));
    graph.node.push(node("Identity", &[&f], CROSS));
    model
}

/// The stand-in with `delta` added to channel `channel` of its `features` output.
fn perturbed(channel: usize, delta: f32) -> pb::ModelProto {
    let mut model = stand_in();
    let graph = model.graph.as_mut().unwrap();
    let f = detach(graph, FEATURES);
    let mut plane = vec![0.0f32; 256];
    plane[channel] = delta;
    graph.initializer.push(pb::TensorProto {
        name: "delta".into(),
        dims: vec![256],
        data_type: 1,
        float_data: plane,
        ..Default::default()
    });
    graph.node.push(node("Add", &[&f, "delta"], FEATURES));
    model
}

fn config(dir: &Path, hef: PathBuf, sim_onnx: Option<PathBuf>) -> GateConfig {
    config_on(dir, hef, sim_onnx, FrameSource::Synthetic { frames: 2 })
}

fn config_on(
    dir: &Path,
    hef: PathBuf,
    sim_onnx: Option<PathBuf>,
    frames: FrameSource,
) -> GateConfig {
    let onnx = write(dir, "device_half_288.onnx", &stand_in());
    let mut config = GateConfig::new(hef, onnx, frames);
    config.backend =
        Backend::Sim(SimProfile::new(DeviceProfile::hailo10h()).with_clock(TimeBase::Virtual));
    config.sim_onnx = sim_onnx;
    config
}

/// The fixture with each output's quant info calibrated on `ranges` (the range the
/// reference spans, by stream), as the compiler calibrates limvals on sample data;
/// returns the HEF and each output's scale.
fn calibrated(dir: &Path, ranges: &[(String, [f32; 2])]) -> (PathBuf, Vec<f32>) {
    use hailo_edge::hef::{QuantInfo, Quantization};
    let mut hef = hailo_edge::hef::Hef::open(fixture("backbone_288.hef")).unwrap();
    let mut scales = Vec::new();
    for output in &mut hef.network_groups[0].outputs {
        let [lo, hi] = ranges.iter().find(|(s, _)| *s == output.name).unwrap().1;
        // A couple of steps of margin on each side, so rounding the zero point clips nothing.
        let scale = (hi - lo) / 250.0;
        let zp = (-lo / scale).round() + 2.0;
        output.quant = Quantization::Uniform(QuantInfo {
            zp,
            scale,
            limvals_min: -zp * scale,
            limvals_max: (255.0 - zp) * scale,
        });
        scales.push(scale);
    }
    let path = dir.join("backbone_288_calibrated.hef");
    std::fs::write(
        &path,
        hailo_edge::hef::HefBuilder::new(&hef).build().unwrap(),
    )
    .unwrap();
    (path, scales)
}

/// The gate on the fixture as committed (its quant info is not the stand-in's), then on
/// the fixture calibrated on what the first run saw.
fn calibrated_config(dir: &Path) -> (GateConfig, Vec<f32>) {
    calibrated_on(dir, FrameSource::Synthetic { frames: 2 })
}

fn calibrated_on(dir: &Path, frames: FrameSource) -> (GateConfig, Vec<f32>) {
    let committed = fixture("backbone_288.hef");
    let first = gate::run(&config_on(dir, committed, None, frames.clone())).unwrap();
    // Negative control of the calibration: the stand-in's maps are a few hundredths wide
    // and the fixture's steps are 0.02 and 0.024; a map rounded to a couple of levels
    // fails the relative bound even though no element is off by more than half a step.
    let text = first.lines().join("\n");
    assert!(!first.passed(), "{text}");
    for o in &first.outputs {
        assert!(
            o.max_steps <= 0.5 + 1e-3 && o.rel > Bound::DEFAULT_REL,
            "{text}"
        );
    }
    let ranges: Vec<(String, [f32; 2])> = first
        .outputs
        .iter()
        .map(|o| (o.stream.clone(), o.reference_range))
        .collect();
    let (hef, scales) = calibrated(dir, &ranges);
    (config_on(dir, hef, None, frames), scales)
}

#[test]
fn the_honest_simulator_passes_with_real_quantisation_error() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _) = calibrated_config(dir.path());
    let report = gate::run(&config).unwrap();
    let text = report.lines().join("\n");
    assert!(report.passed(), "{text}");
    // Paired by name, whatever the HEF's order (cross_attn_features comes first in it).
    let pairs: Vec<(&str, &str)> = report
        .pairing
        .iter()
        .map(|p| (p.stream.as_str(), p.onnx_output.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("backbone_288/cross_attn_features", CROSS),
            ("backbone_288/features", FEATURES)
        ]
    );
    assert!(
        text.contains("backbone_288/features -> features (ONNX output 0)"),
        "{text}"
    );
    assert_eq!(report.frames.len(), 2);
    assert_eq!(
        report.device_outputs,
        hailo_edge::npu::OutputKind::SimReference
    );
    for o in &report.outputs {
        // The simulator's outputs went through the HEF's quantisation: an error above
        // zero, at most half a step inside the limvals (the calibration covers every value).
        assert!(o.max_abs > 0.0 && o.rel > 0.0, "{text}");
        assert!(o.max_steps <= 0.5 + 1e-3 && o.clipped == 0.0, "{text}");
        assert!(o.rel < Bound::DEFAULT_REL / 2.0, "{text}");
        assert_eq!(o.frames, 2);
    }
    // The JSON says what ran.
    let json_path = dir.path().join("gate.json");
    report.write_json(&json_path).unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert_eq!(json["backend"], "simulator");
    assert_eq!(json["device_outputs"], "SimReference");
    assert_eq!(json["passed"], true);
    assert_eq!(json["input_source"], "synthetic");
    assert_eq!(json["outputs"].as_array().unwrap().len(), 2);
}

#[test]
fn a_device_that_swaps_two_same_shape_outputs_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, _) = calibrated_config(dir.path());
    config.sim_onnx = Some(write(dir.path(), "swapped.onnx", &swapped()));
    let report = gate::run(&config).unwrap();
    let text = report.lines().join("\n");
    assert!(!report.passed(), "{text}");
    for o in &report.outputs {
        assert!(!o.passed && o.rel > 0.5, "{text}");
    }
    assert!(text.contains("verdict: FAIL"), "{text}");
}

#[test]
fn a_device_that_perturbs_one_channel_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let (mut config, scales) = calibrated_config(dir.path());
    // The HEF lists cross_attn_features first.
    let step = scales[1];
    // One channel of 256 off by 40 quantisation steps.
    config.sim_onnx = Some(write(
        dir.path(),
        "perturbed.onnx",
        &perturbed(7, 40.0 * step),
    ));
    let report = gate::run(&config).unwrap();
    let text = report.lines().join("\n");
    assert!(!report.passed(), "{text}");
    let by_name = |n: &str| {
        report
            .outputs
            .iter()
            .find(|o| o.stream.ends_with(&format!("/{n}")))
            .unwrap()
    };
    let f = by_name(FEATURES);
    assert!(
        !f.passed && f.max_steps > Bound::DEFAULT_MAX_STEPS,
        "{text}"
    );
    assert_eq!(f.worst.map(|w| w.element % 256), Some(7), "{text}");
    // The other output is untouched and passes.
    assert!(by_name(CROSS).passed, "{text}");
    // Negative control: a perturbation of a quarter step per element is within the bound.
    config.sim_onnx = Some(write(dir.path(), "nudged.onnx", &perturbed(7, 0.25 * step)));
    assert!(gate::run(&config).unwrap().passed());
}

#[test]
fn outputs_that_do_not_pair_by_name_are_an_error_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = stand_in();
    let graph = model.graph.as_mut().unwrap();
    let f = detach(graph, FEATURES);
    graph.node.push(node("Identity", &[&f], "conv41"));
    graph.output[0].name = "conv41".into();
    let mut config = config(dir.path(), fixture("backbone_288.hef"), None);
    config.onnx = write(dir.path(), "renamed.onnx", &model);
    let err = gate::run(&config).unwrap_err();
    assert!(matches!(err, GateError::Pairing { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("backbone_288/features") && msg.contains("conv41"),
        "{msg}"
    );
}

/// `output` = `x`, NHWC [1, 2, 2, 3]: the device's outputs are its quantised inputs.
fn identity_onnx() -> Vec<u8> {
    use hailo_edge::metrics::ops::builder::{value_info, Dim};
    let dims: Vec<Dim> = [1usize, 2, 2, 3].iter().map(|&d| d.into()).collect();
    pb::ModelProto {
        ir_version: 7,
        opset_import: vec![pb::OperatorSetIdProto {
            domain: String::new(),
            version: 13,
        }],
        graph: Some(pb::GraphProto {
            name: "identity".into(),
            node: vec![node("Identity", &["x"], "output")],
            input: vec![value_info("x", &dims)],
            output: vec![value_info("output", &dims)],
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

#[test]
fn the_simulator_quantises_float_inputs_as_hailort_does() {
    use hailo_edge::npu::sim::ReferenceModel;
    use hailo_edge::npu::{Direction, FormatType};

    let reference = ReferenceModel::from_onnx_bytes(&identity_onnx()).unwrap();
    let device =
        common::open(SimProfile::new(DeviceProfile::hailo10h()).with_reference("ref", reference));
    // Input: zp 0, scale 1/255, limvals [0, 1]; output: zp 128, scale 0.01.
    let mut model = device
        .load_model(&common::tiny_hef("ref", 2, 3, None))
        .unwrap();
    model
        .set_format_type(Direction::Input, "ref/input", FormatType::Float32)
        .unwrap();
    model
        .set_format_type(Direction::Output, "ref/output", FormatType::Float32)
        .unwrap();
    let cm = model.configure().unwrap();
    // Inside the limvals, below them, above them, and between two input steps.
    let x: [f32; 12] = [
        0.5, -0.5, 1.7, 0.2, 0.9, 0.0, 1.0, -3.0, 2.5, 0.25, 0.75, 0.4,
    ];
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let got = common::run_f32(&cm, "ref/input", &bytes, "ref/output");
    for (i, (&x, &y)) in x.iter().zip(&got).enumerate() {
        // HailoRT's input transform: clip to the limvals, x / scale + zp, ties to even.
        let q_in = (x.clamp(0.0, 1.0) / (1.0 / 255.0)).round_ties_even();
        let seen = q_in * (1.0 / 255.0);
        let q_out = (seen / 0.01 + 128.0).round().clamp(0.0, 255.0);
        let want = (q_out - 128.0) * 0.01;
        assert!(
            (y - want).abs() < 1e-5,
            "element {i}: {x} -> {y}, want {want}"
        );
    }
    // Negative control: the clipped inputs come back clipped, not as given.
    assert!(
        (got[1] - 0.0).abs() < 1e-5 && (got[2] - 1.0).abs() < 1e-5,
        "{got:?}"
    );
}

/// An RGB image of `w` x `h` with a gradient and a block, seeded by `seed`.
fn picture(w: u32, h: u32, seed: u32) -> image::RgbImage {
    image::RgbImage::from_fn(w, h, |x, y| {
        let block = (x / 40 + y / 40 + seed).is_multiple_of(3);
        let v = |k: u32| ((x * k + y * (k + 1) + seed * 17) % 256) as u8;
        if block {
            image::Rgb([200, 40, 90])
        } else {
            image::Rgb([v(1), v(2), v(3)])
        }
    })
}

#[test]
fn the_command_reads_images_prints_the_pairing_and_exits_by_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("a.png");
    picture(320, 240, 1).save(&png).unwrap();
    let jpg = dir.path().join("b.jpg");
    let rgb = picture(200, 300, 2);
    jpeg_encoder::Encoder::new_file(&jpg, 95)
        .unwrap()
        .encode(rgb.as_raw(), 200, 300, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    let images = FrameSource::Images(vec![png.clone(), jpg.clone()]);
    let (config, _) = calibrated_on(dir.path(), images);
    let report_path = dir.path().join("gate.json");
    let gate_cmd = |sim_onnx: Option<&Path>| {
        let mut cmd = common::cli::hailo_edge();
        cmd.arg("gate")
            .arg("--hef")
            .arg(&config.hef)
            .arg("--onnx")
            .arg(&config.onnx)
            .arg("--image")
            .arg(&png)
            .arg("--image")
            .arg(&jpg)
            .args(["--backend", "sim", "--report"])
            .arg(&report_path);
        if let Some(path) = sim_onnx {
            cmd.arg("--sim-onnx").arg(path);
        }
        cmd
    };
    let out = common::cli::succeed(&mut gate_cmd(None));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("backbone_288/features -> features (ONNX output 0)")
            && stdout.contains("verdict: pass")
            && stdout.contains("2 frame(s) from images"),
        "{stdout}"
    );
    let json = common::cli::read_json(&report_path);
    assert_eq!(json["passed"], true);
    assert_eq!(json["frames"][1]["frame"], "200x300 mjpeg");
    // The swapped device: exit 1, the report says which outputs broke the bound.
    let swapped_path = write(dir.path(), "swapped.onnx", &swapped());
    let out = gate_cmd(Some(&swapped_path)).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("verdict: FAIL"), "{stdout}");
    assert_eq!(common::cli::read_json(&report_path)["passed"], false);
}

#[test]
fn a_recordings_camera_gives_the_frames_and_a_missing_camera_is_named() {
    use hailo_edge::camera::record::{RecordedCamera, Recorder};
    use hailo_edge::camera::{CameraId, Frame, PixelFormat, SourceInfo, TimestampSource};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rig.mcap");
    let info = |camera: u32| SourceInfo {
        camera: CameraId(camera),
        name: format!("cam{camera}"),
        format: PixelFormat::Rgb24,
        width: 96,
        height: 64,
        fps: 30.0,
        timestamp_source: TimestampSource::Synthetic,
    };
    let cams: Vec<RecordedCamera> = (0..2).map(|c| info(c).into()).collect();
    let mut rec = Recorder::create(&path, &cams).unwrap();
    for sequence in 0..3u64 {
        for camera in 0..2u32 {
            let rgb = picture(96, 64, camera * 10 + sequence as u32);
            rec.write(&Frame {
                capture_ns: 1_000_000 * (sequence + 1),
                sequence,
                ..Frame::still(CameraId(camera), PixelFormat::Rgb24, 96, 64, rgb.into_raw())
            })
            .unwrap();
        }
    }
    rec.finish().unwrap();
    let recording = |camera| FrameSource::Recording {
        path: path.clone(),
        camera,
        frames: 2,
    };
    let hef = fixture("backbone_288.hef");
    let report = gate::run(&config_on(
        dir.path(),
        hef.clone(),
        None,
        recording(Some(1)),
    ))
    .unwrap();
    assert_eq!(report.input_source, "recording");
    let frames: Vec<&str> = report.frames.iter().map(|f| f.frame.as_str()).collect();
    assert_eq!(frames, ["96x64 rgb24", "96x64 rgb24"]);
    assert!(
        report.frames[1].source.ends_with("#1"),
        "{:?}",
        report.frames
    );
    // Negative control: a camera the recording does not have is an error naming those it has.
    let err = gate::run(&config_on(dir.path(), hef, None, recording(Some(5)))).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("cam5") && msg.contains("cam0, cam1"), "{msg}");
}
