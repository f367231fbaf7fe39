//! Rig calibration from an AprilGrid board: each camera's intrinsics, then all cameras'
//! poses by a robust bundle adjustment over the views several cameras share.
//!
//! | module | what it does |
//! |---|---|
//! | [`body`] | camera poses refined from a moving body's keypoints, no board at hand |
//! | [`capture`] | board views captured from the rig's cameras or a recording, with coverage |
//! | [`board`] | the AprilGrid: corner ids and board-frame positions, `--board` syntax |
//! | [`corners_file`] | the detected-corners file `calibrate` reads and writes |
//! | [`coverage`] | which image regions and tilts a camera's views cover: the status line |
//! | [`detect`] | the board's corners found in a camera frame (AprilTag detection) |
//! | [`filming`] | a synthetic capture filmed and written as a recording, for `--frames` |
//! | [`homography`] | closed-form starts: DLT homographies, Zhang's intrinsics, board poses |
//! | [`problem`] | the one reprojection least-squares problem, with analytic Jacobians |
//! | [`intrinsics`] | one camera's focal lengths, principal point and distortion |
//! | [`extrinsics`] | every camera's pose, the world fixed by a chosen board pose |
//! | [`render`] | the printed board rendered through a camera: the synthetic frames |
//! | [`results`] | a run's JSON lines read back as a moving body's frames |
//! | [`rig`] | the whole rig: coverage, intrinsics, the joint adjustment, its report |
//! | [`stature`] | limb lengths at a stated stature, the body refinement's scale |
//! | [`synthetic`] | a seeded synthetic capture with ground truth, for the tests |
//!
//! The camera model is [`crate::geom::Camera`]; the solver is the fit's
//! [`LevenbergMarquardt`].

pub mod board;
pub mod body;
pub mod capture;
pub mod corners_file;
pub mod coverage;
pub mod detect;
pub mod extrinsics;
pub mod filming;
pub mod homography;
pub mod intrinsics;
pub mod problem;
pub mod render;
pub mod results;
pub mod rig;
pub mod stature;
pub mod synthetic;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_detect;
#[cfg(test)]
mod tests_spread;

use nalgebra::{Point2, Vector2};

use crate::body::fit::lm::{LevenbergMarquardt, Problem, TerminationReason};
use crate::body::fit::FitError;
use crate::geom::CameraError;

pub use board::{AprilGrid, BoardError};
pub use extrinsics::{calibrate_extrinsics, Anchor, Extrinsics};
pub use intrinsics::{calibrate_intrinsics, Intrinsics};
pub use rig::{calibrate_rig, RigCalibration, RigInput};

/// One detected board corner.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Corner {
    /// The corner's id on the board ([`AprilGrid::corner`]).
    pub id: u32,
    /// Where it is in the image (pixels).
    pub pixel: Point2<f64>,
}

/// Corners summed by id over the frames of a board lying still, for their means: averaged,
/// a corner's detection noise falls with the square root of the frames.
#[derive(Debug, Clone, Default)]
pub(crate) struct CornerMeans {
    sums: std::collections::BTreeMap<u32, (Vector2<f64>, usize)>,
}

impl CornerMeans {
    /// Adds one frame's sighting of corner `id`.
    pub(crate) fn add(&mut self, id: u32, pixel: Point2<f64>) {
        let sum = self.sums.entry(id).or_insert((Vector2::zeros(), 0));
        sum.0 += pixel.coords;
        sum.1 += 1;
    }

    /// Whether corner `id` has been seen.
    pub(crate) fn contains(&self, id: u32) -> bool {
        self.sums.contains_key(&id)
    }

    /// Each corner seen in `at_least` frames or more, at its mean, in the order of the ids.
    pub(crate) fn means(self, at_least: usize) -> Vec<Corner> {
        self.sums
            .into_iter()
            .filter(|(_, (_, n))| *n >= at_least.max(1))
            .map(|(id, (sum, n))| Corner {
                id,
                pixel: Point2::from(sum / n as f64),
            })
            .collect()
    }
}

/// The corners one camera saw of the board at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardView {
    /// The camera's index in the rig.
    pub camera: usize,
    /// The instant: views with the same instant saw the board in the same pose.
    pub pose: usize,
    /// The corners seen.
    pub corners: Vec<Corner>,
}

/// Why a calibration is refused. Each names the camera and what to capture next.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrateError {
    /// The camera never saw the board.
    #[error("camera `{camera}` never saw the board: hold the board where `{camera}` sees it, at several distances and tilts")]
    NeverSeen {
        /// The camera.
        camera: String,
    },
    /// Too few usable views.
    #[error("camera `{camera}` saw the board in {views} usable views, {needed} needed: capture at least {more} more, covering the image's corners and edges", more = needed.saturating_sub(*views))]
    TooFewViews {
        /// The camera.
        camera: String,
        /// Views usable.
        views: usize,
        /// Views needed.
        needed: usize,
    },
    /// Every view nearly fronto-parallel: the focal length trades against distance.
    #[error("camera `{camera}`: every view holds the board nearly square to the camera (largest tilt {max_tilt_deg:.1} degrees, {needed_deg:.0} needed): capture views with the board tilted by {needed_deg:.0} to 50 degrees, left, right, up and down")]
    FrontoParallel {
        /// The camera.
        camera: String,
        /// The largest tilt seen.
        max_tilt_deg: f64,
        /// The tilt needed.
        needed_deg: f64,
    },
    /// The views fix no solution.
    #[error("camera `{camera}`: {what}; capture more views with the board tilted in different directions")]
    Degenerate {
        /// The camera.
        camera: String,
        /// What could not be determined.
        what: &'static str,
    },
    /// The solution explains the corners poorly.
    #[error("camera `{camera}` ({stage}): reprojection error {rms_px:.3} px RMS, over the limit {limit_px:.3} px: check the board's tag size and spacing (--board) and that the views are sharp")]
    HighResidual {
        /// The camera.
        camera: String,
        /// `intrinsics` or `extrinsics`.
        stage: &'static str,
        /// The error.
        rms_px: f64,
        /// The limit.
        limit_px: f64,
    },
    /// The body's keypoints do not fit a camera after the refinement.
    #[error("camera `{camera}`: the body's keypoints reproject with {rms_px:.3} px RMS after the refinement, over the limit {limit_px:.3} px: a held camera may have moved too, the start may be too far off, or the rig file's cameras may not be in the recording's order")]
    BodyResidual {
        /// The camera.
        camera: String,
        /// The error.
        rms_px: f64,
        /// The limit.
        limit_px: f64,
    },
    /// The views show a different tag spacing than the board description.
    #[error("camera `{camera}`: the views show tags {measured:.3} tag sides apart, the board description says {given:.3}: check --board (tag size and spacing as printed)")]
    BoardMismatch {
        /// The camera.
        camera: String,
        /// Spacing measured (ratio of the tag side).
        measured: f64,
        /// Spacing described.
        given: f64,
    },
    /// The tags found do not lie on a plane as the board description places them.
    #[error("camera `{camera}`: the tags found do not lie where the board description places them: over {views} views of four tags or more, the median view misses a plane by {miss_pct:.0} % of a tag pitch: check --board (ROWSxCOLS as printed, counted in tags)")]
    BoardLayout {
        /// The camera.
        camera: String,
        /// Views counted.
        views: usize,
        /// The median view's miss, per cent of the tag pitch (tag size plus spacing).
        miss_pct: f64,
    },
    /// The solver stopped without converging.
    #[error("camera `{camera}` ({stage}): the solver stopped without converging ({why}): capture more varied views")]
    NotConverged {
        /// The camera (or `rig`).
        camera: String,
        /// `intrinsics` or `extrinsics`.
        stage: &'static str,
        /// Why it stopped.
        why: &'static str,
    },
    /// A camera never shares a board instant with the calibrated cameras.
    #[error("camera `{camera}` never sees the board at the same time as {others}: hold the board where `{camera}` and one of them see it at once")]
    NotLinked {
        /// The camera.
        camera: String,
        /// The cameras it should share a view with.
        others: String,
    },
    /// A camera is tied to the rest of the rig by too few shared board instants to place it.
    #[error("camera `{camera}` shares {instants} board instant(s) with `{other}` and fewer with the rest of the rig, where {needed} are needed to place it: hold the board where `{camera}` and another camera see it at once, from several places")]
    WeaklyLinked {
        /// The camera.
        camera: String,
        /// The camera of the rest it shares the most instants with.
        other: String,
        /// How many.
        instants: usize,
        /// How many are needed (`Settings::min_shared_instants`).
        needed: usize,
    },
    /// The views pin a camera's principal point too loosely.
    #[error("camera `{camera}`: the views fix the principal point only to {std_px:.2} px (one standard deviation), over the limit {limit_px:.2} px: capture more views with the board filling the frame and tilted 30 to 50 degrees left, right, up and down")]
    Uncertain {
        /// The camera.
        camera: String,
        /// The principal point's larger standard deviation (pixels).
        std_px: f64,
        /// The limit (`Settings::max_principal_std_px`).
        limit_px: f64,
    },
    /// Two cameras' observations look exchanged.
    #[error("cameras `{a}` and `{b}` look swapped: `{a}` solves {a_at_b:.2} m from where the rig file places `{b}` and {a_at_a:.2} m from its own place; check which device is which in the rig file")]
    Swapped {
        /// One camera.
        a: String,
        /// The other.
        b: String,
        /// Distance of `a`'s solved centre from `b`'s placement (metres).
        a_at_b: f64,
        /// Distance of `a`'s solved centre from its own placement (metres).
        a_at_a: f64,
    },
    /// A corner id the board does not have, or a non-finite pixel.
    #[error("camera `{camera}`: view at instant {pose} has corner {id} at a pixel that is not finite or an id the board ({corners} corners) does not have")]
    BadCorner {
        /// The camera.
        camera: String,
        /// The view's instant.
        pose: usize,
        /// The corner id.
        id: u32,
        /// Corners on the board.
        corners: u32,
    },
    /// A camera out of the model's range.
    #[error("camera `{camera}`: {source}")]
    Camera {
        /// The camera.
        camera: String,
        /// Why.
        source: CameraError,
    },
    /// The solver refused its settings.
    #[error(transparent)]
    Solver(#[from] FitError),
}

/// How a lens term that a camera's views may not tell apart from noise, or from other
/// parameters, is calibrated: the sixth-order radial term `k3`, or the tangential terms `p1
/// p2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Term {
    /// Held at zero first; then freed, and kept only if the principal point stays within
    /// [`Settings::max_principal_std_px`] with it, and for `k3` only if a likelihood-ratio
    /// test says the drop in squared error is more than noise (chi-squared, the 0.1 % tail).
    /// A mild lens leaves `k3` at zero, where a free `k3` fits the noise at the frame's
    /// corners; a wide one keeps it. A narrow lens leaves `p1 p2` at zero, where free they
    /// trade with the principal point. The adjustment frees them for the cameras that kept
    /// them (non-zero).
    #[default]
    Auto,
    /// Always calibrated.
    Free,
    /// Always zero.
    Held,
}

impl Term {
    /// Whether the adjustment moves the term, for a camera whose calibration `kept` it
    /// (a non-zero value).
    pub fn moves(self, kept: bool) -> bool {
        match self {
            Term::Free => true,
            Term::Held => false,
            Term::Auto => kept,
        }
    }
}

/// Calibration settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Fewest usable views per camera for its intrinsics.
    pub min_views: usize,
    /// Fewest board instants two cameras must share to count as tied to each other; every
    /// camera must be tied to the rest through such pairs.
    pub min_shared_instants: usize,
    /// Tilt from fronto-parallel (degrees) at least one view must reach.
    pub min_tilt_deg: f64,
    /// Huber threshold of the robust loss (pixels).
    pub huber_px: f64,
    /// Largest reprojection RMS (pixels) a calibration is accepted with.
    pub max_rms_px: f64,
    /// Largest standard deviation (pixels) of the principal point a calibration is accepted
    /// with, and a lens term freed under [`Term::Auto`] may leave it with.
    pub max_principal_std_px: f64,
    /// Largest relative difference between the measured and the described ratio of tag pitch
    /// to tag side.
    pub max_layout_error: f64,
    /// How `k3` is calibrated.
    pub k3: Term,
    /// How `p1 p2` are calibrated.
    pub tangential: Term,
    /// Whether the bundle adjustment refines every camera's intrinsics with the poses, over
    /// all views; otherwise it holds them and uses only the instants two cameras share.
    pub refine_intrinsics: bool,
    /// The solver.
    pub lm: LevenbergMarquardt,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            min_views: 8,
            min_shared_instants: 5,
            min_tilt_deg: 15.0,
            huber_px: 1.0,
            max_rms_px: 0.5,
            max_principal_std_px: 0.5,
            max_layout_error: 0.01,
            k3: Term::Auto,
            tangential: Term::Auto,
            refine_intrinsics: true,
            lm: LevenbergMarquardt::default()
                .with_ftol(1e-10)
                .and_then(|l| l.with_max_iterations(200))
                .and_then(|l| l.with_xtol(1e-12))
                .unwrap_or_default(),
        }
    }
}

/// Refuses corners the board does not have and non-finite pixels.
fn check_views(name: &str, board: &AprilGrid, views: &[&BoardView]) -> Result<(), CalibrateError> {
    for v in views {
        for c in &v.corners {
            if c.id >= board.corners() || !(c.pixel.x.is_finite() && c.pixel.y.is_finite()) {
                return Err(CalibrateError::BadCorner {
                    camera: name.to_owned(),
                    pose: v.pose,
                    id: c.id,
                    corners: board.corners(),
                });
            }
        }
    }
    Ok(())
}

/// [`rms`] of the residuals (one per item of `items`, in order) of the items `keep` selects.
pub fn rms_where<T>(
    items: &[T],
    residuals: &[Option<Vector2<f64>>],
    keep: impl Fn(&T) -> bool,
) -> f64 {
    rms(items
        .iter()
        .zip(residuals)
        .filter(|(item, _)| keep(item))
        .map(|(_, r)| r))
}

/// Root mean square pixel distance of residuals; a corner behind its camera counts as
/// infinite.
pub fn rms<'a>(residuals: impl Iterator<Item = &'a Option<Vector2<f64>>>) -> f64 {
    let (sum, n) = residuals.fold((0.0, 0usize), |(s, n), r| {
        (s + r.map_or(f64::INFINITY, |r| r.norm_squared()), n + 1)
    });
    if n == 0 {
        0.0
    } else {
        (sum / n as f64).sqrt()
    }
}

/// Runs the solver for a pass whose result is looked at before the final solve: a spent
/// budget or numerical trouble leaves the best state found, which the final
/// [`solver`] judges.
fn solver_pass<P: Problem>(
    problem: &mut P,
    start: P::State,
    lm: &LevenbergMarquardt,
) -> Result<P::State, CalibrateError> {
    let lm = lm.with_max_iterations(PASS_ITERATIONS)?;
    Ok(lm.minimize(problem, start)?.0)
}

/// Iterations of a pass before its poses are looked at: a pose stuck in the wrong minimum
/// shows by then, and the solver need not crawl around it.
const PASS_ITERATIONS: usize = 30;

/// Runs the solver; anything but convergence (or a spent budget at a tiny gradient) is an
/// error naming the camera and stage.
fn solver<P: Problem>(
    camera: &str,
    stage: &'static str,
    problem: &mut P,
    start: P::State,
    lm: &LevenbergMarquardt,
) -> Result<P::State, CalibrateError> {
    let (state, report) = lm.minimize(problem, start)?;
    log::debug!(
        "{stage} `{camera}`: cost {:.4} -> {:.4} in {} iterations",
        report.initial_cost,
        report.final_cost,
        report.iterations
    );
    let why = match report.termination {
        TerminationReason::Converged { .. } | TerminationReason::LostPatience => return Ok(state),
        TerminationReason::MaxIterations => "iteration budget spent",
        TerminationReason::Numerical(why) => why,
    };
    Err(CalibrateError::NotConverged {
        camera: camera.to_owned(),
        stage,
        why,
    })
}
