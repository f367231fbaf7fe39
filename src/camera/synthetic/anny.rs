//! The ANNY body as a synthetic scene: a smooth, repeatable motion rendered
//! through the body module's rasteriser.

use nalgebra::{UnitQuaternion, Vector3};

use crate::body::render::render;
use crate::body::{Model, Phenotype, Pose, Rest};
use crate::camera::frame::GroundTruth;
use crate::geom::Camera;

use super::{Scene, SceneError};

/// One joint driven by the motion: bone label, axis-angle amplitude (radians),
/// phase (fraction of a period) and whether it only bends one way.
const MOTION: [(&str, [f64; 3], f64, bool); 9] = [
    ("upperarm01.L", [0.0, 0.7, 0.3], 0.0, false),
    ("upperarm01.R", [0.0, -0.7, -0.3], 0.5, false),
    ("lowerarm01.L", [0.0, 0.0, 0.9], 0.1, true),
    ("lowerarm01.R", [0.0, 0.0, -0.9], 0.6, true),
    ("upperleg01.L", [0.5, 0.0, 0.0], 0.5, false),
    ("upperleg01.R", [0.5, 0.0, 0.0], 0.0, false),
    ("lowerleg01.L", [-0.8, 0.0, 0.0], 0.25, true),
    ("lowerleg01.R", [-0.8, 0.0, 0.0], 0.75, true),
    ("spine01", [0.0, 0.0, 0.25], 0.0, false),
];

/// ANNY's default body walking in place and swinging its arms, turning
/// slowly; everything is a function of time, so runs repeat exactly.
pub struct AnnyScene {
    model: &'static Model,
    rest: Rest,
    /// (bone index, amplitude, phase, one-sided) for the bones of [`MOTION`] the model has.
    joints: Vec<(usize, Vector3<f64>, f64, bool)>,
    /// Period of the motion, seconds.
    pub period: f64,
}

impl AnnyScene {
    /// The embedded model at the default phenotype.
    ///
    /// # Errors
    /// [`SceneError`] when the embedded model cannot be loaded.
    pub fn new() -> Result<Self, SceneError> {
        let model = Model::embedded().map_err(|e| SceneError {
            scene: "anny".into(),
            what: e.to_string(),
        })?;
        let rest = model.rest(&Phenotype::default());
        let joints = MOTION
            .iter()
            .filter_map(|&(label, amp, phase, one_sided)| {
                let i = model.bone_index(label);
                if i.is_none() {
                    log::warn!("anny scene: the model has no bone {label}; it stays still");
                }
                Some((i?, Vector3::from(amp), phase, one_sided))
            })
            .collect();
        Ok(Self {
            model,
            rest,
            joints,
            period: 2.0,
        })
    }

    /// The pose at `t` seconds.
    pub fn pose(&self, t: f64) -> Pose {
        let tau = std::f64::consts::TAU;
        let phase = t / self.period;
        let mut pose = Pose::identity(self.model.bone_count());
        for &(bone, amp, offset, one_sided) in &self.joints {
            let s = (tau * (phase + offset)).sin();
            let k = if one_sided { 0.5 * (1.0 + s) } else { s };
            pose.rotations[bone] = UnitQuaternion::from_scaled_axis(amp * k);
        }
        // Turn slowly about the vertical and bob with the steps.
        pose.rotations[0] =
            UnitQuaternion::from_scaled_axis(Vector3::z() * 0.5 * (tau * phase / 4.0).sin());
        pose.translation = Vector3::new(
            0.1 * (tau * phase / 2.0).sin(),
            0.0,
            0.02 * (2.0 * tau * phase).sin(),
        );
        pose
    }
}

impl Scene for AnnyScene {
    fn name(&self) -> &str {
        "anny"
    }

    fn render(&self, t: f64, camera: &Camera, rgb: &mut [u8]) -> Result<GroundTruth, SceneError> {
        let err = |what: String| SceneError {
            scene: "anny".into(),
            what,
        };
        let pose = self.pose(t);
        let view = render(self.model, &self.rest, &pose, camera).map_err(|e| err(e.to_string()))?;
        let image = view.image.as_raw();
        if image.len() != rgb.len() {
            return Err(err(format!(
                "rendered {} bytes for a {} byte frame",
                image.len(),
                rgb.len()
            )));
        }
        rgb.copy_from_slice(image);
        let world = self
            .model
            .keypoints(&self.rest, &pose)
            .map_err(|e| err(e.to_string()))?;
        let mut params: Vec<f32> = pose
            .rotations
            .iter()
            .flat_map(|r| r.scaled_axis().map(|v| v as f32).data.0[0])
            .collect();
        params.extend(pose.translation.iter().map(|&v| v as f32));
        Ok(GroundTruth {
            keypoints_2d: view
                .keypoints
                .iter()
                .map(|k| {
                    k.pixel
                        .filter(|_| k.visible)
                        .map(|p| [p.x as f32, p.y as f32])
                })
                .collect(),
            keypoints_3d: world
                .iter()
                .map(|p| [p.x as f32, p.y as f32, p.z as f32])
                .collect(),
            pose: params,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::Distortion;
    use nalgebra::Point3;

    fn camera() -> Camera {
        let eye = Point3::new(0.0, -3.0, 0.4);
        Camera::look_at(
            eye,
            Point3::new(0.0, 0.0, 0.05),
            Vector3::z(),
            60.0,
            (160, 120),
            Distortion::default(),
        )
        .unwrap()
    }

    #[test]
    fn renders_the_body_with_truth_on_it_and_repeats() {
        let scene = AnnyScene::new().unwrap();
        assert!(
            scene.joints.len() >= 6,
            "bones found: {}",
            scene.joints.len()
        );
        let cam = camera();
        let mut rgb = vec![0u8; 160 * 120 * 3];
        let truth = scene.render(0.3, &cam, &mut rgb).unwrap();
        assert_eq!(truth.keypoints_3d.len(), crate::body::KEYPOINT_COUNT);
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
            .render(0.3 + scene.period / 4.0, &cam, &mut other)
            .unwrap();
        assert_ne!(later.keypoints_3d, truth.keypoints_3d);
        let again = scene
            .render(0.3 + 4.0 * scene.period, &cam, &mut other)
            .unwrap();
        for (a, b) in again.keypoints_3d.iter().zip(&truth.keypoints_3d) {
            for k in 0..3 {
                assert!((a[k] - b[k]).abs() < 1e-5, "{a:?} vs {b:?}");
            }
        }
    }
}
