//! Poses and the one forward kinematics of ANNY's default `local-ref` parameterisation,
//! shared by the model (keypoints, skinning) and the fit (keypoints and their Jacobian).
//!
//! With bone `j`'s rest head `h_j`, rest rotation `R_j` and reference orientation `U_j`, and
//! per-bone delta rotations `D_j` (world-aligned axes), the posed frames are
//! `E_root = U_rootᵀ D_root`, `E_c = E_p D_c`, heads `o_root = U_rootᵀ d`,
//! `o_c = o_p + E_p A_p (h_c - h_p)` with `A_p = U_p R_pᵀ` (and `A_root = I`), and the skinning
//! transform is `G_j = E_j U_j R_jᵀ`, `t_j = o_j - G_j h_j`. A keypoint is
//! `sum_j G_j a_kj + b_kj t_j` (the regressor folded through the skinning weights), which is
//! `sum_j E_j l_kj + b_kj o_j` with `l_kj = U_j R_jᵀ (a_kj - b_kj h_j)` fixed for a given shape:
//! one 3x3 product per bone and one matrix-vector product per term, with no skinning
//! transforms unless the mesh is wanted.

use std::sync::Arc;

use nalgebra::{Matrix3, Point3, Rotation3, UnitQuaternion, Vector3};

use super::keypoints::KeypointTerm;
use super::rest::Rest;

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

/// Why a rig cannot be built or posed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RigError {
    /// Inconsistent rig data, naming the field or bone.
    #[error("rig: {0}")]
    Invalid(String),
    /// A pose with the wrong number of bone rotations.
    #[error("pose has {got} bone rotations, the rig has {expected} bones")]
    PoseSize {
        /// Bones in the rig.
        expected: usize,
        /// Rotations given.
        got: usize,
    },
}

/// One keypoint term folded into its bone's frame: contributes `E_j local + weight o_j`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Term {
    pub(crate) keypoint: usize,
    pub(crate) bone: usize,
    pub(crate) local: Vector3<f64>,
    pub(crate) weight: f64,
}

/// A rig at a fixed shape, ready for forward kinematics.
#[derive(Debug, Clone, PartialEq)]
pub struct KeypointRig {
    /// Shared: a rest state is rebuilt for every phenotype tried, the names never change.
    names: Arc<[String]>,
    pub(crate) parents: Vec<Option<usize>>,
    /// `U_rootᵀ`: the root's frame and head are taken into world axes by it.
    root: Matrix3<f64>,
    offsets: Vec<Vector3<f64>>,
    reference: Vec<Matrix3<f64>>,
    /// `U_j R_jᵀ`: maps a bone's frame rotation `E_j` to its skinning rotation `G_j`.
    skin_frames: Vec<Matrix3<f64>>,
    rest_heads: Vec<Point3<f64>>,
    pub(crate) terms: Vec<Term>,
    keypoints: usize,
}

/// The posed rig: bone frames, heads and keypoints.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Posed {
    /// `E_j`: each bone's rotation away from its reference orientation.
    pub frames: Vec<Matrix3<f64>>,
    /// Posed bone heads.
    pub heads: Vec<Point3<f64>>,
    /// Posed keypoints.
    pub keypoints: Vec<Point3<f64>>,
    /// Per-term contributions `E_j l_kj + b_kj o_j`, in the order of the rig's terms.
    pub(crate) contributions: Vec<Vector3<f64>>,
}

impl Posed {
    /// World rotation of bone `j`'s frame (`W_j.rot = E_j U_j`).
    pub fn bone_rotation(&self, rig: &KeypointRig, j: usize) -> Rotation3<f64> {
        Rotation3::from_matrix_unchecked(self.frames[j] * rig.reference[j])
    }
}

/// The per-bone rest data a rig is built from, in bone order.
struct RestBones {
    names: Arc<[String]>,
    parents: Vec<Option<usize>>,
    heads: Vec<Point3<f64>>,
    rotations: Vec<Matrix3<f64>>,
    reference: Vec<Matrix3<f64>>,
}

impl KeypointRig {
    /// A rig from per-bone rest data (topologically ordered: parents before children, one root at
    /// index 0 whose reference orientation is the identity, as the fit's Jacobian assumes) and
    /// the folded keypoint terms.
    ///
    /// # Errors
    /// [`RigError::Invalid`] naming the inconsistent field.
    pub fn new(
        names: Vec<String>,
        parents: Vec<Option<usize>>,
        rest_heads: Vec<Point3<f64>>,
        rest_rotations: Vec<Matrix3<f64>>,
        reference: Vec<Matrix3<f64>>,
        terms: &[KeypointTerm],
        keypoints: usize,
    ) -> Result<Self, RigError> {
        let n = names.len();
        let bad = |what: String| RigError::Invalid(what);
        if parents.len() != n
            || rest_heads.len() != n
            || rest_rotations.len() != n
            || reference.len() != n
        {
            return Err(bad(format!(
                "{n} names but {} parents, {} heads, {} rest rotations, {} reference orientations",
                parents.len(),
                rest_heads.len(),
                rest_rotations.len(),
                reference.len()
            )));
        }
        if n == 0 || parents[0].is_some() {
            return Err(bad("bone 0 must be the root (no parent)".into()));
        }
        for (c, p) in parents.iter().enumerate().skip(1) {
            match p {
                Some(p) if *p < c => {}
                Some(p) => {
                    return Err(bad(format!(
                        "bone {c} `{}`: parent {p} must be an earlier bone",
                        names[c]
                    )))
                }
                None => {
                    return Err(bad(format!(
                        "bone {c} `{}`: no parent, but only bone 0 is a root",
                        names[c]
                    )))
                }
            }
        }
        if (reference[0] - Matrix3::identity()).norm() > 1e-9 {
            return Err(bad(
                "the root's reference orientation must be the identity".into()
            ));
        }
        if let Some(t) = terms
            .iter()
            .find(|t| t.bone >= n || t.keypoint >= keypoints)
        {
            return Err(bad(format!(
                "keypoint term ({}, {}) outside {keypoints} keypoints x {n} bones",
                t.keypoint, t.bone
            )));
        }
        let bones = RestBones {
            names: names.into(),
            parents,
            heads: rest_heads,
            rotations: rest_rotations,
            reference,
        };
        Ok(Self::assemble(bones, Matrix3::identity(), terms, keypoints))
    }

    /// The rig of a model's rest state, whose parents and terms the model file's validation
    /// has checked; the root may have any reference orientation.
    pub(crate) fn of_rest(
        names: Arc<[String]>,
        parents: &[i32],
        rest_heads: &[Vector3<f64>],
        rest_rotations: &[Matrix3<f64>],
        reference: &[Matrix3<f64>],
        terms: &[KeypointTerm],
        keypoints: usize,
    ) -> Self {
        let bones = RestBones {
            names,
            parents: parents.iter().map(|&p| usize::try_from(p).ok()).collect(),
            heads: rest_heads.iter().map(|&h| Point3::from(h)).collect(),
            rotations: rest_rotations.to_vec(),
            reference: reference.to_vec(),
        };
        let root = bones
            .reference
            .first()
            .map_or_else(Matrix3::identity, Matrix3::transpose);
        Self::assemble(bones, root, terms, keypoints)
    }

    /// Offsets, skinning frames and folded terms of checked rest data.
    fn assemble(
        bones: RestBones,
        root: Matrix3<f64>,
        terms: &[KeypointTerm],
        keypoints: usize,
    ) -> Self {
        let RestBones {
            names,
            parents,
            heads,
            rotations,
            reference,
        } = bones;
        let skin_frames: Vec<Matrix3<f64>> = reference
            .iter()
            .zip(&rotations)
            .map(|(u, r)| u * r.transpose())
            .collect();
        let offsets = parents
            .iter()
            .enumerate()
            .map(|(c, parent)| match *parent {
                // ANNY takes the root's aim A_root as the identity (not U_0 R_0ᵀ).
                Some(0) => heads[c] - heads[0],
                Some(p) => skin_frames[p] * (heads[c] - heads[p]),
                None => Vector3::zeros(),
            })
            .collect();
        let mut folded: Vec<Term> = terms
            .iter()
            .map(|t| Term {
                keypoint: t.keypoint,
                bone: t.bone,
                local: skin_frames[t.bone] * (t.a - heads[t.bone].coords * t.b),
                weight: t.b,
            })
            .collect();
        folded.sort_by_key(|t| (t.keypoint, t.bone));
        Self {
            names,
            parents,
            root,
            offsets,
            reference,
            skin_frames,
            rest_heads: heads,
            terms: folded,
            keypoints,
        }
    }

    /// Number of bones.
    pub fn bones(&self) -> usize {
        self.names.len()
    }

    /// Number of keypoints.
    pub fn keypoints(&self) -> usize {
        self.keypoints
    }

    /// Bone names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Parent of each bone.
    pub fn parents(&self) -> &[Option<usize>] {
        &self.parents
    }

    /// Rest heads of the bones at this shape.
    pub fn rest_heads(&self) -> &[Point3<f64>] {
        &self.rest_heads
    }

    /// Whether the root's reference orientation is the identity (the fit's Jacobian and
    /// [`retract`](crate::body::fit::retract) take the root translation in world axes).
    pub fn root_is_reference(&self) -> bool {
        (self.root - Matrix3::identity()).norm() <= 1e-9
    }

    /// Each bone's direction in the reference pose: the y axis of its reference frame, which
    /// points from head to tail in MakeHuman rigs.
    pub fn reference_directions(&self) -> Vec<Vector3<f64>> {
        self.reference
            .iter()
            .map(|u| u.column(1).into_owned())
            .collect()
    }

    /// Forward kinematics: poses the rig into `out` (reusing its buffers): bone frames, heads,
    /// keypoints and the per-term contributions the keypoint Jacobian reads.
    ///
    /// # Errors
    /// [`RigError::PoseSize`] when the pose has the wrong number of rotations.
    pub fn forward(&self, pose: &Pose, out: &mut Posed) -> Result<(), RigError> {
        let n = self.bones();
        if pose.rotations.len() != n {
            return Err(RigError::PoseSize {
                expected: n,
                got: pose.rotations.len(),
            });
        }
        out.frames.resize(n, Matrix3::identity());
        out.heads.resize(n, Point3::origin());
        for j in 0..n {
            let d = pose.rotations[j].to_rotation_matrix().into_inner();
            match self.parents[j] {
                Some(p) => {
                    let ep = out.frames[p];
                    out.heads[j] = out.heads[p] + ep * self.offsets[j];
                    out.frames[j] = ep * d;
                }
                None => {
                    out.heads[j] = Point3::from(self.root * pose.translation);
                    out.frames[j] = self.root * d;
                }
            }
        }
        out.keypoints.clear();
        out.keypoints.resize(self.keypoints, Point3::origin());
        out.contributions.resize(self.terms.len(), Vector3::zeros());
        for (t, c) in self.terms.iter().zip(out.contributions.iter_mut()) {
            *c = out.frames[t.bone] * t.local + out.heads[t.bone].coords * t.weight;
            out.keypoints[t.keypoint].coords += *c;
        }
        Ok(())
    }

    /// The skinning transforms `G_j = E_j U_j R_jᵀ`, `t_j = o_j - G_j h_j` of posed bones, into
    /// `out` (reusing its buffer).
    pub fn skinning_into(&self, posed: &Posed, out: &mut Vec<Rigid>) {
        out.clear();
        out.extend(
            posed
                .frames
                .iter()
                .zip(&posed.heads)
                .zip(self.skin_frames.iter().zip(&self.rest_heads))
                .map(|((e, head), (skin, rest))| {
                    let g = e * skin;
                    Rigid {
                        rotation: g,
                        translation: head.coords - g * rest.coords,
                    }
                }),
        );
    }
}

/// Posed bones with their skinning transforms `T_c = W_c P_c⁻¹` (`G_c`, `t_c`), which move rest
/// points of bone c to the posed body. The world pose `W_c = [E_c U_c | head_c]` is
/// [`Skeleton::world_pose`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Skeleton {
    /// Frames, heads and keypoints of the posed rig.
    pub posed: Posed,
    /// Skinning transform per bone.
    pub skinning: Vec<Rigid>,
}

impl Skeleton {
    /// Posed head of a bone.
    pub fn head(&self, bone: usize) -> Point3<f64> {
        self.posed.heads[bone]
    }

    /// World pose `W_c` of a bone (the package's `bone_poses`).
    pub fn world_pose(&self, rest: &Rest, bone: usize) -> Rigid {
        Rigid {
            rotation: self.posed.frames[bone] * rest.reference[bone],
            translation: self.posed.heads[bone].coords,
        }
    }
}
