//! The kinematic rig of the fit: ANNY's `local-ref` forward kinematics and its keypoint
//! regressors folded into per-bone terms, with the world-frame derivatives the fit needs.
//!
//! With bone `j`'s rest head `h_j`, rest rotation `R_j` and reference orientation `U_j`, and
//! per-bone delta rotations `D_j` (world-aligned axes), the posed frames are
//! `E_root = D_root`, `E_c = E_p D_c`, heads `o_root = d`, `o_c = o_p + E_p A_p (h_c - h_p)` with
//! `A_p = U_p R_p^T` (and `A_root = I`),
//! and the skinning transform is `G_j = E_j U_j R_j^T`, `t_j = o_j - G_j h_j`. A keypoint is
//! `sum_j G_j a_kj + b_kj t_j` (the regressor folded through the skinning weights), which is
//! `sum_j E_j l_kj + b_kj o_j` with `l_kj = U_j R_j^T (a_kj - b_kj h_j)` fixed for a given shape.

use nalgebra::{Matrix3, Point3, Rotation3, UnitQuaternion, Vector3};

use super::FitError;
use crate::body::{KeypointTerm, Pose};

#[derive(Debug, Clone, Copy, PartialEq)]
struct Term {
    keypoint: usize,
    bone: usize,
    local: Vector3<f64>,
    weight: f64,
}

/// A rig at a fixed shape, ready for keypoint forward kinematics.
#[derive(Debug, Clone, PartialEq)]
pub struct KeypointRig {
    names: Vec<String>,
    parents: Vec<Option<usize>>,
    offsets: Vec<Vector3<f64>>,
    reference: Vec<Matrix3<f64>>,
    rest_heads: Vec<Point3<f64>>,
    terms: Vec<Term>,
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

impl KeypointRig {
    /// A rig from per-bone rest data (topologically ordered: parents before children, one root at
    /// index 0 whose reference orientation is the identity) and the folded keypoint terms.
    ///
    /// # Errors
    /// [`FitError::Rig`] naming the inconsistent field.
    pub fn new(
        names: Vec<String>,
        parents: Vec<Option<usize>>,
        rest_heads: Vec<Point3<f64>>,
        rest_rotations: Vec<Matrix3<f64>>,
        reference: Vec<Matrix3<f64>>,
        terms: &[KeypointTerm],
        keypoints: usize,
    ) -> Result<Self, FitError> {
        let n = names.len();
        let bad = |what: String| FitError::Rig(what);
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
                _ => {
                    return Err(bad(format!(
                        "bone {c} `{}`: parent {p:?} must be an earlier bone",
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
        let offsets = (0..n)
            .map(|c| match parents[c] {
                // ANNY takes the root's aim A_root as the identity (not U_0 R_0^T).
                Some(0) => rest_heads[c] - rest_heads[0],
                Some(p) => {
                    reference[p] * rest_rotations[p].transpose() * (rest_heads[c] - rest_heads[p])
                }
                None => Vector3::zeros(),
            })
            .collect();
        let mut folded = Vec::with_capacity(terms.len());
        for t in terms {
            if t.bone >= n || t.keypoint >= keypoints {
                return Err(bad(format!(
                    "keypoint term ({}, {}) outside {keypoints} keypoints x {n} bones",
                    t.keypoint, t.bone
                )));
            }
            let h = rest_heads[t.bone].coords;
            let local = reference[t.bone] * rest_rotations[t.bone].transpose() * (t.a - h * t.b);
            folded.push(Term {
                keypoint: t.keypoint,
                bone: t.bone,
                local,
                weight: t.b,
            });
        }
        folded.sort_by_key(|t| (t.keypoint, t.bone));
        Ok(Self {
            names,
            parents,
            offsets,
            reference,
            rest_heads,
            terms: folded,
            keypoints,
        })
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

    /// Each bone's direction in the reference pose: the y axis of its reference frame, which
    /// points from head to tail in MakeHuman rigs.
    pub fn reference_directions(&self) -> Vec<Vector3<f64>> {
        self.reference
            .iter()
            .map(|u| u.column(1).into_owned())
            .collect()
    }

    /// Poses the rig into `out` (reusing its buffers).
    ///
    /// # Errors
    /// [`FitError::PoseSize`] when the pose has the wrong number of rotations.
    pub fn forward(&self, pose: &Pose, out: &mut Posed) -> Result<(), FitError> {
        let n = self.bones();
        if pose.rotations.len() != n {
            return Err(FitError::PoseSize {
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
                    out.heads[j] = Point3::from(pose.translation);
                    out.frames[j] = d;
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

    /// The analytic keypoint Jacobian at `posed`: for each keypoint `k`, `blocks[k]` receives
    /// `(slot, d keypoint / d parameter)` pairs of 3x3 blocks, where slot 0 is the root
    /// translation and slot `1 + s` the world-frame rotation increment of the bone with
    /// `slot_of[bone] == Some(s)` (see [`retract`] for how increments apply).
    pub fn keypoint_jacobian(
        &self,
        posed: &Posed,
        slot_of: &[Option<usize>],
        blocks: &mut [Vec<(usize, Matrix3<f64>)>],
    ) {
        for b in blocks.iter_mut() {
            b.clear();
        }
        for (t, c) in self.terms.iter().zip(&posed.contributions) {
            let k = t.keypoint;
            add_block(&mut blocks[k], 0, Matrix3::identity() * t.weight);
            let mut bone = Some(t.bone);
            while let Some(i) = bone {
                if let Some(s) = slot_of[i] {
                    // Rotating bone i's frame by w about its head moves c by w x (c - b o_i).
                    let lever = c - posed.heads[i].coords * t.weight;
                    add_block(&mut blocks[k], 1 + s, -lever.cross_matrix());
                }
                bone = self.parents[i];
            }
        }
    }
}

fn add_block(blocks: &mut Vec<(usize, Matrix3<f64>)>, slot: usize, m: Matrix3<f64>) {
    match blocks.iter_mut().find(|(s, _)| *s == slot) {
        Some((_, acc)) => *acc += m,
        None => blocks.push((slot, m)),
    }
}

/// Applies world-frame increments at the linearisation point `posed` to `pose`:
/// `delta = [dt, w_0, w_1, ...]`; the root moves by `dt` and bone `active[s]` turns by
/// `exp(w_s)` about its head, i.e. `D_i <- E_p^T exp(w_s) E_p D_i`.
pub fn retract(rig: &KeypointRig, posed: &Posed, pose: &mut Pose, active: &[usize], delta: &[f64]) {
    pose.translation += Vector3::new(delta[0], delta[1], delta[2]);
    for (s, &i) in active.iter().enumerate() {
        let w = Vector3::new(delta[3 + 3 * s], delta[4 + 3 * s], delta[5 + 3 * s]);
        let turn = UnitQuaternion::from_scaled_axis(w);
        let local = match rig.parents[i] {
            Some(p) => {
                let ep = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(
                    posed.frames[p],
                ));
                ep.inverse() * turn * ep
            }
            None => turn,
        };
        // Renormalised: products drift off unit length, and the drift would compound through
        // the frames of the next linearisation.
        pose.rotations[i] = UnitQuaternion::new_normalize((local * pose.rotations[i]).into_inner());
    }
}
