//! What `calibrate` prints and writes in its report: each camera's coverage and lens
//! spread, the reprojection, the errors against a synthetic truth, and the report's JSON.

use serde_json::json;

use hailo_edge::calibrate::synthetic::{self, CameraErrors, RigErrors};
use hailo_edge::calibrate::{Anchor, RigCalibration};
use hailo_edge::output::printable;

use super::Source;

/// The solved rig against the synthetic capture's true cameras, when there are any.
pub(super) struct Truth {
    /// Per camera, in the world the anchor fixes.
    errors: Option<Vec<CameraErrors>>,
    /// The rig's own shape, once laid on the truth.
    shape: Option<RigErrors>,
}

impl Truth {
    pub(super) fn of(source: &Source, rig: &RigCalibration) -> Self {
        let errors = source.truth.as_ref().map(|truth| {
            truth
                .iter()
                .zip(rig.cameras())
                .map(|(t, s)| synthetic::errors(t, s))
                .collect::<Vec<_>>()
        });
        let shape = source
            .truth
            .as_ref()
            .and_then(|truth| synthetic::rig_errors(truth, rig.cameras()));
        Self { errors, shape }
    }
}

/// Prints the calibration: what it took, each camera's coverage and lens spread, the
/// reprojection (per view with `views`) and the errors against the truth.
pub(super) fn print(
    names: &[String],
    source: &Source,
    rig: &RigCalibration,
    truth: &Truth,
    elapsed_s: f64,
    views: bool,
) {
    println!(
        "calibrated {} cameras from {} views ({}) in {elapsed_s:.1} s",
        names.len(),
        source.corners.views.len(),
        printable(&source.what)
    );
    for ((n, c), i) in names.iter().zip(&rig.coverage).zip(&rig.intrinsics) {
        println!(
            "  {}: {c}, lens to {:.3} px (standard deviations)",
            printable(n),
            i.lens_std_px
        );
    }
    print!("{}", rig.reprojection.render(views));
    let (Some(errors), Some(shape)) = (&truth.errors, &truth.shape) else {
        return;
    };
    println!("against the synthetic truth (targets: focal 0.3 %, principal point 1 px, lens 0.3 px, 2 mm, 0.1 degrees)");
    println!(
        "{:<16} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "camera", "focal %", "pp px", "lens px", "pos mm", "rot deg", "shape mm", "shape deg"
    );
    for ((n, e), s) in names.iter().zip(errors).zip(&shape.shape) {
        println!(
            "{:<16} {:>9.4} {:>9.3} {:>9.3} {:>9.3} {:>9.4} {:>9.3} {:>9.4}",
            printable(n),
            e.focal_pct,
            e.principal_px,
            e.distortion_px,
            e.position_mm,
            e.rotation_deg,
            s.position_mm,
            s.rotation_deg
        );
    }
    println!(
        "pos and rot are in the world the anchor fixes; shape is the rig's own, once it is laid on the truth, which turns it {:.4} degrees and shifts it {:.3} mm",
        shape.world.rotation_deg, shape.world.position_mm
    );
}

/// The report's JSON.
pub(super) fn report(
    names: &[String],
    source: &Source,
    anchor: &Anchor,
    rig: &RigCalibration,
    truth: &Truth,
    elapsed_s: f64,
) -> serde_json::Value {
    let corners = &source.corners;
    json!({
        "source": source.what,
        "board": corners.board.to_string(),
        "anchor": { "instant": anchor.pose },
        "elapsed_s": elapsed_s,
        "rms_px": rig.extrinsics.rms_px,
        "cameras": names.iter().enumerate().map(|(i, n)| json!({
            "name": n,
            "camera": rig.cameras()[i],
            "views": rig.coverage[i].views(),
            "coverage": {
                "complete": rig.coverage[i].complete(),
                "missing_regions": rig.coverage[i].missing_regions().iter().map(ToString::to_string).collect::<Vec<_>>(),
                "missing_tilts": rig.coverage[i].missing_tilts().iter().map(|t| t.name()).collect::<Vec<_>>(),
            },
            "intrinsics_rms_px": rig.intrinsics[i].rms_px,
            "intrinsics_std_dev": {
                "order": ["fx", "fy", "cx", "cy", "k1", "k2", "p1", "p2", "k3"],
                "values": rig.intrinsics[i].std_dev,
                "lens_px": rig.intrinsics[i].lens_std_px,
            },
            "rms_px": rig.extrinsics.per_camera_px[i],
            "truth_errors": truth.errors.as_ref().map(|e| e[i]),
            "truth_shape_errors": truth.shape.as_ref().map(|s| s.shape[i]),
        })).collect::<Vec<_>>(),
        "truth_world_error": truth.shape.as_ref().map(|s| s.world),
        "reprojection": rig.reprojection,
        "capture": source.tallies.as_ref().map(|t| names.iter().zip(t).map(|(n, t)| json!({
            "name": n,
            "frames": t.frames,
            "searched": t.examined,
            "views": t.views,
            "bad_frames": t.bad_frames,
            "unreadable": t.unreadable,
            "last_error": t.last_error,
        })).collect::<Vec<_>>()),
    })
}

/// Warns of every camera whose views leave its coverage open.
pub(super) fn warn_uncovered(names: &[String], rig: &RigCalibration) {
    for (n, c) in names.iter().zip(&rig.coverage) {
        if !c.complete() {
            eprintln!(
                "warning: `{}`: the views do not cover the image and tilts the lens needs ({c}); capture those and calibrate again",
                printable(n)
            );
        }
    }
}
