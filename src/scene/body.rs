//! The ANNY body as the synthetic subject: a repeatable loop through seeded poses within the
//! joint limits, drawn either as the full mesh or as a cheap splat of its keypoints.
//!
//! Ground truth comes from ANNY's own keypoint forward (the 23 keypoints of the model through
//! the fit's [`KeypointRig`]) in both looks. The splat exists for the demo: its decoder's
//! weights are random, so image content cannot change its keypoints, and rendering the full
//! mesh for four cameras at 120 fps would take the CPU the decoder and fit need.

use std::sync::{Arc, Mutex};

use nalgebra::{Point3, UnitQuaternion, Vector3};
use rand::SeedableRng;

use super::motion::{between, keypoints, random_pose};
use super::{GroundTruth, Scene, SceneError};
use crate::body::fit::{anny, FitError, KeypointRig};
use crate::body::limits::JointLimit;
use crate::body::model::render::render;
use crate::body::{Model, Phenotype, Pose, Rest, SkeletonNaming};
use crate::geom::Camera;

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
    /// The subject's stature at the rig's phenotype, metres ([`Model::stature`]).
    pub stature_m: Option<f64>,
    /// The skeleton the rig's bone and keypoint indices count in.
    pub naming: SkeletonNaming,
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
            stature_m: Model::stature(&rest),
            naming: model.naming(),
        })
    }

    /// The 3D keypoints of `pose`.
    pub fn keypoints(&self, pose: &Pose) -> Vec<Point3<f64>> {
        keypoints(&self.rig, pose)
    }
}

/// How the subject is drawn.
#[derive(Debug, Clone)]
pub enum Look {
    /// A 5x5 splat per projected keypoint on a flat background: cheap enough for the demo's
    /// four cameras at full rate.
    Splat,
    /// The posed mesh through [`crate::body::model::render`], with keypoints hidden by the body
    /// left out of the 2D truth.
    Mesh {
        model: &'static Model,
        rest: Box<Rest>,
    },
}

/// The subject: a loop through random poses within the limits, interpolated smoothly,
/// standing near the origin. Everything is a function of time and the seed, so runs repeat
/// exactly.
#[derive(Debug)]
pub struct BodyScene {
    body: Arc<BodyRig>,
    keyframes: Vec<Pose>,
    look: Look,
    /// The last instant's keypoints: every camera of a rig renders the same instants.
    cache: Mutex<Option<(f64, Vec<Point3<f64>>)>>,
    /// Seconds from one keyframe to the next.
    pub step_s: f64,
}

impl BodyScene {
    /// A splatted scene of `keyframes` random poses (seeded, so repeatable), `step_s` apart.
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
            look: Look::Splat,
            cache: Mutex::new(None),
            step_s,
        }
    }

    /// The subject of `run`'s synthetic cameras: six keyframes 0.8 s apart from `seed`.
    pub fn demo(body: Arc<BodyRig>, seed: u64) -> Self {
        Self::new(body, 6, 0.8, seed)
    }

    /// The same scene drawn as `model`'s posed mesh at the default phenotype (the model the
    /// rig was built from).
    pub fn with_mesh(mut self, model: &'static Model) -> Self {
        let rest = Box::new(model.rest(&Phenotype::default()));
        self.look = Look::Mesh { model, rest };
        self
    }

    /// How the scene is drawn.
    pub fn look(&self) -> &Look {
        &self.look
    }

    /// Seconds after which the motion repeats.
    pub fn period(&self) -> f64 {
        self.keyframes.len() as f64 * self.step_s
    }

    /// The pose at `t` seconds.
    pub fn pose(&self, t: f64) -> Pose {
        let n = self.keyframes.len();
        let u = (t / self.step_s).max(0.0);
        let i = u.floor() as usize;
        let (a, b) = (&self.keyframes[i % n], &self.keyframes[(i + 1) % n]);
        between(a, b, u - u.floor())
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
        let pose = self.pose(t);
        let pts = self.keypoints(t);
        let keypoints_2d = match &self.look {
            Look::Splat => splat(&pts, camera, rgb),
            Look::Mesh { model, rest } => mesh(model, rest, &pose, camera, rgb)?,
        };
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

/// Draws a 5x5 splat per keypoint in view and returns the keypoints' pixels.
fn splat(pts: &[Point3<f64>], camera: &Camera, rgb: &mut [u8]) -> Vec<Option<[f32; 2]>> {
    let (w, h) = (i64::from(camera.width), i64::from(camera.height));
    rgb.fill(64);
    let mut keypoints_2d = Vec::with_capacity(pts.len());
    for p in pts {
        let px = camera
            .project(p)
            .filter(|q| (0.0..w as f64).contains(&q.x) && (0.0..h as f64).contains(&q.y));
        if let Some(q) = px {
            let (cx, cy) = (q.x as i64, q.y as i64);
            for yy in (cy - 2).max(0)..(cy + 3).min(h) {
                for xx in (cx - 2).max(0)..(cx + 3).min(w) {
                    let i = ((yy * w + xx) * 3) as usize;
                    rgb[i..i + 3].copy_from_slice(&[230, 200, 170]);
                }
            }
        }
        keypoints_2d.push(px.map(|q| [q.x as f32, q.y as f32]));
    }
    keypoints_2d
}

/// Rasterises the posed mesh into `rgb` and returns the pixels of the keypoints it does not
/// hide.
fn mesh(
    model: &Model,
    rest: &Rest,
    pose: &Pose,
    camera: &Camera,
    rgb: &mut [u8],
) -> Result<Vec<Option<[f32; 2]>>, SceneError> {
    let err = |what: String| SceneError {
        scene: "anny".into(),
        what,
    };
    let view = render(model, rest, pose, camera).map_err(|e| err(e.to_string()))?;
    let image = view.image.as_raw();
    if image.len() != rgb.len() {
        return Err(err(format!(
            "rendered {} bytes for a {} byte frame",
            image.len(),
            rgb.len()
        )));
    }
    rgb.copy_from_slice(image);
    Ok(view
        .keypoints
        .iter()
        .map(|k| {
            k.pixel
                .filter(|_| k.visible)
                .map(|p| [p.x as f32, p.y as f32])
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::KEYPOINT_COUNT;
    use crate::geom::Distortion;
    use crate::scene::demo_rig;

    fn scene() -> BodyScene {
        let model = Model::embedded().unwrap();
        let body = Arc::new(BodyRig::anny(model, true).unwrap());
        assert!(body.active.len() > 10, "{} fit bones", body.active.len());
        BodyScene::new(body, 4, 1.0, 7)
    }

    #[test]
    fn scene_moves_and_truth_is_in_view() {
        let scene = scene();
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

    #[test]
    fn renders_the_body_with_truth_on_it_and_repeats() {
        let scene = scene().with_mesh(Model::embedded().unwrap());
        // The motion drives the limbs, not only the root.
        let pose = scene.pose(0.3);
        let moving = pose
            .rotations
            .iter()
            .skip(1)
            .filter(|q| q.angle() > 1e-6)
            .count();
        assert!(moving >= 6, "bones moved: {moving}");
        let cam = Camera::look_at(
            Point3::new(0.0, -3.0, 0.4),
            Point3::new(0.0, 0.0, 0.05),
            Vector3::z(),
            60.0,
            (160, 120),
            Distortion::default(),
        )
        .unwrap();
        let mut rgb = vec![0u8; 160 * 120 * 3];
        let truth = scene.render(0.3, &cam, &mut rgb).unwrap();
        assert_eq!(truth.keypoints_3d.len(), KEYPOINT_COUNT);
        let background = [rgb[0], rgb[1], rgb[2]];
        let visible: Vec<[f32; 2]> = truth.keypoints_2d.iter().flatten().copied().collect();
        assert!(visible.len() >= 10, "{} visible keypoints", visible.len());
        // Visible keypoints lie inside the body's silhouette.
        let on_body = visible
            .iter()
            .filter(|p| {
                let i = (p[1] as usize * 160 + p[0] as usize) * 3;
                rgb[i..i + 3] != background
            })
            .count();
        assert!(
            on_body * 10 >= visible.len() * 9,
            "{on_body} of {} on the body",
            visible.len()
        );
        // The motion moves the body, and repeats after a period.
        let mut other = vec![0u8; rgb.len()];
        let later = scene
            .render(0.3 + scene.period() / 4.0, &cam, &mut other)
            .unwrap();
        assert_ne!(later.keypoints_3d, truth.keypoints_3d);
        let again = scene
            .render(0.3 + 4.0 * scene.period(), &cam, &mut other)
            .unwrap();
        for (a, b) in again.keypoints_3d.iter().zip(&truth.keypoints_3d) {
            for k in 0..3 {
                assert!((a[k] - b[k]).abs() < 1e-5, "{a:?} vs {b:?}");
            }
        }
    }
}
