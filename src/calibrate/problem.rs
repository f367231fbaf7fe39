//! One reprojection problem for every calibration step: board corners seen by cameras, with
//! any of the cameras' intrinsics, the cameras' poses and the board's poses free.
//!
//! Intrinsic calibration frees one camera's intrinsics and every board pose; the bundle
//! adjustment frees the camera poses and all board poses but the anchor. The residual of a
//! corner is `project(C_c (B_b X)) - pixel`, `C_c` the camera's world-to-camera pose and `B_b`
//! the board's board-to-world pose. Poses move by left increments `[w, t]`:
//! `R <- exp(w) R`, `t <- t + dt`, so that `d(R x + t)/d[w, t] = [-(R x)^, I]`.
//! The loss is Huber's on the corner's pixel distance, solved by iteratively reweighted
//! least squares inside the fit's Levenberg-Marquardt ([`crate::body::fit::lm`]).

use nalgebra::{
    DMatrix, DVector, Isometry3, Matrix2x3, Matrix3, Matrix3x6, Point2, Point3, Rotation3, SMatrix,
    Translation3, UnitQuaternion, Vector2, Vector3,
};

use crate::body::fit::lm::Problem;
use crate::body::fit::FitError;
use crate::geom::{Camera, Distortion};

/// One corner seen by one camera while the board stood at one pose.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Index into the problem's cameras.
    pub camera: usize,
    /// Index into the problem's board poses.
    pub board: usize,
    /// The corner's id on the board.
    pub id: u32,
    /// The corner in the board frame (metres).
    pub point: Point3<f64>,
    /// Where the camera saw it (pixels).
    pub pixel: Point2<f64>,
}

/// The parameters: cameras (intrinsics and world-to-camera pose) and board-to-world poses.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// The cameras.
    pub cameras: Vec<Camera>,
    /// The board poses, board frame to world.
    pub boards: Vec<Isometry3<f64>>,
}

/// Which parameters move.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Free {
    /// Cameras whose intrinsics move.
    pub intrinsics: Vec<bool>,
    /// Of those, the cameras whose `k3` moves with the other eight (missing: it moves); the
    /// others hold it.
    pub k3: Vec<bool>,
    /// Of those, the cameras whose tangential terms `p1 p2` move (missing: they move); the
    /// others hold them.
    pub tangential: Vec<bool>,
    /// Cameras whose pose moves.
    pub camera_poses: Vec<bool>,
    /// Board poses that move.
    pub boards: Vec<bool>,
}

/// The least-squares problem over [`Observation`]s.
#[derive(Debug, Clone)]
pub struct Reprojection {
    observations: Vec<Observation>,
    huber_px: f64,
    /// Each camera's first intrinsic parameter and which of `fx fy cx cy k1 k2 p1 p2 k3` move,
    /// in that order.
    intrinsics_at: Vec<Option<(usize, Vec<usize>)>>,
    camera_pose_at: Vec<Option<usize>>,
    board_at: Vec<Option<usize>>,
    /// Parameters before the first board's: the cameras'.
    camera_dim: usize,
    dim: usize,
}

fn offsets(free: &[bool], width: usize, dim: &mut usize) -> Vec<Option<usize>> {
    free.iter()
        .map(|&f| {
            f.then(|| {
                *dim += width;
                *dim - width
            })
        })
        .collect()
}

/// `d(R x + t)/d[w, t]` for the left increment.
pub(crate) fn pose_jacobian(rotated: &Vector3<f64>) -> Matrix3x6<f64> {
    let mut j = Matrix3x6::zeros();
    j.fixed_view_mut::<3, 3>(0, 0)
        .copy_from(&(-rotated.cross_matrix()));
    j.fixed_view_mut::<3, 3>(0, 3)
        .copy_from(&Matrix3::identity());
    j
}

/// The pose moved by the left increment `d = [w, t]`.
pub fn retract(pose: &Isometry3<f64>, d: &[f64]) -> Isometry3<f64> {
    let w = Vector3::new(d[0], d[1], d[2]);
    let t = Vector3::new(d[3], d[4], d[5]);
    Isometry3::from_parts(
        Translation3::from(pose.translation.vector + t),
        UnitQuaternion::from_scaled_axis(w) * pose.rotation,
    )
}

/// The camera's world-to-camera pose.
pub fn camera_pose(c: &Camera) -> Isometry3<f64> {
    Isometry3::from_parts(
        Translation3::from(c.translation),
        UnitQuaternion::from_matrix(&c.rotation),
    )
}

/// The camera with its world-to-camera pose set to `pose`.
pub fn with_pose(c: &Camera, pose: &Isometry3<f64>) -> Camera {
    let mut out = *c;
    out.rotation = pose.rotation.to_rotation_matrix().into_inner();
    out.translation = pose.translation.vector;
    out
}

/// The camera with its intrinsics (`fx fy cx cy k1 k2 p1 p2 k3`) moved by `d`.
fn with_intrinsics_step(c: &Camera, d: &[f64; 9]) -> Camera {
    let mut out = *c;
    out.fx += d[0];
    out.fy += d[1];
    out.cx += d[2];
    out.cy += d[3];
    let k = c.distortion;
    out.distortion = Distortion {
        k1: k.k1 + d[4],
        k2: k.k2 + d[5],
        p1: k.p1 + d[6],
        p2: k.p2 + d[7],
        k3: k.k3 + d[8],
    };
    out
}

/// Huber's loss of a pixel distance squared, and its IRLS weight.
pub(crate) fn huber(e2: f64, delta: f64) -> (f64, f64) {
    let e = e2.sqrt();
    if e <= delta {
        (0.5 * e2, 1.0)
    } else {
        (delta * (e - 0.5 * delta), delta / e)
    }
}

impl Reprojection {
    /// A problem over `observations` with `free` parameters and a Huber threshold in pixels.
    pub fn new(observations: Vec<Observation>, free: &Free, huber_px: f64) -> Self {
        let mut dim = 0;
        let intrinsics_at = free
            .intrinsics
            .iter()
            .enumerate()
            .map(|(c, &f)| {
                f.then(|| {
                    let moves = |held: &[bool]| held.get(c).copied().unwrap_or(true);
                    let columns: Vec<usize> = (0..9)
                        .filter(|&i| match i {
                            6 | 7 => moves(&free.tangential),
                            8 => moves(&free.k3),
                            _ => true,
                        })
                        .collect();
                    dim += columns.len();
                    (dim - columns.len(), columns)
                })
            })
            .collect();
        let camera_pose_at = offsets(&free.camera_poses, 6, &mut dim);
        let camera_dim = dim;
        let board_at = offsets(&free.boards, 6, &mut dim);
        Self {
            observations,
            huber_px,
            intrinsics_at,
            camera_pose_at,
            board_at,
            camera_dim,
            dim,
        }
    }

    /// The observations.
    pub fn observations(&self) -> &[Observation] {
        &self.observations
    }

    /// The residual (pixels) of every observation; `None` for a corner behind its camera.
    pub fn residuals(&self, s: &State) -> Vec<Option<Vector2<f64>>> {
        self.observations
            .iter()
            .map(|o| {
                let cam = &s.cameras[o.camera];
                cam.project(&(s.boards[o.board] * o.point))
                    .map(|px| px - o.pixel)
            })
            .collect()
    }

    /// Root mean square of `residuals` (this problem's, in order) over the observations
    /// `keep` selects.
    pub fn rms_of(
        &self,
        residuals: &[Option<Vector2<f64>>],
        keep: impl Fn(&Observation) -> bool,
    ) -> f64 {
        super::rms_where(&self.observations, residuals, keep)
    }

    /// The residual of observation `i` and its non-zero Jacobian columns `(parameter, column)`.
    pub fn jacobian_row(
        &self,
        s: &State,
        i: usize,
        cols: &mut Vec<(usize, Vector2<f64>)>,
    ) -> Option<Vector2<f64>> {
        cols.clear();
        let o = &self.observations[i];
        let cam = &s.cameras[o.camera];
        let board = &s.boards[o.board];
        let rotated_board = board.rotation * o.point.coords;
        let world = rotated_board + board.translation.vector;
        let rotated_world = cam.rotation * world;
        let pc = rotated_world + cam.translation;
        let (px, jc): (Point2<f64>, Matrix2x3<f64>) = cam.project_camera_with_jacobian(&pc)?;
        let mut push = |at: Option<usize>, block: &[Vector2<f64>]| {
            if let Some(at) = at {
                cols.extend(block.iter().enumerate().map(|(k, c)| (at + k, *c)));
            }
        };
        if let Some((at, columns)) = &self.intrinsics_at[o.camera] {
            let ji = cam.intrinsics_jacobian(&pc)?;
            let block: Vec<_> = columns.iter().map(|&i| ji.column(i).into_owned()).collect();
            push(Some(*at), &block);
        }
        let jcam = jc * pose_jacobian(&rotated_world);
        let block: Vec<_> = jcam.column_iter().map(|c| c.into_owned()).collect();
        push(self.camera_pose_at[o.camera], &block);
        let jboard = jc * cam.rotation * pose_jacobian(&rotated_board);
        let block: Vec<_> = jboard.column_iter().map(|c| c.into_owned()).collect();
        push(self.board_at[o.board], &block);
        Some(px - o.pixel)
    }
}

impl Reprojection {
    /// The board poses' parameter blocks (start, size), past the cameras': no corner ties two
    /// of them, which is what [`schur_reduce`] needs.
    fn board_blocks(&self) -> Vec<(usize, usize)> {
        (self.camera_dim..self.dim)
            .step_by(6)
            .map(|at| (at, 6))
            .collect()
    }

    /// Each camera's covariance of `fx fy cx cy k1 k2 p1 p2 k3` (OpenCV's order) at the
    /// solution `s`, zero in the rows and columns of a term held: the inverse of the
    /// Gauss-Newton normal matrix reduced onto the cameras' parameters (the board poses
    /// marginalised out), scaled by the noise variance the residuals leave. `None` when the
    /// parameters are not determined (a singular system) or no camera's intrinsics move.
    ///
    /// This is how far the views pin each term, not how far it is from the truth: a biased
    /// corner detector or a lens the model cannot hold stays invisible to it.
    pub fn intrinsics_covariance(&mut self, s: &State) -> Option<Vec<SMatrix<f64, 9, 9>>> {
        let (dim, nc) = (self.dim, self.camera_dim);
        if nc == 0 || self.intrinsics_at.iter().all(Option::is_none) {
            return None;
        }
        let (mut jtj, mut jtr) = (DMatrix::zeros(dim, dim), DVector::zeros(dim));
        self.linearize(s, &mut jtj, &mut jtr)
            .ok()
            .filter(|c| c.is_finite())?;
        let (reduced, _) = schur_reduce(&jtj, nc, &self.board_blocks())?;
        let inverse = reduced.cholesky()?.inverse();
        let squares: f64 = self
            .residuals(s)
            .iter()
            .map(|r| r.map_or(0.0, |r| r.norm_squared()))
            .sum();
        let dof = (2 * self.observations.len()).saturating_sub(dim).max(1);
        let variance = squares / dof as f64;
        Some(
            self.intrinsics_at
                .iter()
                .map(|at| {
                    let mut c = SMatrix::<f64, 9, 9>::zeros();
                    if let Some((at, columns)) = at {
                        for (k, &i) in columns.iter().enumerate() {
                            for (l, &j) in columns.iter().enumerate() {
                                c[(i, j)] = variance * inverse[(at + k, at + l)];
                            }
                        }
                    }
                    c
                })
                .collect(),
        )
    }
}

impl Problem for Reprojection {
    type State = State;

    fn dim(&self) -> usize {
        self.dim
    }

    fn linearize(
        &mut self,
        s: &State,
        jtj: &mut DMatrix<f64>,
        jtr: &mut DVector<f64>,
    ) -> Result<f64, FitError> {
        jtj.fill(0.0);
        jtr.fill(0.0);
        let mut cost = 0.0;
        let mut cols = Vec::with_capacity(27);
        for i in 0..self.observations.len() {
            let Some(r) = self.jacobian_row(s, i, &mut cols) else {
                return Ok(f64::INFINITY);
            };
            let (rho, w) = huber(r.norm_squared(), self.huber_px);
            cost += rho;
            for &(a, ja) in &cols {
                jtr[a] += w * ja.dot(&r);
                for &(b, jb) in &cols {
                    jtj[(a, b)] += w * ja.dot(&jb);
                }
            }
        }
        Ok(cost)
    }

    fn cost(&mut self, s: &State) -> Result<f64, FitError> {
        if s.cameras.iter().any(|c| c.check().is_err()) {
            return Ok(f64::INFINITY);
        }
        Ok(self
            .residuals(s)
            .iter()
            .map(|r| r.map_or(f64::INFINITY, |r| huber(r.norm_squared(), self.huber_px).0))
            .sum())
    }

    /// The Schur complement on the board poses: no observation ties two boards, so each
    /// board's 6 x 6 block stands alone (`schur_solve`).
    fn solve(&self, a: &DMatrix<f64>, b: &mut DVector<f64>) -> bool {
        schur_solve(a, b, self.camera_dim, &self.board_blocks())
    }

    fn step(&self, s: &State, delta: &[f64]) -> State {
        let mut out = s.clone();
        for (c, cam) in out.cameras.iter_mut().enumerate() {
            if let Some((at, columns)) = &self.intrinsics_at[c] {
                let mut d = [0.0; 9];
                for (k, &i) in columns.iter().enumerate() {
                    d[i] = delta[at + k];
                }
                *cam = with_intrinsics_step(cam, &d);
            }
            if let Some(at) = self.camera_pose_at[c] {
                *cam = with_pose(cam, &retract(&camera_pose(cam), &delta[at..at + 6]));
            }
        }
        for (b, pose) in out.boards.iter_mut().enumerate() {
            if let Some(at) = self.board_at[b] {
                *pose = retract(pose, &delta[at..at + 6]);
            }
        }
        out
    }
}

/// The reduced system of `a` on its first `nc` parameters, `S = U - sum W_k V_k^-1 W_k^T`,
/// when the parameters past them fall in `blocks` (start, size) that no entry of `a` ties to
/// one another, with each block's inverse `V_k^-1`; `None` when a block is not positive
/// definite.
fn schur_reduce(
    a: &DMatrix<f64>,
    nc: usize,
    blocks: &[(usize, usize)],
) -> Option<(DMatrix<f64>, Vec<DMatrix<f64>>)> {
    let mut s = a.view((0, 0), (nc, nc)).into_owned();
    let mut inverses = Vec::with_capacity(blocks.len());
    for &(at, size) in blocks {
        let vi = a
            .view((at, at), (size, size))
            .into_owned()
            .cholesky()?
            .inverse();
        let w = a.view((0, at), (nc, size));
        s -= w * &vi * w.transpose();
        inverses.push(vi);
    }
    Some((s, inverses))
}

/// Solves `a x = b` in place of `b` through [`schur_reduce`]: the first `nc` parameters'
/// reduced system is factored, and the blocks follow by back-substitution. Hundreds of blocks
/// then cost what the first `nc` parameters cost, not the cube of all. `false` when a block
/// or `S` is not positive definite.
pub(crate) fn schur_solve(
    a: &DMatrix<f64>,
    b: &mut DVector<f64>,
    nc: usize,
    blocks: &[(usize, usize)],
) -> bool {
    let Some((s, inverses)) = schur_reduce(a, nc, blocks) else {
        return false;
    };
    let mut rc = b.rows(0, nc).into_owned();
    for (&(at, size), vi) in blocks.iter().zip(&inverses) {
        rc -= a.view((0, at), (nc, size)) * vi * b.rows(at, size);
    }
    let Some(ch) = s.cholesky() else {
        return false;
    };
    ch.solve_mut(&mut rc);
    for (&(at, size), vi) in blocks.iter().zip(&inverses) {
        let rb = b.rows(at, size) - a.view((0, at), (nc, size)).tr_mul(&rc);
        b.rows_mut(at, size).copy_from(&(vi * rb));
    }
    b.rows_mut(0, nc).copy_from(&rc);
    true
}

/// The rotation nearest (in Frobenius norm) to a 3x3 matrix.
pub fn nearest_rotation(m: &Matrix3<f64>) -> Rotation3<f64> {
    let svd = m.svd(true, true);
    let (Some(u), Some(vt)) = (svd.u, svd.v_t) else {
        return Rotation3::identity();
    };
    let mut d = Matrix3::identity();
    if (u * vt).determinant() < 0.0 {
        d[(2, 2)] = -1.0;
    }
    Rotation3::from_matrix_unchecked(u * d * vt)
}
