//! A whole rig calibrated from its board views: the coverage each camera reached, every
//! camera's intrinsics, then the joint bundle adjustment, and the reprojection error per
//! camera and per view of the result. What `hailo-edge calibrate` runs.

use nalgebra::Isometry3;

use super::board::AprilGrid;
use super::coverage::Coverage;
use super::extrinsics::{calibrate_extrinsics, Anchor, Extrinsics};
use super::intrinsics::{calibrate_intrinsics, Intrinsics};
use super::{BoardView, CalibrateError, Settings};
use crate::camera::calib::report::ReprojectionReport;
use crate::geom::Camera;

/// What the rig calibration is given besides the views.
#[derive(Debug, Clone, Copy)]
pub struct RigInput<'a> {
    /// The board.
    pub board: &'a AprilGrid,
    /// The cameras' names, in the rig's order.
    pub names: &'a [String],
    /// Their image sizes (pixels).
    pub sizes: &'a [(u32, u32)],
    /// What fixes the world.
    pub anchor: &'a Anchor,
    /// The rig file's placements, when known: swapped cameras are caught against them.
    pub placed: Option<&'a [Camera]>,
}

/// One step done, for a progress bar: the step's number from 1, of how many, and what it
/// was.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, &str);

/// A calibrated rig.
#[derive(Debug, Clone)]
pub struct RigCalibration {
    /// Each camera's coverage, from its views.
    pub coverage: Vec<Coverage>,
    /// Each camera calibrated alone (the bundle adjustment's start).
    pub intrinsics: Vec<Intrinsics>,
    /// The bundle adjustment: the final cameras.
    pub extrinsics: Extrinsics,
    /// The final cameras' reprojection error per camera and per view.
    pub reprojection: ReprojectionReport,
}

impl RigCalibration {
    /// The calibrated cameras, in the rig's order.
    pub fn cameras(&self) -> &[Camera] {
        &self.extrinsics.cameras
    }
}

/// Calibrates the rig: each camera's coverage and intrinsics, then the bundle adjustment.
/// `progress` hears of each camera's intrinsics and of the adjustment.
///
/// # Errors
/// The first [`CalibrateError`], naming the camera and what to capture next.
pub fn calibrate_rig(
    input: &RigInput<'_>,
    views: &[BoardView],
    settings: &Settings,
    progress: Progress<'_>,
) -> Result<RigCalibration, CalibrateError> {
    let n = input.names.len();
    let steps = n + 1;
    let mut coverage: Vec<Coverage> = input
        .sizes
        .iter()
        .map(|&s| Coverage::new(s, settings.min_tilt_deg))
        .collect();
    for v in views {
        if let Some(c) = coverage.get_mut(v.camera) {
            c.add(input.board, v);
        }
    }
    let mut intrinsics = Vec::with_capacity(n);
    for (c, (name, &size)) in input.names.iter().zip(input.sizes).enumerate() {
        let own: Vec<&BoardView> = views.iter().filter(|v| v.camera == c).collect();
        intrinsics.push(calibrate_intrinsics(
            name,
            size,
            input.board,
            &own,
            settings,
        )?);
        if let (Some(cov), Some(i)) = (coverage.get_mut(c), intrinsics.last()) {
            cov.set_principal_std(i.principal_std_px(), settings.max_principal_std_px);
        }
        progress(c + 1, steps, name);
    }
    let lenses: Vec<Camera> = intrinsics.iter().map(|i| i.camera).collect();
    let extrinsics = calibrate_extrinsics(
        input.board,
        &lenses,
        input.names,
        views,
        input.anchor,
        input.placed,
        settings,
    )?;
    progress(steps, steps, "bundle adjustment");
    let reprojection = reprojection(input, views, &extrinsics);
    Ok(RigCalibration {
        coverage,
        intrinsics,
        extrinsics,
        reprojection,
    })
}

/// Every view the adjustment placed, its corners reprojected through the final cameras and
/// board poses.
fn reprojection(input: &RigInput<'_>, views: &[BoardView], e: &Extrinsics) -> ReprojectionReport {
    let boards: std::collections::BTreeMap<usize, Isometry3<f64>> =
        e.board_poses.iter().copied().collect();
    let mut report = ReprojectionReport::default();
    // Camera by camera, so that the report lists them in the rig's order.
    let by_camera =
        (0..input.names.len()).flat_map(|c| views.iter().filter(move |v| v.camera == c));
    for v in by_camera {
        let (Some(board), Some(cam), Some(name)) = (
            boards.get(&v.pose),
            e.cameras.get(v.camera),
            input.names.get(v.camera),
        ) else {
            continue;
        };
        let residuals: Vec<f64> = v
            .corners
            .iter()
            .filter_map(|c| {
                let p = input.board.corner(c.id)?;
                let px = cam.project(&(board * p))?;
                Some((px - c.pixel).norm())
            })
            .collect();
        report.add_view(name, format!("instant {}", v.pose), &residuals);
    }
    report
}
