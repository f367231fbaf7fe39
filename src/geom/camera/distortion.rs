//! Brown-Conrady lens distortion as OpenCV defines it, with its Jacobian and its inverse.

use nalgebra::{Matrix2, Matrix2x5, Vector2};
use serde::{Deserialize, Serialize};

/// Radial (`k1, k2, k3`) and tangential (`p1, p2`) distortion, OpenCV order `k1 k2 p1 p2 k3`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Distortion {
    /// Radial r^2 term.
    pub k1: f64,
    /// Radial r^4 term.
    pub k2: f64,
    /// Tangential term 1.
    pub p1: f64,
    /// Tangential term 2.
    pub p2: f64,
    /// Radial r^6 term.
    pub k3: f64,
}

impl Distortion {
    /// Distorts normalised image coordinates.
    pub fn apply(&self, x: Vector2<f64>) -> Vector2<f64> {
        self.apply_with_jacobian(x).0
    }

    /// Distorts normalised coordinates and returns d(distorted)/d(undistorted).
    pub fn apply_with_jacobian(&self, p: Vector2<f64>) -> (Vector2<f64>, Matrix2<f64>) {
        let Self { k1, k2, p1, p2, k3 } = *self;
        let (x, y) = (p.x, p.y);
        let r2 = x * x + y * y;
        let radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3));
        let dradial = k1 + r2 * (2.0 * k2 + 3.0 * k3 * r2);
        let xd = x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x);
        let yd = y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y;
        let cross = 2.0 * x * y * dradial + 2.0 * p1 * x + 2.0 * p2 * y;
        let jac = Matrix2::new(
            radial + 2.0 * x * x * dradial + 2.0 * p1 * y + 6.0 * p2 * x,
            cross,
            cross,
            radial + 2.0 * y * y * dradial + 6.0 * p1 * y + 2.0 * p2 * x,
        );
        (Vector2::new(xd, yd), jac)
    }

    /// d(distorted)/d(coefficients) at normalised coordinates `p`, columns in OpenCV order
    /// `k1 k2 p1 p2 k3`: the distortion is linear in its coefficients, which intrinsic
    /// calibration solves for.
    pub fn coefficient_jacobian(&self, p: Vector2<f64>) -> Matrix2x5<f64> {
        let (x, y) = (p.x, p.y);
        let r2 = x * x + y * y;
        let (r4, r6) = (r2 * r2, r2 * r2 * r2);
        Matrix2x5::new(
            x * r2,
            x * r4,
            2.0 * x * y,
            r2 + 2.0 * x * x,
            x * r6,
            y * r2,
            y * r4,
            r2 + 2.0 * y * y,
            2.0 * x * y,
            y * r6,
        )
    }

    /// Inverts [`Distortion::apply`] by Newton's method (at most 20 steps, to 1e-14), so
    /// triangulation and undistortion agree with projection to well below a micro-pixel.
    pub fn remove(&self, distorted: Vector2<f64>) -> Vector2<f64> {
        let mut x = distorted;
        for _ in 0..20 {
            let (d, jac) = self.apply_with_jacobian(x);
            let r = d - distorted;
            if r.norm() < 1e-14 {
                break;
            }
            match jac.try_inverse() {
                Some(inv) => x -= inv * r,
                None => break,
            }
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lens() -> Distortion {
        Distortion {
            k1: -0.2,
            k2: 0.05,
            p1: 0.001,
            p2: -0.002,
            k3: 0.01,
        }
    }

    #[test]
    fn distortion_round_trips() {
        let d = lens();
        let xd = d.apply(Vector2::new(0.3, -0.2));
        assert!(
            (xd.x - 0.3).abs() > 1e-3,
            "distortion must change the point"
        );
        let x = d.remove(xd);
        assert!((x.x - 0.3).abs() < 1e-12 && (x.y + 0.2).abs() < 1e-12);
    }

    #[test]
    fn undistortion_inverts_distortion() {
        let d = lens();
        for &(x, y) in &[(0.0, 0.0), (0.3, -0.2), (-0.5, 0.4), (0.6, 0.6)] {
            let p = Vector2::new(x, y);
            assert!((d.remove(d.apply(p)) - p).norm() < 1e-12, "{p:?}");
        }
    }
}
