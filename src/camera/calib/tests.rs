use super::*;

const OPENCV_YAML: &str = r#"%YAML:1.0
---
calibration_time: "Sat 28 Nov 2026 10:00:00 UTC"
image_width: 1280
image_height: 720
camera_matrix: !!opencv-matrix
   rows: 3
   cols: 3
   dt: d
   data: [ 9.1e+02, 0., 6.405e+02, 0., 9.12e+02, 3.595e+02, 0., 0., 1. ]
distortion_coefficients: !!opencv-matrix
   rows: 1
   cols: 5
   dt: d
   data: [ -0.12, 0.05, 1.0e-03, -2.0e-03, 0. ]
R: !!opencv-matrix
   rows: 3
   cols: 3
   dt: d
   data: [ 0., -1., 0., 1., 0., 0., 0., 0., 1. ]
T: !!opencv-matrix
   rows: 3
   cols: 1
   dt: d
   data: [ 0.1, -0.2, 2.5 ]
avg_reprojection_error: 0.21
"#;

const OPENCV_JSON: &str = r#"{
    "image_width": 640,
    "image_height": 480,
    "camera_matrix": {
        "type_id": "opencv-matrix",
        "rows": 3,
        "cols": 3,
        "dt": "d",
        "data": [ 500.0, 0.0, 320.0, 0.0, 501.0, 240.0, 0.0, 0.0, 1.0 ]
    },
    "distortion_coefficients": {
        "type_id": "opencv-matrix", "rows": 5, "cols": 1, "dt": "d",
        "data": [ 0.1, 0.0, 0.0, 0.0, 0.0 ]
    },
    "rvec": { "type_id": "opencv-matrix", "rows": 3, "cols": 1, "dt": "d",
        "data": [ 0.0, 0.0, 1.5707963267948966 ] },
    "tvec": { "type_id": "opencv-matrix", "rows": 3, "cols": 1, "dt": "d",
        "data": [ 1, 2, 3 ] }
}"#;

#[test]
fn reads_opencv_yaml_with_directive_and_tags() {
    let c = CameraCalibration::from_opencv_str(OPENCV_YAML, "cam0.yml", None).unwrap();
    let i = c.intrinsics;
    assert_eq!((i.width, i.height), (1280, 720));
    assert_eq!((i.fx, i.fy, i.cx, i.cy), (910.0, 912.0, 640.5, 359.5));
    assert_eq!(i.distortion(), [-0.12, 0.05, 0.001, -0.002, 0.0]);
    assert_eq!(c.extrinsics.rotation[0], [0.0, -1.0, 0.0]);
    assert_eq!(c.extrinsics.translation, [0.1, -0.2, 2.5]);
}

#[test]
fn reads_opencv_json_with_rvec() {
    let c = CameraCalibration::from_opencv_str(OPENCV_JSON, "cam1.json", None).unwrap();
    assert_eq!(c.intrinsics.fy, 501.0);
    assert_eq!(c.intrinsics.k1, 0.1);
    // 90 degrees about z: x axis to y axis.
    let p = c.extrinsics.to_camera([1.0, 0.0, 0.0]);
    assert!(
        (p[0] - 1.0).abs() < 1e-12 && (p[1] - 3.0).abs() < 1e-12 && (p[2] - 3.0).abs() < 1e-12,
        "{p:?}"
    );
}

#[test]
fn errors_name_the_file_and_key() {
    let no_k = OPENCV_YAML.replace("camera_matrix", "something_else");
    let e = CameraCalibration::from_opencv_str(&no_k, "cam0.yml", None)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("cam0.yml: no camera_matrix"), "{e}");
    let bad_rows = OPENCV_YAML.replace("rows: 1\n   cols: 5", "rows: 2\n   cols: 5");
    let e = CameraCalibration::from_opencv_str(&bad_rows, "cam0.yml", None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("distortion_coefficients") && e.contains("2x5"),
        "{e}"
    );
    let no_size = OPENCV_YAML.replace("image_width: 1280\n", "");
    assert!(CameraCalibration::from_opencv_str(&no_size, "x", None).is_err());
    let c = CameraCalibration::from_opencv_str(&no_size, "x", Some((1280, 720))).unwrap();
    assert_eq!(c.intrinsics.width, 1280);
    let skewed = OPENCV_YAML.replace(
        "data: [ 0., -1., 0., 1., 0., 0., 0., 0., 1. ]",
        "data: [ 1., 1., 0., 1., 0., 0., 0., 0., 1. ]",
    );
    let e = CameraCalibration::from_opencv_str(&skewed, "cam0.yml", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("rotation"), "{e}");
    assert!(CameraCalibration::from_opencv_str("[1, 2", "x", None).is_err());
}

#[test]
fn rig_toml_round_trip_and_unknown_keys() {
    let c = CameraCalibration::from_opencv_str(OPENCV_YAML, "cam0.yml", None).unwrap();
    let text = toml::to_string(&c).unwrap();
    let back: CameraCalibration = toml::from_str(&text).unwrap();
    assert_eq!(back, c);
    let typo = text.replace("fx =", "fxx =");
    let e = toml::from_str::<CameraCalibration>(&typo)
        .unwrap_err()
        .to_string();
    assert!(e.contains("fxx"), "{e}");
}

#[test]
fn projection_matches_opencv_project_points() {
    // Reference values from cv2.projectPoints with these parameters.
    let i = Intrinsics {
        k1: -0.2,
        k2: 0.05,
        p1: 0.001,
        p2: -0.002,
        k3: 0.01,
        ..Intrinsics::ideal(1280, 720, 90.0)
    };
    let p = i.project([0.3, -0.2, 1.5]).unwrap();
    // cv2.projectPoints([[0.3, -0.2, 1.5]], 0, 0, K, d) with the same K and d.
    assert!(
        (p[0] - 766.33201182).abs() < 1e-6 && (p[1] - 275.76633286).abs() < 1e-6,
        "{p:?}"
    );
    assert!(i.project([0.0, 0.0, -1.0]).is_none());
    let look = Extrinsics::look_at([3.0, 0.0, 1.0], [0.0, 0.0, 1.0]);
    assert!(look.is_rotation());
    let centre = CameraCalibration {
        intrinsics: i,
        extrinsics: look,
    }
    .project([0.0, 0.0, 1.0])
    .unwrap();
    assert!((centre[0] - 640.0).abs() < 1e-9 && (centre[1] - 360.0).abs() < 1e-9);
}
