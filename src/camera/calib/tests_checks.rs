//! The checks a rig's calibrations pass, and the framing precision.

use nalgebra::{Point3, Vector3};

use super::checks::{check_rig, place, Placement, RigCheckError};
use super::framing::{framing, input_scale, mm_per_cell, scene_centre, subject_distance};
use super::*;
use crate::scene::demo_rig;

const NO_EXTRINSICS: &str = r#"%YAML:1.0
---
image_width: 640
image_height: 480
camera_matrix: !!opencv-matrix
   rows: 3
   cols: 3
   dt: d
   data: [ 500., 0., 319.5, 0., 500., 239.5, 0., 0., 1. ]
distortion_coefficients: !!opencv-matrix
   rows: 1
   cols: 5
   dt: d
   data: [ -0.1, 0.01, 0., 0., 0. ]
"#;

fn with_extrinsics(t: [f64; 3]) -> String {
    format!(
        "{NO_EXTRINSICS}R: !!opencv-matrix\n   rows: 3\n   cols: 3\n   dt: d\n   data: [ 1., 0., 0., 0., 1., 0., 0., 0., 1. ]\n\
         T: !!opencv-matrix\n   rows: 3\n   cols: 1\n   dt: d\n   data: [ {}, {}, {} ]\n",
        t[0], t[1], t[2]
    )
}

fn at(cameras: usize, origin: bool, unit: Unit) -> Placement {
    Placement {
        cameras,
        origin,
        unit,
    }
}

#[test]
fn a_file_without_extrinsics_is_refused_in_a_multi_camera_rig_unless_it_is_the_origin() {
    let read = from_opencv_str(NO_EXTRINSICS, "cam0.yml", None).unwrap();
    assert!(!read.extrinsics);
    let e = refused(
        place(read, "cam0.yml", at(4, false, Unit::Metre)),
        &["4 cameras", "world_origin = true"],
    );
    assert!(
        e.starts_with("cam0.yml: no extrinsics (R or rvec, and T or tvec)"),
        "{e}"
    );
    // Controls: a single camera, or the declared origin, stands at the origin.
    for placement in [at(1, false, Unit::Metre), at(4, true, Unit::Millimetre)] {
        let c = place(read, "cam0.yml", placement).unwrap();
        assert_eq!(c.translation, Vector3::zeros());
    }
    // A file with extrinsics is placed, in the rig's unit.
    let read = from_opencv_str(&with_extrinsics([100.0, 0.0, 2500.0]), "cam1.yml", None).unwrap();
    assert!(read.extrinsics);
    let c = place(read, "cam1.yml", at(4, false, Unit::Millimetre)).unwrap();
    assert!((c.translation - Vector3::new(0.1, 0.0, 2.5)).amax() < 1e-15);
    // The origin camera's file may not place it elsewhere.
    refused(
        place(read, "cam1.yml", at(4, true, Unit::Metre)),
        &["cam1.yml", "world_origin"],
    );
    let origin = from_opencv_str(&with_extrinsics([0.0, 0.0, 0.0]), "cam2.yml", None).unwrap();
    place(origin, "cam2.yml", at(4, true, Unit::Metre)).expect("R = I, T = 0 is the origin");
}

#[test]
fn half_the_extrinsics_names_the_missing_key() {
    let r_only = with_extrinsics([0.0; 3]);
    let r_only = &r_only[..r_only.find("T: ").unwrap()];
    refused(
        from_opencv_str(r_only, "cam0.yml", None),
        &["cam0.yml", "T (or tvec)"],
    );
}

fn named(cameras: &[Camera]) -> Vec<CalibratedCamera> {
    cameras
        .iter()
        .enumerate()
        .map(|(i, c)| CalibratedCamera {
            name: format!("cam{i}"),
            camera: *c,
        })
        .collect()
}

/// The demo's cameras with every translation scaled by `s` (the rig as if read in the
/// wrong unit).
fn demo_scaled(s: f64) -> Vec<CalibratedCamera> {
    let mut cams = named(&demo_rig());
    for c in &mut cams {
        c.camera.translation *= s;
    }
    cams
}

#[test]
fn baselines_beyond_a_rig_suggest_the_unit_and_name_the_pair() {
    check_rig(&demo_scaled(1.0), Unit::Metre).expect("the demo rig stands");
    // Millimetres read as metres: 2.6 m radii become 2.6 km.
    let e = check_rig(&demo_scaled(1e3), Unit::Metre).unwrap_err();
    assert!(matches!(e, RigCheckError::TooFar { .. }), "{e}");
    let e = e.to_string();
    assert!(
        e.contains("`cam0` and `cam1`") && e.contains("did you mean unit = \"mm\"?"),
        "{e}"
    );
    // Metres read as millimetres: the cameras within millimetres of each other.
    refused(
        check_rig(&demo_scaled(1e-3), Unit::Millimetre),
        &["`cam0` and `cam1`", "did you mean unit = \"m\"?"],
    );
}

#[test]
fn coincident_cameras_are_refused_with_the_pair_named() {
    let d = demo_rig();
    let mut near = d[2];
    near.translation += near.rotation * Vector3::new(0.004, 0.0, 0.0);
    let e = refused(
        check_rig(&named(&[d[0], d[2], near]), Unit::Metre),
        &["`cam1` and `cam2`", "4.00 mm"],
    );
    assert!(!e.contains("did you mean"), "{e}");
    // Control: 6 mm apart stands.
    near.translation += near.rotation * Vector3::new(0.002, 0.0, 0.0);
    check_rig(&named(&[d[0], d[2], near]), Unit::Metre).expect("6 mm apart");
}

fn looking(eye: [f64; 3], target: [f64; 3]) -> Camera {
    Camera::look_at(
        Point3::from(eye),
        Point3::from(target),
        Vector3::z(),
        60.0,
        (640, 480),
        Default::default(),
    )
    .unwrap()
}

#[test]
fn cameras_that_share_no_view_are_refused_with_the_pair_named() {
    // Two cameras back to back, 1 m apart: nothing one sees is in the other's image.
    let a = looking([0.0, 0.0, 1.0], [0.0, -5.0, 1.0]);
    let b = looking([0.0, 1.0, 1.0], [0.0, 6.0, 1.0]);
    let e = check_rig(&named(&[a, b]), Unit::Metre).unwrap_err();
    assert_eq!(
        e,
        RigCheckError::NoOverlap {
            a: "cam1".into(),
            b: "cam0".into()
        }
    );
    // Two groups that each overlap, but not each other: the nearest pair across is named.
    let c = looking([0.5, 0.0, 1.0], [0.5, -5.0, 1.0]);
    let d = looking([0.5, 1.2, 1.0], [0.5, 6.0, 1.0]);
    let e = check_rig(&named(&[a, c, b, d]), Unit::Metre).unwrap_err();
    assert_eq!(
        e,
        RigCheckError::NoOverlap {
            a: "cam2".into(),
            b: "cam0".into()
        }
    );
    // Control: facing each other, they overlap; and so does a camera turned 90 degrees
    // whose view crosses the first's.
    let facing = looking([0.0, -4.0, 1.0], [0.0, 0.0, 1.0]);
    check_rig(&named(&[a, facing]), Unit::Metre).expect("facing cameras overlap");
    let side = looking([3.0, -3.0, 1.0], [0.0, -3.0, 1.0]);
    check_rig(&named(&[a, side]), Unit::Metre).expect("crossing views overlap");
}

/// A 432 camera at `eye` looking horizontally at `target`, its frame spanning `extent`
/// metres there.
fn filling(eye: Point3<f64>, target: Point3<f64>, extent: f64) -> Camera {
    let fov = 2.0 * (0.5 * extent / (target - eye).norm()).atan().to_degrees();
    Camera::look_at(
        eye,
        target,
        Vector3::z(),
        fov,
        (432, 432),
        Default::default(),
    )
    .unwrap()
}

/// The millimetres per cell of `camera` at the subject standing through the origin, checked
/// against the subject's `extent` over 36 cells (a 432 frame) at `distance` and against the
/// design's rounded `figure`.
fn design_figure(camera: &Camera, distance: f64, extent_mm: f64, figure: f64) -> (f64, f64) {
    let d = subject_distance(camera, &Point3::origin());
    assert!((d - distance).abs() < 1e-12, "{d}");
    let mm = mm_per_cell(camera, d, 1.0);
    assert!((mm - extent_mm / 36.0).abs() < 1e-9, "{mm}");
    assert!(
        (mm - figure).abs() < 0.05 * figure.max(1.0),
        "{mm} against {figure}"
    );
    (d, mm)
}

#[test]
fn framing_gives_the_design_s_47_mm_and_5_6_mm() {
    // A 1.7 m subject filling a 432 frame 3 m away.
    let body = filling(Point3::new(0.0, -3.0, 0.0), Point3::origin(), 1.7);
    design_figure(&body, 3.0, 1700.0, 47.0);
    // A 200 mm face filling a 432 camera 0.5 m away, measured to the head on the subject's
    // vertical line, not to the root.
    let face = filling(Point3::new(0.0, -0.5, 0.6), Point3::new(0.0, 0.0, 0.6), 0.2);
    let (d, mm) = design_figure(&face, 0.5, 200.0, 5.6);
    // Negative control: the same face camera letterboxing 1280x720 into 432 is coarser by
    // 1280 / 432.
    let scale = input_scale(432, (1280, 720), false);
    assert!((mm_per_cell(&face, d, scale) - mm * 1280.0 / 432.0).abs() < 1e-9);
    assert_eq!(input_scale(432, (1280, 720), true), 432.0 / 720.0);
    let cams = named(&[body, face]);
    let f = framing(&cams, &[1.0, 1.0], Some(Point3::origin()), Some(1.7)).unwrap();
    assert!((f[0].stature_cells.unwrap() - 36.0).abs() < 1e-6, "{f:?}");
    // Parallel axes meet nowhere, and one camera has no scene centre: no subject point.
    assert!(framing(&cams, &[1.0, 1.0], None, None).is_none());
    assert!(framing(&cams[..1], &[1.0], None, None).is_none());
}

#[test]
fn scene_centre_is_where_the_axes_meet() {
    let c = scene_centre(&demo_rig()[..3]).unwrap();
    assert!(c.coords.norm() < 1e-9, "{c}");
    assert!(scene_centre(&demo_rig()[..1]).is_none());
}
