//! The keypoint-only path: the COCO regressors folded into per-bone terms.
//!
//! A keypoint is a fixed linear combination of posed vertices, `kp_k = Σ_v r_kv v'_v`, and
//! linear blend skinning is linear in the bone transforms, `v'_v = Σ_j w_vj (G_j X_v + t_j)`.
//! So, exactly, `kp_k = Σ_j (G_j a_kj + b_kj t_j)` with `a_kj = Σ_v r_kv w_vj X_v` and
//! `b_kj = Σ_v r_kv w_vj`. Only a few hundred (k, j) pairs are non-zero, which makes the
//! per-frame keypoints cost a forward kinematics plus a few hundred 3x3 products.

use nalgebra::{Point3, Vector3};

use super::kinematics::Skeleton;
use super::model::{Model, KEYPOINT_COUNT};

/// One non-zero (keypoint, bone) term.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeypointTerm {
    pub keypoint: usize,
    pub bone: usize,
    /// `a_kj`: regressor- and skinning-weighted rest position.
    pub a: Vector3<f64>,
    /// `b_kj`: regressor- and skinning-weighted total weight.
    pub b: f64,
}

/// The folded terms, sorted by keypoint then bone.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KeypointTerms {
    pub terms: Vec<KeypointTerm>,
}

impl KeypointTerms {
    /// Folds the model's regressors over a rest mesh.
    pub fn fold(model: &Model, rest_vertices: &[Vector3<f64>]) -> Self {
        let d = model.data();
        let b = model.bone_count();
        let mut terms = Vec::new();
        let mut a = vec![Vector3::<f64>::zeros(); b];
        let mut w = vec![0.0f64; b];
        let mut used = vec![false; b];
        for k in 0..KEYPOINT_COUNT {
            let (lo, hi) = (
                d.keypoint_offsets[k] as usize,
                d.keypoint_offsets[k + 1] as usize,
            );
            for n in lo..hi {
                let v = d.keypoint_vertices[n] as usize;
                let r = f64::from(d.keypoint_weights[n]);
                for (bone, weight) in model.influences(v) {
                    a[bone] += rest_vertices[v] * (r * weight);
                    w[bone] += r * weight;
                    used[bone] = true;
                }
            }
            for bone in 0..b {
                if used[bone] {
                    terms.push(KeypointTerm {
                        keypoint: k,
                        bone,
                        a: a[bone],
                        b: w[bone],
                    });
                }
                a[bone] = Vector3::zeros();
                w[bone] = 0.0;
                used[bone] = false;
            }
        }
        Self { terms }
    }

    /// `kp_k = Σ_j (G_j a_kj + b_kj t_j)` for posed bones.
    pub fn evaluate(&self, skeleton: &Skeleton) -> [Point3<f64>; KEYPOINT_COUNT] {
        let mut out = [Point3::origin(); KEYPOINT_COUNT];
        for t in &self.terms {
            let s = &skeleton.skinning[t.bone];
            out[t.keypoint].coords += s.rotation * t.a + s.translation * t.b;
        }
        out
    }
}
