//! The keypoint-only path: the COCO regressors folded into per-bone terms.
//!
//! A keypoint is a fixed linear combination of posed vertices, `kp_k = Σ_v r_kv v'_v`, and
//! linear blend skinning is linear in the bone transforms, `v'_v = Σ_j w_vj (G_j X_v + t_j)`.
//! So, exactly, `kp_k = Σ_j (G_j a_kj + b_kj t_j)` with `a_kj = Σ_v r_kv w_vj X_v` and
//! `b_kj = Σ_v r_kv w_vj`. Only a few hundred (k, j) pairs are non-zero, which makes the
//! per-frame keypoints cost a forward kinematics plus a few hundred 3x3 products.

use nalgebra::{Point3, Vector3};

use super::format::ModelData;
use super::kinematics::Skeleton;
use super::rest::TargetCoefficients;
use super::{Model, KEYPOINT_COUNT};

/// One non-zero (keypoint, bone) term of a folded regressor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeypointTerm {
    /// The keypoint.
    pub keypoint: usize,
    /// The bone.
    pub bone: usize,
    /// `a_kj`: the regressor folded through the skinning weights, in rest coordinates (metres).
    pub a: Vector3<f64>,
    /// `b_kj`: the summed weight of bone `j` in keypoint `k`.
    pub b: f64,
}

/// The regressor of keypoint `k`: its `(vertex, weight)` entries.
fn regressor(d: &ModelData, k: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
    let (lo, hi) = (
        d.keypoint_offsets[k] as usize,
        d.keypoint_offsets[k + 1] as usize,
    );
    (lo..hi).map(|n| {
        (
            d.keypoint_vertices[n] as usize,
            f64::from(d.keypoint_weights[n]),
        )
    })
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
            for (v, r) in regressor(d, k) {
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

/// The folded terms as functions of the phenotype targets: `a_kj` is linear in the rest mesh,
/// hence in the per-target coefficients, so each target's contribution to every non-zero
/// (k, j) pair is summed once (in the targets' integer frame) and reused for any phenotype.
#[derive(Debug, Clone)]
pub struct KeypointBasis {
    pairs: Vec<(usize, usize)>,
    b: Vec<f64>,
    /// `Σ_v r w T_v` per pair.
    template: Vec<Vector3<f64>>,
    /// `Σ_v r w k_tv` per target and pair, in thousandths of the MakeHuman frame.
    targets: Vec<[f64; 3]>,
}

impl KeypointBasis {
    /// Sums every target's contribution to every pair (one pass over the targets).
    pub fn build(model: &Model) -> Self {
        let d = model.data();
        let mut index = std::collections::BTreeMap::new();
        let mut per_vertex: Vec<Vec<(usize, f64)>> = vec![Vec::new(); model.vertex_count()];
        for k in 0..KEYPOINT_COUNT {
            for (v, r) in regressor(d, k) {
                for (bone, w) in model.influences(v) {
                    let next = index.len();
                    let pair = *index.entry((k, bone)).or_insert(next);
                    per_vertex[v].push((pair, r * w));
                }
            }
        }
        // Renumber pairs in (keypoint, bone) order, the order of `KeypointTerms::fold`.
        let mut order = vec![0usize; index.len()];
        let pairs: Vec<(usize, usize)> = index.keys().copied().collect();
        for (sorted, (_, &first_seen)) in index.iter().enumerate() {
            order[first_seen] = sorted;
        }
        let p = pairs.len();
        let mut b = vec![0.0; p];
        let mut template = vec![Vector3::zeros(); p];
        for (v, list) in per_vertex.iter_mut().enumerate() {
            for (pair, rw) in list.iter_mut() {
                *pair = order[*pair];
                b[*pair] += *rw;
                template[*pair] += model.template[v] * *rw;
            }
        }
        let t_count = d.target_offsets.len() - 1;
        let mut targets = vec![[0.0f64; 3]; t_count * p];
        for t in 0..t_count {
            let (lo, hi) = (
                d.target_offsets[t] as usize,
                d.target_offsets[t + 1] as usize,
            );
            let row = &mut targets[t * p..(t + 1) * p];
            for n in lo..hi {
                let list = &per_vertex[usize::from(d.target_vertices[n])];
                if list.is_empty() {
                    continue;
                }
                let k = &d.target_values[3 * n..3 * n + 3];
                for &(pair, rw) in list {
                    for a in 0..3 {
                        row[pair][a] += rw * f64::from(k[a]);
                    }
                }
            }
        }
        Self {
            pairs,
            b,
            template,
            targets,
        }
    }

    /// The folded terms for per-target coefficients.
    pub(crate) fn terms(&self, coef: &TargetCoefficients) -> KeypointTerms {
        let p = self.pairs.len();
        let mut plain = vec![[0.0f64; 3]; p];
        let mut newborn = vec![[0.0f64; 3]; p];
        for (t, (&cp, &cn)) in coef.plain.iter().zip(&coef.newborn).enumerate() {
            for (c, acc) in [(cp, &mut plain), (cn, &mut newborn)] {
                if c == 0.0 {
                    continue;
                }
                for (a, row) in acc.iter_mut().zip(&self.targets[t * p..(t + 1) * p]) {
                    a[0] += c * row[0];
                    a[1] += c * row[1];
                    a[2] += c * row[2];
                }
            }
        }
        let terms = (0..p)
            .map(|i| KeypointTerm {
                keypoint: self.pairs[i].0,
                bone: self.pairs[i].1,
                a: coef.apply(&self.template[i], &plain[i], &newborn[i]),
                b: self.b[i],
            })
            .collect();
        KeypointTerms { terms }
    }
}
