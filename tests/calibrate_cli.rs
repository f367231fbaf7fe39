//! `hailo-edge calibrate` end to end: the synthetic capture of the demo rig calibrated and
//! scored against its truth, the same views read back from the corners file it saved, the
//! files it writes read by the rig's own readers, and each refusal naming what is wrong.

mod common;

use std::path::Path;

use common::cli::{debug_patterns, hailo_edge, read_json, succeed, write};
use hailo_edge::camera::calib::from_opencv_file;
use hailo_edge::geom::Camera;
use serde_json::Value;

fn camera_of(report: &Value, i: usize) -> Camera {
    serde_json::from_value(report["cameras"][i]["camera"].clone()).unwrap()
}

fn fails(args: &[&str]) -> String {
    let out = hailo_edge().args(args).output().unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!text.contains("panicked"), "{text}");
    text
}

#[test]
fn synthetic_capture_is_calibrated_written_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cal");
    let corners = dir.path().join("corners.json");
    let run = succeed(
        hailo_edge()
            .args(["calibrate", "--synthetic", "--out"])
            .arg(&out)
            .arg("--save-corners")
            .arg(&corners),
    );
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(stdout.contains("calibrated 4 cameras"), "{stdout}");
    assert!(stdout.contains("25/25 regions, covered"), "{stdout}");
    assert!(stdout.contains("reprojection error"), "{stdout}");
    let report = read_json(&out.join("report.json"));
    assert!(debug_patterns(&stdout).is_empty(), "{stdout}");
    assert!(debug_patterns(&report.to_string()).is_empty());
    assert!(report["elapsed_s"].as_f64().unwrap() < 30.0, "{report}");
    assert!(stdout.contains("shape is the rig's own"), "{stdout}");
    assert!(
        report["truth_world_error"]["rotation_deg"]
            .as_f64()
            .unwrap()
            < 0.1
    );
    let names = hailo_edge::scene::DEMO_CAMERA_NAMES;
    for (i, name) in names.iter().enumerate() {
        let cam = &report["cameras"][i];
        assert_eq!(cam["name"], *name);
        let e = &cam["truth_errors"];
        assert!(e["focal_pct"].as_f64().unwrap() < 0.3, "{cam}");
        assert!(e["principal_px"].as_f64().unwrap() < 1.0, "{cam}");
        assert!(e["distortion_px"].as_f64().unwrap() < 0.3, "{cam}");
        assert!(e["position_mm"].as_f64().unwrap() < 2.0, "{cam}");
        assert!(e["rotation_deg"].as_f64().unwrap() < 0.1, "{cam}");
        let shape = &cam["truth_shape_errors"];
        assert!(shape["position_mm"].as_f64().unwrap() < 2.0, "{cam}");
        assert!(shape["rotation_deg"].as_f64().unwrap() < 0.1, "{cam}");
        assert!(cam["rms_px"].as_f64().unwrap() <= 0.3, "{cam}");
        assert_eq!(cam["coverage"]["complete"], true);
        // The principal point's standard deviations are reported, within the limit, and
        // name their terms.
        let sd = &cam["intrinsics_std_dev"];
        assert_eq!(sd["order"][2], "cx", "{cam}");
        let cx = sd["values"][2].as_f64().unwrap();
        assert!(cx > 0.0 && cx <= 0.5, "{cam}");
        assert!(sd["lens_px"].as_f64().unwrap() > 0.0, "{cam}");
        // The OpenCV file reads back as the reported camera.
        let file = out.join(format!("{name}.yaml"));
        let read = from_opencv_file(&file, None).unwrap();
        let want = camera_of(&report, i);
        assert!(read.extrinsics, "{name}: the file carries the pose");
        let got = read.camera;
        assert!((got.fx - want.fx).abs() < 1e-6 && (got.cx - want.cx).abs() < 1e-6);
        assert!((got.translation - want.translation).norm() < 1e-9, "{name}");
        assert!((got.distortion.k1 - want.distortion.k1).abs() < 1e-9);
    }
    let entries = std::fs::read_to_string(out.join("cameras.toml")).unwrap();
    assert_eq!(entries.matches("[[camera]]").count(), 4, "{entries}");
    assert!(entries.contains("body0.yaml"));
    let reprojection = &report["reprojection"]["cameras"];
    assert_eq!(reprojection.as_array().unwrap().len(), 4);
    assert!(reprojection[0]["views"].as_array().unwrap().len() > 80);

    // The same views from the corners file give the same calibration.
    let again = dir.path().join("again");
    succeed(
        hailo_edge()
            .args(["calibrate", "--corners"])
            .arg(&corners)
            .arg("--out")
            .arg(&again),
    );
    let second = read_json(&again.join("report.json"));
    for i in 0..4 {
        let (a, b) = (camera_of(&report, i), camera_of(&second, i));
        assert!((a.fx - b.fx).abs() < 1e-6, "{} vs {}", a.fx, b.fx);
        assert!((a.translation - b.translation).norm() < 1e-6);
        assert_eq!(second["cameras"][i]["truth_errors"], Value::Null);
        assert_eq!(second["cameras"][i]["truth_shape_errors"], Value::Null);
    }
    // Nothing is replaced without --overwrite, and the refusal comes before the work.
    let text = fails(&[
        "calibrate",
        "--corners",
        path(&corners),
        "--out",
        path(&again),
    ]);
    assert!(text.contains("body0.yaml"), "{text}");
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A small valid file: two cameras, the anchor given.
fn corners_file(views: &str) -> String {
    format!(
        r#"{{"board": "aprilgrid:6x6:0.088:0.3",
            "cameras": [{{"name": "a", "width": 288, "height": 288}},
                        {{"name": "b", "width": 288, "height": 288}}],
            "anchor": {{"instant": 0, "translation": [0, 0, 0], "rotation": [0, 0, 0]}},
            "views": [{views}]}}"#
    )
}

#[test]
fn bad_corners_files_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let cases = [
        (
            r#"{"camera": "c", "instant": 0, "corners": [[0, 10, 10]]}"#,
            "views[0].camera: `c` is not among the file's cameras",
        ),
        (
            r#"{"camera": "a", "instant": 0, "corners": [[144, 10, 10]]}"#,
            "views[0].corners[0]: corner id 144",
        ),
        (
            r#"{"camera": "a", "instant": 0, "corners": [[1, 10, 10], [1, 11, 11]]}"#,
            "corner id 1 is named twice",
        ),
        (
            r#"{"camera": "a", "instant": 0, "corners": [[1, 300, 10]]}"#,
            "pixel (300, 10) is outside the 288 x 288 image",
        ),
    ];
    for (i, (views, want)) in cases.iter().enumerate() {
        let file = write(&dir, &format!("bad{i}.json"), corners_file(views));
        let text = fails(&["calibrate", "--corners", path(&file), "--out", path(&out)]);
        assert!(text.contains(path(&file)) && text.contains(want), "{text}");
    }
    let unknown = write(
        &dir,
        "unknown.json",
        r#"{"board": "aprilgrid:6x6:0.088:0.3", "cameras": [], "views": [], "lens": 1}"#,
    );
    let text = fails(&[
        "calibrate",
        "--corners",
        path(&unknown),
        "--out",
        path(&out),
    ]);
    assert!(text.contains("unknown field `lens`"), "{text}");
    // A camera that never saw the board is named, with what to capture.
    let one = write(
        &dir,
        "one.json",
        corners_file(
            r#"{"camera": "a", "instant": 0, "corners": [[0, 10, 10], [1, 20, 10], [2, 20, 20], [3, 10, 20]]}"#,
        ),
    );
    let text = fails(&["calibrate", "--corners", path(&one), "--out", path(&out)]);
    assert!(
        text.contains("camera `a`") && text.contains("capture"),
        "{text}"
    );
    // The anchor must be an instant the board was seen at.
    let text = fails(&[
        "calibrate",
        "--corners",
        path(&one),
        "--anchor",
        "7",
        "--out",
        path(&out),
    ]);
    assert!(
        text.contains("--anchor 7: no camera saw the board"),
        "{text}"
    );
    // A board other than the one the corners were detected on.
    let text = fails(&[
        "calibrate",
        "--corners",
        path(&one),
        "--board",
        "aprilgrid:6x6:0.088:0.33",
        "--out",
        path(&out),
    ]);
    assert!(
        text.contains("was detected on aprilgrid:6x6:0.088:0.3"),
        "{text}"
    );
    // Negative control: the valid file passes the checks and fails only at calibration.
    assert!(!text.contains("views[0]"));
}

#[test]
fn a_file_without_an_anchor_needs_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir,
        "c.json",
        r#"{"board": "aprilgrid:6x6:0.088:0.3", "cameras": [{"name": "a", "width": 288, "height": 288}],
            "views": [{"camera": "a", "instant": 4, "corners": [[0, 10, 10]]}]}"#,
    );
    let text = fails(&[
        "calibrate",
        "--corners",
        path(&file),
        "--out",
        path(&dir.path().join("o")),
    ]);
    assert!(text.contains("give --anchor INSTANT"), "{text}");
}

/// The demo rig's camera `i` turned 10 degrees about a slanted axis through its centre and
/// moved 10 cm: a camera bumped after calibration.
fn bumped(i: usize) -> Camera {
    let c = hailo_edge::scene::demo_rig()[i];
    let axis = nalgebra::Unit::new_normalize(nalgebra::Vector3::new(1.0, 1.0, 0.0));
    let turn = nalgebra::Rotation3::from_axis_angle(&axis, 10f64.to_radians());
    let eye = -(c.rotation.transpose() * c.translation) + nalgebra::Vector3::new(0.06, 0.08, 0.0);
    let mut out = c;
    out.rotation = turn.matrix() * c.rotation;
    out.translation = -(out.rotation * eye);
    out
}

#[test]
fn a_bumped_camera_is_found_again_from_a_run_of_the_body() {
    use common::boxes::rig_file;
    use hailo_edge::calibrate::synthetic::errors;
    use hailo_edge::camera::calib::opencv_write::to_opencv_yaml;

    let dir = tempfile::tempdir().unwrap();
    // A run of the demo's subject as the true rig sees it: the keypoints the fit used. On the
    // virtual clock every camera renders every instant, so what the refinement is given, and
    // how well it does, does not depend on the machine's load.
    let truth = rig_file(dir.path(), "a", 10);
    let text = std::fs::read_to_string(&truth).unwrap();
    assert!(text.contains("clock = \"realtime\""));
    std::fs::write(
        &truth,
        text.replace("clock = \"realtime\"", "clock = \"virtual\""),
    )
    .unwrap();
    let results = dir.path().join("r.jsonl");
    succeed(
        hailo_edge()
            .args(["run", "-q", "--exit-zero", "--duration", "8", "--config"])
            .arg(&truth)
            .arg("--jsonl")
            .arg(&results),
    );
    // The rig file as it stands after `body1` was bumped: every camera's calibration in a
    // file, `body1`'s moved.
    let mut text = std::fs::read_to_string(&truth).unwrap();
    for (i, name) in hailo_edge::scene::DEMO_CAMERA_NAMES.iter().enumerate() {
        let camera = if i == 1 {
            bumped(1)
        } else {
            hailo_edge::scene::demo_rig()[i]
        };
        let file = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&file, to_opencv_yaml(name, &camera)).unwrap();
        let at = text.find(&format!("name = \"{name}\"\nsource")).unwrap();
        text.insert_str(at, &format!("calibration_file = \"{}\"\n", file.display()));
    }
    let start = write(&dir, "bumped.toml", text);
    let out = dir.path().join("cal");
    let run = succeed(
        hailo_edge()
            .args(["calibrate", "--body"])
            .arg(&results)
            .arg("--config")
            .arg(&start)
            .args(["--hold", "body0,body2,face", "--out"])
            .arg(&out),
    );
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(stdout.contains("refined 1 of 4 cameras from "), "{stdout}");
    assert!(debug_patterns(&stdout).is_empty(), "{stdout}");
    let report = read_json(&out.join("report.json"));
    let moved = report["cameras"][1]["moved_mm"].as_f64().unwrap();
    assert!(moved > 80.0, "{report}");
    assert_eq!(report["cameras"][0]["moved_mm"], 0.0);
    let found = from_opencv_file(&out.join("body1.yaml"), None)
        .unwrap()
        .camera;
    let e = errors(&hailo_edge::scene::demo_rig()[1], &found);
    // Eight seconds of the demo's subject (80 instants; its motion repeats every 4.8 s): from 10 cm and 10 degrees to 1 or 2 cm and under half a
    // degree. The 5 mm target takes 20 s of varied motion (calibrate::body's tests).
    eprintln!(
        "found again within {:.2} mm, {:.3} deg",
        e.position_mm, e.rotation_deg
    );
    assert!(e.position_mm < 40.0, "{e:?}\n{stdout}");
    assert!(e.rotation_deg < 1.0, "{e:?}\n{stdout}");
    // One camera held, the scale from the subject's stature: the body model's limbs at it.
    let rig = hailo_edge::rig::RigConfig::load(&truth).unwrap();
    let stature = hailo_edge::rig::build::body(&rig)
        .unwrap()
        .0
        .stature_m
        .unwrap();
    let by_stature = |metres: f64, out: &Path| {
        succeed(
            hailo_edge()
                .args([
                    "calibrate",
                    "--body",
                    path(&results),
                    "--config",
                    path(&start),
                ])
                .args(["--hold", "body0", "--stature", &metres.to_string()])
                .args(["--out", path(out), "--overwrite"]),
        );
        let report = read_json(&out.join("report.json"));
        assert_eq!(report["limbs"], 8, "{report}");
        (1..4)
            .map(|i| errors(&hailo_edge::scene::demo_rig()[i], &camera_of(&report, i)).position_mm)
            .fold(0.0, f64::max)
    };
    let stated = by_stature(stature, &dir.path().join("stature"));
    // Negative control: a stature 10 % too tall scales the rig by about as much.
    let tall = by_stature(1.1 * stature, &dir.path().join("tall"));
    eprintln!("stature {stature:.3} m: worst camera {stated:.1} mm; 10 % taller: {tall:.1} mm");
    assert!(stated < 50.0, "{stated} mm");
    assert!(tall > stated + 100.0, "{tall} vs {stated} mm");
    let text = fails(&[
        "calibrate",
        "--body",
        path(&results),
        "--config",
        path(&start),
        "--hold",
        "body0",
        "--stature",
        "170",
        "--out",
        path(&dir.path().join("cm")),
    ]);
    assert!(
        text.contains("--stature 170: expected the subject's height in metres"),
        "{text}"
    );
    // A camera to hold that the rig does not have, and nothing held, are refused.
    let text = fails(&[
        "calibrate",
        "--body",
        path(&results),
        "--config",
        path(&start),
        "--hold",
        "body9",
        "--out",
        path(&dir.path().join("x")),
    ]);
    assert!(
        text.contains("--hold body9: no such camera") && text.contains("body0, body1"),
        "{text}"
    );
    let text = fails(&[
        "calibrate",
        "--body",
        path(&results),
        "--config",
        path(&start),
        "--out",
        path(&dir.path().join("y")),
    ]);
    assert!(text.contains("no camera is held"), "{text}");
}
