//! `hailo-edge body forward`, `body render` and `body unrolled` from the outside.

mod common;

use std::path::Path;

use common::cli::{hailo_edge, json, read_json, write};
use hailo_edge::body::{Model, Phenotype, Pose};
use nalgebra::{UnitQuaternion, Vector3};
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

const POSE: &str = r#"{"rotations": {"upperarm01.L": [0.0, 0.9, 0.0], "lowerleg01.R": [-0.9, 0.0, 0.0]},
 "root_translation": [0.1, 0.0, 1.0], "phenotype": {"gender": 0.8, "height": 0.6}}"#;

#[test]
fn forward_prints_the_library_keypoints() {
    let dir = tempfile::tempdir().unwrap();
    let pose = write(&dir, "pose.json", POSE);
    let json = json(
        hailo_edge()
            .args(["body", "forward", "--input"])
            .arg(&pose)
            .arg("--vertices"),
    );
    let keypoints: Vec<[f64; 3]> = serde_json::from_value(json["keypoints"].clone()).unwrap();
    let vertices: Vec<[f64; 3]> = serde_json::from_value(json["vertices"].clone()).unwrap();
    assert_eq!(keypoints.len(), 23);
    assert_eq!(vertices.len(), 13718);
    // The indices are named: rig, topology, package version and labels.
    let skeleton = &json["skeleton"];
    assert_eq!(skeleton["rig"], "anny");
    assert_eq!(skeleton["topology"], "anny");
    assert_eq!(skeleton["version"], "0.6.2");
    assert_eq!(skeleton["vertices"], 13718);
    assert_eq!(skeleton["bones"].as_array().unwrap().len(), 104);
    assert_eq!(skeleton["keypoints"][9], "left_wrist");

    let model = Model::embedded().unwrap();
    let phenotype = Phenotype {
        gender: 0.8,
        height: 0.6,
        ..Phenotype::default()
    };
    let mut p = Pose::identity(model.bone_count());
    p.rotations[model.bone_index("upperarm01.L").unwrap()] =
        UnitQuaternion::from_scaled_axis(Vector3::new(0.0, 0.9, 0.0));
    p.rotations[model.bone_index("lowerleg01.R").unwrap()] =
        UnitQuaternion::from_scaled_axis(Vector3::new(-0.9, 0.0, 0.0));
    p.translation = Vector3::new(0.1, 0.0, 1.0);
    let expected = model.keypoints(&model.rest(&phenotype), &p).unwrap();
    for (k, e) in keypoints.iter().zip(&expected) {
        assert!((Vector3::from(*k) - e.coords).norm() < 1e-12);
    }
    // Negative control: the identity pose puts the left wrist elsewhere.
    let rest_pose = model
        .keypoints(&model.rest(&phenotype), &Pose::identity(model.bone_count()))
        .unwrap();
    let wrist = model
        .keypoint_labels()
        .iter()
        .position(|l| l == "left_wrist")
        .unwrap();
    assert!((Vector3::from(keypoints[wrist]) - rest_pose[wrist].coords).norm() > 0.05);
}

#[test]
fn bad_pose_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let unknown = write(
        &dir,
        "unknown.json",
        r#"{"rotations": {"tail": [0, 0, 1]}}"#,
    );
    let forward = |input: &Path| {
        hailo_edge()
            .args(["body", "forward", "--input"])
            .arg(input)
            .assert()
            .failure()
    };
    forward(&unknown).stderr(contains("unknown bone \"tail\"").and(contains("unknown.json")));
    let typo = write(&dir, "typo.json", r#"{"rotation": {}}"#);
    forward(&typo).stderr(contains("typo.json").and(contains("rotation")));
}

#[test]
fn render_writes_four_views_and_ground_truth() {
    let dir = tempfile::tempdir().unwrap();
    let pose = write(&dir, "pose.json", POSE);
    let out = dir.path().join("views");
    hailo_edge()
        .args(["body", "render", "--pose"])
        .arg(&pose)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    for i in 0..4 {
        let img = image::open(out.join(format!("view{i}.png")))
            .unwrap()
            .to_rgb8();
        let body = img.pixels().filter(|p| p.0[0] > 60).count();
        assert!(
            body * 50 > (img.width() * img.height()) as usize,
            "view {i} is nearly empty"
        );
    }
    let truth = read_json(&out.join("keypoints.json"));
    assert_eq!(truth["views"].as_array().unwrap().len(), 4);
    assert_eq!(truth["views"][0]["keypoints"].as_array().unwrap().len(), 23);
}

#[test]
fn convert_names_a_file_that_is_not_a_wheel() {
    let dir = tempfile::tempdir().unwrap();
    let fake = write(&dir, "fake.whl", "not a zip");
    let convert = |wheel: &Path| {
        hailo_edge()
            .args(["body", "convert", "--wheel"])
            .arg(wheel)
            .arg("-o")
            .arg(dir.path().join("out.safetensors"))
            .assert()
            .failure()
    };
    convert(&fake).stderr(contains("fake.whl").and(contains("zip")));
    convert(&dir.path().join("missing.whl")).stderr(contains("missing.whl"));
}

#[test]
fn unrolled_writes_the_graph_and_a_case_whose_tensors_fill_their_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let (onnx, case) = (dir.path().join("fit.onnx"), dir.path().join("case.json"));
    hailo_edge()
        .args(["body", "unrolled", "--iterations", "1", "-o"])
        .arg(&onnx)
        .arg("--case")
        .arg(&case)
        .assert()
        .success();
    assert!(std::fs::metadata(&onnx).unwrap().len() > 1000);
    let case = read_json(&case);
    for (section, names) in [
        (
            "inputs",
            &["rotations", "translation", "targets", "confidence"][..],
        ),
        (
            "outputs",
            &["fitted_rotations", "fitted_translation", "keypoints"][..],
        ),
    ] {
        for name in names {
            let t = &case[section][name];
            let shape: Vec<usize> = serde_json::from_value(t["shape"].clone()).unwrap();
            let data: Vec<f32> = serde_json::from_value(t["data"].clone()).unwrap();
            assert_eq!(
                data.len(),
                shape.iter().product::<usize>(),
                "{section} {name}"
            );
            assert!(data.iter().all(|x| x.is_finite()), "{section} {name}");
        }
    }
    assert_eq!(
        case["outputs"]["keypoints"]["shape"],
        serde_json::json!([23, 3])
    );
    // Negative controls: a case needs the graph's file, and the table needs 32 frames.
    hailo_edge()
        .args(["body", "unrolled", "--case"])
        .arg(dir.path().join("alone.json"))
        .assert()
        .failure()
        .stderr(contains("--out"));
    hailo_edge()
        .args(["body", "unrolled", "--table", "--frames", "10"])
        .assert()
        .failure()
        .stderr(contains("--frames"));
    assert!(!dir.path().join("alone.json").exists());
}
