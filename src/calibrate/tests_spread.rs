//! The calibration over noise: its own standard deviations match the spread of the solved
//! terms, follow the noise, and refuse a camera whose views pin its principal point loosely;
//! and the targets hold over twelve seeded captures.

use super::synthetic::{capture, errors, CameraErrors, CaptureSpec};
use super::tests::{anchor, names};
use super::*;
use crate::geom::Camera;

fn board() -> AprilGrid {
    "aprilgrid:6x6:0.088:0.3".parse().unwrap()
}

/// `truth` alone, calibrated from a seeded capture of `views` board poses.
fn calibrate(
    truth: Camera,
    views: usize,
    noise_px: f64,
    seed: u64,
    settings: &Settings,
) -> Result<Intrinsics, CalibrateError> {
    let spec = CaptureSpec {
        poses_per_camera: views,
        shared_poses: 0,
        noise_px,
        seed,
        ..CaptureSpec::default()
    };
    let s = capture(&board(), &[truth], &spec);
    let views: Vec<&BoardView> = s.views.iter().collect();
    calibrate_intrinsics(
        "face",
        (truth.width, truth.height),
        &s.board,
        &views,
        settings,
    )
}

fn face() -> Camera {
    crate::scene::demo_rig()[3]
}

/// Root mean square of `values`.
fn rms(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0.0), |(s, n), v| (s + v * v, n + 1.0));
    (sum / n).sqrt()
}

#[test]
fn standard_deviations_match_the_spread_over_noise() {
    // The model holds the lens exactly (no decentring in the truth, `p1 p2` and `k3` held),
    // so the solved terms scatter about the truth by noise alone.
    let mut truth = face();
    truth.distortion.p1 = 0.0;
    truth.distortion.p2 = 0.0;
    let settings = Settings {
        tangential: Term::Held,
        k3: Term::Held,
        max_principal_std_px: f64::INFINITY,
        ..Settings::default()
    };
    // Per noise level: the spread of fx, cx, cy about the truth over 16 seeds, and the root
    // mean square of the standard deviations the solves gave.
    let over = |noise_px: f64| -> ([f64; 3], [f64; 3]) {
        let solved: Vec<Intrinsics> = (1..=16)
            .map(|seed| calibrate(truth, 120, noise_px, seed, &settings).unwrap())
            .collect();
        let term = |k: usize, value: fn(&Camera) -> f64| {
            (
                rms(solved.iter().map(|i| value(&i.camera) - value(&truth))),
                rms(solved.iter().map(|i| i.std_dev[k])),
            )
        };
        let (fx, cx, cy) = (term(0, |c| c.fx), term(2, |c| c.cx), term(3, |c| c.cy));
        ([fx.0, cx.0, cy.0], [fx.1, cx.1, cy.1])
    };
    let (spread, predicted) = over(0.1);
    let (spread_noisier, predicted_noisier) = over(0.2);
    for (k, term) in ["fx", "cx", "cy"].iter().enumerate() {
        let ratio = spread[k] / predicted[k];
        let follows = predicted_noisier[k] / predicted[k];
        eprintln!(
            "{term}: spread {:.3} px, standard deviation {:.3} px (ratio {ratio:.2}); at twice the noise {:.3} and {:.3} px",
            spread[k], predicted[k], spread_noisier[k], predicted_noisier[k]
        );
        assert!((0.65..1.5).contains(&ratio), "{term}: {ratio}");
        assert!((1.8..2.2).contains(&follows), "{term}: {follows}");
        assert!(
            (0.65..1.5).contains(&(spread_noisier[k] / predicted_noisier[k])),
            "{term}"
        );
        // Negative control: the same band refuses the quieter noise's deviations for the
        // noisier spread.
        assert!(
            !(0.65..1.5).contains(&(spread_noisier[k] / predicted[k])),
            "{term}"
        );
    }
}

#[test]
fn a_loosely_pinned_principal_point_is_refused_and_named() {
    let e = calibrate(face(), 40, 0.2, 1, &Settings::default()).unwrap_err();
    let CalibrateError::Uncertain {
        camera,
        std_px,
        limit_px,
    } = &e
    else {
        panic!("40 views: {e}");
    };
    eprintln!("40 views: the principal point to {std_px:.2} px");
    assert_eq!(camera, "face");
    assert!(std_px > limit_px, "{std_px}");
    let text = e.to_string();
    assert!(
        text.contains("`face`") && text.contains("capture more views"),
        "{text}"
    );
    // Control: three times the views pin it.
    let got = calibrate(face(), 120, 0.2, 1, &Settings::default()).unwrap();
    eprintln!(
        "120 views: the principal point to {:.2} px",
        got.principal_std_px()
    );
    assert!(got.principal_std_px() <= 0.5, "{}", got.principal_std_px());
    assert!(
        got.lens_std_px > 0.0 && got.lens_std_px < 0.1,
        "{}",
        got.lens_std_px
    );
}

#[test]
fn p1_p2_are_kept_only_where_the_principal_point_stays_pinned() {
    // The narrow face lens: freed, `p1 p2` loosen the principal point past the limit, so
    // they are held at zero.
    let auto = calibrate(face(), 120, 0.2, 1, &Settings::default()).unwrap();
    assert_eq!(
        (auto.camera.distortion.p1, auto.camera.distortion.p2),
        (0.0, 0.0)
    );
    assert_eq!((auto.std_dev[6], auto.std_dev[7]), (0.0, 0.0));
    // Control: forced free on the same views, the principal point is refused as loose.
    let free = Settings {
        tangential: Term::Free,
        ..Settings::default()
    };
    assert!(matches!(
        calibrate(face(), 120, 0.2, 1, &free),
        Err(CalibrateError::Uncertain { .. })
    ));
    // A wide body lens keeps them, recovered to a standard deviation's reach.
    let body = crate::scene::demo_rig()[0];
    let got = calibrate(body, 120, 0.2, 1, &Settings::default()).unwrap();
    for (k, (solved, true_value)) in [
        (got.camera.distortion.p1, body.distortion.p1),
        (got.camera.distortion.p2, body.distortion.p2),
    ]
    .into_iter()
    .enumerate()
    {
        let sd = got.std_dev[6 + k];
        assert!(
            sd > 0.0 && (solved - true_value).abs() < 4.0 * sd,
            "{solved} {true_value} {sd}"
        );
    }
}

/// One camera of one seeded capture, against the truth: its errors and the standard
/// deviations of its principal point and lens.
struct Scored {
    camera: usize,
    errors: CameraErrors,
    principal_std_px: f64,
}

/// `cams` calibrated with `settings` from twelve seeded captures (seeds 1 to 12), each camera
/// printed against the truth; the captures refused, and every camera scored.
fn over_seeds(cams: &[Camera; 4], settings: &Settings) -> (usize, Vec<Scored>) {
    let names = names();
    let sizes: Vec<(u32, u32)> = cams.iter().map(|c| (c.width, c.height)).collect();
    let (mut refused, mut scored) = (0, Vec::new());
    for seed in 1..=12 {
        let spec = CaptureSpec {
            seed,
            ..CaptureSpec::default()
        };
        let s = capture(&board(), cams, &spec);
        let input = RigInput {
            board: &s.board,
            names: &names,
            sizes: &sizes,
            anchor: &anchor(&s),
            placed: Some(&s.cameras),
        };
        let started = std::time::Instant::now();
        let rig = match calibrate_rig(&input, &s.views, settings, &mut |_, _, _| {}) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("seed {seed}: {e}");
                refused += 1;
                continue;
            }
        };
        let took = started.elapsed().as_secs_f64();
        for (c, truth) in cams.iter().enumerate() {
            let e = errors(truth, &rig.cameras()[c]);
            let i = &rig.intrinsics[c];
            eprintln!(
                "seed {seed:2} {:5} focal {:.3} % pp {:.2} px (sd {:.2}) lens {:.3} px (sd {:.3}) pos {:.2} mm rot {:.3} deg{} ({took:.1} s)",
                names[c],
                e.focal_pct,
                e.principal_px,
                i.principal_std_px(),
                e.distortion_px,
                i.lens_std_px,
                e.position_mm,
                e.rotation_deg,
                if misses(&e) { " MISS" } else { "" }
            );
            scored.push(Scored {
                camera: c,
                errors: e,
                principal_std_px: i.principal_std_px(),
            });
        }
    }
    (refused, scored)
}

/// Whether a camera misses one of the targets.
fn misses(e: &CameraErrors) -> bool {
    e.focal_pct >= 0.3
        || e.principal_px >= 1.0
        || e.distortion_px >= 0.3
        || e.position_mm >= 2.0
        || e.rotation_deg >= 0.1
}

#[test]
#[ignore = "a measurement: cargo test --lib calibrate::tests_spread::targets_over_seeds -- --ignored --nocapture"]
fn targets_over_seeds() {
    let (refused, scored) = over_seeds(&crate::scene::demo_rig(), &Settings::default());
    let missed = scored.iter().filter(|s| misses(&s.errors)).count();
    eprintln!(
        "{missed} of {} cameras miss a target; {refused} of 12 captures refused",
        scored.len()
    );
    assert_eq!((refused, missed), (0, 0));
}

#[test]
#[ignore = "a measurement: cargo test --lib calibrate::tests_spread::p1_p2_over_seeds -- --ignored --nocapture"]
fn p1_p2_over_seeds() {
    let cams = crate::scene::demo_rig();
    // Freed on every camera, the face camera's principal point is pinned past the limit.
    let free = Settings {
        tangential: Term::Free,
        max_principal_std_px: f64::INFINITY,
        ..Settings::default()
    };
    let (_, scored) = over_seeds(&cams, &free);
    let face: Vec<&Scored> = scored.iter().filter(|s| s.camera == 3).collect();
    let (lo, hi) = face.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), s| {
        (lo.min(s.principal_std_px), hi.max(s.principal_std_px))
    });
    let worst = face
        .iter()
        .map(|s| s.errors.principal_px)
        .fold(0.0, f64::max);
    eprintln!(
        "p1 p2 free: face principal point to {lo:.2} to {hi:.2} px, {worst:.2} px off at worst"
    );
    assert!(lo > Settings::default().max_principal_std_px, "{lo}");
    // Held on every camera, the decentred body lenses are missed at the frame's corners.
    let held = Settings {
        tangential: Term::Held,
        ..Settings::default()
    };
    let (_, scored) = over_seeds(&cams, &held);
    let lens = scored
        .iter()
        .filter(|s| s.camera < 3)
        .map(|s| s.errors.distortion_px)
        .fold(0.0, f64::max);
    eprintln!("p1 p2 held: body lenses {lens:.3} px off at worst");
    assert!(lens > 0.3, "{lens}");
}

#[test]
#[ignore = "a measurement: cargo test --lib calibrate::tests_spread::without_decentring_over_seeds -- --ignored --nocapture"]
fn without_decentring_over_seeds() {
    // The face camera's truth without decentring: the `p1 p2` held at zero then hold the
    // lens exactly, and its principal point scatters by its standard deviation alone.
    let mut cams = crate::scene::demo_rig();
    cams[3].distortion.p1 = 0.0;
    cams[3].distortion.p2 = 0.0;
    let (refused, scored) = over_seeds(&cams, &Settings::default());
    let mut face: Vec<f64> = scored
        .iter()
        .filter(|s| s.camera == 3)
        .map(|s| s.errors.principal_px)
        .collect();
    face.sort_by(f64::total_cmp);
    assert_eq!((refused, face.len()), (0, 12));
    eprintln!(
        "face principal point {:.2} to {:.2} px off, median {:.2}",
        face[0],
        face[face.len() - 1],
        (face[5] + face[6]) / 2.0
    );
}
