//! The fixed structure of the unrolled fit, taken from a rig once: the bones the keypoints
//! depend on in level order, the keypoint terms, the Jacobian's gather pattern and the limit
//! clamps. Everything data-dependent is a tensor; everything here is a constant of the graph.

use std::ops::Range;

use nalgebra::{Point3, Vector3};

use super::limits::{cone_chain, ConeClamp};
use super::UnrolledError;
use crate::body::limits::JointLimit;
use crate::body::{KeypointRig, Pose, Posed};

/// The rig's structure as the graph uses it.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Rig bones in the graph, level by level from the root (parents before children).
    pub order: Vec<usize>,
    /// Position (in `order`) of each bone's parent.
    pub parent_pos: Vec<Option<usize>>,
    /// Positions of each level, root level first.
    pub levels: Vec<Range<usize>>,
    /// Each bone's offset from its parent's head in the parent's posed frame.
    pub offsets: Vec<Vector3<f64>>,
    /// Per keypoint term: the position of its bone, its local vector, weight and keypoint.
    pub term_pos: Vec<usize>,
    pub term_local: Vec<Vector3<f64>>,
    pub term_weight: Vec<f64>,
    pub term_keypoint: Vec<usize>,
    /// Keypoints.
    pub keypoints: usize,
    /// Position of each fitted (active) bone.
    pub active_pos: Vec<usize>,
    /// The limit clamps, stage by stage, with the position of their bone.
    pub clamps: Vec<Vec<(usize, ConeClamp)>>,
}

impl Layout {
    /// The layout of `rig` fitting the bones `active` under `limits`.
    ///
    /// # Errors
    /// [`UnrolledError::RootNotReference`] or [`UnrolledError::ActiveBoneOutside`].
    pub fn new(
        rig: &KeypointRig,
        limits: &[Option<JointLimit>],
        active: &[usize],
    ) -> Result<Self, UnrolledError> {
        let n = rig.bones();
        if !rig.root_is_reference() {
            return Err(UnrolledError::RootNotReference);
        }
        if let Some(&bad) = active.iter().find(|&&b| b >= n) {
            return Err(UnrolledError::ActiveBoneOutside {
                bone: bad,
                bones: n,
            });
        }
        // The bones a keypoint or an active bone depends on, with their ancestors.
        let mut keep = vec![false; n];
        let mut mark = |mut b: Option<usize>| {
            while let Some(i) = b {
                if keep[i] {
                    break;
                }
                keep[i] = true;
                b = rig.parents()[i];
            }
        };
        for t in &rig.terms {
            mark(Some(t.bone));
        }
        for &a in active {
            mark(Some(a));
        }
        let mut depth = vec![0usize; n];
        for b in 1..n {
            depth[b] = rig.parents()[b].map_or(0, |p| depth[p] + 1);
        }
        let mut order: Vec<usize> = (0..n).filter(|&b| keep[b]).collect();
        order.sort_by_key(|&b| (depth[b], b));
        let mut pos = vec![usize::MAX; n];
        for (p, &b) in order.iter().enumerate() {
            pos[b] = p;
        }
        let max_depth = order.last().map_or(0, |&b| depth[b]);
        let levels = (0..=max_depth)
            .map(|d| {
                let lo = order.iter().position(|&b| depth[b] == d).unwrap_or(0);
                let hi = order
                    .iter()
                    .rposition(|&b| depth[b] == d)
                    .map_or(lo, |h| h + 1);
                lo..hi
            })
            .collect();
        // Offsets from the reference pose, where every frame is the identity.
        let mut posed = Posed::default();
        rig.forward(&Pose::identity(n), &mut posed)?;
        let parent_pos: Vec<Option<usize>> = order
            .iter()
            .map(|&b| rig.parents()[b].map(|p| pos[p]))
            .collect();
        let offsets = order
            .iter()
            .map(|&b| match rig.parents()[b] {
                Some(p) => posed.heads[b] - posed.heads[p],
                None => Vector3::zeros(),
            })
            .collect();
        let active_pos: Vec<usize> = active.iter().map(|&a| pos[a]).collect();
        let clamps = cone_chain(limits, active)
            .into_iter()
            .map(|stage| stage.into_iter().map(|c| (pos[c.bone], c)).collect())
            .collect();
        Ok(Self {
            order,
            parent_pos,
            levels,
            offsets,
            term_pos: rig.terms.iter().map(|t| pos[t.bone]).collect(),
            term_local: rig.terms.iter().map(|t| t.local).collect(),
            term_weight: rig.terms.iter().map(|t| t.weight).collect(),
            term_keypoint: rig.terms.iter().map(|t| t.keypoint).collect(),
            keypoints: rig.keypoints(),
            active_pos,
            clamps,
        })
    }

    /// Bones in the graph.
    pub fn bones(&self) -> usize {
        self.order.len()
    }

    /// Fitted bones.
    pub fn slots(&self) -> usize {
        self.active_pos.len()
    }

    /// Parameters of one step: the root translation and three per fitted bone.
    pub fn params(&self) -> usize {
        3 + 3 * self.slots()
    }

    /// Whether the bone at `ancestor` (a position) is `pos` or one of its ancestors.
    pub fn drives(&self, ancestor: usize, mut pos: usize) -> bool {
        loop {
            if pos == ancestor {
                return true;
            }
            match self.parent_pos[pos] {
                Some(p) => pos = p,
                None => return false,
            }
        }
    }

    /// The graph's rotation input for `pose`: one row-major 3x3 per bone in `order`.
    pub fn rotations(&self, pose: &Pose) -> Vec<f32> {
        self.order
            .iter()
            .flat_map(|&b| {
                let m = pose.rotations[b].to_rotation_matrix().into_inner();
                let mut v = [0f32; 9];
                for r in 0..3 {
                    for c in 0..3 {
                        v[3 * r + c] = m[(r, c)] as f32;
                    }
                }
                v
            })
            .collect()
    }

    /// `pose` with the bones of the graph set from its rotation output (each to the nearest
    /// rotation) and the translation from its output.
    pub fn apply(&self, pose: &Pose, rotations: &[f32], translation: &[f32]) -> Pose {
        let mut out = pose.clone();
        for (p, &b) in self.order.iter().enumerate() {
            let m = nalgebra::Matrix3::from_fn(|r, c| f64::from(rotations[9 * p + 3 * r + c]));
            // A bounded number of iterations: a matrix with non-finite entries (a diverged
            // quantised run) never converges; it becomes the identity and shows in the error.
            let rot = if m.iter().all(|x| x.is_finite()) {
                nalgebra::Rotation3::from_matrix_eps(&m, 1e-12, 64, nalgebra::Rotation3::identity())
            } else {
                nalgebra::Rotation3::identity()
            };
            out.rotations[b] = nalgebra::UnitQuaternion::from_rotation_matrix(&rot);
        }
        out.translation = Vector3::new(
            f64::from(translation[0]),
            f64::from(translation[1]),
            f64::from(translation[2]),
        );
        out
    }

    /// Targets and confidences as the graph takes them; a keypoint without a target gets
    /// confidence zero.
    pub fn targets(&self, targets: &[Option<(Point3<f64>, f64)>]) -> (Vec<f32>, Vec<f32>) {
        let mut y = vec![0f32; 3 * self.keypoints];
        let mut w = vec![0f32; self.keypoints];
        for (k, t) in targets.iter().enumerate().take(self.keypoints) {
            if let Some((p, c)) = t {
                y[3 * k..3 * k + 3].copy_from_slice(&[p.x as f32, p.y as f32, p.z as f32]);
                w[k] = *c as f32;
            }
        }
        (y, w)
    }

    /// Where each entry of `J` (`3K x (3 + 3A)`, row-major) comes from in `concat(v, [1])`, and
    /// its coefficient: the root translation's columns are `sum_t w_t` of the keypoint on the
    /// diagonal; bone `s`'s are `-[v_ks]x`.
    pub fn jacobian_pattern(&self) -> (Vec<i64>, Vec<f32>) {
        let (k, a, n) = (self.keypoints, self.slots(), self.params());
        let one = (3 * k * a) as i64;
        let mut wsum = vec![0f32; k];
        for (t, &kp) in self.term_keypoint.iter().enumerate() {
            wsum[kp] += self.term_weight[t] as f32;
        }
        let mut idx = vec![one; 3 * k * n];
        let mut coef = vec![0f32; 3 * k * n];
        for (kp, &weights) in wsum.iter().enumerate() {
            for r in 0..3 {
                let row = 3 * kp + r;
                idx[row * n + r] = one;
                coef[row * n + r] = weights;
                for s in 0..a {
                    let base = (3 * (kp * a + s)) as i64;
                    for c in 0..3 {
                        // -[v]x = [[0, v2, -v1], [-v2, 0, v0], [v1, -v0, 0]].
                        let (comp, sign) = match (r, c) {
                            (0, 1) => (2, 1.0),
                            (0, 2) => (1, -1.0),
                            (1, 0) => (2, -1.0),
                            (1, 2) => (0, 1.0),
                            (2, 0) => (1, 1.0),
                            (2, 1) => (0, -1.0),
                            _ => continue,
                        };
                        let col = 3 + 3 * s + c;
                        idx[row * n + col] = base + comp;
                        coef[row * n + col] = sign;
                    }
                }
            }
        }
        (idx, coef)
    }
}
