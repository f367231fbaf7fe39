//! ANNY as the fit's rig: the model's rest state at a phenotype, the default joint limits,
//! the bones the fit moves.

use super::calibrate::ShapeModel;
use super::fitter::PoseFitter;
use super::{FitConfig, FitError};
use crate::body::limits::{rom, JointLimit};
use crate::body::KeypointRig;
use crate::body::{Model, Phenotype, Rest};
use crate::geom::Camera;

/// The bones the per-frame fit moves: those that place the 23 COCO keypoints. Twist bones,
/// fingers, toes and eyes stay at their reference (or last calibrated) rotation; the keypoints
/// barely observe them, and the weak rest prior would hold them there anyway.
pub const ACTIVE_BONES: [&str; 17] = [
    "root",
    "spine04",
    "spine02",
    "neck01",
    "head",
    "clavicle.L",
    "upperarm01.L",
    "lowerarm01.L",
    "clavicle.R",
    "upperarm01.R",
    "lowerarm01.R",
    "upperleg01.L",
    "lowerleg01.L",
    "foot.L",
    "upperleg01.R",
    "lowerleg01.R",
    "foot.R",
];

/// The fit rig of `model` at a rest state.
///
/// # Errors
/// [`FitError::Rig`] when the rest state is not `model`'s or the root's reference orientation
/// is not the identity (the fit's Jacobian takes the root translation in world axes).
pub fn rig_from_rest(model: &Model, rest: &Rest) -> Result<KeypointRig, FitError> {
    if rest.rig.names() != model.bone_labels() {
        return Err(FitError::Rig(format!(
            "the rest state has {} bones, the model {}",
            rest.rig.bones(),
            model.bone_count()
        )));
    }
    if !rest.rig.root_is_reference() {
        return Err(FitError::Rig(
            "the root's reference orientation must be the identity".into(),
        ));
    }
    Ok(rest.rig.clone())
}

/// The model's keypoint-only rest state (tens of microseconds, which makes calibration cheap),
/// refusing non-finite sliders.
fn rest(model: &Model, phenotype: &Phenotype) -> Result<Rest, FitError> {
    if let Some((name, value)) = phenotype.named().into_iter().find(|(_, v)| !v.is_finite()) {
        return Err(FitError::Model(format!(
            "phenotype slider {name} is {value}, expected a finite value in [0, 1]"
        )));
    }
    Ok(model.rest_keypoints_only(phenotype))
}

/// The phenotype of a shape vector in [`Phenotype::to_array`] order.
pub fn phenotype(shape: &[f64]) -> Phenotype {
    let mut v = [0.5; 6];
    for (d, s) in v.iter_mut().zip(shape) {
        *d = *s;
    }
    Phenotype::from_array(v)
}

/// ANNY's six phenotype sliders as the fit's shape parameters.
#[derive(Debug, Clone, Copy)]
pub struct AnnyShape<'m> {
    model: &'m Model,
}

impl<'m> AnnyShape<'m> {
    /// The shape model of `model`.
    pub fn new(model: &'m Model) -> Self {
        Self { model }
    }
}

impl ShapeModel for AnnyShape<'_> {
    fn shape_len(&self) -> usize {
        6
    }

    fn shape_range(&self) -> (f64, f64) {
        (0.0, 1.0)
    }

    fn default_shape(&self) -> Vec<f64> {
        Phenotype::default().to_array().to_vec()
    }

    fn rig(&self, shape: &[f64]) -> Result<KeypointRig, FitError> {
        rig_from_rest(self.model, &rest(self.model, &phenotype(shape))?)
    }
}

/// The default range-of-motion limits for every bone of an ANNY rig (see
/// [`crate::body::limits::rom`]).
///
/// # Errors
/// [`FitError::Limits`] when a bone name is unknown.
pub fn default_limits(rig: &KeypointRig) -> Result<Vec<Option<JointLimit>>, FitError> {
    let names: Vec<&str> = rig.names().iter().map(String::as_str).collect();
    Ok(rom::default_limits(
        &names,
        &rig.reference_directions(),
        rig.parents(),
    )?)
}

/// Indices of [`ACTIVE_BONES`] in `rig`.
///
/// # Errors
/// [`FitError::Rig`] naming a bone the rig lacks.
pub fn active_bones(rig: &KeypointRig) -> Result<Vec<usize>, FitError> {
    ACTIVE_BONES
        .iter()
        .map(|name| {
            rig.names()
                .iter()
                .position(|n| n == name)
                .ok_or_else(|| FitError::Rig(format!("the rig has no bone `{name}`")))
        })
        .collect()
}

/// A fitter of the ANNY `model` at `phenotype`, with the default limits and active bones.
/// Mesh vertices are off; turn them on with [`enable_vertices`].
///
/// # Errors
/// [`FitError::Model`] for a non-finite phenotype, and as [`rig_from_rest`],
/// [`default_limits`] and [`PoseFitter::new`].
pub fn fitter(
    model: &'static Model,
    phenotype: &Phenotype,
    cameras: Vec<Camera>,
    config: FitConfig,
) -> Result<PoseFitter, FitError> {
    let rig = rig_from_rest(model, &rest(model, phenotype)?)?;
    let limits = default_limits(&rig)?;
    let active = active_bones(&rig)?;
    PoseFitter::new(rig, limits, active, cameras, config)
}

/// Makes every fitted frame carry the posed ANNY mesh (13718 vertices) of `phenotype`.
pub fn enable_vertices(fitter: &mut PoseFitter, model: &'static Model, phenotype: &Phenotype) {
    let rest = model.rest(phenotype);
    fitter.set_vertex_fn(Some(Box::new(move |pose| model.vertices(&rest, pose).ok())));
}

/// Calibrates the subject's phenotype over `frames` with [`PoseFitter::calibrate_shape`] and,
/// when vertices are on, points them at the calibrated body.
///
/// # Errors
/// As [`PoseFitter::calibrate_shape`].
pub fn calibrate(
    fitter: &mut PoseFitter,
    model: &'static Model,
    frames: &[Vec<Vec<Option<crate::body::triangulate::Observation>>>],
    rounds: usize,
) -> Result<super::Calibration, FitError> {
    let calibration = fitter.calibrate_shape(&AnnyShape::new(model), frames, rounds)?;
    if fitter.has_vertex_fn() {
        enable_vertices(fitter, model, &phenotype(&calibration.shape));
    }
    Ok(calibration)
}

#[cfg(test)]
mod tests {
    use nalgebra::{UnitQuaternion, Vector3};
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::body::fit::Posed;
    use crate::body::Pose;

    fn model() -> &'static Model {
        Model::embedded().expect("embedded model")
    }

    #[test]
    fn rig_forward_matches_the_model_keypoints() {
        let model = model();
        let rest = model.rest(&phenotype(&[0.3, 0.6, 0.4, 0.7, 0.55, 0.45]));
        let rig = rig_from_rest(model, &rest).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let mut pose = Pose::identity(rig.bones());
        pose.translation = Vector3::new(0.1, -0.2, 0.3);
        for r in &mut pose.rotations {
            let v = Vector3::new(
                rng.gen_range(-0.5..0.5),
                rng.gen_range(-0.5..0.5),
                rng.gen_range(-0.5..0.5),
            );
            *r = UnitQuaternion::from_scaled_axis(v);
        }
        let mut posed = Posed::default();
        rig.forward(&pose, &mut posed).unwrap();
        // The model's keypoints through the skinning transforms, `sum_j G_j a_kj + b_kj t_j`.
        let skeleton = model.skeleton(&rest, &pose).unwrap();
        let theirs = rest.keypoints.evaluate(&skeleton);
        let err = posed
            .keypoints
            .iter()
            .zip(&theirs)
            .map(|(a, b)| (a - b).norm())
            .fold(0.0, f64::max);
        assert!(err < 1e-12, "max difference {err} m");
    }

    #[test]
    fn default_limits_hold_the_reference_pose_and_follow_the_bones() {
        let model = model();
        let rig = rig_from_rest(model, &model.rest(&Phenotype::default())).unwrap();
        let limits = default_limits(&rig).unwrap();
        assert_eq!(limits.len(), 104);
        assert!(limits[0].is_none());
        for (j, l) in limits.iter().enumerate().skip(1) {
            let l = l.as_ref().unwrap();
            assert!(
                l.contains(&UnitQuaternion::identity()),
                "{} excludes its reference pose",
                rig.names()[j]
            );
        }
        // The reference direction (the frame's y axis) follows the bone to its only child.
        let mut posed = Posed::default();
        rig.forward(&Pose::identity(rig.bones()), &mut posed)
            .unwrap();
        let dirs = rig.reference_directions();
        for (j, dir) in dirs.iter().enumerate() {
            let kids: Vec<usize> = (0..rig.bones())
                .filter(|&c| rig.parents()[c] == Some(j))
                .collect();
            if let [c] = kids[..] {
                let off = (posed.heads[c] - posed.heads[j]).normalize();
                let angle = off.angle(dir).to_degrees();
                assert!(angle < 6.0, "{}: {angle} degrees", rig.names()[j]);
            }
        }
        // The knee bends backwards, not forwards.
        let knee = rig
            .names()
            .iter()
            .position(|n| n == "lowerleg01.L")
            .unwrap();
        let axis = Vector3::x_axis();
        let l = limits[knee].as_ref().unwrap();
        assert!(
            l.contains(&UnitQuaternion::from_axis_angle(&axis, 1.2))
                != l.contains(&UnitQuaternion::from_axis_angle(&axis, -1.2))
        );
        assert_eq!(active_bones(&rig).unwrap().len(), ACTIVE_BONES.len());
        // A non-finite phenotype is refused with the slider's name.
        let bad = phenotype(&[f64::NAN, 0.5, 0.5, 0.5, 0.5, 0.5]);
        let err = fitter(model, &bad, Vec::new(), FitConfig::default()).unwrap_err();
        assert!(
            matches!(&err, FitError::Model(m) if m.contains("gender")),
            "{err}"
        );
    }
}
