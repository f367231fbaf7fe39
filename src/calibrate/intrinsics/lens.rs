//! The lens terms a camera's views earn, and how tightly the views fix the intrinsics: the
//! covariance at the solution, the principal point's spread and the distortion's spread in
//! the image.

use nalgebra::{Point2, SMatrix};

use super::super::problem::{Free, Reprojection, State};
use super::super::{rms, solver, CalibrateError, Settings, Term};
use crate::body::fit::lm::Problem;
use crate::geom::Camera;

/// The chi-squared value (one degree of freedom, 0.1 % tail) freeing `k3` must beat to be
/// kept ([`Term::Auto`]).
const K3_CHI2: f64 = 10.83;

/// The covariance of `fx fy cx cy k1 k2 p1 p2 k3`.
pub(super) type Covariance = SMatrix<f64, 9, 9>;

/// The first camera's intrinsics covariance in `problem` at `state`; `None` where the
/// views leave them undetermined.
pub(super) fn covariance_of(problem: &mut Reprojection, state: &State) -> Option<Covariance> {
    problem
        .intrinsics_covariance(state)
        .and_then(|c| c.first().copied())
}

/// Points per side of the grid [`lens_std_px`] looks over, corners included.
const LENS_GRID: u32 = 17;

/// The largest standard deviation of the distortion's image-space shift over a grid to the
/// frame's corners (pixels), from the covariance of `camera`'s `k1 k2 p1 p2 k3`: at each
/// point the ray through it is held, the lens terms vary, and the larger axis of the pixel's
/// spread counts.
pub(super) fn lens_std_px(camera: &Camera, covariance: &Covariance) -> f64 {
    let lens = covariance.fixed_view::<5, 5>(4, 4);
    let mut worst: f64 = 0.0;
    for i in 0..LENS_GRID {
        for j in 0..LENS_GRID {
            let span = f64::from(LENS_GRID - 1);
            let pixel = Point2::new(
                f64::from(camera.width) * f64::from(i) / span,
                f64::from(camera.height) * f64::from(j) / span,
            );
            let ray = camera.normalize(&pixel).push(1.0);
            let Some(jac) = camera.intrinsics_jacobian(&ray) else {
                continue;
            };
            let jd = jac.fixed_view::<2, 5>(0, 4);
            let spread = jd * lens * jd.transpose();
            let largest = spread.symmetric_eigenvalues().max();
            worst = worst.max(largest.max(0.0).sqrt());
        }
    }
    worst
}

/// What a one-camera solve over `views` board poses moves: the intrinsics, the board poses,
/// and `p1 p2` and `k3` as told.
pub(super) fn lens_free(views: usize, tangential: bool, k3: bool) -> Free {
    Free {
        intrinsics: vec![true],
        k3: vec![k3],
        tangential: vec![tangential],
        camera_poses: vec![false],
        boards: vec![true; views],
    }
}

/// Frees the lens terms `settings` leaves to the views (`Term::Auto`) where they earn their
/// place, and returns the problem and state solved with them, with the covariance at the
/// solution where a freed term's check computed it.
///
/// `p1 p2` come first, kept unless they loosen the principal point: over a narrow field,
/// decentering moves the image much as a shifted principal point does, and the views
/// cannot tell the two apart. No test on the squares: a decentred lens leaves its mark at
/// the frame's corners, where few corners fall, and held there it misses the lens by a
/// third of a pixel while the squares barely move. `k3` likewise, on a chi-squared test:
/// on a mild lens it fits the noise at the frame's corners, where nothing else constrains
/// the polynomial.
pub(super) fn lens_terms(
    name: &str,
    mut problem: Reprojection,
    mut state: State,
    settings: &Settings,
) -> Result<(Reprojection, State, Option<Covariance>), CalibrateError> {
    let views = state.boards.len();
    let mut tangential = settings.tangential == Term::Free;
    let mut k3 = settings.k3 == Term::Free;
    let mut covariance = None;
    if settings.tangential == Term::Auto {
        let free = lens_free(views, true, k3);
        if let Some((p, s, c)) = if_better(name, &problem, &state, &free, None, settings)? {
            (problem, state, covariance) = (p, s, Some(c));
            tangential = true;
        }
    }
    if settings.k3 == Term::Auto {
        let free = lens_free(views, tangential, true);
        if let Some((p, s, c)) = if_better(name, &problem, &state, &free, Some(K3_CHI2), settings)?
        {
            (problem, state, covariance) = (p, s, Some(c));
            k3 = true;
        }
    }
    log::debug!("intrinsics `{name}`: p1 p2 {tangential}, k3 {k3}");
    Ok((problem, state, covariance))
}

/// The problem `held` solves with the parameters of `free` moving, solved from `state`, with
/// its covariance, if it leaves the principal point pinned (its standard deviation within
/// `settings.max_principal_std_px`) and, given a `chi2`, lowers the squares by more than
/// noise: a likelihood-ratio test, the drop in the sum of squares over the noise variance
/// the freed fit leaves being chi-squared (with as many degrees of freedom as parameters
/// freed) where the freed parameters are zero.
fn if_better(
    name: &str,
    held: &Reprojection,
    state: &State,
    free: &Free,
    chi2: Option<f64>,
    settings: &Settings,
) -> Result<Option<(Reprojection, State, Covariance)>, CalibrateError> {
    let mut freed = Reprojection::new(held.observations().to_vec(), free, settings.huber_px);
    let tried = solver(name, "intrinsics", &mut freed, state.clone(), &settings.lm)?;
    let n = held.observations().len();
    let sum_sq = |rms_px: f64| rms_px * rms_px * n as f64;
    let (without, with) = (
        sum_sq(rms(held.residuals(state).iter())),
        sum_sq(rms(freed.residuals(&tried).iter())),
    );
    let dof = (2 * n).saturating_sub(freed.dim()).max(1);
    let statistic = (without - with) / (with / dof as f64).max(f64::MIN_POSITIVE);
    let more = freed.dim() - held.dim();
    if chi2.is_some_and(|chi2| statistic <= chi2) {
        log::debug!("intrinsics `{name}`: {more} more parameters lower the squares by {statistic:.1} noise variances");
        return Ok(None);
    }
    let Some(covariance) = covariance_of(&mut freed, &tried) else {
        return Ok(None);
    };
    let std_px = principal_std_px(&covariance);
    log::debug!(
        "intrinsics `{name}`: {more} more parameters lower the squares by {statistic:.1} noise variances, principal point to {std_px:.2} px"
    );
    Ok((std_px <= settings.max_principal_std_px).then_some((freed, tried, covariance)))
}

/// The principal point's larger standard deviation (pixels) from the intrinsics' covariance.
pub(super) fn principal_std_px(covariance: &Covariance) -> f64 {
    covariance[(2, 2)].max(covariance[(3, 3)]).max(0.0).sqrt()
}
