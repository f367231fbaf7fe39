//! Closed-form starts: plane-to-image homographies (normalised DLT), Zhang's intrinsics from
//! them, and a board pose from a homography and the intrinsics.
//!
//! Zhang, "A flexible new technique for camera calibration", IEEE TPAMI 22(11), 2000: each
//! homography `H = K [r1 r2 t]` gives two linear constraints on `B = K^-T K^-1`; three or more
//! views in different orientations fix `B` and hence `K`. Distortion is left at zero here and
//! found by the nonlinear refinement.

use nalgebra::{
    Isometry3, Matrix3, Point2, SMatrix, SVector, Translation3, UnitQuaternion, Vector3,
};

use super::board::AprilGrid;
use super::problem::nearest_rotation;
use super::BoardView;
use crate::geom::Camera;

/// Similarity that centres points and scales their mean distance to sqrt(2) (Hartley).
fn normaliser(points: &[Point2<f64>]) -> Matrix3<f64> {
    let n = points.len().max(1) as f64;
    let mean = points
        .iter()
        .fold(Vector3::zeros(), |a, p| a + Vector3::new(p.x, p.y, 0.0))
        / n;
    let spread = points
        .iter()
        .map(|p| ((p.x - mean.x).powi(2) + (p.y - mean.y).powi(2)).sqrt())
        .sum::<f64>()
        / n;
    let s = std::f64::consts::SQRT_2 / spread.max(1e-12);
    Matrix3::new(s, 0.0, -s * mean.x, 0.0, s, -s * mean.y, 0.0, 0.0, 1.0)
}

pub(super) fn apply(h: &Matrix3<f64>, p: &Point2<f64>) -> Point2<f64> {
    let v = h * Vector3::new(p.x, p.y, 1.0);
    Point2::new(v.x / v.z, v.y / v.z)
}

/// The homography taking plane points `from` to image points `to`, by the normalised DLT;
/// `None` for fewer than four pairs or a degenerate (collinear) set.
pub fn homography(from: &[Point2<f64>], to: &[Point2<f64>]) -> Option<Matrix3<f64>> {
    if from.len() < 4 || from.len() != to.len() {
        return None;
    }
    let (ta, tb) = (normaliser(from), normaliser(to));
    let mut ata = SMatrix::<f64, 9, 9>::zeros();
    for (a, b) in from.iter().zip(to) {
        let (a, b) = (apply(&ta, a), apply(&tb, b));
        let rows = [
            SVector::<f64, 9>::from_column_slice(&[
                -a.x,
                -a.y,
                -1.0,
                0.0,
                0.0,
                0.0,
                b.x * a.x,
                b.x * a.y,
                b.x,
            ]),
            SVector::<f64, 9>::from_column_slice(&[
                0.0,
                0.0,
                0.0,
                -a.x,
                -a.y,
                -1.0,
                b.y * a.x,
                b.y * a.y,
                b.y,
            ]),
        ];
        for r in rows {
            ata += r * r.transpose();
        }
    }
    let eig = ata.symmetric_eigen();
    let (min, _) = eig
        .eigenvalues
        .iter()
        .enumerate()
        .fold(
            (0, f64::INFINITY),
            |best, (i, &v)| {
                if v < best.1 {
                    (i, v)
                } else {
                    best
                }
            },
        );
    let h = eig.eigenvectors.column(min);
    let hn = Matrix3::new(h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8]);
    let full = tb.try_inverse()? * hn * ta;
    let scale = full[(2, 2)];
    (scale.abs() > 1e-12 && full.iter().all(|v| v.is_finite())).then(|| full / scale)
}

/// Zhang's `v_ij` row of the constraint on `b = (B11, B12, B22, B13, B23, B33)`.
fn v(h: &Matrix3<f64>, i: usize, j: usize) -> SVector<f64, 6> {
    let (a, b) = (h.column(i), h.column(j));
    SVector::<f64, 6>::from_column_slice(&[
        a[0] * b[0],
        a[0] * b[1] + a[1] * b[0],
        a[1] * b[1],
        a[2] * b[0] + a[0] * b[2],
        a[2] * b[1] + a[1] * b[2],
        a[2] * b[2],
    ])
}

/// The intrinsic matrix (zero skew) from three or more homographies; `None` when the views do
/// not determine it (too few, or too alike in orientation, such as all fronto-parallel).
pub fn zhang_intrinsics(homographies: &[Matrix3<f64>]) -> Option<Matrix3<f64>> {
    if homographies.len() < 3 {
        return None;
    }
    let mut vtv = SMatrix::<f64, 6, 6>::zeros();
    for h in homographies {
        let h = h / h.column(0).norm().max(1e-12);
        let c1 = v(&h, 0, 1);
        let c2 = v(&h, 0, 0) - v(&h, 1, 1);
        vtv += c1 * c1.transpose() + c2 * c2.transpose();
    }
    let eig = vtv.symmetric_eigen();
    let mut order: Vec<usize> = (0..6).collect();
    order.sort_by(|&a, &b| eig.eigenvalues[a].total_cmp(&eig.eigenvalues[b]));
    // A second null direction means the views leave B undetermined.
    if eig.eigenvalues[order[1]] <= 1e-9 * eig.eigenvalues[order[5]].abs() {
        return None;
    }
    let mut b = eig.eigenvectors.column(order[0]).into_owned();
    if b[0] < 0.0 {
        b = -b;
    }
    let [b11, b12, b22, b13, b23, b33] = [b[0], b[1], b[2], b[3], b[4], b[5]];
    let den = b11 * b22 - b12 * b12;
    if den <= 0.0 || b11 <= 0.0 {
        return None;
    }
    let v0 = (b12 * b13 - b11 * b23) / den;
    let lambda = b33 - (b13 * b13 + v0 * (b12 * b13 - b11 * b23)) / b11;
    let alpha = (lambda / b11).sqrt();
    let beta = (lambda * b11 / den).sqrt();
    let u0 = -b13 * alpha * alpha / lambda;
    let k = Matrix3::new(alpha, 0.0, u0, 0.0, beta, v0, 0.0, 0.0, 1.0);
    k.iter().all(|x| x.is_finite()).then_some(k)
}

/// The focal lengths from two or more homographies with the principal point held at
/// `centre` (OpenCV's start): the two orthogonality constraints of each view, linear in
/// `1/fx^2` and `1/fy^2`, solved by least squares. The fallback where Zhang's full closed form
/// is thrown off (views at the frame's corners, where the lens bends the homographies most);
/// `None` when the views fix no positive focal lengths.
pub fn focal_at_centre(homographies: &[Matrix3<f64>], centre: Point2<f64>) -> Option<Matrix3<f64>> {
    let shift = Matrix3::new(1.0, 0.0, -centre.x, 0.0, 1.0, -centre.y, 0.0, 0.0, 1.0);
    let mut ata = nalgebra::Matrix2::<f64>::zeros();
    let mut atb = nalgebra::Vector2::<f64>::zeros();
    for h in homographies {
        let h = shift * h;
        let h = h / h.column(0).norm().max(1e-12);
        let (a, b) = (h.column(0), h.column(1));
        let rows = [
            (nalgebra::Vector2::new(a.x * b.x, a.y * b.y), -a.z * b.z),
            (
                nalgebra::Vector2::new(a.x * a.x - b.x * b.x, a.y * a.y - b.y * b.y),
                -(a.z * a.z - b.z * b.z),
            ),
        ];
        for (row, rhs) in rows {
            ata += row * row.transpose();
            atb += row * rhs;
        }
    }
    let x = ata.try_inverse()? * atb;
    if x.x <= 0.0 || x.y <= 0.0 {
        return None;
    }
    let k = Matrix3::new(
        1.0 / x.x.sqrt(),
        0.0,
        centre.x,
        0.0,
        1.0 / x.y.sqrt(),
        centre.y,
        0.0,
        0.0,
        1.0,
    );
    k.iter().all(|v| v.is_finite()).then_some(k)
}

/// The board-to-camera pose of `view` seen by `camera`: the homography of its corners
/// undistorted by the camera's lens, in normalised coordinates. `None` when the corners fix
/// no homography.
pub fn view_pose(board: &AprilGrid, camera: &Camera, view: &BoardView) -> Option<Isometry3<f64>> {
    let (from, to): (Vec<_>, Vec<_>) = view
        .corners
        .iter()
        .filter_map(|c| {
            let n = camera.normalize(&c.pixel);
            board
                .corner(c.id)
                .map(|p| (Point2::new(p.x, p.y), Point2::new(n.x, n.y)))
        })
        .unzip();
    homography(&from, &to).and_then(|h| pose_from_homography(&h, &Matrix3::identity()))
}

/// The board-to-camera pose from a homography of board-plane metres to pixels and the
/// intrinsic matrix `k`; the board in front of the camera.
pub fn pose_from_homography(h: &Matrix3<f64>, k: &Matrix3<f64>) -> Option<Isometry3<f64>> {
    let m = k.try_inverse()? * h;
    let scale = 1.0 / m.column(0).norm().max(1e-12);
    let sign = if m[(2, 2)] * scale < 0.0 { -1.0 } else { 1.0 };
    let (r1, r2, t) = (
        m.column(0) * scale * sign,
        m.column(1) * scale * sign,
        m.column(2) * scale * sign,
    );
    let r = Matrix3::from_columns(&[r1, r2, r1.cross(&r2)]);
    let rot = nearest_rotation(&r);
    Some(Isometry3::from_parts(
        Translation3::from(t.into_owned()),
        UnitQuaternion::from_rotation_matrix(&rot),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn homography_maps_its_points() {
        let h0 = Matrix3::new(300.0, 20.0, 140.0, -10.0, 280.0, 150.0, 0.1, -0.2, 1.0);
        let from: Vec<_> = (0..12)
            .map(|i| Point2::new(f64::from(i % 4) * 0.1, f64::from(i / 4) * 0.1))
            .collect();
        let to: Vec<_> = from.iter().map(|p| apply(&h0, p)).collect();
        let h = homography(&from, &to).unwrap();
        assert!((h - h0).amax() < 1e-6, "{h}");
        // Negative control: collinear points determine nothing.
        let line: Vec<_> = (0..6).map(|i| Point2::new(f64::from(i), 0.0)).collect();
        let image: Vec<_> = line.iter().map(|p| apply(&h0, p)).collect();
        assert!(homography(&line, &image).is_none_or(|h| (h - h0).amax() > 1e-3));
    }
}
