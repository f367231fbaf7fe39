//! The fit's derivatives of the rig's forward kinematics
//! ([`KeypointRig::forward`]): the world-frame keypoint Jacobian and the retraction that applies
//! world-frame increments to a pose.

use nalgebra::{Matrix3, Rotation3, UnitQuaternion, Vector3};

use crate::body::model::kinematics::{KeypointRig, Posed};
use crate::body::Pose;

impl KeypointRig {
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
