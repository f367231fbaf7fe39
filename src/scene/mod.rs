//! The synthetic subject and what it looks like to calibrated cameras.
//!
//! One subject: the ANNY body moving repeatably through a seeded loop of poses within its
//! joint limits ([`BodyScene`], its motion in [`motion`]), with ground truth from the fit's
//! own keypoint forward ([`BodyRig`]), so the fit is scored against the model it fits. The
//! synthetic cameras ([`crate::camera::synthetic`]) render it, the demo rig runs it, and the
//! fit's accuracy test, example and benchmark draw their poses and detections from it
//! ([`motion`], [`observe`]). [`MarkerScene`] is a light test pattern that needs no model.
//!
//! The demo's cameras are [`demo_rig`] ([`demo_rig_at`] for a subject standing elsewhere).

use serde::{Deserialize, Serialize};

use crate::geom::Camera;

mod body;
mod markers;
pub mod motion;
pub mod observe;
mod rig;

pub use body::{BodyRig, BodyRigError, BodyScene, Look};
pub use markers::MarkerScene;
pub use rig::{demo_rig, demo_rig_at, turned, DEMO_CAMERA_NAMES};

/// Something that can be rendered into a calibrated camera at a time.
///
/// [`BodyScene`] renders the ANNY body; [`MarkerScene`] is a light test pattern that needs no
/// model.
pub trait Scene: Send + Sync {
    /// Short name for logs and recordings.
    fn name(&self) -> &str;

    /// Renders the scene at `t` seconds into `rgb` (`width * height * 3`,
    /// the camera's size) and returns the ground truth for this camera.
    ///
    /// # Errors
    /// A [`SceneError`] when the scene cannot be rendered into this camera.
    fn render(&self, t: f64, camera: &Camera, rgb: &mut [u8]) -> Result<GroundTruth, SceneError>;
}

/// Why a scene could not be rendered.
#[derive(Debug, thiserror::Error)]
#[error("scene {scene}: {what}")]
pub struct SceneError {
    pub scene: String,
    pub what: String,
}

/// What a synthetic scene knows about a frame: the truth a detector should find.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GroundTruth {
    /// Keypoints projected into this camera, in camera pixels (centre of the
    /// top-left pixel at 0.5, 0.5); `None` when behind the camera.
    pub keypoints_2d: Vec<Option<[f32; 2]>>,
    /// The same keypoints in world coordinates (metres).
    pub keypoints_3d: Vec<[f32; 3]>,
    /// Pose parameters of the scene at this instant (scene-defined meaning).
    pub pose: Vec<f32>,
}
