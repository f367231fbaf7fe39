//! The demo's cameras around the subject.

use nalgebra::{Point3, Vector3};

use crate::geom::{Camera, CameraError, Distortion};

/// Four cameras placed like the demo rig around a subject standing at the origin (Z up, facing
/// -Y): three body cameras at 288x288, 2.6 m away and 120 degrees apart at chest height, and
/// one face camera at 432x432, 0.45 m in front of the face with a 30 degree field, which the
/// face fills; all with mild barrel distortion.
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
    // Framed as the design intends: the face fills the frame (0.24 m across at the face,
    // 0.45 m away), so a feature cell spans about 8.5 mm at the subject against the body
    // cameras' 130 mm; the face stays in view as the subject moves.
    let face = Camera::look_at(
        at(0.09, -0.57, 0.66),
        at(0.07, -0.12, 0.62),
        Vector3::z(),
        30.0,
        (432, 432),
        lens,
    );
    Ok([body(0.0)?, body(120.0)?, body(-120.0)?, face?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Rotation3;

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
    fn the_face_camera_is_filled_by_the_face_and_the_body_cameras_by_the_body() {
        use crate::camera::calib::framing::{framing, scene_centre};
        use crate::camera::calib::CalibratedCamera;
        let model = crate::body::Model::embedded().unwrap();
        let body = std::sync::Arc::new(crate::scene::BodyRig::anny(model, true).unwrap());
        // The demo run's scene (`rig::run`: six keyframes 0.8 s apart, seed 1).
        let scene = crate::scene::BodyScene::new(std::sync::Arc::clone(&body), 6, 0.8, 1);
        let cams = demo_rig();
        let face = &cams[3];
        let (mut framed, mut samples) = (0, 0);
        for i in 0..240 {
            let k = scene.keypoints(scene.period() * f64::from(i) / 240.0);
            // COCO's first five: nose, eyes, ears.
            let seen = k[..5]
                .iter()
                .filter(|p| face.project(p).is_some_and(|px| face.contains(&px)))
                .count();
            framed += usize::from(seen >= 3);
            samples += 1;
        }
        assert!(
            framed * 10 >= samples * 8,
            "the face in view in {framed} of {samples}"
        );
        let named: Vec<CalibratedCamera> = cams
            .iter()
            .map(|c| CalibratedCamera {
                name: String::new(),
                camera: *c,
            })
            .collect();
        let f = framing(&named, &[1.0; 4], scene_centre(&cams[..3]), body.stature_m).unwrap();
        let mm: Vec<f64> = f.iter().map(|f| f.mm_per_cell).collect();
        eprintln!("mm per cell {mm:?}, face in view in {framed} of {samples}");
        // The design: a face filling its camera gives 5.6 mm.
        assert!(mm[3] < 9.5, "face camera: {} mm per cell", mm[3]);
        // The body cameras frame more than the body: coarser than the design's 47 mm.
        assert!(
            mm[..3].iter().all(|&m| m > 47.0 && m > 10.0 * mm[3]),
            "{mm:?}"
        );
    }

    #[test]
    fn pixels_back_project_onto_their_ray() {
        for cam in demo_rig() {
            let p = Point3::new(0.05, -0.1, 0.5);
            let px = cam.project(&p).unwrap();
            assert!(cam.contains(&px), "{px}");
            let n = cam.normalize(&px);
            let c = cam.to_camera(&p);
            assert!((n - nalgebra::Vector2::new(c.x / c.z, c.y / c.z)).norm() < 1e-12);
        }
    }
}
