//! A calibrated pinhole camera with OpenCV-style lens distortion, shared by the calibration
//! files, the synthetic cameras, rendering, triangulation and the fit.
//!
//! World to camera: `x_c = R x_w + t` (camera looks along +z, image x right, y down).
//! Projection: `(x, y) = (x_c / z_c, y_c / z_c)`, distorted with radial `k1, k2, k3` and
//! tangential `p1, p2` terms, then `u = fx x_d + cx`, `v = fy y_d + cy` (pixels). The fit and
//! triangulation need the projection's Jacobian, so it is computed beside the projection.

mod distortion;

use nalgebra::{Matrix2, Matrix2x3, Matrix3, Point2, Point3, Rotation3, SMatrix, Vector2, Vector3};
use serde::{Deserialize, Serialize};

pub use distortion::Distortion;

/// Why a camera is refused.
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

/// A calibrated camera: intrinsics, distortion, world-to-camera extrinsics and image size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Camera {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// Horizontal focal length in pixels.
    pub fx: f64,
    /// Vertical focal length in pixels.
    pub fy: f64,
    /// Principal point, continuous pixel coordinates.
    pub cx: f64,
    /// Principal point, continuous pixel coordinates.
    pub cy: f64,
    /// The lens distortion.
    #[serde(default)]
    pub distortion: Distortion,
    /// World-to-camera rotation `R` (row-major in JSON).
    #[serde(with = "row_major")]
    pub rotation: Matrix3<f64>,
    /// World-to-camera translation `t`.
    pub translation: Vector3<f64>,
}

mod row_major {
    use nalgebra::Matrix3;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(m: &Matrix3<f64>, s: S) -> Result<S::Ok, S::Error> {
        let rows: [[f64; 3]; 3] = std::array::from_fn(|r| std::array::from_fn(|c| m[(r, c)]));
        rows.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Matrix3<f64>, D::Error> {
        let rows = <[[f64; 3]; 3]>::deserialize(d)?;
        Ok(Matrix3::from_fn(|r, c| rows[r][c]))
    }
}

impl Camera {
    /// A camera from its intrinsics, image size, distortion and world-to-camera pose.
    ///
    /// # Errors
    /// [`CameraError::BadField`] naming the first non-finite or non-positive field.
    pub fn new(
        [fx, fy, cx, cy]: [f64; 4],
        (width, height): (u32, u32),
        distortion: Distortion,
        rotation: Rotation3<f64>,
        translation: Vector3<f64>,
    ) -> Result<Self, CameraError> {
        let camera = Self {
            width,
            height,
            fx,
            fy,
            cx,
            cy,
            distortion,
            rotation: rotation.into_inner(),
            translation,
        };
        camera.check()?;
        Ok(camera)
    }

    /// Checks what projection and its Jacobian rely on: positive finite focal lengths, an
    /// image of 1 to [`MAX_CAMERA_SIDE`](crate::limits::MAX_CAMERA_SIDE) pixels a side,
    /// finite coefficients and a proper rotation.
    ///
    /// # Errors
    /// [`CameraError::BadField`] naming the first field that is not as expected.
    pub fn check(&self) -> Result<(), CameraError> {
        for (field, value) in [("fx", self.fx), ("fy", self.fy)] {
            if !(value.is_finite() && value > 0.0) {
                return Err(CameraError::BadField {
                    field,
                    value,
                    expected: "finite and positive",
                });
            }
        }
        for (field, value) in [("width", self.width), ("height", self.height)] {
            if !(1..=crate::limits::MAX_CAMERA_SIDE).contains(&value) {
                return Err(CameraError::BadField {
                    field,
                    value: f64::from(value),
                    expected: "from 1 to 8192 pixels (the widest V4L2 sensor mode)",
                });
            }
        }
        let Distortion { k1, k2, p1, p2, k3 } = self.distortion;
        let t = self.translation;
        let finite = [
            ("cx", self.cx),
            ("cy", self.cy),
            ("k1", k1),
            ("k2", k2),
            ("p1", p1),
            ("p2", p2),
            ("k3", k3),
            ("translation.x", t.x),
            ("translation.y", t.y),
            ("translation.z", t.z),
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
        let r = &self.rotation;
        if r.iter().any(|v| !v.is_finite()) {
            return Err(CameraError::BadField {
                field: "rotation",
                value: f64::NAN,
                expected: "finite",
            });
        }
        if (r * r.transpose() - Matrix3::identity()).amax() >= 1e-6 || r.determinant() <= 0.0 {
            return Err(CameraError::BadField {
                field: "rotation",
                value: r.determinant(),
                expected: "a rotation matrix (orthonormal, determinant +1)",
            });
        }
        Ok(())
    }

    /// A camera at `eye` looking at `target`, `up` being the world's up direction, with a
    /// horizontal field of view of `fov_deg` degrees and the principal point at the image
    /// centre.
    ///
    /// # Errors
    /// [`CameraError::BadField`] for coinciding eye and target, an `up` parallel to the view
    /// direction, or a field of view outside (0, 180) degrees.
    pub fn look_at(
        eye: Point3<f64>,
        target: Point3<f64>,
        up: Vector3<f64>,
        fov_deg: f64,
        (width, height): (u32, u32),
        distortion: Distortion,
    ) -> Result<Self, CameraError> {
        let forward = target - eye;
        if forward.norm() < 1e-12 {
            return Err(CameraError::BadField {
                field: "target",
                value: forward.norm(),
                expected: "a point away from the eye",
            });
        }
        let z = forward.normalize();
        let x = z.cross(&up);
        if x.norm() < 1e-9 {
            return Err(CameraError::BadField {
                field: "up",
                value: x.norm(),
                expected: "a direction not parallel to the view direction",
            });
        }
        if !(fov_deg > 0.0 && fov_deg < 180.0) {
            return Err(CameraError::BadField {
                field: "fov_deg",
                value: fov_deg,
                expected: "an angle in (0, 180) degrees",
            });
        }
        let x = x.normalize();
        let y = z.cross(&x);
        let rotation = Matrix3::from_rows(&[x.transpose(), y.transpose(), z.transpose()]);
        let translation = -(rotation * eye.coords);
        let f = f64::from(width) / 2.0 / (fov_deg.to_radians() / 2.0).tan();
        Self::new(
            [f, f, f64::from(width) / 2.0, f64::from(height) / 2.0],
            (width, height),
            distortion,
            Rotation3::from_matrix_unchecked(rotation),
            translation,
        )
    }

    /// A world point in camera coordinates.
    pub fn to_camera(&self, p: &Point3<f64>) -> Vector3<f64> {
        self.rotation * p.coords + self.translation
    }

    /// Pixel of a camera-space point in front of the camera (`z > 0`), else `None`.
    pub fn project_camera(&self, pc: &Vector3<f64>) -> Option<Point2<f64>> {
        if pc.z <= 1e-9 {
            return None;
        }
        let d = self
            .distortion
            .apply(Vector2::new(pc.x / pc.z, pc.y / pc.z));
        Some(Point2::new(
            self.fx * d.x + self.cx,
            self.fy * d.y + self.cy,
        ))
    }

    /// Pixel of a world point, `None` behind the camera.
    pub fn project(&self, p: &Point3<f64>) -> Option<Point2<f64>> {
        self.project_camera(&self.to_camera(p))
    }

    /// The pixel of a world point and d(pixel)/d(world point); `None` behind the camera.
    pub fn project_with_jacobian(&self, p: &Point3<f64>) -> Option<(Point2<f64>, Matrix2x3<f64>)> {
        let (px, jac) = self.project_camera_with_jacobian(&self.to_camera(p))?;
        Some((px, jac * self.rotation))
    }

    /// The pixel of a camera-space point and d(pixel)/d(camera-space point); `None` behind
    /// the camera. Calibration moves the camera itself, so it needs the derivative before the
    /// world-to-camera rotation.
    pub fn project_camera_with_jacobian(
        &self,
        c: &Vector3<f64>,
    ) -> Option<(Point2<f64>, Matrix2x3<f64>)> {
        if c.z <= 1e-9 {
            return None;
        }
        let iz = 1.0 / c.z;
        let n = Vector2::new(c.x * iz, c.y * iz);
        let (d, jd) = self.distortion.apply_with_jacobian(n);
        let dn = Matrix2x3::new(iz, 0.0, -n.x * iz, 0.0, iz, -n.y * iz);
        let scale = Matrix2::new(self.fx, 0.0, 0.0, self.fy);
        Some((
            Point2::new(self.fx * d.x + self.cx, self.fy * d.y + self.cy),
            scale * jd * dn,
        ))
    }

    /// d(pixel)/d(intrinsics) of a camera-space point, columns in the order
    /// `fx fy cx cy k1 k2 p1 p2 k3`; `None` behind the camera. Intrinsic calibration solves
    /// for exactly these nine numbers.
    pub fn intrinsics_jacobian(&self, c: &Vector3<f64>) -> Option<SMatrix<f64, 2, 9>> {
        if c.z <= 1e-9 {
            return None;
        }
        let n = Vector2::new(c.x / c.z, c.y / c.z);
        let d = self.distortion.apply(n);
        let dk = self.distortion.coefficient_jacobian(n);
        let mut jac = SMatrix::<f64, 2, 9>::zeros();
        jac[(0, 0)] = d.x;
        jac[(1, 1)] = d.y;
        jac[(0, 2)] = 1.0;
        jac[(1, 3)] = 1.0;
        for k in 0..5 {
            jac[(0, 4 + k)] = self.fx * dk[(0, k)];
            jac[(1, 4 + k)] = self.fy * dk[(1, k)];
        }
        Some(jac)
    }

    /// Undistorted normalised coordinates (`x_c / z_c`, `y_c / z_c`) of a pixel.
    pub fn normalize(&self, pixel: &Point2<f64>) -> Vector2<f64> {
        let d = Vector2::new((pixel.x - self.cx) / self.fx, (pixel.y - self.cy) / self.fy);
        self.distortion.remove(d)
    }

    /// Whether a pixel lies inside the image.
    pub fn contains(&self, pixel: &Point2<f64>) -> bool {
        pixel.x >= 0.0
            && pixel.y >= 0.0
            && pixel.x < f64::from(self.width)
            && pixel.y < f64::from(self.height)
    }
}

#[cfg(test)]
mod tests;
