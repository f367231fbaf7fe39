//! Framing precision: the millimetres one feature-map cell spans at the subject, per camera.
//!
//! The keypoint model sees one cell per [`PATCH`] x [`PATCH`] input pixels, so a camera's
//! precision is set by its framing, not its resolution: a cell spans
//! `PATCH * distance / (f * scale)` metres, `f` the focal length in camera pixels (the mean
//! of fx and fy), `scale` the graph input pixels per camera pixel (letterboxing a 1280 wide
//! frame into 432 gives 432/1280) and `distance` the depth of the subject in the camera.
//! A 1.7 m subject filling a 432 frame gives 47 mm per cell; a 200 mm face filling a
//! dedicated camera, 5.6 mm.
//!
//! # Where the subject is
//!
//! The subject stands on a vertical line (world Z up, the rig's convention) through the
//! *subject point*: the rig's, or else the scene centre, the point nearest all cameras'
//! optical axes in the least-squares sense. Each camera's distance is the depth of the point
//! of that line nearest its optical axis, so a face camera aimed at the head is measured to
//! the head and a body camera to the body. A camera whose axis is vertical is measured to
//! the subject point.

use nalgebra::{Matrix3, Point3, Vector3};
use serde::Serialize;

use super::CalibratedCamera;
use crate::decode::split::PATCH;
use crate::geom::Camera;

/// One camera's framing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Framing {
    /// The camera's name.
    pub camera: String,
    /// Depth of the subject in the camera, metres.
    pub distance_m: f64,
    /// Graph input pixels per camera pixel.
    pub input_scale: f64,
    /// Millimetres one feature cell spans at that depth.
    pub mm_per_cell: f64,
    /// Feature cells the subject's stature spans at that depth, when the stature is known.
    pub stature_cells: Option<f64>,
}

/// The optical centre and unit viewing direction of a camera, in world coordinates.
fn axis(c: &Camera) -> (Point3<f64>, Vector3<f64>) {
    let rt = c.rotation.transpose();
    (Point3::from(-(rt * c.translation)), rt * Vector3::z())
}

/// The point nearest all cameras' optical axes (least squares); `None` for fewer than two
/// cameras or axes that are all parallel.
pub fn scene_centre(cameras: &[Camera]) -> Option<Point3<f64>> {
    if cameras.len() < 2 {
        return None;
    }
    let (mut a, mut b) = (Matrix3::zeros(), Vector3::zeros());
    for c in cameras {
        let (o, d) = axis(c);
        let p = Matrix3::identity() - d * d.transpose();
        a += p;
        b += p * o.coords;
    }
    let x = a.try_inverse().filter(|_| a.determinant().abs() > 1e-9)? * b;
    Some(Point3::from(x))
}

/// The depth in `camera` of the subject standing on the vertical line through `subject`
/// (see the module's documentation).
pub fn subject_distance(camera: &Camera, subject: &Point3<f64>) -> f64 {
    let (o, d) = axis(camera);
    let up = Vector3::z();
    // Closest points of the axis o + s d and the line subject + h up.
    let w = o - subject;
    let b = d.dot(&up);
    let denom = 1.0 - b * b;
    let point = if denom < 1e-6 {
        *subject
    } else {
        let h = (up.dot(&w) - b * d.dot(&w)) / denom;
        subject + up * h
    };
    camera.to_camera(&point).z
}

/// Millimetres one feature cell spans at `distance_m` in `camera`, its frames scaled by
/// `input_scale` into the graph's input.
pub fn mm_per_cell(camera: &Camera, distance_m: f64, input_scale: f64) -> f64 {
    let f = 0.5 * (camera.fx + camera.fy);
    1e3 * f64::from(PATCH) * distance_m / (f * input_scale)
}

/// The framing of every camera, camera `i` scaled by `input_scales[i]` into its graph,
/// with the subject on the vertical line through `subject` (or the scene centre) and of
/// `stature_m`; `None` when there is no subject point (one camera and none given).
pub fn framing(
    cameras: &[CalibratedCamera],
    input_scales: &[f64],
    subject: Option<Point3<f64>>,
    stature_m: Option<f64>,
) -> Option<Vec<Framing>> {
    let subject =
        subject.or_else(|| scene_centre(&cameras.iter().map(|c| c.camera).collect::<Vec<_>>()))?;
    Some(
        cameras
            .iter()
            .zip(input_scales)
            .map(|(c, &scale)| {
                let distance_m = subject_distance(&c.camera, &subject);
                let mm = mm_per_cell(&c.camera, distance_m, scale);
                Framing {
                    camera: c.name.clone(),
                    distance_m,
                    input_scale: scale,
                    mm_per_cell: mm,
                    stature_cells: stature_m.map(|s| s * 1e3 / mm),
                }
            })
            .collect(),
    )
}

/// Graph input pixels per camera pixel for a `width` x `height` frame fitted into a
/// `side` square input: letterboxing fits the longer side, cropping the shorter.
pub fn input_scale(side: u32, (width, height): (u32, u32), crop: bool) -> f64 {
    let fitted = if crop {
        width.min(height)
    } else {
        width.max(height)
    };
    f64::from(side) / f64::from(fitted.max(1))
}

/// The framing as a table: camera, distance, millimetres per cell, stature in cells.
pub fn render(framing: &[Framing]) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "framing precision (modelled from the calibration, feature stride {PATCH} px)\n{:<16} {:>10} {:>12} {:>15}\n",
        "camera", "distance m", "mm per cell", "stature cells"
    );
    for f in framing {
        let cells = f
            .stature_cells
            .map_or_else(|| "-".into(), |c| format!("{c:.1}"));
        let _ = writeln!(
            out,
            "{:<16} {:>10.2} {:>12.1} {:>15}",
            f.camera, f.distance_m, f.mm_per_cell, cells
        );
    }
    out
}
