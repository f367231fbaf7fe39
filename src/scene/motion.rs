//! The subject's motion: random poses within the joint limits and smooth, eased paths
//! between them. One model of motion serves the demo's looping subject and the fit's
//! accuracy test, example and benchmark, so the fit is measured on the motion the demo shows.

use nalgebra::{Point3, UnitQuaternion, Vector3};
use rand::Rng;

use crate::body::fit::{KeypointRig, Posed};
use crate::body::limits::JointLimit;
use crate::body::Pose;

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
            // `r` is finite, which the limit never refuses.
            Some(l) => l.clamp(&r).unwrap_or(r),
            None => r,
        };
    }
    pose
}

/// The pose a fraction `t` (0..=1) of the way from `a` to `b`: spherical interpolation eased
/// with a smoothstep, so a path through several poses has no velocity jumps at them.
pub fn between(a: &Pose, b: &Pose, t: f64) -> Pose {
    let t = t.clamp(0.0, 1.0);
    a.interpolate(b, t * t * (3.0 - 2.0 * t))
}

/// `frames` poses moving smoothly from `a` to `b` (both included), eased at both ends.
pub fn sequence(a: &Pose, b: &Pose, frames: usize) -> Vec<Pose> {
    (0..frames)
        .map(|i| between(a, b, i as f64 / (frames.max(2) - 1) as f64))
        .collect()
}

/// The posed keypoints of `pose`; empty when the pose was not made for this rig.
pub fn keypoints(rig: &KeypointRig, pose: &Pose) -> Vec<Point3<f64>> {
    let mut posed = Posed::default();
    match rig.forward(pose, &mut posed) {
        Ok(()) => posed.keypoints,
        Err(_) => Vec::new(),
    }
}
