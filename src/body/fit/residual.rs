//! The fit residual as a length, and as a share of the subject's stature.
//!
//! The residual of a fitted instant is the root mean square, over every observed (view,
//! keypoint) pair the fit used, of the reprojection error back-projected at the keypoint's
//! depth in that camera: `|project(k) - detection| * z / sqrt(fx * fy)`, metres. It is the
//! distance, across the ray, between the fitted keypoint and the line of sight of its
//! detection, so it compares across cameras and framings where pixels do not. Divided by the
//! stature of the fitted shape ([`crate::body::Model::stature`]) it is the share of stature the
//! design rests its approach on.

use nalgebra::Point3;

use crate::body::triangulate::Observation;
use crate::geom::Camera;

/// RMS back-projected reprojection residual, metres, over the observations at or above
/// `min_confidence` whose keypoint lies in front of the camera; `None` when there is none.
pub fn residual_m(
    cameras: &[Camera],
    observations: &[Vec<Option<Observation>>],
    keypoints: &[Point3<f64>],
    min_confidence: f64,
) -> Option<f64> {
    let mut sum = 0.0;
    let mut count = 0usize;
    for (cam, view) in cameras.iter().zip(observations) {
        let focal = (cam.fx * cam.fy).sqrt();
        for (obs, kp) in view.iter().zip(keypoints) {
            let Some(obs) = obs.filter(|o| o.confidence >= min_confidence) else {
                continue;
            };
            let pc = cam.to_camera(kp);
            let Some(px) = cam.project_camera(&pc) else {
                continue;
            };
            let metres = (px - obs.pixel).norm() * pc.z / focal;
            sum += metres * metres;
            count += 1;
        }
    }
    (count > 0).then(|| (sum / count as f64).sqrt())
}

/// `residual_m` as a percentage of `stature_m`.
pub fn share_of_stature_pct(residual_m: f64, stature_m: f64) -> f64 {
    100.0 * residual_m / stature_m
}

#[cfg(test)]
mod tests {
    use nalgebra::{Point2, Point3, Vector3};

    use super::*;
    use crate::geom::Distortion;
    use crate::scene::demo_rig;

    /// Observations of `points` in `cameras`, each moved by `shift_px` along x.
    fn observe(
        cameras: &[Camera],
        points: &[Point3<f64>],
        shift_px: f64,
    ) -> Vec<Vec<Option<Observation>>> {
        cameras
            .iter()
            .map(|c| {
                points
                    .iter()
                    .map(|p| {
                        c.project(p).map(|px| Observation {
                            pixel: Point2::new(px.x + shift_px, px.y),
                            confidence: 1.0,
                        })
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_known_sideways_shift_gives_its_share_of_stature() {
        // Pinhole cameras: a pixel shift is then exactly a lateral shift at the point's depth.
        let cameras: Vec<Camera> = demo_rig()
            .into_iter()
            .map(|mut c| {
                c.distortion = Distortion::default();
                c
            })
            .collect();
        let points: Vec<Point3<f64>> = (0..5)
            .map(|i| Point3::new(0.05 * f64::from(i), 0.0, 0.2 + 0.3 * f64::from(i)))
            .collect();
        // Moving every keypoint 17 mm sideways to one camera moves its detection by
        // 17 mm * f / z pixels there; the back-projected residual recovers the 17 mm.
        let cam = &cameras[..1];
        let (f, z) = (
            (cam[0].fx * cam[0].fy).sqrt(),
            cam[0].to_camera(&points[0]).z,
        );
        let obs = observe(cam, &points[..1], 0.017 * f / z);
        let r = residual_m(cam, &obs, &points[..1], 0.2).unwrap();
        assert!((r - 0.017).abs() < 1e-9, "{r} m");
        let pct = share_of_stature_pct(r, 1.7);
        assert!((pct - 1.0).abs() < 1e-6, "{pct} %");
        // Negative control: unshifted detections give no residual, and an observation below
        // the confidence threshold does not count.
        let exact = observe(&cameras, &points, 0.0);
        assert!(residual_m(&cameras, &exact, &points, 0.2).unwrap() < 1e-9);
        let mut faint = observe(cam, &points[..1], 50.0);
        if let Some(o) = faint[0][0].as_mut() {
            o.confidence = 0.1;
        }
        assert_eq!(residual_m(cam, &faint, &points[..1], 0.2), None);
        // A keypoint moved along the ray changes nothing; moved across it, it does.
        let moved: Vec<Point3<f64>> = points
            .iter()
            .map(|p| p + Vector3::new(0.0, 0.0, 0.01))
            .collect();
        assert!(residual_m(&cameras, &exact, &moved, 0.2).unwrap() > 0.005);
    }
}
