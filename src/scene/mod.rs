//! The demo's synthetic subject: the ANNY body walking through a repeatable
//! sequence of poses, seen by calibrated cameras.
//!
//! Ground truth comes from ANNY's own keypoint forward (the 23 keypoints of the
//! embedded model through the fit's [`KeypointRig`]), so the fit is scored
//! against the same model it fits. The image is a cheap splat of the projected
//! keypoints and bones: the decoder's weights are random, so image content
//! cannot change its keypoints, and rendering the full mesh for four cameras at
//! 120 fps would take the CPU the decoder and fit need.

use std::sync::Arc;

#[cfg(test)]
use nalgebra::Rotation3;
use nalgebra::{Point3, UnitQuaternion, Vector3};
use rand::SeedableRng;

use crate::body::fit::synthetic::random_pose;
use crate::body::fit::{anny, FitError, KeypointRig, Posed};
use crate::body::limits::JointLimit;
use crate::body::Pose;
#[cfg(test)]
use crate::body::KEYPOINT_COUNT;
use crate::body::{Model, Phenotype};
use crate::camera::synthetic::{Scene, SceneError};
use crate::camera::GroundTruth;
use crate::geom::{Camera, Distortion};

/// Why the ANNY body could not be set up for the fit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BodyRigError {
    /// The keypoint rig could not be built from the model's rest state.
    #[error("ANNY keypoint rig: {0}")]
    Rig(#[source] FitError),
    /// A default joint limit does not fit the rig.
    #[error("ANNY joint limits: {0}")]
    Limits(#[source] FitError),
    /// A bone the fit moves is missing from the rig.
    #[error("ANNY fit bones: {0}")]
    Bones(#[source] FitError),
}

/// The ANNY body as the fit sees it: rig, limits and the bones to fit.
#[derive(Debug, Clone)]
pub struct BodyRig {
    pub rig: KeypointRig,
    pub limits: Vec<Option<JointLimit>>,
    pub active: Vec<usize>,
}

impl BodyRig {
    /// The rig of `model` at the default phenotype, with its default joint limits
    /// (when `limits`) and the fit's active bones, all from [`crate::body::fit::anny`].
    ///
    /// # Errors
    /// [`BodyRigError`] naming the part that did not fit together (rig data, a limit, the
    /// fit's bones).
    pub fn anny(model: &Model, limits: bool) -> Result<BodyRig, BodyRigError> {
        let rest = model.rest(&Phenotype::default());
        let rig = anny::rig_from_rest(model, &rest).map_err(BodyRigError::Rig)?;
        let limits = if limits {
            anny::default_limits(&rig).map_err(BodyRigError::Limits)?
        } else {
            vec![None; rig.bones()]
        };
        let active = anny::active_bones(&rig).map_err(BodyRigError::Bones)?;
        Ok(BodyRig {
            rig,
            limits,
            active,
        })
    }

    /// The 3D keypoints of `pose`.
    pub fn keypoints(&self, pose: &Pose) -> Vec<Point3<f64>> {
        let mut posed = Posed::default();
        match self.rig.forward(pose, &mut posed) {
            Ok(()) => posed.keypoints.clone(),
            Err(_) => Vec::new(),
        }
    }
}

/// The subject: a loop through random poses within the limits, interpolated
/// smoothly, standing near the origin.
#[derive(Debug)]
pub struct BodyScene {
    body: Arc<BodyRig>,
    keyframes: Vec<Pose>,
    /// The last instant's keypoints: every camera of a rig renders the same instants.
    cache: std::sync::Mutex<Option<(f64, Vec<Point3<f64>>)>>,
    /// Seconds from one keyframe to the next.
    pub step_s: f64,
}

impl BodyScene {
    /// A scene of `keyframes` random poses (seeded, so repeatable), `step_s` apart.
    pub fn new(body: Arc<BodyRig>, keyframes: usize, step_s: f64, seed: u64) -> Self {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let keyframes = (0..keyframes.max(1))
            .map(|_| {
                let mut p = random_pose(&body.rig, &body.limits, &body.active, 0.5, 0.1, &mut rng);
                // Stand roughly facing the cameras: a small turn of the whole body.
                p.rotations[0] = UnitQuaternion::from_axis_angle(
                    &Vector3::z_axis(),
                    p.rotations[0].angle().min(0.6) - 0.3,
                );
                p
            })
            .collect();
        Self {
            body,
            keyframes,
            cache: std::sync::Mutex::new(None),
            step_s,
        }
    }

    /// The pose at `t` seconds.
    pub fn pose(&self, t: f64) -> Pose {
        let n = self.keyframes.len();
        let u = (t / self.step_s).max(0.0);
        let i = u.floor() as usize;
        let f = u - u.floor();
        // Smoothstep so the motion has no velocity jumps at keyframes.
        let s = f * f * (3.0 - 2.0 * f);
        let (a, b) = (&self.keyframes[i % n], &self.keyframes[(i + 1) % n]);
        a.interpolate(b, s)
    }

    /// The 3D keypoints at `t` seconds.
    pub fn keypoints(&self, t: f64) -> Vec<Point3<f64>> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((ct, k)) = cache.as_ref() {
            if *ct == t {
                return k.clone();
            }
        }
        let k = self.body.keypoints(&self.pose(t));
        *cache = Some((t, k.clone()));
        k
    }
}

impl Scene for BodyScene {
    fn name(&self) -> &str {
        "anny"
    }

    fn render(&self, t: f64, camera: &Camera, rgb: &mut [u8]) -> Result<GroundTruth, SceneError> {
        let (w, h) = (i64::from(camera.width), i64::from(camera.height));
        rgb.fill(64);
        let pts = self.keypoints(t);
        let mut keypoints_2d = Vec::with_capacity(pts.len());
        for p in &pts {
            let px = camera
                .project(p)
                .filter(|q| (0.0..w as f64).contains(&q.x) && (0.0..h as f64).contains(&q.y));
            if let Some(q) = px {
                let (x, y) = (q.x, q.y);
                // A 5x5 splat per keypoint.
                let (cx, cy) = (x as i64, y as i64);
                for yy in (cy - 2).max(0)..(cy + 3).min(h) {
                    for xx in (cx - 2).max(0)..(cx + 3).min(w) {
                        let i = ((yy * w + xx) * 3) as usize;
                        rgb[i..i + 3].copy_from_slice(&[230, 200, 170]);
                    }
                }
            }
            keypoints_2d.push(px.map(|q| [q.x as f32, q.y as f32]));
        }
        let pose = self.pose(t);
        Ok(GroundTruth {
            keypoints_2d,
            keypoints_3d: pts
                .iter()
                .map(|p| [p.x as f32, p.y as f32, p.z as f32])
                .collect(),
            pose: pose
                .rotations
                .iter()
                .flat_map(|q| {
                    let v = q.scaled_axis();
                    [v.x as f32, v.y as f32, v.z as f32]
                })
                .chain(pose.translation.iter().map(|&v| v as f32))
                .collect(),
        })
    }
}

/// Four cameras placed like the demo rig around a subject standing at the origin (Z up, facing
/// -Y): three body cameras at 288x288, 2.6 m away and 120 degrees apart at chest height, and
/// one face camera at 432x432, 1.1 m in front of the head; all with mild barrel distortion.
pub fn demo_rig() -> [Camera; 4] {
    let lens = Distortion {
        k1: -0.08,
        k2: 0.01,
        p1: 0.0005,
        p2: -0.0003,
        k3: 0.0,
    };
    let body = |deg: f64| {
        let a = deg.to_radians();
        let eye = Point3::new(2.6 * a.sin(), -2.6 * a.cos(), 0.4);
        Camera::look_at(
            eye,
            Point3::new(0.0, 0.0, 0.0),
            Vector3::z(),
            62.0,
            (288, 288),
            lens,
        )
    };
    let face = Camera::look_at(
        Point3::new(0.15, -1.1, 0.75),
        Point3::new(0.0, 0.0, 0.55),
        Vector3::z(),
        55.0,
        (432, 432),
        lens,
    );
    // The placements above are valid by construction.
    [body(0.0), body(120.0), body(-120.0), face].map(|c| c.unwrap_or_else(|_| unreachable!()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_cameras_are_valid_and_centred() {
        let p = Point3::new(0.1, -0.05, 0.3);
        for cam in demo_rig() {
            // `look_at` puts the principal point at the image centre.
            assert_eq!(
                (cam.cx, cam.cy),
                (f64::from(cam.width) / 2.0, f64::from(cam.height) / 2.0)
            );
            let rebuilt = Camera::new(
                [cam.fx, cam.fy, cam.cx, cam.cy],
                (cam.width, cam.height),
                cam.distortion,
                Rotation3::from_matrix_unchecked(cam.rotation),
                cam.translation,
            )
            .unwrap();
            let (a, b) = (cam.project(&p).unwrap(), rebuilt.project(&p).unwrap());
            assert!((a - b).norm() < 1e-9, "{a} {b}");
        }
    }

    #[test]
    fn pixels_back_project_onto_their_ray() {
        for cam in demo_rig() {
            let p = Point3::new(0.05, -0.1, 0.5);
            let px = cam.project(&p).unwrap();
            assert!(cam.contains(&px), "{px}");
            let n = cam.normalize(&px);
            let c = cam.to_camera(&p);
            assert!((n - nalgebra::Vector2::new(c.x / c.z, c.y / c.z)).norm() < 1e-12);
        }
    }

    #[test]
    fn scene_moves_and_truth_is_in_view() {
        let model = Model::embedded().unwrap();
        let body = Arc::new(BodyRig::anny(model, true).unwrap());
        assert!(body.active.len() > 10, "{} fit bones", body.active.len());
        let scene = BodyScene::new(body, 4, 1.0, 7);
        let cams = demo_rig();
        let mut rgb = vec![0; 288 * 288 * 3];
        let a = scene.render(0.0, &cams[0], &mut rgb).unwrap();
        let b = scene.render(0.5, &cams[0], &mut rgb).unwrap();
        assert_eq!(a.keypoints_3d.len(), KEYPOINT_COUNT);
        let seen = a.keypoints_2d.iter().filter(|k| k.is_some()).count();
        assert!(seen >= KEYPOINT_COUNT / 2, "{seen} keypoints in view");
        let moved = a
            .keypoints_3d
            .iter()
            .zip(&b.keypoints_3d)
            .map(|(p, q)| (0..3).map(|i| (p[i] - q[i]).powi(2)).sum::<f32>().sqrt())
            .fold(0.0, f32::max);
        assert!(moved > 0.01, "the body moves: {moved} m");
    }
}
