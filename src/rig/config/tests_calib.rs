//! The rig's calibrations: the `unit` and `world_origin` keys, and the checks the rig's
//! cameras pass when it is built, on files written as a user would.

use std::path::{Path, PathBuf};

use super::tests::parse;
use super::*;
use crate::camera::calib::kalibr::relative_to_first;
use crate::camera::calib::opencv_write::to_opencv_yaml;
use crate::camera::calib::refused;
use crate::camera::calib::{CalibratedCamera, Unit};
use crate::geom::Camera;
use crate::rig::build::calibrations;
use crate::rig::RunError;
use crate::scene::demo_rig;

const NAMES: [&str; 4] = ["body0", "body1", "body2", "face"];

/// A rig of the demo's four synthetic cameras, each with `calibration_file = NAME.yaml`,
/// `head` at the top of the file and `extra[i]` appended to camera `i`.
fn rig_text(head: &str, extra: [&str; 4]) -> String {
    let mut text = format!(
        "{head}\n[[graph]]\nname = \"body\"\nhef = \"b.hef\"\n[[graph]]\nname = \"face\"\nhef = \"f.hef\"\n"
    );
    for ((name, cam), extra) in NAMES.iter().zip(demo_rig()).zip(extra) {
        let graph = if *name == "face" { "face" } else { "body" };
        text.push_str(&format!(
            "\n[[camera]]\nname = \"{name}\"\nsource = \"synthetic\"\nwidth = {}\nheight = {}\n\
             fps = 30\ngraph = \"{graph}\"\ncalibration_file = \"{name}.yaml\"\n{extra}\n",
            cam.width, cam.height
        ));
    }
    text
}

/// Writes `cameras` as OpenCV files in `dir`, translations scaled by `scale`.
fn write_files(dir: &Path, cameras: &[CalibratedCamera], scale: f64) {
    for c in cameras {
        let mut cam = c.camera;
        cam.translation *= scale;
        std::fs::write(
            dir.join(format!("{}.yaml", c.name)),
            to_opencv_yaml(&c.name, &cam),
        )
        .unwrap();
    }
}

fn demo_named() -> Vec<CalibratedCamera> {
    NAMES
        .iter()
        .zip(demo_rig())
        .map(|(n, camera)| CalibratedCamera {
            name: (*n).into(),
            camera,
        })
        .collect()
}

fn load(dir: &Path, text: &str) -> Result<Vec<Camera>, RunError> {
    let rig = RigConfig::parse(text, &dir.join("rig.toml"))?;
    calibrations(&rig)
}

fn assert_demo(got: &[Camera], want: &[CalibratedCamera]) {
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g.translation - w.camera.translation).amax() < 1e-12,
            "{}",
            w.name
        );
        assert!(
            (g.rotation - w.camera.rotation).amax() < 1e-12,
            "{}",
            w.name
        );
    }
}

#[test]
fn translations_in_millimetres_load_with_unit_mm_and_are_refused_as_metres() {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), &demo_named(), 1e3);
    let got = load(dir.path(), &rig_text("unit = \"mm\"", [""; 4])).unwrap();
    assert_demo(&got, &demo_named());
    // Negative control: the same files read as metres.
    refused(
        load(dir.path(), &rig_text("", [""; 4])),
        &["`body0` and `body1`", "did you mean unit = \"mm\"?"],
    );
    // And metres read as millimetres.
    write_files(dir.path(), &demo_named(), 1.0);
    refused(
        load(dir.path(), &rig_text("unit = \"mm\"", [""; 4])),
        &["did you mean unit = \"m\"?"],
    );
    refused(
        parse("unit = \"cm\"\n[[graph]]\nname = \"g\"\nhef = \"g.hef\""),
        &["unit", "mm"],
    );
}

#[test]
fn a_file_without_extrinsics_needs_world_origin_in_a_multi_camera_rig() {
    let dir = tempfile::tempdir().unwrap();
    // The rig in body0's frame: body0's file is what calibrateCamera writes.
    let rig = relative_to_first(&demo_named());
    write_files(dir.path(), &rig, 1.0);
    let path = dir.path().join("body0.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let cut = &text[..text.find("R: !!opencv-matrix").unwrap()];
    std::fs::write(&path, cut).unwrap();
    refused(
        load(dir.path(), &rig_text("", [""; 4])),
        &[
            "camera `body0`",
            "body0.yaml: no extrinsics",
            "world_origin = true",
        ],
    );
    let origin = ["world_origin = true", "", "", ""];
    let got = load(dir.path(), &rig_text("", origin)).unwrap();
    assert_demo(&got, &rig);
    // The key on a camera whose file places it elsewhere is refused.
    write_files(dir.path(), &rig, 1.0);
    refused(
        load(
            dir.path(),
            &rig_text("", ["", "world_origin = true", "", ""]),
        ),
        &["body1.yaml", "world_origin"],
    );
}

#[test]
fn world_origin_is_one_camera_s_with_a_file() {
    let two = rig_text("", ["world_origin = true", "", "world_origin = true", ""]);
    refused(
        parse(&two),
        &["camera[2].world_origin", "`body0` is the world origin"],
    );
    let no_file = rig_text("", ["world_origin = true", "", "", ""]).replacen(
        "calibration_file = \"body0.yaml\"\n",
        "",
        1,
    );
    refused(
        parse(&no_file),
        &["camera[0].world_origin", "calibration_file"],
    );
}

#[test]
fn the_demo_the_example_and_synthetic_rings_pass_the_checks() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let demo = RigConfig::demo(&fixtures);
    calibrations(&demo).expect("the demo rig");
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/rig.toml");
    let rig = RigConfig::load(&example).unwrap();
    calibrations(&rig).expect("examples/rig.toml");
    // A ring of eight synthetic cameras of a size the demo does not have.
    let mut ring = demo.clone();
    ring.cameras = (0..8)
        .map(|i| CameraConfig {
            name: format!("ring{i}"),
            width: 640,
            height: 480,
            graph: "body".into(),
            ..demo.cameras[0].clone()
        })
        .collect();
    calibrations(&ring).expect("a ring of eight");
}

#[test]
fn the_unit_is_a_closed_set() {
    for (text, unit) in [
        ("unit = \"m\"", Unit::Metre),
        ("unit = \"mm\"", Unit::Millimetre),
    ] {
        let rig = parse(&rig_text(text, [""; 4])).unwrap();
        assert_eq!(rig.unit, unit);
    }
    assert_eq!(parse(&rig_text("", [""; 4])).unwrap().unit, Unit::Metre);
}
