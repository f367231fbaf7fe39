//! Intrinsics of one camera from its board views: Zhang's closed form from the views'
//! homographies, then Levenberg-Marquardt over focal lengths, principal point, `k1 k2 p1 p2
//! k3` and every board pose.

use std::collections::BTreeMap;

use nalgebra::{Isometry3, Matrix3, Point2, Rotation3, Vector2, Vector3};

use super::board::AprilGrid;
use super::homography::{
    focal_at_centre, homography, pose_from_homography, view_pose, zhang_intrinsics,
};
use super::problem::{Observation, Reprojection, State};
use super::{check_views, rms, solver, solver_pass, BoardView, CalibrateError, Settings, Term};
use crate::geom::{Camera, Distortion};

mod lens;
use lens::{covariance_of, lens_free, lens_std_px, lens_terms, principal_std_px};

/// Corners (six tags) a view needs to enter the closed-form start, when enough views have
/// them.
const CLOSED_FORM_CORNERS: usize = 24;

/// Views with [`CLOSED_FORM_CORNERS`] the closed form needs before it takes only those.
const CLOSED_FORM_VIEWS: usize = 6;

/// Times views left far from their corners are posed again and the solve repeated.
pub(crate) const MAX_REPOSES: usize = 2;

/// One camera's calibrated intrinsics and how well they explain its views.
#[derive(Debug, Clone, PartialEq)]
pub struct Intrinsics {
    /// The camera, at the identity pose.
    pub camera: Camera,
    /// Reprojection error over all its corners, root mean square (pixels).
    pub rms_px: f64,
    /// Each view's instant and its reprojection error (RMS, pixels).
    pub per_view_px: Vec<(usize, f64)>,
    /// Each view's instant and its board-to-camera pose.
    pub board_poses: Vec<(usize, Isometry3<f64>)>,
    /// Largest tilt of the board from fronto-parallel among the views (degrees).
    pub max_tilt_deg: f64,
    /// Standard deviations of `fx fy cx cy k1 k2 p1 p2 k3` (OpenCV's order) from the views'
    /// corners and the noise they leave; zero for a term held.
    pub std_dev: [f64; 9],
    /// The largest standard deviation, over a grid to the frame's corners, of where the
    /// lens's distortion puts a pixel (pixels): how far the views pin the lens where they
    /// reach least.
    pub lens_std_px: f64,
}

impl Intrinsics {
    /// The larger standard deviation of the principal point's two coordinates (pixels).
    pub fn principal_std_px(&self) -> f64 {
        self.std_dev[2].max(self.std_dev[3])
    }
}

/// The camera matrix of `c`.
fn k_of(c: &Camera) -> Matrix3<f64> {
    Matrix3::new(c.fx, 0.0, c.cx, 0.0, c.fy, c.cy, 0.0, 0.0, 1.0)
}

/// The plane-to-pixel homography of a view; `None` if its corners are degenerate.
fn view_homography(board: &AprilGrid, view: &BoardView) -> Option<Matrix3<f64>> {
    let (from, to): (Vec<_>, Vec<_>) = view
        .corners
        .iter()
        .filter_map(|c| board.corner(c.id).map(|p| (Point2::new(p.x, p.y), c.pixel)))
        .unzip();
    homography(&from, &to)
}

/// Views of fewer tags say little about the layout: a homography bends to fit them.
const LAYOUT_MIN_TAGS: usize = 4;
/// Largest median miss of a view's tags from one plane, as a share of the tag pitch: a lens
/// bends a view by a few per cent of a pitch, a wrong row count puts tags a whole pitch off.
const LAYOUT_MAX_MISS: f64 = 0.25;

/// Refuses views whose tags no plane holds where the board places them (a board described
/// with the wrong number of rows or columns numbers its tags into other places): each
/// view's corners are taken back to the board plane through its homography, and the median
/// view's RMS miss must stay under [`LAYOUT_MAX_MISS`] of the tag pitch.
fn check_plane(
    name: &str,
    board: &AprilGrid,
    views: &[&BoardView],
    hs: &[(usize, Matrix3<f64>)],
) -> Result<(), CalibrateError> {
    let pitch = board.tag_size() * (1.0 + board.spacing());
    let mut misses: Vec<f64> = hs
        .iter()
        .filter(|(i, _)| views[*i].corners.len() >= 4 * LAYOUT_MIN_TAGS)
        .filter_map(|(i, h)| {
            let back = h.try_inverse()?;
            let (sum, n) = views[*i]
                .corners
                .iter()
                .filter_map(|c| {
                    let p = board.corner(c.id)?;
                    let q = super::homography::apply(&back, &c.pixel);
                    Some((q.x - p.x).powi(2) + (q.y - p.y).powi(2))
                })
                .fold((0.0, 0usize), |(s, n), d| (s + d, n + 1));
            (n > 0).then(|| (sum / n as f64).sqrt() / pitch)
        })
        .filter(|m| m.is_finite())
        .collect();
    if misses.len() < 3 {
        return Ok(());
    }
    misses.sort_by(f64::total_cmp);
    let median = misses[misses.len() / 2];
    if median > LAYOUT_MAX_MISS {
        return Err(CalibrateError::BoardLayout {
            camera: name.to_owned(),
            views: misses.len(),
            miss_pct: 100.0 * median,
        });
    }
    Ok(())
}

/// A board pose's tilt from fronto-parallel (degrees): the angle between the board's normal
/// and the camera's optical axis.
pub fn tilt_deg(pose: &Isometry3<f64>) -> f64 {
    let n = pose.rotation * Vector3::z();
    n.z.abs().clamp(0.0, 1.0).acos().to_degrees()
}

/// Calibrates the intrinsics of camera `name` (image `size`) from `views`, all of which must
/// be this camera's.
///
/// # Errors
/// [`CalibrateError::NeverSeen`] with no views, [`CalibrateError::TooFewViews`] below
/// `settings.min_views`, [`CalibrateError::FrontoParallel`] when no view is tilted by
/// `settings.min_tilt_deg`, [`CalibrateError::Degenerate`] when the views fix no start,
/// [`CalibrateError::HighResidual`] when the solution explains the corners worse than
/// `settings.max_rms_px` (a wrong board description, or a lens the model cannot hold),
/// [`CalibrateError::Uncertain`] when the views pin the principal point more loosely than
/// `settings.max_principal_std_px`, and [`CalibrateError::BadCorner`] for a corner the board
/// does not have.
pub fn calibrate_intrinsics(
    name: &str,
    size: (u32, u32),
    board: &AprilGrid,
    views: &[&BoardView],
    settings: &Settings,
) -> Result<Intrinsics, CalibrateError> {
    let hs = homographies(name, board, views, settings)?;
    let (start, k) = closed_form(name, size, views, &hs, settings)?;
    let hs = in_front(name, board, views, hs, &start, &k, settings)?;
    let (boards, observations) = posed_corners(name, board, views, &hs, &k)?;
    let free = lens_free(
        boards.len(),
        settings.tangential == Term::Free,
        settings.k3 == Term::Free,
    );
    let mut problem = Reprojection::new(observations, &free, settings.huber_px);
    let state = State {
        cameras: vec![start],
        boards,
    };
    let state = settle(name, board, views, &hs, &mut problem, state, settings)?;
    let (mut problem, state, covariance) = lens_terms(name, problem, state, settings)?;
    let residuals = problem.residuals(&state);
    let rms_px = rms(residuals.iter());
    if rms_px > settings.max_rms_px {
        return Err(CalibrateError::HighResidual {
            camera: name.to_owned(),
            stage: "intrinsics",
            rms_px,
            limit_px: settings.max_rms_px,
        });
    }
    check_layout(name, board, &state, problem.observations(), settings)?;
    let per_view_px: Vec<(usize, f64)> = hs
        .iter()
        .enumerate()
        .map(|(b, (i, _))| (views[*i].pose, problem.rms_of(&residuals, |o| o.board == b)))
        .collect();
    let board_poses = hs
        .iter()
        .zip(&state.boards)
        .map(|((i, _), p)| (views[*i].pose, *p))
        .collect();
    let max_tilt_deg = state.boards.iter().map(tilt_deg).fold(0.0, f64::max);
    let covariance = covariance
        .or_else(|| covariance_of(&mut problem, &state))
        .ok_or_else(|| CalibrateError::Degenerate {
            camera: name.to_owned(),
            what: "the views leave the intrinsics undetermined",
        })?;
    let std_px = principal_std_px(&covariance);
    if std_px > settings.max_principal_std_px {
        return Err(CalibrateError::Uncertain {
            camera: name.to_owned(),
            std_px,
            limit_px: settings.max_principal_std_px,
        });
    }
    Ok(Intrinsics {
        camera: state.cameras[0],
        rms_px,
        per_view_px,
        board_poses,
        max_tilt_deg,
        std_dev: std::array::from_fn(|i| covariance[(i, i)].max(0.0).sqrt()),
        lens_std_px: lens_std_px(&state.cameras[0], &covariance),
    })
}

/// Each view's index with its plane-to-pixel homography, views whose corners fix none
/// passed over.
///
/// # Errors
/// [`CalibrateError::BadCorner`], [`CalibrateError::NeverSeen`] without views,
/// [`CalibrateError::TooFewViews`] under `settings.min_views` homographies, and the board
/// plane's check ([`check_plane`]).
fn homographies(
    name: &str,
    board: &AprilGrid,
    views: &[&BoardView],
    settings: &Settings,
) -> Result<Vec<(usize, Matrix3<f64>)>, CalibrateError> {
    check_views(name, board, views)?;
    if views.is_empty() {
        return Err(CalibrateError::NeverSeen {
            camera: name.to_owned(),
        });
    }
    let hs: Vec<(usize, Matrix3<f64>)> = views
        .iter()
        .enumerate()
        .filter_map(|(i, v)| view_homography(board, v).map(|h| (i, h)))
        .collect();
    if hs.len() < settings.min_views {
        return Err(CalibrateError::TooFewViews {
            camera: name.to_owned(),
            views: hs.len(),
            needed: settings.min_views,
        });
    }
    check_plane(name, board, views, &hs)?;
    Ok(hs)
}

/// The solve's start: the camera matrix from the homographies' closed form (Zhang's, or
/// the focal length at the frame's centre where that is implausible), no distortion; and
/// the matrix itself.
///
/// # Errors
/// [`CalibrateError::FrontoParallel`] when no view is tilted `settings.min_tilt_deg`, and
/// [`CalibrateError::Degenerate`] when neither closed form gives a plausible matrix.
fn closed_form(
    name: &str,
    size: (u32, u32),
    views: &[&BoardView],
    hs: &[(usize, Matrix3<f64>)],
    settings: &Settings,
) -> Result<(Camera, Matrix3<f64>), CalibrateError> {
    let (w, h) = (f64::from(size.0), f64::from(size.1));
    let guess = Camera::new(
        [w, w, w / 2.0, h / 2.0],
        size,
        Distortion::default(),
        Rotation3::identity(),
        Vector3::zeros(),
    )
    .map_err(|e| CalibrateError::Camera {
        camera: name.to_owned(),
        source: e,
    })?;
    let max_tilt = hs
        .iter()
        .filter_map(|(_, h)| pose_from_homography(h, &k_of(&guess)))
        .map(|p| tilt_deg(&p))
        .fold(0.0, f64::max);
    if max_tilt < settings.min_tilt_deg {
        return Err(CalibrateError::FrontoParallel {
            camera: name.to_owned(),
            max_tilt_deg: max_tilt,
            needed_deg: settings.min_tilt_deg,
        });
    }
    // The closed forms take the views that hold most of the board: a view of two tags at the
    // frame's corner fixes a homography the lens bends far from the plane's.
    let whole: Vec<_> = hs
        .iter()
        .filter(|(i, _)| views[*i].corners.len() >= CLOSED_FORM_CORNERS)
        .map(|(_, h)| *h)
        .collect();
    let homographies: Vec<_> = if whole.len() >= CLOSED_FORM_VIEWS {
        whole
    } else {
        hs.iter().map(|(_, h)| *h).collect()
    };
    let plausible = |k: &Matrix3<f64>| {
        (0.1 * w..10.0 * w).contains(&k[(0, 0)])
            && (0.1 * w..10.0 * w).contains(&k[(1, 1)])
            && (0.0..w).contains(&k[(0, 2)])
            && (0.0..h).contains(&k[(1, 2)])
    };
    let k = zhang_intrinsics(&homographies)
        .filter(plausible)
        .or_else(|| focal_at_centre(&homographies, Point2::new(w / 2.0, h / 2.0)).filter(plausible))
        .ok_or_else(|| CalibrateError::Degenerate {
            camera: name.to_owned(),
            what: "the views' homographies fix no focal length",
        })?;
    let mut start = guess;
    [start.fx, start.fy, start.cx, start.cy] = [k[(0, 0)], k[(1, 1)], k[(0, 2)], k[(1, 2)]];
    Ok((start, k))
}

/// The views whose start pose (from `k`) puts every corner in front of `start`. A view whose
/// homography the lens bent too far would stall the solver at an infinite cost; it is left
/// out, and counted.
///
/// # Errors
/// [`CalibrateError::TooFewViews`] when fewer than `settings.min_views` are left.
fn in_front(
    name: &str,
    board: &AprilGrid,
    views: &[&BoardView],
    hs: Vec<(usize, Matrix3<f64>)>,
    start: &Camera,
    k: &Matrix3<f64>,
    settings: &Settings,
) -> Result<Vec<(usize, Matrix3<f64>)>, CalibrateError> {
    let before = hs.len();
    let hs: Vec<(usize, Matrix3<f64>)> = hs
        .into_iter()
        .filter(|(i, h)| {
            pose_from_homography(h, k).is_some_and(|pose| {
                views[*i].corners.iter().all(|c| {
                    board
                        .corner(c.id)
                        .is_some_and(|p| start.project(&(pose * p)).is_some())
                })
            })
        })
        .collect();
    if hs.len() < before {
        log::debug!(
            "intrinsics `{name}`: {} of {before} views left out, their start behind the camera",
            before - hs.len()
        );
    }
    if hs.len() < settings.min_views {
        return Err(CalibrateError::TooFewViews {
            camera: name.to_owned(),
            views: hs.len(),
            needed: settings.min_views,
        });
    }
    Ok(hs)
}

/// Each view's start board pose (from its homography and `k`) and the corners it saw, as the
/// solve's observations (board `b` is the `b`th of `hs`).
///
/// # Errors
/// [`CalibrateError::Degenerate`] for a homography that gives no pose.
fn posed_corners(
    name: &str,
    board: &AprilGrid,
    views: &[&BoardView],
    hs: &[(usize, Matrix3<f64>)],
    k: &Matrix3<f64>,
) -> Result<(Vec<Isometry3<f64>>, Vec<Observation>), CalibrateError> {
    let mut boards = Vec::with_capacity(hs.len());
    let mut observations = Vec::new();
    for (b, (i, h)) in hs.iter().enumerate() {
        let pose = pose_from_homography(h, k).ok_or_else(|| CalibrateError::Degenerate {
            camera: name.to_owned(),
            what: "a view's homography gives no board pose",
        })?;
        boards.push(pose);
        observations.extend(views[*i].corners.iter().filter_map(|c| {
            board.corner(c.id).map(|point| Observation {
                camera: 0,
                board: b,
                id: c.id,
                point,
                pixel: c.pixel,
            })
        }));
    }
    Ok((boards, observations))
}

/// Solves from the closed-form start: a pass, then the views left far from their corners
/// posed again through the solved lens and another pass (a board pose can settle in the
/// wrong one of a foreshortened plane's two minima, from a start the distortion-free closed
/// form bent), then the final solve.
fn settle(
    name: &str,
    board: &AprilGrid,
    views: &[&BoardView],
    hs: &[(usize, Matrix3<f64>)],
    problem: &mut Reprojection,
    state: State,
    settings: &Settings,
) -> Result<State, CalibrateError> {
    let mut state = solver_pass(problem, state, &settings.lm)?;
    for _ in 0..MAX_REPOSES {
        let residuals = problem.residuals(&state);
        let mut moved = false;
        for (b, (i, _)) in hs.iter().enumerate() {
            if problem.rms_of(&residuals, |o| o.board == b) > settings.max_rms_px {
                if let Some(pose) = view_pose(board, &state.cameras[0], views[*i]) {
                    state.boards[b] = pose;
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
        state = solver_pass(problem, state, &settings.lm)?;
    }
    solver(name, "intrinsics", problem, state, &settings.lm)
}

/// The board's gap between tags as a ratio of the tag side, measured in the views: every
/// corner cast from the solved camera onto the solved board plane, tag sides and the distances
/// between neighbouring tags' centres averaged. The ratio of the two does not depend on the
/// board's scale, which the views cannot fix, so a wrong spacing shows here even where the
/// poses absorb most of it into their depth.
pub fn measured_spacing(
    board: &AprilGrid,
    state: &State,
    observations: &[Observation],
) -> Option<f64> {
    let cam = state.cameras.first()?;
    // (view, tag) -> board-plane points of the tag's corners, by corner number.
    let mut tags: BTreeMap<(usize, u32), [Option<Vector2<f64>>; 4]> = BTreeMap::new();
    for o in observations {
        let pose = state.boards.get(o.board)?;
        let n = cam.normalize(&o.pixel);
        let ray = Vector3::new(n.x, n.y, 1.0);
        let normal = pose.rotation * Vector3::z();
        let along = normal.dot(&ray);
        if along.abs() < 1e-9 {
            continue;
        }
        let hit = ray * (normal.dot(&pose.translation.vector) / along);
        let local = pose.inverse_transform_point(&hit.into());
        tags.entry((o.board, o.id / 4)).or_default()[(o.id % 4) as usize] = Some(local.xy().coords);
    }
    let (mut side, mut sides) = (0.0, 0usize);
    let mut centres = BTreeMap::new();
    for (&key, corners) in &tags {
        let [Some(a), Some(b), Some(c), Some(d)] = *corners else {
            continue;
        };
        side += (b - a).norm() + (c - b).norm() + (d - c).norm() + (a - d).norm();
        sides += 4;
        centres.insert(key, (a + b + c + d) / 4.0);
    }
    let (mut pitch, mut pitches) = (0.0, 0usize);
    for (&(view, tag), centre) in &centres {
        if (tag + 1) % board.cols() != 0 {
            if let Some(next) = centres.get(&(view, tag + 1)) {
                pitch += (next - centre).norm();
                pitches += 1;
            }
        }
    }
    (sides > 0 && pitches > 0 && side > 0.0)
        .then(|| (pitch / pitches as f64) / (side / sides as f64) - 1.0)
}

/// Refuses a board whose measured spacing differs from the described one by more than
/// `settings.max_layout_error` of the pitch-to-side ratio.
fn check_layout(
    name: &str,
    board: &AprilGrid,
    state: &State,
    observations: &[Observation],
    settings: &Settings,
) -> Result<(), CalibrateError> {
    let Some(measured) = measured_spacing(board, state, observations) else {
        return Ok(());
    };
    let relative = ((1.0 + measured) / (1.0 + board.spacing()) - 1.0).abs();
    if relative > settings.max_layout_error {
        return Err(CalibrateError::BoardMismatch {
            camera: name.to_owned(),
            measured,
            given: board.spacing(),
        });
    }
    Ok(())
}
