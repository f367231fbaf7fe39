//! `hailo-edge fuse` on loopback: two `run` processes, each a synthetic four-camera box
//! filming the demo's subject from its own side on the wall clock, and `fuse` over both.
//! One box is killed mid-run and comes back with its clock 50 ms off.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::boxes::{example, free_port, start_box};
use common::cli::read_json;
use hailo_edge::camera::calib::opencv_write::to_opencv_yaml;
use hailo_edge::scene::{demo_rig, turned};

const CAMERAS: [&str; 4] = ["body0", "body1", "body2", "face"];
/// Slow enough that a box fits most instants in a test build on a shared machine, so the
/// boxes' instants meet.
const FPS: u32 = 4;

/// The example's box b files are the demo's cameras turned 60 degrees about the subject;
/// `HAILO_EDGE_BLESS=1` writes them.
#[test]
fn the_example_calibrations_are_the_demo_rig_turned_60_degrees() {
    for (name, camera) in CAMERAS.iter().zip(turned(&demo_rig(), 60.0)) {
        let want = to_opencv_yaml(name, &camera);
        let path = example(&format!("b_{name}.yaml"));
        if std::env::var_os("HAILO_EDGE_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap();
        assert_eq!(have, want, "{}", path.display());
    }
}

fn rig<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["rigs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("rig {name} not in {report}"))
}

#[test]
fn two_boxes_fuse_into_one_body_and_one_that_dies_and_returns_skewed_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (free_port(), free_port());
    let report_a = dir.path().join("a.json");
    let mut a = start_box("a", FPS, pa, 50, &[], &report_a);
    let mut b = start_box("b", FPS, pb, 50, &[], &dir.path().join("b.json"));
    let fuse_report = dir.path().join("fuse.json");
    let fuse = Command::new(env!("CARGO_BIN_EXE_hailo-edge"))
        .args([
            "fuse",
            "-q",
            "--truth",
            "--duration",
            "28",
            "--absent-after",
            "2",
        ])
        .arg("--report")
        .arg(&fuse_report)
        .arg(format!("tcp/127.0.0.1:{pa}"))
        .arg(format!("tcp/127.0.0.1:{pb}"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Box b dies 12 s in, and 5 s later comes back with its clock 50 ms ahead: it is gone
    // for 3 s past the 2 s absence limit however fast it restarts.
    std::thread::sleep(Duration::from_secs(12));
    b.kill().unwrap();
    b.wait().unwrap();
    std::thread::sleep(Duration::from_secs(5));
    let mut b = start_box(
        "b",
        FPS,
        pb,
        20,
        &["--publish-skew-ms", "50"],
        &dir.path().join("b2.json"),
    );
    let out = fuse.wait_with_output().unwrap();
    assert!(out.status.success());
    let summary = String::from_utf8_lossy(&out.stdout).into_owned();
    let _ = b.kill();
    let _ = b.wait();
    assert!(a.wait().unwrap().success());

    let report = read_json(&fuse_report);
    let (ra, rb) = (rig(&report, "a"), rig(&report, "b"));
    // Eight views beat each box's four, on the same instants.
    let acc = &report["accuracy"];
    let shared = acc["shared_instants"].as_u64().unwrap();
    assert!(shared >= 5, "{summary}");
    let fused = acc["fused_mpjpe_mm"].as_f64().unwrap();
    for r in ["a", "b"] {
        let alone = acc["by_rig_mpjpe_mm"][r].as_f64().unwrap();
        assert!(
            fused < alone,
            "{r}: fused {fused} mm, alone {alone} mm\n{summary}"
        );
    }
    // The death is a gap in b, a goes on; b's return is counted, and its clock is caught.
    assert!(rb["gaps"].as_u64().unwrap() >= 1, "{summary}");
    assert!(rb["returns"].as_u64().unwrap() >= 1, "{summary}");
    assert!(rb["absent_s"].as_f64().unwrap() >= 2.5, "{summary}");
    assert!(rb["instants_missed"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(rb["skew_detected"], 1, "{summary}");
    assert_eq!(rb["skewed"], true, "{summary}");
    let off = rb["clock_offset_ms"].as_f64().unwrap();
    assert!((-55.0..-45.0).contains(&off), "{off}\n{summary}");
    // Negative control: box a's clock is within the tolerance, and a was not the one gone.
    assert_eq!(ra["skewed"], false);
    assert_eq!(ra["skew_detected"], 0, "{summary}");
    assert!(
        ra["clock_offset_ms"].as_f64().unwrap().abs() < 2.0,
        "{summary}"
    );
    assert!(ra["absent_s"].as_f64().unwrap() < rb["absent_s"].as_f64().unwrap());
    // Every view is accounted for, and fuse kept up: nothing dropped behind, and no
    // instant waited much past the set 300 ms.
    for r in [ra, rb] {
        let n = |k: &str| r[k].as_u64().unwrap();
        assert_eq!(n("views"), n("fused") + n("late") + n("not_fused"), "{r}");
    }
    assert_eq!(report["overflow"], 0);
    let p99 = report["latency_ms"]["p99"].as_f64().unwrap();
    assert!(p99 < 1000.0, "{p99}\n{summary}");
    assert_eq!(report["malformed"], 0);
    assert!(summary.contains("rig b: clock off"), "{summary}");
}

#[test]
fn fuse_with_no_box_up_fuses_nothing_and_says_so() {
    // The session opens although the box is not up (Zenoh retries it), and the run ends on time.
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("fuse.json");
    let out = Command::new(env!("CARGO_BIN_EXE_hailo-edge"))
        .args(["fuse", "-q", "--duration", "1", "--report"])
        .arg(&report)
        .arg(format!("tcp/127.0.0.1:{}", free_port()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = read_json(&report);
    assert_eq!(json["instants"], 0);
    assert!(json["rigs"].as_array().unwrap().is_empty());
    assert!(json["accuracy"].is_null());
}

#[test]
fn bad_fuse_flags_are_refused_naming_the_flag() {
    for (flag, value) in [
        ("--window-ms", "0"),
        ("--max-skew-ms", "nan"),
        ("--duration", "1e300"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hailo-edge"))
            .args(["fuse", "-q", flag, value])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{flag}: {err}");
    }
    // The skew flag only means something with --publish.
    let out = Command::new(env!("CARGO_BIN_EXE_hailo-edge"))
        .args(["run", "-q", "--duration", "1", "--publish-skew-ms", "5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--publish"));
}
