//! The rest state for a phenotype: rest mesh, skeleton and folded keypoints.

use nalgebra::{Matrix3, Vector3};

use super::convert::mesh::world_transform;
use super::keypoints::{KeypointBasis, KeypointTerms};
use super::kinematics::KeypointRig;
use super::phenotype::{Phenotype, VARIATION_COUNT};
use super::{mat3, Model, KEYPOINT_COUNT};
use crate::body::BodyError;

/// Newborn targets are the baby targets scaled per axis (world axes), plus the template times
/// `(scale - 1) / 3`, as ANNY builds them.
const NEWBORN_SCALE: [f64; 3] = [0.922, 0.922, 0.75];
const NEWBORN_NORMALISER: f64 = 3.0;

/// Coefficients per target: plain rows, newborn rows, and the template's per-axis factor.
pub(crate) struct TargetCoefficients {
    pub plain: Vec<f64>,
    pub newborn: Vec<f64>,
    pub template: Vector3<f64>,
}

impl TargetCoefficients {
    /// A rest point from its template point and its raw-frame target sums (thousandths).
    pub fn apply(&self, t: &Vector3<f64>, plain: &[f64; 3], newborn: &[f64; 3]) -> Vector3<f64> {
        let p = Vector3::from(world_transform(plain.map(|x| x / 1000.0)));
        let n = Vector3::from(world_transform(newborn.map(|x| x / 1000.0)));
        t + t.component_mul(&self.template) + p + n.component_mul(&Vector3::from(NEWBORN_SCALE))
    }
}

/// The rest state of the model for one phenotype: everything the per-frame forward needs.
#[derive(Debug, Clone)]
pub struct Rest {
    pub phenotype: Phenotype,
    /// Blendshape coefficients (one per stored row).
    pub coefficients: Vec<f64>,
    /// Rest mesh (empty for [`Model::rest_keypoints_only`]).
    pub vertices: Vec<Vector3<f64>>,
    /// Rest bone heads `h_j`.
    pub heads: Vec<Vector3<f64>>,
    /// Rest bone orientations `R_j` (special Procrustes of the covariances).
    pub orientations: Vec<Matrix3<f64>>,
    /// Reference orientations `U_j` (constant).
    pub reference: Vec<Matrix3<f64>>,
    /// The keypoint regressors folded into per-bone terms.
    pub keypoints: KeypointTerms,
    /// The rig at this shape: what the per-frame forward kinematics reads.
    pub rig: KeypointRig,
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

impl Model {
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
        let d = &self.data;
        let coef = self.target_coefficients(&c);

        // The targets are integers in the MakeHuman frame, so they are summed there (one
        // accumulator for plain rows, one for newborn rows, whose per-axis scale applies in
        // world axes) and mapped to metres once per vertex: the world transform is linear.
        let v = self.template.len();
        let mut plain = vec![[0.0f64; 3]; v];
        let mut newborn = vec![[0.0f64; 3]; v];
        for t in 0..coef.plain.len() {
            let (lo, hi) = (
                d.target_offsets[t] as usize,
                d.target_offsets[t + 1] as usize,
            );
            for (k_coef, acc) in [(coef.plain[t], &mut plain), (coef.newborn[t], &mut newborn)] {
                if k_coef == 0.0 {
                    continue;
                }
                let values = &d.target_values[3 * lo..3 * hi];
                for (&vertex, k) in d.target_vertices[lo..hi].iter().zip(values.chunks_exact(3)) {
                    let a = &mut acc[usize::from(vertex)];
                    a[0] += k_coef * f64::from(k[0]);
                    a[1] += k_coef * f64::from(k[1]);
                    a[2] += k_coef * f64::from(k[2]);
                }
            }
        }
        let vertices: Vec<Vector3<f64>> = self
            .template
            .iter()
            .zip(plain.iter().zip(&newborn))
            .map(|(t, (p, n))| coef.apply(t, p, n))
            .collect();
        let keypoints = KeypointTerms::fold(self, &vertices);
        self.assemble(phenotype, c, vertices, keypoints)
    }

    /// The rest state without the mesh, for keypoints only: the folded keypoint terms come from
    /// per-target sums precomputed at first use (about 2 MB), so this costs tens of
    /// microseconds instead of milliseconds (phenotype calibration in the fit). Equal to
    /// [`Model::rest`] up to round-off; [`Model::vertices`] refuses it.
    pub fn rest_keypoints_only(&self, phenotype: &Phenotype) -> Rest {
        let c = self.coefficients(phenotype);
        let coef = self.target_coefficients(&c);
        let basis = self
            .keypoint_basis
            .get_or_init(|| KeypointBasis::build(self));
        let keypoints = basis.terms(&coef);
        self.assemble(phenotype, c, Vec::new(), keypoints)
    }

    /// Per-target coefficients of a blendshape coefficient vector.
    fn target_coefficients(&self, c: &[f64]) -> TargetCoefficients {
        let d = &self.data;
        let targets = d.target_offsets.len() - 1;
        let mut out = TargetCoefficients {
            plain: vec![0.0; targets],
            newborn: vec![0.0; targets],
            template: Vector3::zeros(),
        };
        for (i, &ci) in c.iter().enumerate() {
            if ci == 0.0 {
                continue;
            }
            let t = usize::from(d.blendshape_target[i]);
            if d.blendshape_newborn[i] != 0 {
                out.newborn[t] += ci;
                for (acc, scale) in out.template.iter_mut().zip(NEWBORN_SCALE) {
                    *acc += ci * ((scale - 1.0) / NEWBORN_NORMALISER);
                }
            } else {
                out.plain[t] += ci;
            }
        }
        out
    }

    /// Skeleton of the rest state (heads, orientations, the rig) around a mesh and keypoints.
    fn assemble(
        &self,
        phenotype: &Phenotype,
        c: Vec<f64>,
        vertices: Vec<Vector3<f64>>,
        keypoints: KeypointTerms,
    ) -> Rest {
        let b = self.bone_count();
        let d = &self.data;
        // Heads and covariances are linear in the coefficients.
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
        let rig = KeypointRig::of_rest(
            self.bone_names.clone(),
            &self.parents,
            &heads,
            &orientations,
            &self.reference,
            &keypoints.terms,
            KEYPOINT_COUNT,
        );
        Rest {
            phenotype: *phenotype,
            coefficients: c,
            vertices,
            heads,
            orientations,
            reference: self.reference.clone(),
            keypoints,
            rig,
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
