//! The demo's cameras around the subject.

use nalgebra::{Point3, Rotation3, Vector3};

use crate::geom::{Camera, CameraError, Distortion};

/// The demo rig's camera names, in the order of [`demo_rig`]'s cameras: three body
/// cameras, then the face camera.
pub const DEMO_CAMERA_NAMES: [&str; 4] = ["body0", "body1", "body2", "face"];

/// Four cameras placed like the demo rig around a subject standing at the origin (Z up, facing
/// -Y): three body cameras at 288x288, 2.6 m away and 120 degrees apart at chest height, and
/// one face camera at 432x432, half a metre before the face and framed on it (the design's
/// dedicated face camera); all with mild barrel distortion.
pub fn demo_rig() -> [Camera; 4] {
    // The placements are valid by construction around the origin.
    demo_rig_at(Point3::origin()).unwrap_or_else(|_| unreachable!())
}

/// The cameras of [`demo_rig`] moved with a subject whose root stands at `root`.
///
/// # Errors
/// [`CameraError`] when a camera cannot be placed there (a root too far out for the
/// arithmetic, or not finite).
pub fn demo_rig_at(root: Point3<f64>) -> Result<[Camera; 4], CameraError> {
    let lens = Distortion {
        k1: -0.08,
        k2: 0.01,
        p1: 0.0005,
        p2: -0.0003,
        k3: 0.0,
    };
    let at = |x: f64, y: f64, z: f64| root + Vector3::new(x, y, z);
    let body = |deg: f64| {
        let a = deg.to_radians();
        let eye = at(2.6 * a.sin(), -2.6 * a.cos(), 0.4);
        Camera::look_at(eye, at(0.0, 0.0, 0.0), Vector3::z(), 62.0, (288, 288), lens)
    };
    // Half a metre before the face, a little above and to the side of body0's line of sight,
    // with a 24 degree lens: the frame spans 0.21 m at the face, which a 200 mm face fills.
    // A narrow lens bends less: its distortion a quarter of the wide lenses'.
    let narrow = Distortion {
        k1: lens.k1 / 4.0,
        k2: lens.k2 / 4.0,
        p1: lens.p1 / 4.0,
        p2: lens.p2 / 4.0,
        k3: lens.k3 / 4.0,
    };
    let face = Camera::look_at(
        at(0.08, -0.58, 0.69),
        at(0.0, -0.06, 0.63),
        Vector3::z(),
        24.0,
        (432, 432),
        narrow,
    );
    Ok([body(0.0)?, body(120.0)?, body(-120.0)?, face?])
}

/// `cameras` turned `degrees` about the world's vertical axis (Z) through the origin: the
/// same rig seen from another side, in the same world frame.
pub fn turned(cameras: &[Camera], degrees: f64) -> Vec<Camera> {
    let r = Rotation3::from_axis_angle(&Vector3::z_axis(), degrees.to_radians());
    cameras
        .iter()
        .map(|c| {
            // World-to-camera of the turned rig: x_cam = R_c (R⁻¹ x) + t.
            let mut t = *c;
            t.rotation = c.rotation * r.matrix().transpose();
            t
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_cameras_are_valid_and_centred() {
        let p = Point3::new(0.1, -0.05, 0.3);
        for cam in demo_rig() {
            // `look_at` puts the principal point at the image centre.
            assert_eq!(
                (cam.cx, cam.cy),
                (f64::from(cam.width) / 2.0, f64::from(cam.height) / 2.0)
            );
            let rebuilt = Camera::new(
                [cam.fx, cam.fy, cam.cx, cam.cy],
                (cam.width, cam.height),
                cam.distortion,
                Rotation3::from_matrix_unchecked(cam.rotation),
                cam.translation,
            )
            .unwrap();
            let (a, b) = (cam.project(&p).unwrap(), rebuilt.project(&p).unwrap());
            assert!((a - b).norm() < 1e-9, "{a} {b}");
        }
    }

    #[test]
    fn pixels_back_project_onto_their_ray() {
        // A point on the face, which every camera sees.
        for cam in demo_rig() {
            let p = Point3::new(0.03, -0.12, 0.64);
            let px = cam.project(&p).unwrap();
            assert!(cam.contains(&px), "{px}");
            let n = cam.normalize(&px);
            let c = cam.to_camera(&p);
            assert!((n - nalgebra::Vector2::new(c.x / c.z, c.y / c.z)).norm() < 1e-12);
        }
    }
}
