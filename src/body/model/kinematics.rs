//! Poses and forward kinematics in ANNY's default `local-ref` parameterisation.

use nalgebra::{Matrix3, Point3, UnitQuaternion, Vector3};
use serde::{Deserialize, Serialize};

use super::rest::Rest;
use crate::body::BodyError;

/// A rigid transform `x -> rotation * x + translation`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rigid {
    pub rotation: Matrix3<f64>,
    pub translation: Vector3<f64>,
}

impl Rigid {
    /// The identity transform.
    pub fn identity() -> Self {
        Self {
            rotation: Matrix3::identity(),
            translation: Vector3::zeros(),
        }
    }

    /// Applies the transform to a point.
    #[inline]
    pub fn apply(&self, p: &Vector3<f64>) -> Vector3<f64> {
        self.rotation * p + self.translation
    }

    /// `self ∘ other`.
    #[inline]
    pub fn compose(&self, other: &Rigid) -> Rigid {
        Rigid {
            rotation: self.rotation * other.rotation,
            translation: self.rotation * other.translation + self.translation,
        }
    }
}

/// A body pose: one rotation per bone and the root translation.
///
/// Rotations are the package's `local-ref` delta rotations `D_c`: bone c's rotation relative
/// to its reference orientation, expressed in world-aligned axes. Identity everywhere gives the
/// reference pose (close to the rest A-pose) with the root head at `translation`. Rotations are
/// unit quaternions because the fit composes and renormalises them at every step.
#[derive(Debug, Clone, PartialEq)]
pub struct Pose {
    /// Per-bone delta rotations `D_c` in world-aligned axes.
    pub rotations: Vec<UnitQuaternion<f64>>,
    /// Root head position `d` (metres).
    pub translation: Vector3<f64>,
}

impl Pose {
    /// The reference pose of a model with `bones` bones, root head at the origin.
    pub fn identity(bones: usize) -> Self {
        Self {
            rotations: vec![UnitQuaternion::identity(); bones],
            translation: Vector3::zeros(),
        }
    }

    /// A pose from per-bone rotation vectors (axis times angle, radians).
    pub fn from_rotation_vectors(vectors: &[Vector3<f64>], translation: Vector3<f64>) -> Self {
        Self {
            rotations: vectors
                .iter()
                .map(|v| UnitQuaternion::from_scaled_axis(*v))
                .collect(),
            translation,
        }
    }

    /// The pose a fraction `t` of the way from `self` to `to`: the translation interpolated
    /// linearly, each rotation spherically.
    pub fn interpolate(&self, to: &Pose, t: f64) -> Pose {
        Pose {
            translation: self.translation.lerp(&to.translation, t),
            rotations: self
                .rotations
                .iter()
                .zip(&to.rotations)
                .map(|(a, b)| a.slerp(b, t))
                .collect(),
        }
    }
}

/// The JSON form of a pose (see the README's `pose.json` schema).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoseJson {
    /// Rotation vector (radians) per bone label; bones not named keep the identity.
    #[serde(default)]
    pub rotations: std::collections::BTreeMap<String, [f64; 3]>,
    /// Root translation, metres.
    #[serde(default)]
    pub root_translation: [f64; 3],
    /// Phenotype sliders; missing ones are 0.5.
    #[serde(default)]
    pub phenotype: super::Phenotype,
}

/// Posed bones: for each bone its posed head, its rotation away from its reference
/// orientation `E_c = W_c.rot U_cᵀ`, and its skinning transform `T_c = W_c P_c^-1`
/// (`G_c`, `t_c`) that moves rest points of bone c to the posed body. The world pose
/// `W_c = [E_c U_c | head_c]` is [`Skeleton::world_pose`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Skeleton {
    pub heads: Vec<Vector3<f64>>,
    pub frames: Vec<Matrix3<f64>>,
    pub skinning: Vec<Rigid>,
}

impl Skeleton {
    /// Posed head of a bone.
    pub fn head(&self, bone: usize) -> Point3<f64> {
        Point3::from(self.heads[bone])
    }

    /// World pose `W_c` of a bone (the package's `bone_poses`).
    pub fn world_pose(&self, rest: &Rest, bone: usize) -> Rigid {
        Rigid {
            rotation: self.frames[bone] * rest.reference[bone],
            translation: self.heads[bone],
        }
    }
}

/// Forward kinematics of the `local-ref` parameterisation:
/// `W_0 = [U_0ᵀ D_0 U_0 | U_0ᵀ d_0]`, `W_c = W_p [U_pᵀ D_c U_c | U_pᵀ o_c]`, then
/// `G_c = W_c.rot R_cᵀ`, `t_c = W_c.pos − G_c h_c`.
///
/// Evaluated through `E_c = W_c.rot U_cᵀ = E_p D_c` (U orthonormal): `W_c.rot = E_c U_c`,
/// `W_c.pos = W_p.pos + E_p o_c`, `G_c = E_c (U_c R_cᵀ)`: two 3x3 products per bone.
pub fn forward(
    rest: &Rest,
    parents: &[i32],
    pose: &Pose,
    out: &mut Skeleton,
) -> Result<(), BodyError> {
    let b = parents.len();
    if pose.rotations.len() != b {
        return Err(BodyError::PoseSize {
            got: pose.rotations.len(),
            expected: b,
        });
    }
    out.heads.resize(b, Vector3::zeros());
    out.frames.resize(b, Matrix3::identity());
    out.skinning.resize(b, Rigid::identity());
    let u0t = rest.reference[0].transpose();
    for (c, (&parent, rotation)) in parents.iter().zip(&pose.rotations).enumerate() {
        let d = rotation.to_rotation_matrix().into_inner();
        let (e, head) = if c == 0 {
            (u0t * d, u0t * pose.translation)
        } else {
            let p = parent as usize;
            let ep = &out.frames[p];
            (ep * d, out.heads[p] + ep * rest.reference_offsets[c])
        };
        let g = e * rest.skin_frames[c];
        out.skinning[c] = Rigid {
            rotation: g,
            translation: head - g * rest.heads[c],
        };
        out.heads[c] = head;
        out.frames[c] = e;
    }
    Ok(())
}
