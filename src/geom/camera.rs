//! A calibrated pinhole camera with OpenCV-style lens distortion, shared by rendering,
//! triangulation and the fit.
//!
//! World to camera: `x_c = R x_w + t` (camera looks along +z, image x right, y down).
//! Projection: `(x, y) = (x_c / z_c, y_c / z_c)`, distorted with radial `k1, k2, k3` and
//! tangential `p1, p2` terms, then `u = fx x_d + cx`, `v = fy y_d + cy` (pixels).

use nalgebra::{Matrix3, Point2, Point3, Vector3};
use serde::{Deserialize, Serialize};

use crate::body::BodyError;

/// Radial (`k1, k2, k3`) and tangential (`p1, p2`) distortion, OpenCV order `k1 k2 p1 p2 k3`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Distortion {
    pub k1: f64,
    pub k2: f64,
    pub p1: f64,
    pub p2: f64,
    pub k3: f64,
}

impl Distortion {
    /// Distorts normalised image coordinates.
    pub fn apply(&self, x: f64, y: f64) -> (f64, f64) {
        let r2 = x * x + y * y;
        let radial = 1.0 + r2 * (self.k1 + r2 * (self.k2 + r2 * self.k3));
        let xd = x * radial + 2.0 * self.p1 * x * y + self.p2 * (r2 + 2.0 * x * x);
        let yd = y * radial + self.p1 * (r2 + 2.0 * y * y) + 2.0 * self.p2 * x * y;
        (xd, yd)
    }

    /// Inverts [`Distortion::apply`] by fixed-point iteration (as OpenCV's `undistortPoints`),
    /// accurate to well below a micro-pixel for the mild distortions of real lenses.
    pub fn remove(&self, xd: f64, yd: f64) -> (f64, f64) {
        let (mut x, mut y) = (xd, yd);
        for _ in 0..20 {
            let r2 = x * x + y * y;
            let radial = 1.0 + r2 * (self.k1 + r2 * (self.k2 + r2 * self.k3));
            let dx = 2.0 * self.p1 * x * y + self.p2 * (r2 + 2.0 * x * x);
            let dy = self.p1 * (r2 + 2.0 * y * y) + 2.0 * self.p2 * x * y;
            x = (xd - dx) / radial;
            y = (yd - dy) / radial;
        }
        (x, y)
    }
}

/// A calibrated camera: intrinsics, distortion, world-to-camera extrinsics and image size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Camera {
    pub width: u32,
    pub height: u32,
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
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
    /// A distortion-free camera at `eye` looking at `target`, `up` being the world's up
    /// direction, with a horizontal field of view in degrees.
    pub fn look_at(
        eye: Point3<f64>,
        target: Point3<f64>,
        up: Vector3<f64>,
        width: u32,
        height: u32,
        horizontal_fov_deg: f64,
    ) -> Result<Self, BodyError> {
        let forward = target - eye;
        if forward.norm() < 1e-12 {
            return Err(BodyError::Render("camera eye and target coincide".into()));
        }
        let z = forward.normalize();
        let x = z.cross(&up);
        if x.norm() < 1e-9 {
            return Err(BodyError::Render(
                "camera up direction is parallel to its view direction".into(),
            ));
        }
        let x = x.normalize();
        let y = z.cross(&x);
        let rotation = Matrix3::from_rows(&[x.transpose(), y.transpose(), z.transpose()]);
        let translation = -(rotation * eye.coords);
        let fx = f64::from(width) / 2.0 / (horizontal_fov_deg.to_radians() / 2.0).tan();
        Ok(Self {
            width,
            height,
            fx,
            fy: fx,
            cx: f64::from(width) / 2.0,
            cy: f64::from(height) / 2.0,
            distortion: Distortion::default(),
            rotation,
            translation,
        })
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
        let (xd, yd) = self.distortion.apply(pc.x / pc.z, pc.y / pc.z);
        Some(Point2::new(self.fx * xd + self.cx, self.fy * yd + self.cy))
    }

    /// Pixel of a world point, `None` behind the camera.
    pub fn project(&self, p: &Point3<f64>) -> Option<Point2<f64>> {
        self.project_camera(&self.to_camera(p))
    }

    /// Undistorted normalised coordinates `(x, y)` of a pixel (`x_c / z_c`, `y_c / z_c`).
    pub fn normalized(&self, pixel: &Point2<f64>) -> Point2<f64> {
        let (x, y) = self
            .distortion
            .remove((pixel.x - self.cx) / self.fx, (pixel.y - self.cy) / self.fy);
        Point2::new(x, y)
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
mod tests {
    use super::*;

    #[test]
    fn look_at_projects_the_target_to_the_centre() {
        let cam = Camera::look_at(
            Point3::new(0.0, -3.0, 1.0),
            Point3::new(0.0, 0.0, 1.0),
            Vector3::z(),
            288,
            288,
            60.0,
        )
        .unwrap();
        let c = cam.project(&Point3::new(0.0, 0.0, 1.0)).unwrap();
        assert!((c.x - 144.0).abs() < 1e-9 && (c.y - 144.0).abs() < 1e-9);
        // World up is image up (smaller v); world +x is image right.
        assert!(cam.project(&Point3::new(0.0, 0.0, 1.5)).unwrap().y < 144.0);
        assert!(cam.project(&Point3::new(0.5, 0.0, 1.0)).unwrap().x > 144.0);
        assert!(cam.project(&Point3::new(0.0, -4.0, 1.0)).is_none());
        assert!(Camera::look_at(
            Point3::origin(),
            Point3::new(0.0, 0.0, 1.0),
            Vector3::z(),
            8,
            8,
            60.0
        )
        .is_err());
    }

    #[test]
    fn distortion_round_trips() {
        let d = Distortion {
            k1: -0.2,
            k2: 0.05,
            p1: 0.001,
            p2: -0.002,
            k3: 0.01,
        };
        let (xd, yd) = d.apply(0.3, -0.2);
        assert!((xd - 0.3).abs() > 1e-3, "distortion must change the point");
        let (x, y) = d.remove(xd, yd);
        assert!((x - 0.3).abs() < 1e-12 && (y + 0.2).abs() < 1e-12);
    }
}
