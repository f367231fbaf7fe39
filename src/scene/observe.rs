//! What cameras would detect of the subject, and how far an estimate is from its truth.

use nalgebra::{Point2, Point3};
use rand::Rng;
use rand_distr::{Distribution, Normal};

use crate::body::triangulate::Observation;
use crate::geom::Camera;

/// How synthetic detections are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detections {
    /// Standard deviation of the Gaussian pixel noise.
    pub noise_px: f64,
    /// Fraction of detections dropped at random.
    pub drop_rate: f64,
}

/// Detections of `points` in every camera: projected, noised, dropped at random or when
/// outside the image, with confidences in [0.5, 1].
pub fn observe(
    cameras: &[Camera],
    points: &[Point3<f64>],
    detections: Detections,
    rng: &mut impl Rng,
) -> Vec<Vec<Option<Observation>>> {
    let noise = Normal::new(0.0, detections.noise_px.max(1e-12)).unwrap_or_else(|_| unreachable!());
    cameras
        .iter()
        .map(|cam| {
            points
                .iter()
                .map(|p| {
                    let px = cam.project(p)?;
                    let px = Point2::new(px.x + noise.sample(rng), px.y + noise.sample(rng));
                    let keep = rng.gen::<f64>() >= detections.drop_rate && cam.contains(&px);
                    keep.then(|| Observation {
                        pixel: px,
                        confidence: rng.gen_range(0.5..=1.0),
                    })
                })
                .collect()
        })
        .collect()
}

/// Mean per-joint position error (metres) over the keypoints present in both lists.
pub fn mpjpe(estimate: &[Option<Point3<f64>>], truth: &[Point3<f64>]) -> Option<f64> {
    let errors: Vec<f64> = estimate
        .iter()
        .zip(truth)
        .filter_map(|(e, t)| e.map(|e| (e - t).norm()))
        .collect();
    (!errors.is_empty()).then(|| errors.iter().sum::<f64>() / errors.len() as f64)
}
