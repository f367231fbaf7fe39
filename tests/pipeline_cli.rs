//! `hailo-edge run` from the command line, and rig files that cannot work.

use std::path::Path;

use assert_cmd::Command;
use hailo_edge::rig::{run, RigConfig, RunOptions};

#[test]
fn run_duration_writes_a_report_whose_accounting_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let mcap = dir.path().join("run.mcap");
    Command::cargo_bin("hailo-edge")
        .unwrap()
        .args(["run", "--duration", "1", "--quiet", "--report"])
        .arg(&report)
        .arg("--record")
        .arg(&mcap)
        .assert()
        .success()
        .stderr(predicates::str::contains("2 px noise"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
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
    assert_eq!(json["what_ran"]["backend"], "Sim");
    // Every frame the NPU stage admitted was recorded, with the results, in one
    // MCAP file; frames dropped before it (at the camera queue, or as older than
    // the other cameras' frames of an instant) were not.
    let admitted: u64 = json["cameras"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let f = &c["frames"];
            f["captured"].as_u64().unwrap()
                - f["dropped"]["camera_queue"].as_u64().unwrap()
                - f["dropped"]["unaligned"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(json["recorded"]["frames"].as_u64().unwrap(), admitted);
    assert!(std::fs::metadata(&mcap).unwrap().len() > 0);
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
    std::fs::write(&bad, text.replace("threads = 2", "thread = 2")).unwrap();
    run_fails_naming(&bad, "thread");
    std::fs::write(&bad, text.replace("priority = 18", "priority = 99")).unwrap();
    run_fails_naming(&bad, "graph[1].priority");
}

/// `hailo-edge run --config rig` fails, and its error output names `what`.
fn run_fails_naming(rig: &Path, what: &str) {
    Command::cargo_bin("hailo-edge")
        .unwrap()
        .args(["run", "--config"])
        .arg(rig)
        .assert()
        .failure()
        .stderr(predicates::str::contains(what));
}

#[test]
fn missing_hef_and_missing_camera_are_named() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut rig = RigConfig::demo(&fixtures);
    rig.graphs[1].hef = fixtures.join("no_such_backbone.hef");
    let err = run(&rig, "test", &RunOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("graph[1].hef") && err.contains("no_such_backbone.hef"),
        "{err}"
    );

    let mut rig = RigConfig::demo(&fixtures);
    rig.cameras[2].source = "v4l2:/dev/video-missing-97".into();
    rig.body.keypoints = "decoder".into();
    let err = run(&rig, "test", &RunOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("body2") && err.contains("/dev/video-missing-97"),
        "{err}"
    );
}
