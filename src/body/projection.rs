//! Calibrated pinhole cameras with Brown-Conrady lens distortion (k1, k2, p1, p2, k3), as
//! OpenCV defines it: projection with its Jacobian, and iterative undistortion.
//!
//! This is the triangulation and fit's camera: the same model as the renderer's
//! [`crate::geom::camera::Camera`] (which converts into it with `try_from`), plus the
//! projection Jacobian and validated construction the solvers need.

use nalgebra::{Matrix2, Matrix2x3, Point2, Point3, Rotation3, Vector2, Vector3};

/// Why a camera could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CameraError {
    /// A field that must be finite (and, for focal lengths and sizes, positive) is not.
    #[error("camera field `{field}` = {value} must be {expected}")]
    BadField {
        /// The field name.
        field: &'static str,
        /// The value given.
        value: f64,
        /// What was expected.
        expected: &'static str,
    },
}

/// Lens distortion coefficients in OpenCV order.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
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

    /// Inverts [`Distortion::apply`] by Newton's method (at most 20 steps, to 1e-14).
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

/// A calibrated camera: world-to-camera extrinsics, pinhole intrinsics and distortion.
///
/// Camera axes follow OpenCV: x right, y down, z forward; a world point `X` is at
/// `rotation * X + translation` in camera coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Camera {
    fx: f64,
    fy: f64,
    cx: f64,
    cy: f64,
    width: u32,
    height: u32,
    distortion: Distortion,
    rotation: Rotation3<f64>,
    translation: Vector3<f64>,
}

impl Camera {
    /// A camera from its intrinsics, image size, distortion and world-to-camera pose.
    ///
    /// # Errors
    /// [`CameraError::BadField`] naming the first non-finite or non-positive field.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        [fx, fy, cx, cy]: [f64; 4],
        (width, height): (u32, u32),
        distortion: Distortion,
        rotation: Rotation3<f64>,
        translation: Vector3<f64>,
    ) -> Result<Self, CameraError> {
        for (field, value) in [("fx", fx), ("fy", fy)] {
            if !(value.is_finite() && value > 0.0) {
                return Err(CameraError::BadField {
                    field,
                    value,
                    expected: "finite and positive",
                });
            }
        }
        for (field, value) in [("width", f64::from(width)), ("height", f64::from(height))] {
            if value < 1.0 {
                return Err(CameraError::BadField {
                    field,
                    value,
                    expected: "at least 1 pixel",
                });
            }
        }
        let Distortion { k1, k2, p1, p2, k3 } = distortion;
        let finite = [
            ("cx", cx),
            ("cy", cy),
            ("k1", k1),
            ("k2", k2),
            ("p1", p1),
            ("p2", p2),
            ("k3", k3),
            ("translation.x", translation.x),
            ("translation.y", translation.y),
            ("translation.z", translation.z),
        ];
        for (field, value) in finite {
            if !value.is_finite() {
                return Err(CameraError::BadField {
                    field,
                    value,
                    expected: "finite",
                });
            }
        }
        if rotation.matrix().iter().any(|v| !v.is_finite()) {
            return Err(CameraError::BadField {
                field: "rotation",
                value: f64::NAN,
                expected: "finite",
            });
        }
        Ok(Self {
            fx,
            fy,
            cx,
            cy,
            width,
            height,
            distortion,
            rotation,
            translation,
        })
    }

    /// A camera at `eye` looking at `target` with `up` pointing up in the image, a horizontal
    /// field of view of `fov_deg` degrees and the principal point at the image centre.
    ///
    /// # Errors
    /// [`CameraError::BadField`] for a degenerate view direction or field of view.
    pub fn look_at(
        eye: Point3<f64>,
        target: Point3<f64>,
        up: Vector3<f64>,
        fov_deg: f64,
        (width, height): (u32, u32),
        distortion: Distortion,
    ) -> Result<Self, CameraError> {
        let bad = |field, value| CameraError::BadField {
            field,
            value,
            expected: "a valid view",
        };
        let z = (target - eye)
            .try_normalize(1e-12)
            .ok_or(bad("target", 0.0))?;
        let x = z.cross(&up).try_normalize(1e-12).ok_or(bad("up", 0.0))?;
        let y = z.cross(&x);
        if !(fov_deg > 0.0 && fov_deg < 180.0) {
            return Err(bad("fov_deg", fov_deg));
        }
        let rotation = Rotation3::from_matrix_unchecked(nalgebra::Matrix3::from_rows(&[
            x.transpose(),
            y.transpose(),
            z.transpose(),
        ]));
        let f = f64::from(width) / 2.0 / (fov_deg.to_radians() / 2.0).tan();
        let translation = -(rotation * eye.coords);
        let c = [f64::from(width) / 2.0, f64::from(height) / 2.0];
        Self::new(
            [f, f, c[0], c[1]],
            (width, height),
            distortion,
            rotation,
            translation,
        )
    }

    /// Image size in pixels.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// World-to-camera rotation.
    pub fn rotation(&self) -> &Rotation3<f64> {
        &self.rotation
    }

    /// World-to-camera translation.
    pub fn translation(&self) -> &Vector3<f64> {
        &self.translation
    }

    /// The lens distortion.
    pub fn distortion(&self) -> &Distortion {
        &self.distortion
    }

    /// Focal lengths in pixels.
    pub fn focal(&self) -> (f64, f64) {
        (self.fx, self.fy)
    }

    /// The point in camera coordinates.
    pub fn to_camera(&self, p: &Point3<f64>) -> Vector3<f64> {
        self.rotation * p.coords + self.translation
    }

    /// The pixel of a world point, or `None` when it is not in front of the camera.
    pub fn project(&self, p: &Point3<f64>) -> Option<Point2<f64>> {
        self.project_with_jacobian(p).map(|(px, _)| px)
    }

    /// The pixel of a world point and d(pixel)/d(world point); `None` behind the camera.
    pub fn project_with_jacobian(&self, p: &Point3<f64>) -> Option<(Point2<f64>, Matrix2x3<f64>)> {
        let c = self.to_camera(p);
        if c.z <= 1e-9 {
            return None;
        }
        let iz = 1.0 / c.z;
        let n = Vector2::new(c.x * iz, c.y * iz);
        let (d, jd) = self.distortion.apply_with_jacobian(n);
        let dn = Matrix2x3::new(iz, 0.0, -n.x * iz, 0.0, iz, -n.y * iz);
        let scale = Matrix2::new(self.fx, 0.0, 0.0, self.fy);
        let jac = scale * jd * dn * self.rotation.matrix();
        Some((
            Point2::new(self.fx * d.x + self.cx, self.fy * d.y + self.cy),
            jac,
        ))
    }

    /// Undistorted normalised coordinates (x/z, y/z in camera axes) of a pixel.
    pub fn normalize(&self, pixel: &Point2<f64>) -> Vector2<f64> {
        let d = Vector2::new((pixel.x - self.cx) / self.fx, (pixel.y - self.cy) / self.fy);
        self.distortion.remove(d)
    }

    /// Whether a pixel lies in the image.
    pub fn in_image(&self, px: &Point2<f64>) -> bool {
        px.x >= 0.0 && px.y >= 0.0 && px.x < f64::from(self.width) && px.y < f64::from(self.height)
    }
}

impl TryFrom<&crate::geom::camera::Camera> for Camera {
    type Error = CameraError;

    /// The same camera, for triangulation and fitting.
    fn try_from(c: &crate::geom::camera::Camera) -> Result<Self, CameraError> {
        let d = c.distortion;
        let rotation = Rotation3::from_matrix_unchecked(c.rotation);
        let orthonormal =
            (c.rotation * c.rotation.transpose() - nalgebra::Matrix3::identity()).amax() < 1e-6
                && c.rotation.determinant() > 0.0;
        if !orthonormal {
            return Err(CameraError::BadField {
                field: "rotation",
                value: c.rotation.determinant(),
                expected: "a rotation matrix (orthonormal, determinant +1)",
            });
        }
        Self::new(
            [c.fx, c.fy, c.cx, c.cy],
            (c.width, c.height),
            Distortion {
                k1: d.k1,
                k2: d.k2,
                p1: d.p1,
                p2: d.p2,
                k3: d.k3,
            },
            rotation,
            c.translation,
        )
    }
}

/// Four cameras placed like the demo rig around a subject standing at the origin (Z up, facing
/// -Y): three body cameras at 288x288, 2.6 m away and 120 degrees apart at chest height, and
/// one face camera at 432x432, 1.1 m in front of the head; all with mild barrel distortion.
pub fn demo_rig() -> [Camera; 4] {
    let lens = Distortion {
        k1: -0.08,
        k2: 0.01,
        p1: 0.0005,
        p2: -0.0003,
        k3: 0.0,
    };
    let body = |deg: f64| {
        let a = deg.to_radians();
        let eye = Point3::new(2.6 * a.sin(), -2.6 * a.cos(), 0.4);
        Camera::look_at(
            eye,
            Point3::new(0.0, 0.0, 0.0),
            Vector3::z(),
            62.0,
            (288, 288),
            lens,
        )
    };
    let face = Camera::look_at(
        Point3::new(0.15, -1.1, 0.75),
        Point3::new(0.0, 0.0, 0.55),
        Vector3::z(),
        55.0,
        (432, 432),
        lens,
    );
    // The placements above are valid by construction.
    [body(0.0), body(120.0), body(-120.0), face].map(|c| c.unwrap_or_else(|_| unreachable!()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undistortion_inverts_distortion() {
        let d = Distortion {
            k1: -0.2,
            k2: 0.05,
            p1: 0.001,
            p2: -0.002,
            k3: 0.01,
        };
        for &(x, y) in &[(0.0, 0.0), (0.3, -0.2), (-0.5, 0.4), (0.6, 0.6)] {
            let p = Vector2::new(x, y);
            assert!((d.remove(d.apply(p)) - p).norm() < 1e-12, "{p:?}");
        }
    }

    #[test]
    fn projection_jacobian_matches_finite_differences() {
        let cam = demo_rig()[1];
        let p = Point3::new(0.1, 0.2, 0.3);
        let (_, jac) = cam.project_with_jacobian(&p).unwrap();
        for k in 0..3 {
            let h = 1e-6;
            let mut a = p;
            let mut b = p;
            a[k] += h;
            b[k] -= h;
            let fd = (cam.project(&a).unwrap() - cam.project(&b).unwrap()) / (2.0 * h);
            assert!(
                (fd - jac.column(k)).norm() < 1e-4,
                "column {k}: {fd} vs {}",
                jac.column(k)
            );
        }
    }

    #[test]
    fn pixels_back_project_onto_their_ray() {
        for cam in demo_rig() {
            let p = Point3::new(0.05, -0.1, 0.5);
            let px = cam.project(&p).unwrap();
            assert!(cam.in_image(&px), "{px:?}");
            let n = cam.normalize(&px);
            let c = cam.to_camera(&p);
            assert!((n - Vector2::new(c.x / c.z, c.y / c.z)).norm() < 1e-12);
        }
    }

    #[test]
    fn the_renderer_camera_converts_to_the_same_projection() {
        use crate::geom::camera as cm;
        let ours = demo_rig()[2];
        let d = ours.distortion();
        let (fx, fy) = ours.focal();
        let theirs = cm::Camera {
            width: 288,
            height: 288,
            fx,
            fy,
            cx: ours.cx,
            cy: ours.cy,
            distortion: cm::Distortion {
                k1: d.k1,
                k2: d.k2,
                p1: d.p1,
                p2: d.p2,
                k3: d.k3,
            },
            rotation: *ours.rotation().matrix(),
            translation: *ours.translation(),
        };
        let back = Camera::try_from(&theirs).unwrap();
        let p = Point3::new(0.2, -0.1, 0.4);
        let (a, b) = (back.project(&p).unwrap(), theirs.project(&p).unwrap());
        assert!((a - b).norm() < 1e-9, "{a} vs {b}");
        // A non-rotation is refused, naming the field.
        let mut bad = theirs;
        bad.rotation *= 2.0;
        assert!(Camera::try_from(&bad)
            .unwrap_err()
            .to_string()
            .contains("rotation"));
    }

    #[test]
    fn bad_intrinsics_are_named() {
        let err = Camera::new(
            [0.0, 1.0, 0.0, 0.0],
            (10, 10),
            Distortion::default(),
            Rotation3::identity(),
            Vector3::zeros(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("fx"), "{err}");
    }
}
