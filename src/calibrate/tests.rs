//! The calibration against the seeded synthetic capture of the demo rig, with negative
//! controls for each target.

use std::sync::OnceLock;

use nalgebra::{DMatrix, DVector};

use super::problem::{Free, Observation, Reprojection, State};
use super::synthetic::{capture, errors, Capture, CaptureSpec};
use super::*;
use crate::body::fit::lm::Problem;
use crate::geom::{Camera, Distortion};

pub(super) fn names() -> Vec<String> {
    crate::scene::DEMO_CAMERA_NAMES.map(String::from).to_vec()
}

fn board() -> AprilGrid {
    "aprilgrid:6x6:0.088:0.3".parse().unwrap()
}

fn scene() -> &'static Capture {
    static SCENE: OnceLock<Capture> = OnceLock::new();
    SCENE.get_or_init(|| capture(&board(), &crate::scene::demo_rig(), &CaptureSpec::default()))
}

fn views_of(capture: &Capture, camera: usize) -> Vec<&BoardView> {
    capture
        .views
        .iter()
        .filter(|v| v.camera == camera)
        .collect()
}

/// The whole rig calibrated once for all tests.
fn rig() -> &'static RigCalibration {
    static RIG: OnceLock<RigCalibration> = OnceLock::new();
    RIG.get_or_init(|| {
        let s = scene();
        let sizes: Vec<(u32, u32)> = s.cameras.iter().map(|c| (c.width, c.height)).collect();
        let input = RigInput {
            board: &s.board,
            names: &names(),
            sizes: &sizes,
            anchor: &anchor(s),
            placed: Some(&s.cameras),
        };
        calibrate_rig(&input, &s.views, &Settings::default(), &mut |_, _, _| {}).unwrap()
    })
}

#[test]
fn reprojection_jacobian_matches_finite_differences() {
    let s = scene();
    let mut cameras = s.cameras.clone();
    cameras[1].distortion.k3 = 0.01;
    let observations: Vec<Observation> = s
        .views
        .iter()
        .filter(|v| v.pose < 3 || v.pose == s.poses.len() - 2)
        .flat_map(|v| {
            v.corners.iter().take(6).map(move |c| Observation {
                camera: v.camera,
                board: v.pose,
                id: c.id,
                point: board().corner(c.id).unwrap(),
                pixel: c.pixel,
            })
        })
        .collect();
    assert!(observations.iter().any(|o| o.camera != 0));
    let n = cameras.len();
    let free = Free {
        intrinsics: vec![true; n],
        k3: vec![true, true, false, true],
        tangential: vec![true, false, true, true],
        camera_poses: vec![true; n],
        boards: vec![true; s.poses.len()],
    };
    let problem = Reprojection::new(observations, &free, 1.0);
    let state = State {
        cameras,
        boards: s.poses.clone(),
    };
    let dim = problem.dim();
    let mut jac = DMatrix::zeros(2 * problem.observations().len(), dim);
    let mut cols = Vec::new();
    for i in 0..problem.observations().len() {
        problem.jacobian_row(&state, i, &mut cols).unwrap();
        for &(p, c) in &cols {
            jac[(2 * i, p)] = c.x;
            jac[(2 * i + 1, p)] = c.y;
        }
    }
    let stacked = |s: &State| -> DVector<f64> {
        DVector::from_iterator(
            jac.nrows(),
            problem.residuals(s).into_iter().flat_map(|r| {
                let r = r.unwrap();
                [r.x, r.y]
            }),
        )
    };
    let mut worst: f64 = 0.0;
    let mut flipped_worst: f64 = 0.0;
    for p in 0..dim {
        let h = 1e-6;
        let mut d = vec![0.0; dim];
        d[p] = h;
        let plus = stacked(&problem.step(&state, &d));
        d[p] = -h;
        let minus = stacked(&problem.step(&state, &d));
        let fd = (plus - minus) / (2.0 * h);
        let scale = fd.amax().max(1.0);
        worst = worst.max((&fd - jac.column(p)).amax() / scale);
        // Negative control: the same comparison with the column's sign flipped says no.
        if fd.amax() > 1.0 {
            flipped_worst = flipped_worst.max((&fd + jac.column(p)).amax() / scale);
        }
    }
    assert!(worst < 1e-5, "worst relative Jacobian error {worst}");
    assert!(flipped_worst > 1.0, "{flipped_worst}");
}

#[test]
fn intrinsics_recover_every_demo_camera() {
    let s = scene();
    let rig = rig();
    for (c, (truth, got)) in s.cameras.iter().zip(rig.cameras()).enumerate() {
        let e = errors(truth, got);
        let alone = &rig.intrinsics[c];
        eprintln!(
            "{}: focal {:.4} %, principal point {:.3} px, lens {:.3} px; alone RMS {:.3} px over {} views",
            names()[c],
            e.focal_pct,
            e.principal_px,
            e.distortion_px,
            alone.rms_px,
            alone.per_view_px.len()
        );
        assert!(
            e.focal_pct < 0.3,
            "{}: focal off by {} %",
            names()[c],
            e.focal_pct
        );
        assert!(
            e.principal_px < 1.0,
            "{}: principal point off by {} px",
            names()[c],
            e.principal_px
        );
        assert!(
            e.distortion_px < 0.3,
            "{}: lens off by {} px",
            names()[c],
            e.distortion_px
        );
        assert!(alone.rms_px <= 0.3, "{}: RMS {}", names()[c], alone.rms_px);
        assert!(
            rig.coverage[c].complete(),
            "{}: {}",
            names()[c],
            rig.coverage[c]
        );
        // Negative control: the same measure says no to the start (no distortion): past the
        // 0.3 px target on the face camera's narrow lens, past 1 px on the wide ones.
        let mut undistorted = *got;
        undistorted.distortion = Default::default();
        let bound = if names()[c] == "face" { 0.3 } else { 1.0 };
        assert!(errors(truth, &undistorted).distortion_px > bound);
    }
}

/// The intrinsics of the scene's first camera from its views, read against `board`.
fn front_with(s: &Capture, board: &AprilGrid) -> Result<Intrinsics, CalibrateError> {
    calibrate_intrinsics(
        "front",
        (288, 288),
        board,
        &views_of(s, 0),
        &Settings::default(),
    )
}

#[test]
fn a_wrong_tag_spacing_is_refused() {
    let s = scene();
    let wrong = AprilGrid::new(6, 6, 0.088, 0.33).unwrap();
    let err = front_with(s, &wrong).unwrap_err();
    assert!(
        matches!(
            err,
            CalibrateError::HighResidual { .. } | CalibrateError::BoardMismatch { .. }
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("front") && text.contains("--board"), "{text}");
}

#[test]
fn a_board_described_with_other_rows_and_columns_is_refused_as_such() {
    let s = scene();
    // The 36 tags of the 6 x 6 board, described as 4 rows of 9: every id is the board's,
    // and most lie elsewhere.
    let wrong = AprilGrid::new(4, 9, 0.088, 0.3).unwrap();
    let err = front_with(s, &wrong).unwrap_err();
    let CalibrateError::BoardLayout {
        miss_pct, views, ..
    } = err
    else {
        panic!("{err}");
    };
    assert!(miss_pct > 25.0 && views >= 3, "{miss_pct} % over {views}");
    let text = err.to_string();
    assert!(
        text.contains("`front`") && text.contains("ROWSxCOLS"),
        "{text}"
    );
    // Control: the board as printed passes the same check, with the lens bending its views.
    let right = front_with(s, &s.board);
    assert!(right.is_ok(), "{:?}", right.err().map(|e| e.to_string()));
}

#[test]
fn fronto_parallel_and_scarce_views_are_named() {
    let spec = CaptureSpec {
        max_tilt_deg: 2.0,
        shared_poses: 0,
        ..CaptureSpec::default()
    };
    let flat = capture(&board(), &crate::scene::demo_rig(), &spec);
    // The board lying on the floor is seen steeply by the body cameras; without it.
    let floor = flat.poses.len() - 1;
    let held: Vec<&BoardView> = views_of(&flat, 1)
        .into_iter()
        .filter(|v| v.pose != floor)
        .collect();
    let err = calibrate_intrinsics("left", (288, 288), &flat.board, &held, &Settings::default())
        .unwrap_err();
    assert!(
        matches!(err, CalibrateError::FrontoParallel { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("`left`") && err.to_string().contains("tilted"));
    let s = scene();
    let few: Vec<_> = views_of(s, 2).into_iter().take(3).collect();
    let err = calibrate_intrinsics("right", (288, 288), &s.board, &few, &Settings::default())
        .unwrap_err();
    assert!(
        matches!(
            err,
            CalibrateError::TooFewViews {
                views: 3,
                needed: 8,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("capture at least 5 more"), "{err}");
    let err =
        calibrate_intrinsics("face", (432, 432), &s.board, &[], &Settings::default()).unwrap_err();
    assert!(
        err.to_string().contains("`face` never saw the board"),
        "{err}"
    );
}

pub(super) fn anchor(s: &Capture) -> Anchor {
    s.anchor.unwrap()
}

/// Each camera's intrinsics calibrated alone.
fn calibrated() -> Vec<Camera> {
    rig().intrinsics.iter().map(|i| i.camera).collect()
}

#[test]
fn extrinsics_recover_the_demo_rig() {
    let s = scene();
    let rig = rig();
    let got = &rig.extrinsics;
    for (c, (truth, cam)) in s.cameras.iter().zip(&got.cameras).enumerate() {
        let e = errors(truth, cam);
        eprintln!(
            "{}: position {:.3} mm, rotation {:.4} deg, RMS {:.3} px",
            names()[c],
            e.position_mm,
            e.rotation_deg,
            got.per_camera_px[c]
        );
        assert!(e.position_mm < 2.0, "{}: {} mm", names()[c], e.position_mm);
        assert!(
            e.rotation_deg < 0.1,
            "{}: {} deg",
            names()[c],
            e.rotation_deg
        );
    }
    assert!(got.rms_px <= 0.3, "RMS {}", got.rms_px);
    assert_eq!(rig.reprojection.cameras.len(), 4, "every camera reported");
    let reported = rig.reprojection.rms_px().unwrap();
    assert!(
        (reported - got.rms_px).abs() < 0.05,
        "{reported} vs {}",
        got.rms_px
    );
    assert!(got.per_view_px.len() > 20);
    // Negative control: lenses bending the other way, held, do not explain the views. (Taken
    // as distortion-free they miss by 0.35 px RMS, under the gate's 0.5 px: the face camera's
    // narrow lens bends little, and the shared views keep the board off the frames' corners.)
    let wrong_lens: Vec<Camera> = calibrated()
        .into_iter()
        .map(|mut c| {
            let d = c.distortion;
            c.distortion = Distortion {
                k1: -d.k1,
                k2: -d.k2,
                p1: -d.p1,
                p2: -d.p2,
                k3: -d.k3,
            };
            c
        })
        .collect();
    let err = calibrate_extrinsics(
        &s.board,
        &wrong_lens,
        &names(),
        &s.views,
        &anchor(s),
        Some(&s.cameras),
        &Settings {
            refine_intrinsics: false,
            ..Settings::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            CalibrateError::HighResidual {
                stage: "extrinsics",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn swapped_cameras_are_named() {
    let s = scene();
    let swapped: Vec<BoardView> = s
        .views
        .iter()
        .map(|v| BoardView {
            camera: match v.camera {
                1 => 2,
                2 => 1,
                c => c,
            },
            ..v.clone()
        })
        .collect();
    let err = calibrate_extrinsics(
        &s.board,
        &calibrated(),
        &names(),
        &swapped,
        &anchor(s),
        Some(&s.cameras),
        &Settings::default(),
    )
    .unwrap_err();
    assert!(matches!(err, CalibrateError::Swapped { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("`body1`") && text.contains("`body2`"),
        "{text}"
    );
}

#[test]
fn a_camera_sharing_no_instant_is_named() {
    let s = scene();
    // Every other camera's view of an instant the face camera saw is taken out.
    let face_saw = |pose: usize| s.views.iter().any(|o| o.camera == 3 && o.pose == pose);
    let shared: Vec<BoardView> = s
        .views
        .iter()
        .filter(|v| v.camera == 3 || !face_saw(v.pose))
        .cloned()
        .collect();
    let err = calibrate_extrinsics(
        &s.board,
        &calibrated(),
        &names(),
        &shared,
        &anchor(s),
        None,
        &Settings::default(),
    )
    .unwrap_err();
    assert!(matches!(err, CalibrateError::NotLinked { .. }), "{err}");
    assert!(
        err.to_string().contains(
            "camera `face` never sees the board at the same time as `body0`, `body1`, `body2`"
        ),
        "{err}"
    );
    let unseen: Vec<BoardView> = s.views.iter().filter(|v| v.camera != 2).cloned().collect();
    let err = calibrate_extrinsics(
        &s.board,
        &calibrated(),
        &names(),
        &unseen,
        &anchor(s),
        None,
        &Settings::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("`body2` never saw the board"),
        "{err}"
    );
}

#[test]
fn a_camera_tied_by_too_few_instants_is_named() {
    let s = scene();
    // The instants the face camera shares with another camera, in order.
    let face_saw = |pose: usize| s.views.iter().any(|o| o.camera == 3 && o.pose == pose);
    let mut ties: Vec<usize> = s
        .views
        .iter()
        .filter(|v| v.camera != 3 && face_saw(v.pose))
        .map(|v| v.pose)
        .collect();
    ties.dedup();
    assert!(ties.len() > 20, "{}", ties.len());
    // Every other camera's view of those instants taken out but the first `keep`.
    let keeping = |keep: usize| -> Vec<BoardView> {
        s.views
            .iter()
            .filter(|v| v.camera == 3 || !face_saw(v.pose) || ties[..keep].contains(&v.pose))
            .cloned()
            .collect()
    };
    let solve = |views: &[BoardView]| {
        calibrate_extrinsics(
            &s.board,
            &calibrated(),
            &names(),
            views,
            &anchor(s),
            None,
            &Settings::default(),
        )
    };
    let err = solve(&keeping(2)).unwrap_err();
    assert!(
        matches!(
            err,
            CalibrateError::WeaklyLinked {
                instants: 2,
                needed: 5,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("camera `face` shares 2 board instant(s) with `body"),
        "{err}"
    );
    // The control: five shared instants tie it.
    assert!(solve(&keeping(5)).is_ok());
}

/// The targets over twelve captures (seeds 1 to 12), each camera's figures printed: a
/// measurement for docs/calibrate.md, ignored in the suite for its minute of solving.
#[test]
fn k3_is_kept_for_a_wide_lens_only() {
    // The demo's mild lens: `k3` would fit only noise, and is held at zero.
    for (c, i) in rig().intrinsics.iter().enumerate() {
        assert_eq!(i.camera.distortion.k3, 0.0, "{}", names()[c]);
    }
    // A wider lens with a real sixth-order term keeps it, and is recovered.
    let mut cameras = crate::scene::demo_rig();
    for c in &mut cameras {
        c.distortion.k1 = -0.2;
        c.distortion.k3 = 0.08;
    }
    let spec = CaptureSpec {
        shared_poses: 0,
        ..CaptureSpec::default()
    };
    let wide = capture(&board(), &cameras, &spec);
    let front = views_of(&wide, 0);
    let solve = |k3: Term| {
        let settings = Settings {
            k3,
            ..Settings::default()
        };
        calibrate_intrinsics("front", (288, 288), &wide.board, &front, &settings).unwrap()
    };
    let auto = solve(Term::Auto);
    assert!(auto.camera.distortion.k3 != 0.0);
    let kept = errors(&cameras[0], &auto.camera).distortion_px;
    assert!(kept < 0.3, "{kept} px");
    // Negative control: held at zero, the same views are explained worse.
    let held = solve(Term::Held);
    assert_eq!(held.camera.distortion.k3, 0.0);
    assert!(
        held.rms_px > auto.rms_px,
        "{} vs {}",
        held.rms_px,
        auto.rms_px
    );
    let bent = errors(&cameras[0], &held.camera).distortion_px;
    assert!(bent > 1.0, "{bent} px");
}

#[test]
fn the_rigs_shape_is_told_apart_from_its_place_in_the_world() {
    use super::synthetic::rig_errors;
    let truth = crate::scene::demo_rig();
    // The whole rig turned 0.1 degrees about the vertical and shifted 4 mm: its shape is
    // whole, and the motion is the world's.
    let mut moved = crate::scene::turned(&truth, 0.1);
    for c in &mut moved {
        c.translation += c.rotation * nalgebra::Vector3::new(0.0, 0.004, 0.0);
    }
    let e = rig_errors(&truth, &moved).unwrap();
    assert!((e.world.rotation_deg - 0.1).abs() < 1e-9, "{e:?}");
    assert!(
        e.world.position_mm > 3.0 && e.world.position_mm < 5.0,
        "{e:?}"
    );
    for pose in &e.shape {
        assert!(pose.position_mm < 1e-6 && pose.rotation_deg < 1e-6, "{e:?}");
    }
    // The control: one camera moved 3 mm on its own changes the rig's shape. The best fit
    // of the four spreads it, the moved camera keeping the most (measured 1.3 mm).
    let mut bumped = truth.to_vec();
    bumped[1].translation.x += 0.003;
    let e = rig_errors(&truth, &bumped).unwrap();
    assert!(e.shape[1].position_mm > 1.0, "{e:?}");
    assert!(
        e.shape
            .iter()
            .all(|p| p.position_mm <= e.shape[1].position_mm),
        "{e:?}"
    );
    assert!(rig_errors(&truth, &bumped[..3]).is_none());
}
