//! Writing and reading calibration files: OpenCV YAML, anipose / Pose2Sim TOML, Kalibr
//! camchain, the rig file's `[[camera]]` entries and the reprojection report.

use nalgebra::{Point3, Vector3};

use super::anipose::{from_anipose_str, to_anipose_string};
use super::kalibr::{self, from_kalibr_str, to_kalibr_string, world_at_first_camera};
use super::opencv_write::{camera_entries, number, to_opencv_yaml, EntryDefaults};
use super::report::ReprojectionReport;
use super::*;
use crate::scene::demo_rig;

fn demo(k3: f64) -> Vec<CalibratedCamera> {
    ["body0", "body1", "body2", "face"]
        .into_iter()
        .zip(demo_rig())
        .map(|(name, mut camera)| {
            camera.distortion.k3 = k3;
            CalibratedCamera {
                name: name.into(),
                camera,
            }
        })
        .collect()
}

/// The largest difference of projection over points around the subject, pixels.
fn projection_gap(a: &Camera, b: &Camera) -> f64 {
    let mut worst: f64 = 0.0;
    for p in [
        Point3::new(0.0, 0.0, 0.0),
        Point3::new(0.2, -0.1, 0.5),
        Point3::new(-0.3, 0.2, -0.6),
        Point3::new(0.05, 0.0, 0.6),
    ] {
        if let (Some(x), Some(y)) = (a.project(&p), b.project(&p)) {
            worst = worst.max((x - y).norm());
        }
    }
    worst
}

fn assert_same(a: &[CalibratedCamera], b: &[CalibratedCamera], tol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.name, y.name);
        assert_eq!(
            (x.camera.width, x.camera.height),
            (y.camera.width, y.camera.height)
        );
        let gap = projection_gap(&x.camera, &y.camera);
        assert!(gap < tol, "{}: {gap} px", x.name);
        assert!((x.camera.translation - y.camera.translation).amax() < 1e-9);
    }
}

#[test]
fn opencv_yaml_round_trips_bit_for_bit_and_in_opencv_s_number_form() {
    for c in demo(0.013) {
        let text = to_opencv_yaml(&c.name, &c.camera);
        assert!(text.starts_with("%YAML:1.0\n---\n"), "{text}");
        assert!(text.contains("camera_matrix: !!opencv-matrix"), "{text}");
        let back =
            from_opencv_str(&text, "w.yaml", Some((c.camera.width, c.camera.height))).unwrap();
        assert!(back.extrinsics);
        let (a, b) = (back.camera, c.camera);
        assert_eq!((a.fx, a.fy, a.cx, a.cy), (b.fx, b.fy, b.cx, b.cy));
        assert_eq!(a.distortion, b.distortion);
        assert_eq!(a.translation, b.translation);
        assert_eq!(a.rotation, b.rotation);
    }
    assert_eq!(number(910.0), "9.1000000000000000e+02");
    assert_eq!(number(-0.002), "-2.0000000000000000e-03");
    assert_eq!(number(0.0), "0.0000000000000000e+00");
}

#[test]
fn camera_entries_load_in_a_rig_file_and_name_the_written_files() {
    let cams = demo(0.0);
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<std::path::PathBuf> = cams
        .iter()
        .map(|c| format!("{}.yaml", c.name).into())
        .collect();
    for (c, f) in cams.iter().zip(&names) {
        std::fs::write(dir.path().join(f), to_opencv_yaml(&c.name, &c.camera)).unwrap();
    }
    let files: Vec<&std::path::Path> = names.iter().map(|p| p.as_path()).collect();
    let with = EntryDefaults {
        graph: "body".into(),
        fps: 30.0,
    };
    let entries = camera_entries(&cams, &files, &with);
    let text = format!("[[graph]]\nname = \"body\"\nhef = \"b.hef\"\n{entries}");
    let rig = crate::rig::config::RigConfig::parse(&text, &dir.path().join("rig.toml"))
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(rig.cameras.len(), 4);
    for (c, cfg) in cams.iter().zip(&rig.cameras) {
        assert_eq!(cfg.name, c.name);
        assert_eq!((cfg.width, cfg.height), (c.camera.width, c.camera.height));
        let path = cfg.calibration_file.as_ref().unwrap();
        let read = from_opencv_file(path, Some((cfg.width, cfg.height))).unwrap();
        assert_eq!(read.camera, c.camera);
    }
    // Negative control: the entries without the graph they name are refused.
    let orphan = format!("[[graph]]\nname = \"face\"\nhef = \"b.hef\"\n{entries}");
    assert!(crate::rig::config::RigConfig::parse(&orphan, &dir.path().join("rig.toml")).is_err());
}

/// Written by hand after aniposelib's `CameraGroup.dump`: translations in millimetres,
/// rotation a Rodrigues vector (90 degrees about z), OpenCV pixel centres.
const ANIPOSE: &str = r#"
[cam_0]
name = "left"
size = [ 1280, 720,]
matrix = [ [ 1000.0, 0.0, 639.5,], [ 0.0, 1000.0, 359.5,], [ 0.0, 0.0, 1.0,],]
distortions = [ 0.0, 0.0, 0.0, 0.0, 0.0,]
rotation = [ 0.0, 0.0, 1.5707963267948966,]
translation = [ 100.0, 200.0, 3000.0,]

[cam_1]
name = "right"
size = [ 1920.0, 1080.0,]
matrix = [ [ 1400.0, 0.0, 959.5,], [ 0.0, 1401.0, 539.5,], [ 0.0, 0.0, 1.0,],]
distortions = [ -0.1, 0.02, 0.001, -0.001, 0.003,]
rotation = [ 0.0, 0.3, 0.0,]
translation = [ -800.0, 0.0, 3100.0,]

[metadata]
adjusted = false
error = 0.41
"#;

#[test]
fn anipose_reads_world_to_camera_rodrigues_in_the_file_s_unit() {
    let cams = from_anipose_str(ANIPOSE, "calib.toml", Unit::Millimetre).unwrap();
    assert_eq!(cams.len(), 2);
    assert_eq!(cams[0].name, "left");
    let c = &cams[0].camera;
    assert_eq!((c.width, c.height), (1280, 720));
    assert_eq!((c.cx, c.cy), (640.0, 360.0));
    assert_eq!(c.translation, Vector3::new(0.1, 0.2, 3.0));
    // cv2.projectPoints([[100, 0, 0]], rvec, tvec, K, 0): R x = (0, 100, 0), plus t =
    // (100, 300, 3000) mm, so (1000 / 30 + 639.5, 1000 * 0.1 + 359.5) in OpenCV pixels,
    // half a pixel more here.
    let p = c.project(&Point3::new(0.1, 0.0, 0.0)).unwrap();
    assert!((p.x - (1000.0 / 30.0 + 640.0)).abs() < 1e-9, "{p}");
    assert!((p.y - 460.0).abs() < 1e-9, "{p}");
    // The camera centre is -R^T t: (-200, 100, -3000) mm.
    let centre = checks::centre(c);
    assert!(
        (centre - Point3::new(-0.2, 0.1, -3.0)).norm() < 1e-12,
        "{centre}"
    );
    assert_eq!(
        (cams[1].camera.width, cams[1].camera.distortion.k3),
        (1920, 0.003)
    );
    // Read as metres, the same file puts the cameras kilometres apart.
    let m = from_anipose_str(ANIPOSE, "calib.toml", Unit::Metre).unwrap();
    assert_eq!(m[0].camera.translation, Vector3::new(100.0, 200.0, 3000.0));
}

#[test]
fn anipose_round_trips_in_either_unit() {
    let cams = demo(0.01);
    for unit in [Unit::Metre, Unit::Millimetre] {
        let text = to_anipose_string(&cams, unit).unwrap();
        assert!(
            text.contains("[cam_3]") && text.contains("[metadata]"),
            "{text}"
        );
        let back = from_anipose_str(&text, "out.toml", unit).unwrap();
        assert_same(&cams, &back, 1e-9);
    }
    // The millimetre file holds millimetres.
    let text = to_anipose_string(&cams, Unit::Millimetre).unwrap();
    let read = from_anipose_str(&text, "out.toml", Unit::Metre).unwrap();
    assert!((read[0].camera.translation - cams[0].camera.translation * 1e3).amax() < 1e-9);
}

/// Written by hand after Kalibr's wiki (yaml formats): cam1 is 0.5 m along cam0's x
/// (`T_c1_c0` translation -0.5), cam2 turned 90 degrees about y from cam1 with
/// `T_c2_c1` translation (0, 0, -0.3).
const KALIBR: &str = r#"
cam0:
  cam_overlaps: [1, 2]
  camera_model: pinhole
  distortion_coeffs: [-0.27, 0.067, 0.0009, 0.0001]
  distortion_model: radtan
  intrinsics: [461.6, 460.2, 319.5, 239.5]
  resolution: [640, 480]
  rostopic: /left/image_raw
cam1:
  T_cn_cnm1:
  - [1.0, 0.0, 0.0, -0.5]
  - [0.0, 1.0, 0.0, 0.0]
  - [0.0, 0.0, 1.0, 0.0]
  - [0.0, 0.0, 0.0, 1.0]
  camera_model: pinhole
  distortion_coeffs: [0.0, 0.0, 0.0, 0.0]
  distortion_model: radtan
  intrinsics: [500.0, 500.0, 319.5, 239.5]
  resolution: [640, 480]
  rostopic: /cam1/image_raw
cam2:
  T_cn_cnm1:
  - [0.0, 0.0, 1.0, 0.0]
  - [0.0, 1.0, 0.0, 0.0]
  - [-1.0, 0.0, 0.0, -0.3]
  - [0.0, 0.0, 0.0, 1.0]
  camera_model: pinhole
  distortion_coeffs: [0.01, -0.002, 0.0, 0.0]
  distortion_model: radtan
  intrinsics: [510.0, 509.0, 321.5, 241.5]
  resolution: [800, 600]
  timeshift_cam_imu: 0.001
"#;

#[test]
fn kalibr_chains_t_cn_cnm1_from_cam0() {
    let cams = from_kalibr_str(KALIBR, "camchain.yaml").unwrap();
    let names: Vec<&str> = cams.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["left", "cam1", "cam2"]);
    let c0 = &cams[0].camera;
    assert_eq!((c0.cx, c0.cy, c0.fx), (320.0, 240.0, 461.6));
    assert_eq!(
        (c0.distortion.p1, c0.distortion.p2, c0.distortion.k3),
        (0.0009, 0.0001, 0.0)
    );
    let centre = |i: usize| checks::centre(&cams[i].camera);
    assert!((centre(0) - Point3::origin()).norm() < 1e-12);
    assert!(
        (centre(1) - Point3::new(0.5, 0.0, 0.0)).norm() < 1e-12,
        "{}",
        centre(1)
    );
    // T_c2_w = T_c2_c1 T_c1_c0: cam2's centre is cam1's plus R1^T (-R^T t) = (-0.3, 0, 0).
    // The other order would put it at (-0.3, 0, 0.5).
    assert!(
        (centre(2) - Point3::new(0.2, 0.0, 0.0)).norm() < 1e-12,
        "{}",
        centre(2)
    );
}

#[test]
fn kalibr_round_trips_relative_poses_and_refuses_k3() {
    let cams = demo(0.0);
    let text = to_kalibr_string(&cams).unwrap();
    assert!(
        text.contains("T_cn_cnm1") && text.contains("radtan"),
        "{text}"
    );
    let back = from_kalibr_str(&text, "camchain.yaml").unwrap();
    // The camchain's world is cam0: compare the cameras moved into cam0's frame.
    assert!(!world_at_first_camera(&cams));
    let expected = kalibr::relative_to_first(&cams);
    assert!(world_at_first_camera(&expected));
    for (e, b) in expected.iter().zip(&back) {
        assert_eq!(e.name, b.name);
        assert!((e.camera.rotation - b.camera.rotation).amax() < 1e-12);
        assert!((e.camera.translation - b.camera.translation).amax() < 1e-12);
        assert_eq!((e.camera.fx, e.camera.cx), (b.camera.fx, b.camera.cx));
    }
    refused(to_kalibr_string(&demo(0.01)), &["body0", "k3", "radtan"]);
}

#[test]
fn errors_name_the_file_the_camera_and_the_key() {
    let anipose = |t: &str| from_anipose_str(t, "calib.toml", Unit::Millimetre).map(drop);
    let kalibr = |t: &str| from_kalibr_str(t, "camchain.yaml").map(drop);
    let cases: [(String, &str, &str); 12] = [
        (ANIPOSE.replace("name = \"left\"\n", ""), "[cam_0]", "name"),
        (ANIPOSE.replace("size = [ 1280, 720,]", "size = [ 1280.5, 720,]"), "[cam_0]", "size"),
        (ANIPOSE.replace("[ 0.0, 0.0, 0.0, 0.0, 0.0,]", "[]"), "[cam_0]", "distortions"),
        (ANIPOSE.replace("error = 0.41", "error = 0.41\n[cam_2]\nname = \"x\"\nfisheye = true\nsize = [1, 1]\nmatrix = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]\ndistortions = [0.0]\nrotation = [0.0, 0.0, 0.0]\ntranslation = [0.0, 0.0, 0.0]"), "[cam_2]", "fisheye"),
        (ANIPOSE.replace("translation = [ 100.0", "translatoin = [ 100.0"), "[cam_0]", "translatoin"),
        ("[metadata]\nadjusted = false\n".to_string(), "calib.toml", "cam_0"),
        (KALIBR.replace("camera_model: pinhole\n  distortion_coeffs: [-0.27", "camera_model: omni\n  distortion_coeffs: [-0.27"), "cam0", "camera_model"),
        (KALIBR.replace("radtan\n  intrinsics: [461.6", "equidistant\n  intrinsics: [461.6"), "cam0", "distortion_model"),
        (KALIBR.replace("[461.6, 460.2, 319.5, 239.5]", "[461.6, 460.2, 319.5]"), "cam0", "intrinsics"),
        (KALIBR.replacen("  T_cn_cnm1:\n  - [1.0, 0.0, 0.0, -0.5]\n  - [0.0, 1.0, 0.0, 0.0]\n  - [0.0, 0.0, 1.0, 0.0]\n  - [0.0, 0.0, 0.0, 1.0]\n", "", 1), "cam1", "T_cn_cnm1"),
        (KALIBR.replace("cam2:", "cam3:"), "camchain.yaml", "cam2"),
        (KALIBR.replace("[-1.0, 0.0, 0.0, -0.3]", "[-1.0, 0.5, 0.0, -0.3]"), "cam2", "rotation"),
    ];
    for (text, at, key) in cases {
        let (file, result) = if at.starts_with('[') || at == "calib.toml" {
            ("calib.toml", anipose(&text))
        } else {
            ("camchain.yaml", kalibr(&text))
        };
        refused(result, &[file, at, key]);
    }
}

#[test]
fn reprojection_report_pools_views_by_points_and_names_the_worst() {
    let mut r = ReprojectionReport::default();
    r.add_view("body0", "frame 0", &[3.0, 4.0]);
    r.add_view("body0", "frame 1", &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    r.add_view("face", "frame 0", &[1.0]);
    let body0 = &r.cameras[0];
    assert_eq!(body0.views[0].rms_px, 12.5f64.sqrt());
    assert_eq!(body0.views[0].max_px, 4.0);
    // 25 over 8 points.
    assert_eq!(body0.rms_px(), Some((25.0f64 / 8.0).sqrt()));
    assert_eq!(r.rms_px(), Some((26.0f64 / 9.0).sqrt()));
    let text = r.render(true);
    assert!(
        text.contains("frame 0 (3.536 px)") && text.contains("face"),
        "{text}"
    );
    // A failed projection is never averaged away.
    r.add_view("face", "frame 1", &[f64::NAN]);
    assert_eq!(r.cameras[1].rms_px(), Some(f64::INFINITY));
    assert_eq!(ReprojectionReport::default().rms_px(), None);
}

#[test]
fn each_reader_names_its_own_format_when_a_file_is_another() {
    // A TOML file read as Kalibr's YAML, and a YAML mapping of lists read as TOML.
    let kalibr = from_kalibr_str(ANIPOSE, "chain.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        kalibr.contains("chain.yaml: not a Kalibr camchain"),
        "{kalibr}"
    );
    let anipose = from_anipose_str("cam0:\n  - 1\n", "calib.toml", Unit::Metre)
        .unwrap_err()
        .to_string();
    assert!(
        anipose.contains("calib.toml: not an anipose / Pose2Sim calibration"),
        "{anipose}"
    );
    let opencv = from_opencv_str("[cam_0]\nname = 1\n", "c.yaml", None)
        .unwrap_err()
        .to_string();
    assert!(
        opencv.contains("c.yaml: not OpenCV FileStorage"),
        "{opencv}"
    );
    // Each names one format only: the Kalibr reader does not blame OpenCV's.
    assert!(!kalibr.contains("OpenCV"), "{kalibr}");
}
