//! Every camera's pose from the board instants several cameras share: per-view poses from
//! the homography of undistorted corners, chained from the anchor instant outwards, then a
//! Huber-robust bundle adjustment over all camera poses and all board poses but the anchor's.

use std::collections::BTreeMap;

use nalgebra::{Isometry3, Matrix3, Point2};

use super::board::AprilGrid;
use super::homography::{homography, pose_from_homography};
use super::problem::{camera_pose, with_pose, Free, Observation, Reprojection, State};
use super::synthetic::centre;
use super::{check_views, rms, solver, BoardView, CalibrateError, Settings};
use crate::geom::Camera;

/// What fixes the world frame: the board's pose at one instant, given in the world (for
/// example the board lying on the floor at the origin, face up, for a Z-up world).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Anchor {
    /// The instant.
    pub pose: usize,
    /// The board's pose then, board frame to world.
    pub world_from_board: Isometry3<f64>,
}

/// The rig's cameras with their poses and how well they explain the shared views.
#[derive(Debug, Clone, PartialEq)]
pub struct Extrinsics {
    /// The cameras, in the rig's order, with their world-to-camera poses.
    pub cameras: Vec<Camera>,
    /// Reprojection RMS over every corner (pixels).
    pub rms_px: f64,
    /// Reprojection RMS per camera (pixels).
    pub per_camera_px: Vec<f64>,
    /// Reprojection RMS per view: camera, instant, pixels.
    pub per_view_px: Vec<(usize, usize, f64)>,
    /// The solved board poses, instant and board-to-world.
    pub board_poses: Vec<(usize, Isometry3<f64>)>,
}

/// The cameras that saw the board at one instant: camera, board-to-camera pose, the view.
type Seen<'a> = Vec<(usize, Isometry3<f64>, &'a BoardView)>;

/// Camera centres nearer another camera's placement than their own by this margin, and
/// farther than this from their own, count as swapped (metres).
const SWAP_MARGIN_M: f64 = 0.1;

/// Calibrates the poses of `cameras` (intrinsics known; `names` in the same order) from
/// `views`, the world fixed by `anchor`. With `placed` (the rig file's cameras), a pair whose
/// solved centres fit each other's placement is refused as swapped.
///
/// # Errors
/// [`CalibrateError::NeverSeen`] for a camera without views, [`CalibrateError::NotLinked`]
/// for one that shares no instant with the cameras chained to the anchor,
/// [`CalibrateError::Degenerate`] when no camera sees the anchor instant,
/// [`CalibrateError::HighResidual`] per camera over `settings.max_rms_px`,
/// [`CalibrateError::Swapped`], and [`CalibrateError::BadCorner`].
pub fn calibrate_extrinsics(
    board: &AprilGrid,
    cameras: &[Camera],
    names: &[String],
    views: &[BoardView],
    anchor: &Anchor,
    placed: Option<&[Camera]>,
    settings: &Settings,
) -> Result<Extrinsics, CalibrateError> {
    let name = |c: usize| names.get(c).cloned().unwrap_or_else(|| format!("#{c}"));
    let mut seen = vec![false; cameras.len()];
    let mut per_pose: BTreeMap<usize, Seen> = BTreeMap::new();
    for v in views {
        if v.camera >= cameras.len() {
            return Err(CalibrateError::NeverSeen {
                camera: name(v.camera),
            });
        }
        check_views(&name(v.camera), board, &[v])?;
        let cam = &cameras[v.camera];
        let (from, to): (Vec<_>, Vec<_>) = v
            .corners
            .iter()
            .filter_map(|c| {
                let n = cam.normalize(&c.pixel);
                board
                    .corner(c.id)
                    .map(|p| (Point2::new(p.x, p.y), Point2::new(n.x, n.y)))
            })
            .unzip();
        let Some(pose) =
            homography(&from, &to).and_then(|h| pose_from_homography(&h, &Matrix3::identity()))
        else {
            continue;
        };
        seen[v.camera] = true;
        per_pose
            .entry(v.pose)
            .or_default()
            .push((v.camera, pose, v));
    }
    if let Some(c) = seen.iter().position(|s| !s) {
        return Err(CalibrateError::NeverSeen { camera: name(c) });
    }
    per_pose.retain(|&p, vs| vs.len() >= 2 || p == anchor.pose);
    if !per_pose.contains_key(&anchor.pose) {
        return Err(CalibrateError::Degenerate {
            camera: "rig".into(),
            what: "no camera sees the board at the anchor instant",
        });
    }
    // Chain poses outwards from the anchor: T_cw = T_cb T_wb^-1, T_wb = T_cw^-1 T_cb.
    let mut cam_pose: Vec<Option<Isometry3<f64>>> = vec![None; cameras.len()];
    let mut board_pose: BTreeMap<usize, Isometry3<f64>> = BTreeMap::new();
    board_pose.insert(anchor.pose, anchor.world_from_board);
    loop {
        let mut changed = false;
        for (p, vs) in &per_pose {
            for (c, cb, _) in vs {
                match (cam_pose[*c], board_pose.get(p)) {
                    (None, Some(wb)) => {
                        cam_pose[*c] = Some(cb * wb.inverse());
                        changed = true;
                    }
                    (Some(cw), None) => {
                        board_pose.insert(*p, cw.inverse() * cb);
                        changed = true;
                    }
                    _ => {}
                }
            }
        }
        if !changed {
            break;
        }
    }
    if let Some(c) = cam_pose.iter().position(Option::is_none) {
        let others: Vec<String> = (0..cameras.len())
            .filter(|&o| cam_pose[o].is_some())
            .map(|o| format!("`{}`", name(o)))
            .collect();
        return Err(CalibrateError::NotLinked {
            camera: name(c),
            others: others.join(", "),
        });
    }
    let instants: Vec<usize> = board_pose.keys().copied().collect();
    let index: BTreeMap<usize, usize> = instants.iter().enumerate().map(|(i, &p)| (p, i)).collect();
    let mut observations = Vec::new();
    for (p, vs) in &per_pose {
        let Some(&b) = index.get(p) else { continue };
        for (c, _, v) in vs {
            observations.extend(v.corners.iter().filter_map(|k| {
                board.corner(k.id).map(|point| Observation {
                    camera: *c,
                    board: b,
                    id: k.id,
                    point,
                    pixel: k.pixel,
                })
            }));
        }
    }
    let state = State {
        cameras: cameras
            .iter()
            .zip(&cam_pose)
            .map(|(c, p)| with_pose(c, &p.unwrap_or_else(|| camera_pose(c))))
            .collect(),
        boards: instants.iter().map(|p| board_pose[p]).collect(),
    };
    let free = Free {
        intrinsics: vec![false; cameras.len()],
        camera_poses: vec![true; cameras.len()],
        boards: instants.iter().map(|&p| p != anchor.pose).collect(),
    };
    let mut problem = Reprojection::new(observations, &free, settings.huber_px);
    let state = solver("rig", "extrinsics", &mut problem, state, settings)?;
    let residuals = problem.residuals(&state);
    let obs = problem.observations();
    let select = |keep: &dyn Fn(&Observation) -> bool| {
        rms(obs
            .iter()
            .zip(&residuals)
            .filter(|(o, _)| keep(o))
            .map(|(_, r)| r))
    };
    let per_camera_px: Vec<f64> = (0..cameras.len())
        .map(|c| select(&|o| o.camera == c))
        .collect();
    for (c, &e) in per_camera_px.iter().enumerate() {
        if e > settings.max_rms_px {
            return Err(CalibrateError::HighResidual {
                camera: name(c),
                stage: "extrinsics",
                rms_px: e,
                limit_px: settings.max_rms_px,
            });
        }
    }
    if let Some(placed) = placed {
        check_swaps(&state.cameras, placed, &name)?;
    }
    let mut per_view_px = Vec::new();
    for (p, vs) in &per_pose {
        let Some(&b) = index.get(p) else { continue };
        for (c, _, _) in vs {
            per_view_px.push((*c, *p, select(&|o| o.camera == *c && o.board == b)));
        }
    }
    Ok(Extrinsics {
        rms_px: rms(residuals.iter()),
        per_camera_px,
        per_view_px,
        board_poses: instants
            .iter()
            .copied()
            .zip(state.boards.iter().copied())
            .collect(),
        cameras: state.cameras,
    })
}

/// Refuses a pair of cameras whose solved centres sit at each other's placement.
fn check_swaps(
    solved: &[Camera],
    placed: &[Camera],
    name: &dyn Fn(usize) -> String,
) -> Result<(), CalibrateError> {
    let d = |a: usize, b: usize| (centre(&solved[a]) - centre(&placed[b])).norm();
    let n = solved.len().min(placed.len());
    for a in 0..n {
        for b in a + 1..n {
            let own = d(a, a) + d(b, b);
            let crossed = d(a, b) + d(b, a);
            if own > 2.0 * SWAP_MARGIN_M && crossed + 2.0 * SWAP_MARGIN_M < own {
                return Err(CalibrateError::Swapped {
                    a: name(a),
                    b: name(b),
                    a_at_b: d(a, b),
                    a_at_a: d(a, a),
                });
            }
        }
    }
    Ok(())
}
