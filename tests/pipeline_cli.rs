//! `hailo-edge run` from the command line, and rig files that cannot work.

mod common;

use std::path::Path;

use common::cli::{admitted, hailo_edge, read_json};
use hailo_edge::rig::config::{CameraSource, KeypointsFrom};
use hailo_edge::rig::{run, RigConfig, RunOptions};

#[test]
fn run_duration_writes_a_report_whose_accounting_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let mcap = dir.path().join("run.mcap");
    hailo_edge()
        .args([
            "run",
            "--duration",
            "1",
            "--quiet",
            "--exit-zero",
            "--report",
        ])
        .arg(&report)
        .arg("--record")
        .arg(&mcap)
        .assert()
        .success()
        .stderr(predicates::str::contains("2 px noise"));
    let json = read_json(&report);
    assert_eq!(json["accounting_ok"], true);
    for cam in json["cameras"].as_array().unwrap() {
        let f = &cam["frames"];
        let dropped: u64 = f["dropped"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert!(f["captured"].as_u64().unwrap() > 0);
        assert_eq!(
            f["captured"].as_u64().unwrap(),
            f["processed"].as_u64().unwrap() + dropped
        );
    }
    assert_eq!(json["what_ran"]["backend"], "simulator");
    // Every frame the NPU stage admitted was recorded, with the results, in one
    // MCAP file; frames dropped before it (at the camera queue, or as older than
    // the other cameras' frames of an instant) were not.
    assert_eq!(
        json["recorded"]["frames"].as_u64().unwrap(),
        admitted(&json)
    );
    // The results channel names the skeleton its bone and keypoint indices count in.
    let bytes = std::fs::read(&mcap).unwrap();
    let results = mcap::MessageStream::new(&bytes)
        .unwrap()
        .map(Result::unwrap)
        .find(|m| m.channel.topic == "/results")
        .expect("a result was recorded");
    let skeleton: serde_json::Value =
        serde_json::from_str(&results.channel.metadata["skeleton"]).unwrap();
    assert_eq!(skeleton["rig"], "anny");
    assert_eq!(skeleton["topology"], "anny");
    assert_eq!(skeleton["version"], "0.6.2");
    assert_eq!(skeleton["bones"].as_array().unwrap().len(), 104);
    assert_eq!(skeleton["keypoints"].as_array().unwrap().len(), 23);
    // The camera channels index no joints and carry no skeleton.
    let frame = mcap::MessageStream::new(&bytes)
        .unwrap()
        .map(Result::unwrap)
        .find(|m| m.channel.topic != "/results")
        .unwrap();
    assert!(!frame.channel.metadata.contains_key("skeleton"));
}

#[test]
fn example_rig_file_parses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rig.toml");
    let rig = RigConfig::load(&path).unwrap();
    assert_eq!(rig.cameras.len(), 4);
    assert_eq!(rig.graphs[1].priority, 18);
    assert!(
        rig.graphs[0].hef.is_file(),
        "{}",
        rig.graphs[0].hef.display()
    );
}

#[test]
fn unknown_key_and_impossible_value_are_named_by_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rig.toml"))
            .unwrap();
    let bad = dir.path().join("bad.toml");
    for (from, to, named) in [
        ("threads = 2", "thread = 2", "thread"),
        ("priority = 18", "priority = 99", "graph[1].priority"),
    ] {
        std::fs::write(&bad, text.replace(from, to)).unwrap();
        hailo_edge()
            .args(["run", "--config"])
            .arg(&bad)
            .assert()
            .failure()
            .stderr(predicates::str::contains(named));
    }
}

/// Runs `rig`, which must be refused with an error naming every one of `wants`.
fn refused(rig: &RigConfig, wants: &[&str]) {
    let err = run(rig, "test", &RunOptions::default())
        .unwrap_err()
        .to_string();
    for want in wants {
        assert!(err.contains(want), "missing {want:?} in: {err}");
    }
}

#[test]
fn missing_hef_and_missing_camera_are_named() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut rig = RigConfig::demo(&fixtures);
    rig.graphs[1].hef = fixtures.join("no_such_backbone.hef");
    refused(&rig, &["graph[1].hef", "no_such_backbone.hef"]);

    let mut rig = RigConfig::demo(&fixtures);
    rig.cameras[2].source = CameraSource::V4l2("/dev/video-missing-97".into());
    rig.body.keypoints = KeypointsFrom::Decoder;
    refused(&rig, &["body2", "/dev/video-missing-97"]);
}

#[test]
fn a_hef_and_a_decoder_that_do_not_pair_are_refused_by_name() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let reduced = |name: &str| Some(fixtures.join(name));
    let demo = reduced_demo;
    // A four-tap HEF with a two-map decoder: both lists, both files and the key.
    let mut rig = demo();
    rig.graphs[0].hef = fixtures.join("backbone_taps_288.hef");
    rig.graphs[0].decoder_onnx = reduced("decoder_reduced_288.onnx");
    refused(
        &rig,
        &[
            "graph[0].inputs",
            "backbone_taps_288.hef",
            "decoder_reduced_288.onnx",
            "backbone_taps_288/tap0 (24, 24, 384)",
            "features (1, 256, 24, 24)",
            "taps split",
        ],
    );
    // A decoder for another grid: the 432 graph's HEF with the 288 decoder.
    let mut rig = demo();
    rig.graphs[1].decoder_onnx = reduced("decoder_reduced_288.onnx");
    refused(
        &rig,
        &[
            "backbone_432/features (36, 36, 256)",
            "features (1, 256, 24, 24)",
        ],
    );
    // Mapping the taps by hand does not make them fit a design-split decoder either:
    // the shapes differ, and that is an error too, never a silent pairing.
    let mut rig = demo();
    rig.graphs[0].hef = fixtures.join("backbone_taps_288.hef");
    rig.graphs[0].decoder_onnx = reduced("decoder_reduced_288.onnx");
    rig.graphs[0].inputs = [("tap0", "features"), ("tap1", "cross_attn_features")]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    refused(&rig, &["tap2", "graph[0].inputs"]);
    // Negative control: the taps HEF with the taps decoder pairs.
    let mut rig = demo();
    rig.graphs[0].hef = fixtures.join("backbone_taps_288.hef");
    rig.graphs[0].decoder_onnx = reduced("decoder_reduced_taps_288.onnx");
    let pairings = hailo_edge::rig::decoders::pairings(
        &rig,
        &hailo_edge::rig::decoders::choose(&rig).unwrap(),
    )
    .unwrap();
    assert_eq!(pairings[0].split(), Some(hailo_edge::decode::Split::Taps));
    assert_eq!(pairings[0].pairs().len(), 4);
}

#[test]
fn keypoint_slots_that_the_decoder_lacks_are_refused() {
    let mut rig = reduced_demo();
    // The reduced fixtures run the keypoint branch on every slot.
    rig.decoder.keypoint_slots = Some("1".parse().unwrap());
    let choices = hailo_edge::rig::decoders::choose(&rig).unwrap();
    let err = hailo_edge::rig::decoders::pairings(&rig, &choices)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("graph[0].decoder_onnx")
            && err.contains("keypoint_slots")
            && err.contains("100"),
        "{err}"
    );
    rig.decoder.keypoint_slots = Some("all".parse().unwrap());
    hailo_edge::rig::decoders::pairings(&rig, &choices).unwrap();

    // A graph with the top slot alone returns that slot alone; its metadata still says
    // it has 100, so `all` is refused for it.
    let dir = tempfile::tempdir().unwrap();
    for (g, side) in rig.graphs.iter_mut().zip([288, 432]) {
        let graph = hailo_edge::decode::graph::HostGraph {
            side,
            width: hailo_edge::decode::graph::Width::Reduced,
            keypoint_slots: "1".parse().unwrap(),
            ..hailo_edge::decode::graph::HostGraph::real(side)
        };
        let path = dir.path().join(graph.file_name());
        std::fs::write(&path, graph.encode().unwrap()).unwrap();
        g.decoder_onnx = Some(path);
    }
    let choices = hailo_edge::rig::decoders::choose(&rig).unwrap();
    let err = hailo_edge::rig::decoders::pairings(&rig, &choices)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("keypoint_slots") && err.contains("100"),
        "{err}"
    );
    rig.decoder.keypoint_slots = Some("1".parse().unwrap());
    hailo_edge::rig::decoders::pairings(&rig, &choices).unwrap();
}

/// The demo rig with the reduced-width decoder fixtures (design split, every slot with
/// keypoints), so that nothing is generated.
fn reduced_demo() -> RigConfig {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut rig = RigConfig::demo(&fixtures);
    for (g, side) in rig.graphs.iter_mut().zip([288, 432]) {
        g.decoder_onnx = Some(fixtures.join(format!("decoder_reduced_{side}.onnx")));
    }
    rig
}

#[test]
fn the_exit_status_follows_the_verdict_unless_asked_not_to() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let out = hailo_edge()
        .args(["run", "--duration", "1", "--quiet", "--report"])
        .arg(&report)
        .output()
        .unwrap();
    let json = read_json(&report);
    assert_eq!(json["accounting_ok"], true);
    // The demo's real-width decoders need tens of cores at 120 fps, so on most machines the
    // verdict is "not sustained" (3); wherever it is sustained, the status is 0.
    let sustained = json["verdict"]["sustained"].as_bool().unwrap();
    assert_eq!(
        out.status.code(),
        Some(if sustained { 0 } else { 3 }),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !sustained {
        assert!(String::from_utf8_lossy(&out.stderr).contains("not sustained"));
    }
    // --exit-zero keeps 0 whatever the verdict.
    hailo_edge()
        .args(["run", "--duration", "0.5", "--quiet", "--exit-zero"])
        .assert()
        .success();
}
