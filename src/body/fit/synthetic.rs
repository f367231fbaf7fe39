//! Synthetic multi-view data for the fit's accuracy test, example and benchmark: random poses
//! within the joint limits, smooth sequences between them, and noisy, partly dropped 2D
//! keypoints in calibrated cameras.

use nalgebra::{Point2, Point3, UnitQuaternion, Vector3};
use rand::Rng;
use rand_distr::{Distribution, Normal};

use super::keypoint_rig::{KeypointRig, Posed};
use crate::body::limits::JointLimit;
use crate::body::triangulate::Observation;
use crate::body::Pose;
use crate::geom::Camera;

/// How synthetic detections are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detections {
    /// Standard deviation of the Gaussian pixel noise.
    pub noise_px: f64,
    /// Fraction of detections dropped at random.
    pub drop_rate: f64,
}

/// A random pose: each active bone turned by a random rotation vector of up to `amount`
/// radians, then held in its limit; the root turned about the vertical and moved within
/// `spread` metres of the origin.
pub fn random_pose(
    rig: &KeypointRig,
    limits: &[Option<JointLimit>],
    active: &[usize],
    amount: f64,
    spread: f64,
    rng: &mut impl Rng,
) -> Pose {
    let mut pose = Pose::identity(rig.bones());
    pose.translation = Vector3::new(
        rng.gen_range(-spread..=spread),
        rng.gen_range(-spread..=spread),
        0.0,
    );
    for &j in active {
        let r = if rig.parents()[j].is_none() {
            UnitQuaternion::from_axis_angle(
                &Vector3::z_axis(),
                rng.gen_range(-std::f64::consts::PI..std::f64::consts::PI),
            )
        } else {
            let v = Vector3::new(
                rng.gen_range(-1.0..1.0),
                rng.gen_range(-1.0..1.0),
                rng.gen_range(-1.0..1.0),
            );
            UnitQuaternion::from_scaled_axis(v * amount)
        };
        pose.rotations[j] = match &limits[j] {
            Some(l) => l.clamp(&r),
            None => r,
        };
    }
    pose
}

/// `frames` poses moving smoothly from `a` to `b` (spherical interpolation, eased at both ends).
pub fn sequence(a: &Pose, b: &Pose, frames: usize) -> Vec<Pose> {
    (0..frames)
        .map(|i| {
            let t = i as f64 / (frames.max(2) - 1) as f64;
            let t = t * t * (3.0 - 2.0 * t);
            a.interpolate(b, t)
        })
        .collect()
}

/// The posed keypoints of `pose`.
pub fn keypoints(rig: &KeypointRig, pose: &Pose) -> Vec<Point3<f64>> {
    let mut posed = Posed::default();
    // A pose made for this rig always has the right size.
    match rig.forward(pose, &mut posed) {
        Ok(()) => posed.keypoints,
        Err(_) => Vec::new(),
    }
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
