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
    let c = from_opencv_str(OPENCV_YAML, "cam0.yml", None)
        .unwrap()
        .camera;
    assert_eq!((c.width, c.height), (1280, 720));
    // Principal point moved by half a pixel into continuous coordinates.
    assert_eq!((c.fx, c.fy, c.cx, c.cy), (910.0, 912.0, 641.0, 360.0));
    let d = c.distortion;
    assert_eq!(
        [d.k1, d.k2, d.p1, d.p2, d.k3],
        [-0.12, 0.05, 0.001, -0.002, 0.0]
    );
    assert_eq!(
        c.rotation.row(0).iter().copied().collect::<Vec<_>>(),
        [0.0, -1.0, 0.0]
    );
    assert_eq!(c.translation, Vector3::new(0.1, -0.2, 2.5));
}

#[test]
fn reads_opencv_json_with_rvec() {
    let c = from_opencv_str(OPENCV_JSON, "cam1.json", None)
        .unwrap()
        .camera;
    assert_eq!(c.fy, 501.0);
    assert_eq!(c.distortion.k1, 0.1);
    // 90 degrees about z: x axis to y axis.
    let p = c.to_camera(&nalgebra::Point3::new(1.0, 0.0, 0.0));
    assert!(
        (p[0] - 1.0).abs() < 1e-12 && (p[1] - 3.0).abs() < 1e-12 && (p[2] - 3.0).abs() < 1e-12,
        "{p:?}"
    );
}

#[test]
fn errors_name_the_file_and_key() {
    let no_k = OPENCV_YAML.replace("camera_matrix", "something_else");
    let e = from_opencv_str(&no_k, "cam0.yml", None)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("cam0.yml: no camera_matrix"), "{e}");
    let bad_rows = OPENCV_YAML.replace("rows: 1\n   cols: 5", "rows: 2\n   cols: 5");
    let e = from_opencv_str(&bad_rows, "cam0.yml", None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("distortion_coefficients") && e.contains("2x5"),
        "{e}"
    );
    let no_size = OPENCV_YAML.replace("image_width: 1280\n", "");
    assert!(from_opencv_str(&no_size, "x", None).is_err());
    let c = from_opencv_str(&no_size, "x", Some((1280, 720)))
        .unwrap()
        .camera;
    assert_eq!(c.width, 1280);
    let skewed = OPENCV_YAML.replace(
        "data: [ 0., -1., 0., 1., 0., 0., 0., 0., 1. ]",
        "data: [ 1., 1., 0., 1., 0., 0., 0., 0., 1. ]",
    );
    let e = from_opencv_str(&skewed, "cam0.yml", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("rotation"), "{e}");
    assert!(from_opencv_str("[1, 2", "x", None).is_err());
}

#[test]
fn rig_toml_round_trip_and_unknown_keys() {
    let c = from_opencv_str(OPENCV_YAML, "cam0.yml", None)
        .unwrap()
        .camera;
    let text = toml::to_string(&CalibrationTable::from(&c)).unwrap();
    assert!(
        text.contains("fx = 910.0") && text.contains("R = "),
        "{text}"
    );
    let back: CalibrationTable = toml::from_str(&text).unwrap();
    assert_eq!(Camera::from(back), c);
    let typo = text.replace("fx =", "fxx =");
    let e = toml::from_str::<CalibrationTable>(&typo)
        .unwrap_err()
        .to_string();
    assert!(e.contains("fxx"), "{e}");
}

#[test]
fn projection_matches_opencv_project_points() {
    // cv2.projectPoints([[0.3, -0.2, 1.5]], 0, 0, K, d) with K = [[640, 0, 640], [0, 640, 360], [0, 0, 1]]
    // and d = (-0.2, 0.05, 0.001, -0.002, 0.01) gives (766.33201182, 275.76633286); +0.5 here.
    let text = r#"{"image_width": 1280, "image_height": 720,
        "camera_matrix": {"rows": 3, "cols": 3, "dt": "d", "data": [640, 0, 640, 0, 640, 360, 0, 0, 1]},
        "distortion_coefficients": {"rows": 1, "cols": 5, "dt": "d", "data": [-0.2, 0.05, 0.001, -0.002, 0.01]}}"#;
    let c = from_opencv_str(text, "k.json", None).unwrap().camera;
    let p = c.project(&nalgebra::Point3::new(0.3, -0.2, 1.5)).unwrap();
    assert!(
        (p.x - 766.83201182).abs() < 1e-6 && (p.y - 276.26633286).abs() < 1e-6,
        "{p:?}"
    );
}

#[test]
fn an_image_size_that_is_not_the_camera_s_or_not_a_size_is_refused() {
    // The fixture is calibrated for 1280x720.
    from_opencv_str(OPENCV_YAML, "cam0.yml", Some((1280, 720))).expect("the camera's size");
    let e = from_opencv_str(OPENCV_YAML, "cam0.yml", Some((288, 288)))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cam0.yml") && e.contains("1280x720") && e.contains("288x288"),
        "{e}"
    );
    for bad in ["-5", "0", "100000", "12.5"] {
        let text = OPENCV_YAML.replace("image_width: 1280", &format!("image_width: {bad}"));
        for size in [None, Some((1280, 720))] {
            let e = from_opencv_str(&text, "cam0.yml", size)
                .unwrap_err()
                .to_string();
            assert!(e.contains("image_width") && e.contains(bad), "{e}");
        }
    }
}
