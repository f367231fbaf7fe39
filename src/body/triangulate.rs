//! Multi-view triangulation of keypoints: confidence-weighted DLT on undistorted normalised
//! coordinates, a few Gauss-Newton steps on the pixel reprojection error, and outlier rejection
//! by trying view subsets (Pose2Sim's rule: drop one more view per round, keep the subset with
//! the lowest mean reprojection error, never fewer than `min_views`).

use nalgebra::{Matrix3, Matrix4, Point2, Point3, RowVector4, Vector3};

use crate::geom::Camera;

/// One 2D detection of a keypoint in one view.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Pixel position (distorted, as the camera sees it).
    pub pixel: Point2<f64>,
    /// Detector confidence in [0, 1].
    pub confidence: f64,
}

/// Why triangulation input was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TriangulationError {
    /// The observations do not have one entry per camera.
    #[error("{observations} views of observations for {cameras} cameras")]
    ViewCount {
        /// Number of cameras.
        cameras: usize,
        /// Number of observation views.
        observations: usize,
    },
    /// A configuration value out of range.
    #[error("triangulation setting `{field}` = {value}: expected {expected}")]
    BadSetting {
        /// The setting.
        field: &'static str,
        /// The value given.
        value: f64,
        /// What was expected.
        expected: &'static str,
    },
}

/// Triangulation settings; the defaults are Pose2Sim's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TriangulationConfig {
    min_confidence: f64,
    max_reprojection_px: f64,
    min_views: usize,
    refine_steps: usize,
}

impl Default for TriangulationConfig {
    fn default() -> Self {
        Self {
            min_confidence: 0.3,
            max_reprojection_px: 15.0,
            min_views: 2,
            refine_steps: 3,
        }
    }
}

impl TriangulationConfig {
    /// Detections below this confidence are ignored (default 0.3).
    ///
    /// # Errors
    /// [`TriangulationError::BadSetting`] outside [0, 1].
    pub fn with_min_confidence(mut self, v: f64) -> Result<Self, TriangulationError> {
        if !(0.0..=1.0).contains(&v) {
            return Err(bad("min_confidence", v, "a value in [0, 1]"));
        }
        self.min_confidence = v;
        Ok(self)
    }

    /// Mean reprojection error (pixels) above which views are dropped (default 15;
    /// `f64::INFINITY` disables rejection).
    ///
    /// # Errors
    /// [`TriangulationError::BadSetting`] unless positive.
    pub fn with_max_reprojection_px(mut self, v: f64) -> Result<Self, TriangulationError> {
        if v.is_nan() || v <= 0.0 {
            return Err(bad("max_reprojection_px", v, "a positive number of pixels"));
        }
        self.max_reprojection_px = v;
        Ok(self)
    }

    /// Fewest views a point may be triangulated from (default and minimum 2).
    ///
    /// # Errors
    /// [`TriangulationError::BadSetting`] below 2.
    pub fn with_min_views(mut self, v: usize) -> Result<Self, TriangulationError> {
        if v < 2 {
            return Err(bad("min_views", v as f64, "at least 2"));
        }
        self.min_views = v;
        Ok(self)
    }

    /// Gauss-Newton steps on the reprojection error after the DLT (default 3, 0 for pure DLT).
    ///
    /// # Errors
    /// [`TriangulationError::BadSetting`] above 50.
    pub fn with_refine_steps(mut self, v: usize) -> Result<Self, TriangulationError> {
        if v > 50 {
            return Err(bad("refine_steps", v as f64, "at most 50"));
        }
        self.refine_steps = v;
        Ok(self)
    }
}

fn bad(field: &'static str, value: f64, expected: &'static str) -> TriangulationError {
    TriangulationError::BadSetting {
        field,
        value,
        expected,
    }
}

/// A triangulated keypoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Triangulated {
    /// Position in world coordinates.
    pub point: Point3<f64>,
    /// Mean reprojection error over the views kept, in pixels.
    pub reprojection_px: f64,
    /// Bit `i` set when view `i` was used.
    pub views: u32,
    /// Confidence in [0, 1]: the mean detector confidence of the views kept, times the fraction
    /// of usable views kept, times `exp(-(e / max_reprojection_px)^2)` for mean error `e`.
    pub confidence: f64,
}

/// Triangulates one keypoint from its observation in each view (`None` where not seen).
///
/// Returns `Ok(None)` when fewer than `min_views` usable views remain or no subset reprojects
/// within the threshold.
///
/// # Errors
/// [`TriangulationError::ViewCount`] when `observations` and `cameras` differ in length.
pub fn triangulate_point(
    cameras: &[Camera],
    observations: &[Option<Observation>],
    config: &TriangulationConfig,
) -> Result<Option<Triangulated>, TriangulationError> {
    if cameras.len() != observations.len() || cameras.len() > 32 {
        return Err(TriangulationError::ViewCount {
            cameras: cameras.len(),
            observations: observations.len(),
        });
    }
    let usable: u32 = observations
        .iter()
        .enumerate()
        .filter(|(_, o)| {
            o.is_some_and(|o| {
                o.confidence >= config.min_confidence
                    && o.confidence.is_finite()
                    && o.pixel.iter().all(|v| v.is_finite())
            })
        })
        .fold(0, |m, (i, _)| m | 1 << i);
    let n_usable = usable.count_ones() as usize;
    if n_usable < config.min_views {
        return Ok(None);
    }
    let solve = |mask: u32| solve_subset(cameras, observations, mask, config.refine_steps);
    let mut best = solve(usable);
    // Drop one more view per round while the best subset still reprojects badly.
    let mut keep = n_usable;
    while best.is_none_or(|b| b.1 > config.max_reprojection_px) && keep > config.min_views {
        keep -= 1;
        best = subsets(usable, keep)
            .filter_map(solve)
            .min_by(|a, b| a.1.total_cmp(&b.1));
    }
    Ok(best.and_then(|(point, err, mask)| {
        (err <= config.max_reprojection_px).then(|| {
            let mean_conf = observations
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .filter_map(|(_, o)| o.map(|o| o.confidence))
                .sum::<f64>()
                / f64::from(mask.count_ones());
            let kept = f64::from(mask.count_ones()) / n_usable as f64;
            let fit = (-(err / config.max_reprojection_px).powi(2)).exp();
            Triangulated {
                point,
                reprojection_px: err,
                views: mask,
                confidence: (mean_conf * kept * fit).clamp(0.0, 1.0),
            }
        })
    }))
}

/// Triangulates every keypoint: `observations[view][keypoint]`.
///
/// # Errors
/// [`TriangulationError::ViewCount`] when the views and cameras differ in number.
pub fn triangulate(
    cameras: &[Camera],
    observations: &[Vec<Option<Observation>>],
    config: &TriangulationConfig,
) -> Result<Vec<Option<Triangulated>>, TriangulationError> {
    if cameras.len() != observations.len() {
        return Err(TriangulationError::ViewCount {
            cameras: cameras.len(),
            observations: observations.len(),
        });
    }
    let n_kp = observations.iter().map(Vec::len).max().unwrap_or(0);
    let mut per_kp = Vec::with_capacity(cameras.len());
    (0..n_kp)
        .map(|k| {
            per_kp.clear();
            per_kp.extend(observations.iter().map(|v| v.get(k).copied().flatten()));
            triangulate_point(cameras, &per_kp, config)
        })
        .collect()
}

/// All subsets of the set bits of `mask` with `size` members (enumerated over all masks below
/// the highest view: exhaustive, meant for rigs of a handful of cameras).
fn subsets(mask: u32, size: usize) -> impl Iterator<Item = u32> {
    let top = 32 - mask.leading_zeros();
    (0..(1u64 << top))
        .map(|m| m as u32)
        .filter(move |m| m & !mask == 0 && m.count_ones() as usize == size)
}

/// DLT plus refinement over the views in `mask`: (point, mean reprojection error, mask).
fn solve_subset(
    cameras: &[Camera],
    observations: &[Option<Observation>],
    mask: u32,
    refine_steps: usize,
) -> Option<(Point3<f64>, f64, u32)> {
    let views = || {
        cameras
            .iter()
            .zip(observations)
            .enumerate()
            .filter(move |(i, _)| mask & (1 << i) != 0)
            .filter_map(|(_, (c, o))| o.map(|o| (c, o)))
    };
    let mut ata = Matrix4::zeros();
    for (cam, obs) in views() {
        let n = cam.normalize(&obs.pixel);
        let (r, t) = (&cam.rotation, &cam.translation);
        let row = |k: usize| RowVector4::new(r[(k, 0)], r[(k, 1)], r[(k, 2)], t[k]);
        let w = obs.confidence;
        for a in [(row(0) - row(2) * n.x) * w, (row(1) - row(2) * n.y) * w] {
            ata += a.transpose() * a;
        }
    }
    let eig = ata.symmetric_eigen();
    let (imin, _) = eig.eigenvalues.argmin();
    let v = eig.eigenvectors.column(imin);
    if v[3].abs() < 1e-12 {
        return None;
    }
    let mut x = Point3::new(v[0] / v[3], v[1] / v[3], v[2] / v[3]);
    for _ in 0..refine_steps {
        let mut jtj = Matrix3::zeros();
        let mut jtr = Vector3::zeros();
        for (cam, obs) in views() {
            let (px, j) = cam.project_with_jacobian(&x)?;
            let r = px - obs.pixel;
            let w = obs.confidence;
            jtj += j.transpose() * j * w;
            jtr += j.transpose() * r * w;
        }
        match jtj.cholesky() {
            Some(ch) => x -= ch.solve(&jtr),
            None => break,
        }
    }
    let mut sum = 0.0;
    let mut count = 0.0;
    for (cam, obs) in views() {
        sum += (cam.project(&x)? - obs.pixel).norm();
        count += 1.0;
    }
    Some((x, sum / count, mask))
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_distr::{Distribution, Normal};

    use super::*;
    use crate::scene::demo_rig;

    fn observe(
        cams: &[Camera],
        p: &Point3<f64>,
        rng: &mut impl Rng,
        noise: f64,
    ) -> Vec<Option<Observation>> {
        let n = Normal::new(0.0, noise).unwrap();
        cams.iter()
            .map(|c| {
                let px = c.project(p)?;
                Some(Observation {
                    pixel: Point2::new(px.x + n.sample(rng), px.y + n.sample(rng)),
                    confidence: rng.gen_range(0.6..1.0),
                })
            })
            .collect()
    }

    fn mean_error(config: &TriangulationConfig, outlier_px: f64) -> (f64, usize) {
        let cams = demo_rig();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut total = 0.0;
        let mut n = 0;
        for _ in 0..200 {
            let p = Point3::new(
                rng.gen_range(-0.3..0.3),
                rng.gen_range(-0.2..0.2),
                rng.gen_range(-0.4..0.7),
            );
            let mut obs = observe(&cams, &p, &mut rng, 2.0);
            if let Some(o) = obs[1].as_mut() {
                o.pixel.x += outlier_px;
            }
            if let Some(t) = triangulate_point(&cams, &obs, config).unwrap() {
                total += (t.point - p).norm();
                n += 1;
            }
        }
        (total / n as f64, n)
    }

    #[test]
    fn noisy_views_triangulate_within_two_centimetres() {
        let (err, n) = mean_error(&TriangulationConfig::default(), 0.0);
        assert!(n >= 190, "only {n} points");
        assert!(err < 0.02, "mean error {err} m");
    }

    #[test]
    fn an_outlier_view_is_rejected() {
        let (with, n) = mean_error(&TriangulationConfig::default(), 60.0);
        assert!(n >= 190, "only {n} points");
        assert!(with < 0.025, "with rejection: {with} m");
        // Negative control: the same data without rejection is far off.
        let off = TriangulationConfig::default()
            .with_max_reprojection_px(f64::INFINITY)
            .unwrap();
        let (without, _) = mean_error(&off, 60.0);
        assert!(
            without > 2.0 * with && without > 0.05,
            "without rejection: {without} m (with: {with} m)"
        );
    }

    #[test]
    fn confidence_falls_when_views_are_dropped() {
        let cams = demo_rig();
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let p = Point3::new(0.0, 0.0, 0.3);
        let clean = observe(&cams, &p, &mut rng, 0.5);
        let mut bad = clean.clone();
        bad[0].as_mut().unwrap().pixel.y += 80.0;
        let cfg = TriangulationConfig::default();
        let a = triangulate_point(&cams, &clean, &cfg).unwrap().unwrap();
        let b = triangulate_point(&cams, &bad, &cfg).unwrap().unwrap();
        assert_eq!(a.views, 0b1111);
        assert_eq!(b.views, 0b1110);
        assert!(b.confidence < a.confidence);
    }

    #[test]
    fn too_few_views_give_no_point_and_bad_input_is_refused() {
        let cams = demo_rig();
        let p = Point3::new(0.0, 0.0, 0.3);
        let mut obs: Vec<Option<Observation>> = vec![None; 4];
        obs[2] = Some(Observation {
            pixel: cams[2].project(&p).unwrap(),
            confidence: 0.9,
        });
        assert_eq!(
            triangulate_point(&cams, &obs, &TriangulationConfig::default()).unwrap(),
            None
        );
        assert!(matches!(
            triangulate_point(&cams, &obs[..3], &TriangulationConfig::default()),
            Err(TriangulationError::ViewCount {
                cameras: 4,
                observations: 3
            })
        ));
        assert!(TriangulationConfig::default().with_min_views(1).is_err());
    }
}
