//! Every camera's pose from the board instants several cameras share: per-view poses from
//! the homography of undistorted corners, chained from the anchor instant outwards, then a
//! Huber-robust bundle adjustment over all camera poses and all board poses but the anchor's,
//! and by default every camera's intrinsics with them over all the views (each camera's own
//! too), so that what one camera's lens leaves open the rig's geometry closes.

use std::collections::BTreeMap;

use nalgebra::Isometry3;
use petgraph::unionfind::UnionFind;

use super::board::AprilGrid;
use super::homography::view_pose;
use super::intrinsics::MAX_REPOSES;
use super::problem::{camera_pose, with_pose, Free, Observation, Reprojection, State};
use super::synthetic::centre;
use super::{check_views, rms, solver, solver_pass, BoardView, CalibrateError, Settings};
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
    /// The cameras, in the rig's order, with their world-to-camera poses (and the intrinsics
    /// refined with them, under [`Settings::refine_intrinsics`]).
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

/// Views whose poses a camera's placement is chosen among (those with the most corners).
const CHAIN_CANDIDATES: usize = 16;

/// The error a corner behind its camera counts as while choosing a start (pixels).
const BEHIND_PX: f64 = 1e3;

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
/// [`CalibrateError::WeaklyLinked`] for one tied to the rest by fewer than
/// `settings.min_shared_instants` instants, [`CalibrateError::Degenerate`] when no camera sees
/// the anchor instant,
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
    let per_pose = instants_seen(board, cameras, views, anchor, settings, &name)?;
    let Chained {
        cameras: cam_pose,
        boards: board_pose,
    } = chain(board, cameras, &per_pose, anchor);
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
    check_ties(
        &per_pose,
        cameras.len(),
        settings.min_shared_instants,
        &name,
    )?;
    let instants: Vec<usize> = board_pose.keys().copied().collect();
    let index: BTreeMap<usize, usize> = instants.iter().enumerate().map(|(i, &p)| (p, i)).collect();
    let mut state = State {
        cameras: cameras
            .iter()
            .zip(&cam_pose)
            .map(|(c, p)| with_pose(c, &p.unwrap_or_else(|| camera_pose(c))))
            .collect(),
        boards: instants.iter().map(|p| board_pose[p]).collect(),
    };
    let free = free(cameras, &instants, anchor, settings);
    let problem = Reprojection::new(
        observations(board, &per_pose, &index),
        &free,
        settings.huber_px,
    );
    // The chain's first pose of each instant, bettered where another camera's view explains
    // the instant better; a corner the start still puts behind its camera cannot be
    // linearised and is left out.
    repose(board, &mut state, &per_pose, &index, anchor, settings);
    let mut problem = without_corners_behind(problem, &state, &free, settings.huber_px);
    let state = solve(
        board,
        &mut problem,
        state,
        &per_pose,
        &index,
        anchor,
        settings,
    )?;
    let residuals = problem.residuals(&state);
    let per_camera_px: Vec<f64> = (0..cameras.len())
        .map(|c| problem.rms_of(&residuals, |o| o.camera == c))
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
            per_view_px.push((
                *c,
                *p,
                problem.rms_of(&residuals, |o| o.camera == *c && o.board == b),
            ));
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

/// The views grouped by instant, each with its board-to-camera pose from the homography;
/// views whose pose cannot be found are passed over. With the lenses held, an instant one
/// camera saw fixes only its own board pose and is left out (but the anchor's).
///
/// # Errors
/// [`CalibrateError::NeverSeen`] for a camera without a posed view (or a view naming no
/// camera of the rig), [`CalibrateError::BadCorner`], and [`CalibrateError::Degenerate`]
/// when no camera sees the anchor instant.
fn instants_seen<'a>(
    board: &AprilGrid,
    cameras: &[Camera],
    views: &'a [BoardView],
    anchor: &Anchor,
    settings: &Settings,
    name: &dyn Fn(usize) -> String,
) -> Result<BTreeMap<usize, Seen<'a>>, CalibrateError> {
    let mut seen = vec![false; cameras.len()];
    let mut per_pose: BTreeMap<usize, Seen> = BTreeMap::new();
    for v in views {
        if v.camera >= cameras.len() {
            return Err(CalibrateError::NeverSeen {
                camera: name(v.camera),
            });
        }
        check_views(&name(v.camera), board, &[v])?;
        let Some(pose) = view_pose(board, &cameras[v.camera], v) else {
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
    if !settings.refine_intrinsics {
        per_pose.retain(|&p, vs| vs.len() >= 2 || p == anchor.pose);
    }
    if !per_pose.contains_key(&anchor.pose) {
        return Err(CalibrateError::Degenerate {
            camera: "rig".into(),
            what: "no camera sees the board at the anchor instant",
        });
    }
    Ok(per_pose)
}

/// The poses chained from the anchor.
struct Chained {
    /// Per camera, world to camera; none for a camera the chain never reached.
    cameras: Vec<Option<Isometry3<f64>>>,
    /// Per instant reached, board to world.
    boards: BTreeMap<usize, Isometry3<f64>>,
}

/// Chains poses outwards from the anchor, in rounds: every camera that sees a placed board
/// is placed, then every board a placed camera sees (T_cw = T_cb T_wb^-1,
/// T_wb = T_cw^-1 T_cb). Where several views offer a pose, the one that explains all of
/// them best is taken, so that one view's pose flipped by foreshortening does not carry
/// a camera, and every board chained through it, away. Returns each camera's world-to-camera
/// pose and each reached instant's board pose.
fn chain(
    board: &AprilGrid,
    cameras: &[Camera],
    per_pose: &BTreeMap<usize, Seen>,
    anchor: &Anchor,
) -> Chained {
    let mut cam_pose: Vec<Option<Isometry3<f64>>> = vec![None; cameras.len()];
    let mut board_pose: BTreeMap<usize, Isometry3<f64>> = BTreeMap::new();
    board_pose.insert(anchor.pose, anchor.world_from_board);
    let misfit = |c: usize, cw: &Isometry3<f64>, wb: &Isometry3<f64>, v: &BoardView| {
        misfit(board, &with_pose(&cameras[c], cw), wb, v).0
    };
    loop {
        let mut changed = false;
        for (c, placed) in cam_pose.iter_mut().enumerate() {
            if placed.is_some() {
                continue;
            }
            let mut known: Vec<(Isometry3<f64>, Isometry3<f64>, &BoardView)> = per_pose
                .iter()
                .filter_map(|(p, vs)| board_pose.get(p).map(|wb| (wb, vs)))
                .flat_map(|(wb, vs)| {
                    vs.iter()
                        .filter(|(o, _, _)| *o == c)
                        .map(move |(_, cb, v)| (*wb, *cb, *v))
                })
                .collect();
            known.sort_by_key(|(_, _, v)| std::cmp::Reverse(v.corners.len()));
            let best = known
                .iter()
                .take(CHAIN_CANDIDATES)
                .map(|(wb, cb, _)| cb * wb.inverse())
                .map(|cw| {
                    let e: f64 = known.iter().map(|(wb, _, v)| misfit(c, &cw, wb, v)).sum();
                    (e, cw)
                })
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((_, cw)) = best {
                *placed = Some(cw);
                changed = true;
            }
        }
        for (p, vs) in per_pose {
            if board_pose.contains_key(p) {
                continue;
            }
            let placed: Vec<(usize, Isometry3<f64>, Isometry3<f64>, &BoardView)> = vs
                .iter()
                .filter_map(|(c, cb, v)| cam_pose[*c].map(|cw| (*c, cw, *cb, *v)))
                .collect();
            let best = placed
                .iter()
                .map(|(_, cw, cb, _)| cw.inverse() * cb)
                .map(|wb| {
                    let e: f64 = placed
                        .iter()
                        .map(|(c, cw, _, v)| misfit(*c, cw, &wb, v))
                        .sum();
                    (e, wb)
                })
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((_, wb)) = best {
                board_pose.insert(*p, wb);
                changed = true;
            }
        }
        if !changed {
            return Chained {
                cameras: cam_pose,
                boards: board_pose,
            };
        }
    }
}

/// Every board corner of every chained instant's views, as the solve's observations.
fn observations(
    board: &AprilGrid,
    per_pose: &BTreeMap<usize, Seen>,
    index: &BTreeMap<usize, usize>,
) -> Vec<Observation> {
    let mut observations = Vec::new();
    for (p, vs) in per_pose {
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
    observations
}

/// What the solve moves: every camera's pose, every board pose but the anchor's, and the
/// intrinsics (each lens term as `settings` says) when they are refined with the rig.
fn free(cameras: &[Camera], instants: &[usize], anchor: &Anchor, settings: &Settings) -> Free {
    Free {
        intrinsics: vec![settings.refine_intrinsics; cameras.len()],
        k3: cameras
            .iter()
            .map(|c| settings.k3.moves(c.distortion.k3 != 0.0))
            .collect(),
        tangential: cameras
            .iter()
            .map(|c| {
                let d = c.distortion;
                settings.tangential.moves(d.p1 != 0.0 || d.p2 != 0.0)
            })
            .collect(),
        camera_poses: vec![true; cameras.len()],
        boards: instants.iter().map(|&p| p != anchor.pose).collect(),
    }
}

/// `problem` without the corners `state` puts behind their camera (they cannot be
/// linearised there).
fn without_corners_behind(
    problem: Reprojection,
    state: &State,
    free: &Free,
    huber_px: f64,
) -> Reprojection {
    let residuals = problem.residuals(state);
    if residuals.iter().all(Option::is_some) {
        return problem;
    }
    let kept: Vec<Observation> = problem
        .observations()
        .iter()
        .zip(&residuals)
        .filter(|(_, r)| r.is_some())
        .map(|(o, _)| *o)
        .collect();
    log::debug!(
        "extrinsics: {} corners left out, behind their camera at the start",
        residuals.len() - kept.len()
    );
    Reprojection::new(kept, free, huber_px)
}

/// Solves the rig from `state`. A board pose chained through one camera's foreshortened view
/// can settle in the wrong minimum; such an instant is posed again from the view of each
/// camera that saw it, the candidate that explains its corners best kept, and the solve
/// repeated, up to [`MAX_REPOSES`] times before the final, checked solve.
fn solve(
    board: &AprilGrid,
    problem: &mut Reprojection,
    state: State,
    per_pose: &BTreeMap<usize, Seen>,
    index: &BTreeMap<usize, usize>,
    anchor: &Anchor,
    settings: &Settings,
) -> Result<State, CalibrateError> {
    let mut state = solver_pass(problem, state, &settings.lm)?;
    for _ in 0..MAX_REPOSES {
        if !repose(board, &mut state, per_pose, index, anchor, settings) {
            break;
        }
        state = solver_pass(problem, state, &settings.lm)?;
    }
    solver("rig", "extrinsics", problem, state, &settings.lm)
}

/// Poses again every instant (but the anchor) whose corners the state explains worse than
/// `settings.max_rms_px`: the candidates are the instant's pose through each camera that saw
/// it; the one with the least squared error is kept when it beats the current pose. Returns
/// whether any moved.
fn repose(
    board: &AprilGrid,
    state: &mut State,
    per_pose: &BTreeMap<usize, Seen>,
    index: &BTreeMap<usize, usize>,
    anchor: &Anchor,
    settings: &Settings,
) -> bool {
    // The instant's RMS over every view of it, the board at `pose`.
    let error = |cameras: &[Camera], seen: &Seen, pose: &Isometry3<f64>| {
        let (sum, n) = seen.iter().fold((0.0, 0), |(s, n), (c, _, v)| {
            let (e, k) = misfit(board, &cameras[*c], pose, v);
            (s + e, n + k)
        });
        (sum / n.max(1) as f64).sqrt()
    };
    let mut moved = false;
    for (p, seen) in per_pose {
        let Some(&b) = index.get(p) else { continue };
        let now = error(&state.cameras, seen, &state.boards[b]);
        if *p == anchor.pose || now <= settings.max_rms_px {
            continue;
        }
        let mut best = (now, state.boards[b]);
        for (c, _, v) in seen {
            let Some(cb) = view_pose(board, &state.cameras[*c], v) else {
                continue;
            };
            let pose = camera_pose(&state.cameras[*c]).inverse() * cb;
            let e = error(&state.cameras, seen, &pose);
            if e < best.0 {
                best = (e, pose);
            }
        }
        if best.1 != state.boards[b] {
            state.boards[b] = best.1;
            moved = true;
        }
    }
    moved
}

/// The squared pixel error of view `v`'s corners seen by `camera` with the board at `wb`
/// (board to world), a corner behind the camera counting [`BEHIND_PX`]; and the corners.
fn misfit(board: &AprilGrid, camera: &Camera, wb: &Isometry3<f64>, v: &BoardView) -> (f64, usize) {
    v.corners
        .iter()
        .filter_map(|k| board.corner(k.id).map(|p| (p, k.pixel)))
        .fold((0.0, 0), |(sum, n), (p, px)| {
            let e = camera
                .project(&(wb * p))
                .map_or(BEHIND_PX * BEHIND_PX, |q| (q - px).norm_squared());
            (sum + e, n + 1)
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

/// Refuses a rig whose cameras fall apart into groups when only the pairs sharing `needed`
/// board instants or more count as tied: a camera chained to the rest through one or two
/// instants gets a pose that explains them to a fraction of a pixel and can still be
/// centimetres off. Names the camera outside the largest group with the most instants shared
/// with it, and the camera it shares them with.
fn check_ties(
    per_pose: &BTreeMap<usize, Seen>,
    cameras: usize,
    needed: usize,
    name: &dyn Fn(usize) -> String,
) -> Result<(), CalibrateError> {
    let mut shared = vec![vec![0usize; cameras]; cameras];
    for vs in per_pose.values() {
        for (i, (a, _, _)) in vs.iter().enumerate() {
            for (b, _, _) in &vs[i + 1..] {
                if a != b {
                    shared[*a][*b] += 1;
                    shared[*b][*a] += 1;
                }
            }
        }
    }
    // Groups of cameras tied by pairs that share enough instants; the largest is the rig.
    let mut ties = UnionFind::new(cameras);
    for (a, row) in shared.iter().enumerate() {
        for (b, &n) in row.iter().enumerate().skip(a + 1) {
            if n >= needed {
                ties.union(a, b);
            }
        }
    }
    let group = ties.into_labeling();
    let size = |g: usize| group.iter().filter(|&&x| x == g).count();
    let Some(rig) = group.iter().copied().max_by_key(|&g| size(g)) else {
        return Ok(());
    };
    let weakest = (0..cameras)
        .filter(|&c| group[c] != rig)
        .flat_map(|c| {
            (0..cameras)
                .filter(|&o| group[o] == rig)
                .map(move |o| (c, o))
        })
        .max_by_key(|&(c, o)| shared[c][o]);
    match weakest {
        Some((camera, other)) => Err(CalibrateError::WeaklyLinked {
            camera: name(camera),
            other: name(other),
            instants: shared[camera][other],
            needed,
        }),
        None => Ok(()),
    }
}
