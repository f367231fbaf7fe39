//! The rig file's parsing, checks and derived defaults.

use std::path::Path;

use super::*;
use crate::camera::PixelFormat;
use crate::decode::Engine;
use crate::npu::sim::TimeBase;

const RIG: &str = r#"
[device]
backend = "sim"

[[graph]]
name = "body"
hef = "backbone_288.hef"
decoder_onnx = "decoder_288.onnx"

[[graph]]
name = "face"
hef = "backbone_432.hef"
decoder_onnx = "decoder_432.onnx"
priority = 20

[[camera]]
name = "body0"
source = "synthetic"
width = 288
height = 288
fps = 120
graph = "body"

[[camera]]
name = "face"
source = "v4l2:/dev/video2"
width = 1280
height = 720
fps = 60
graph = "face"
format = "mjpeg"
"#;

pub(super) fn parse(text: &str) -> Result<RigConfig, ConfigError> {
    RigConfig::parse(text, Path::new("rigs/test.toml"))
}

#[test]
fn parses_and_derives_scheduler_defaults() {
    let rig = parse(RIG).unwrap();
    let body = &rig.graphs[0];
    assert_eq!(rig.threshold(body), 1);
    assert!((rig.timeout_ms(body) - 500.0 / 120.0).abs() < 1e-12);
    assert!((rig.timeout_ms(&rig.graphs[1]) - 500.0 / 60.0).abs() < 1e-12);
    assert_eq!(rig.batch(body), 1);
    assert_eq!(body.priority, 16);
    assert_eq!(rig.graphs[1].priority, 20);
    assert_eq!(body.hef, Path::new("rigs/backbone_288.hef"));
    assert_eq!(rig.switching, SwitchingConfig::Scheduler);
}

#[test]
fn unknown_key_is_named() {
    let text = RIG.replace("priority = 20", "prority = 20");
    let err = parse(&text).unwrap_err().to_string();
    assert!(err.contains("prority"), "{err}");
    assert!(err.contains("rigs/test.toml"), "{err}");
}

#[test]
fn impossible_values_name_their_key() {
    let cases = [
        (
            RIG.replace("priority = 20", "priority = 40"),
            "graph[1].priority",
        ),
        (RIG.replace("fps = 60", "fps = 0"), "camera[1].fps"),
        (
            RIG.replace("graph = \"face\"\nformat", "graph = \"hands\"\nformat"),
            "camera[1].graph",
        ),
        (RIG.replace("\"mjpeg\"", "\"h264\""), "camera[1].format"),
        (RIG.replace("v4l2:/dev/video2", "v4l2"), "camera[1].source"),
        (
            RIG.replace("backend = \"sim\"", "backend = \"gpu\""),
            "device.backend",
        ),
    ];
    for (text, key) in cases {
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains(key), "expected `{key}` in: {err}");
    }
}

#[test]
fn manual_switching_parses_and_checks_k() {
    let text = format!("[switching]\nmode = \"manual\"\nframes_per_switch = 8\n{RIG}");
    let rig = parse(&text).unwrap();
    assert_eq!(
        rig.switching,
        SwitchingConfig::Manual {
            frames_per_switch: 8
        }
    );
    let text = text.replace("frames_per_switch = 8", "frames_per_switch = 0");
    let err = parse(&text).unwrap_err().to_string();
    assert!(err.contains("switching.frames_per_switch"), "{err}");
}

#[test]
fn in_flight_defaults_to_a_batch_per_graph_plus_a_frame_per_thread() {
    let rig = RigConfig::demo(Path::new("fixtures"));
    // Batches 3 (body) + 1 (face), two decoder threads.
    assert_eq!(rig.in_flight(), 6);
    let rig = parse(RIG).unwrap();
    // Two cameras, batches 1 + 1, one thread: 3.
    assert_eq!(rig.in_flight(), 3);
    let text = format!("[decoder]\nin_flight = 5\n{RIG}");
    assert_eq!(parse(&text).unwrap().in_flight(), 5);
    // Fewer slots than one instant's frames would never admit anything.
    let err = parse(&text.replace("in_flight = 5", "in_flight = 1"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("decoder.in_flight") && err.contains("at least 2"),
        "{err}"
    );
    let err = parse(&text.replace("in_flight = 5", "nice = 25"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("decoder.nice"), "{err}");
}

#[test]
fn demo_rig_is_valid_and_has_the_issue_s_shape() {
    let rig = RigConfig::demo(Path::new("fixtures"));
    rig.validate(Path::new("demo")).unwrap();
    let sides: Vec<u32> = rig.cameras.iter().map(|c| c.width).collect();
    assert_eq!(sides, [288, 288, 288, 432]);
    assert!(rig.cameras.iter().all(|c| c.fps == 120.0));
    assert_eq!(rig.threshold(&rig.graphs[0]), 3);
    assert_eq!(rig.batch(&rig.graphs[1]), 1);
    assert_eq!(rig.body.keypoints, KeypointsFrom::GroundTruth);
    assert_eq!(rig.device.backend, BackendChoice::Sim);
}

#[test]
fn ground_truth_keypoints_need_synthetic_cameras() {
    let text = format!("[body]\nkeypoints = \"ground_truth\"\n{RIG}");
    let err = parse(&text).unwrap_err().to_string();
    assert!(err.contains("body.keypoints"), "{err}");
}

#[test]
fn closed_sets_parse_to_their_types_with_the_rig_file_s_spellings() {
    let rig = parse(RIG).unwrap();
    assert_eq!(rig.device.backend, BackendChoice::Sim);
    assert_eq!(rig.device.clock, TimeBase::RealTime);
    assert_eq!(rig.device.profile, SimProfileName::Hailo10hPcie);
    assert_eq!(rig.decoder.engine, Engine::Tract);
    assert!(rig.decoder.retain_memory);
    assert_eq!(rig.body.keypoints, KeypointsFrom::Decoder);
    assert_eq!(rig.cameras[0].source, CameraSource::Synthetic);
    assert_eq!(rig.cameras[0].fit, FitMode::Letterbox);
    assert_eq!(rig.cameras[0].format, None);
    assert_eq!(
        rig.cameras[1].source,
        CameraSource::V4l2("/dev/video2".into())
    );
    assert_eq!(rig.cameras[1].format, Some(PixelFormat::Mjpeg));
    let text = RIG
        .replace(
            "backend = \"sim\"",
            "backend = \"hailort\"\nclock = \"virtual\"\nprofile = \"zero-time\"",
        )
        .replace("v4l2:/dev/video2", "replay:take.mcap")
        .replace("format = \"mjpeg\"", "format = \"nv12\"\nfit = \"crop\"");
    let text = format!("[decoder]\nengine = \"ort\"\nretain_memory = false\n{text}");
    let rig = parse(&text).unwrap();
    assert_eq!(rig.device.backend, BackendChoice::HailoRt);
    assert_eq!(rig.device.clock, TimeBase::Virtual);
    assert_eq!(rig.device.profile, SimProfileName::ZeroTime);
    assert_eq!(rig.decoder.engine, Engine::Ort);
    assert!(!rig.decoder.retain_memory);
    assert_eq!(
        rig.cameras[1].source,
        CameraSource::Replay("rigs/take.mcap".into())
    );
    assert_eq!(rig.cameras[1].format, Some(PixelFormat::Nv12));
    assert_eq!(rig.cameras[1].fit, FitMode::Crop);
}

#[test]
fn an_unknown_value_names_its_key_the_value_and_the_allowed_values() {
    let cases = [
        (
            "backend = \"sim\"",
            "backend = \"gpu\"",
            "device.backend",
            "gpu",
            "hailort",
        ),
        (
            "backend = \"sim\"",
            "clock = \"slow\"",
            "device.clock",
            "slow",
            "realtime",
        ),
        (
            "backend = \"sim\"",
            "profile = \"h8\"",
            "device.profile",
            "h8",
            "hailo10h-usb",
        ),
        ("\"mjpeg\"", "\"h264\"", "camera[1].format", "h264", "rgb24"),
        (
            "v4l2:/dev/video2",
            "usb:/dev/video2",
            "camera[1].source",
            "usb",
            "replay:PATH",
        ),
        (
            "graph = \"body\"",
            "graph = \"body\"\nfit = \"fill\"",
            "camera[0].fit",
            "fill",
            "crop",
        ),
    ];
    for (from, to, key, value, allowed) in cases {
        let err = parse(&RIG.replace(from, to)).unwrap_err().to_string();
        assert!(err.contains(key), "expected `{key}` in: {err}");
        assert!(err.contains(value), "expected `{value}` in: {err}");
        assert!(err.contains(allowed), "expected `{allowed}` in: {err}");
    }
    let text = format!("[body]\nkeypoints = \"truth\"\n{RIG}");
    let err = parse(&text).unwrap_err().to_string();
    assert!(
        err.contains("body.keypoints") && err.contains("truth") && err.contains("ground_truth"),
        "{err}"
    );
    let text = format!("[decoder]\nengine = \"onnx\"\n{RIG}");
    let err = parse(&text).unwrap_err().to_string();
    assert!(
        err.contains("decoder.engine") && err.contains("onnx") && err.contains("tract"),
        "{err}"
    );
}

#[test]
fn a_camera_source_keeps_its_spelling() {
    for text in ["synthetic", "v4l2:/dev/video0", "replay:runs/a.mcap"] {
        let source = CameraSource::try_from(text.to_owned()).unwrap();
        assert_eq!(String::from(source), text);
    }
    assert_eq!(
        CameraSource::try_from("replay:".to_owned()),
        Err(CameraSourceError::NoPath("replay".into()))
    );
}

#[test]
fn graph_inputs_and_keypoint_slots_parse() {
    let text = RIG.replace(
        "decoder_onnx = \"decoder_288.onnx\"\n",
        "decoder_onnx = \"decoder_288.onnx\"\n\n[graph.inputs]\n\"backbone_288/conv41\" = \"features\"\n",
    ) + "\n[decoder]\nkeypoint_slots = \"all\"\n";
    let rig = parse(&text).unwrap();
    assert_eq!(
        rig.graphs[0]
            .inputs
            .get("backbone_288/conv41")
            .map(String::as_str),
        Some("features")
    );
    assert!(rig.graphs[1].inputs.is_empty());
    assert_eq!(
        rig.decoder.keypoint_slots,
        Some(crate::decode::KeypointSlots::All)
    );
    assert_eq!(parse(RIG).unwrap().decoder.keypoint_slots, None);
    // Negative controls: a slot count of 0 and a word other than "all" are refused, by key.
    for bad in ["0", "\"some\""] {
        let text = format!("{RIG}\n[decoder]\nkeypoint_slots = {bad}\n");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("keypoint_slots"), "{err}");
    }
}

#[test]
fn the_group_id_and_dma_map_keys_parse_and_a_bad_group_id_names_its_key() {
    let rig = parse(RIG).unwrap();
    assert_eq!(rig.device.group_id, None);
    assert!(rig.device.dma_map);
    let shared = RIG.replace(
        "backend = \"sim\"",
        "backend = \"sim\"\ngroup_id = \"SHARED\"\ndma_map = false",
    );
    let rig = parse(&shared).unwrap();
    assert_eq!(rig.device.group_id, Some(crate::npu::GroupId::shared()));
    assert!(!rig.device.dma_map);
    for bad in ["\"\"", "\"two words\""] {
        let text = RIG.replace(
            "backend = \"sim\"",
            &format!("backend = \"sim\"\ngroup_id = {bad}"),
        );
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("`device.group_id`"), "{err}");
        assert!(err.contains("group id"), "{err}");
    }
}

#[test]
fn camera_controls_parse_by_type_and_are_checked_before_any_device() {
    let with = |table: &str| format!("{RIG}\n[camera.controls]\n{table}\n");
    let rig = parse(&with(
        "exposure_us = 4000\nauto_exposure = false\npower_line_hz = 50\nsharpness = 3\nexposure_auto = \"Manual Mode\"",
    ))
    .unwrap();
    let controls = &rig.cameras[1].controls;
    use crate::camera::controls::ControlValue;
    assert_eq!(controls["exposure_us"], ControlValue::Int(4000));
    assert_eq!(controls["auto_exposure"], ControlValue::Bool(false));
    assert_eq!(
        controls["exposure_auto"],
        ControlValue::Text("Manual Mode".into())
    );
    assert!(rig.cameras[0].controls.is_empty());

    let err = parse(&with("power_line_hz = 55")).unwrap_err().to_string();
    assert!(err.contains("camera[1].controls.power_line_hz"), "{err}");
    assert!(err.contains("50 or 60"), "{err}");
    let err = parse(&with("exposure_us = \"8 ms\""))
        .unwrap_err()
        .to_string();
    assert!(err.contains("camera[1].controls.exposure_us"), "{err}");

    // A synthetic camera has no controls to set.
    let synthetic = RIG.replace(
        "graph = \"body\"\n",
        "graph = \"body\"\n[camera.controls]\ngain = 3\n",
    );
    let err = parse(&synthetic).unwrap_err().to_string();
    assert!(err.contains("camera[0].controls"), "{err}");
    assert!(err.contains("V4L2 cameras only"), "{err}");
}
