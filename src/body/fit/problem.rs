//! The per-frame pose problem: robust, confidence-weighted reprojection residuals over all
//! views (or 3D residuals to triangulated points), a temporal prior and a weak rest prior,
//! with the joint limits applied to every step.

use nalgebra::{DMatrix, DVector, Matrix3, Matrix3x1, Point3, UnitQuaternion, Vector3};

use super::jacobian::retract;
use super::lm::Problem;
use super::{FitConfig, FitError};
use crate::body::limits::JointLimit;
use crate::body::triangulate::Observation;
use crate::body::Pose;
use crate::body::{KeypointRig, Posed};
use crate::geom::Camera;

/// What the residuals of one solve compare the model keypoints against.
pub(crate) enum Target<'a> {
    /// 2D detections, `observations[view][keypoint]`.
    Views(&'a [Camera], &'a [Vec<Option<Observation>>]),
    /// 3D points with confidences.
    Points(&'a [Option<(Point3<f64>, f64)>]),
}

/// One frame's problem over the active bones.
pub(crate) struct FrameProblem<'a> {
    pub rig: &'a KeypointRig,
    pub limits: &'a [Option<JointLimit>],
    pub active: &'a [usize],
    pub slot_of: &'a [Option<usize>],
    pub target: Target<'a>,
    /// Pose the temporal prior pulls towards (the constant-velocity prediction).
    pub prior: Option<&'a Pose>,
    pub config: &'a FitConfig,
    pub posed: Posed,
    scratch: Posed,
    rows2: Vec<(usize, nalgebra::Matrix2x3<f64>)>,
    pub blocks: Vec<Vec<(usize, Matrix3<f64>)>>,
}

/// Huber: cost and IRLS weight for a residual of norm `s` with threshold `delta`.
fn huber(s: f64, delta: f64) -> (f64, f64) {
    if s <= delta {
        (0.5 * s * s, 1.0)
    } else {
        (delta * (s - 0.5 * delta), delta / s)
    }
}

fn log_map(q: &UnitQuaternion<f64>) -> Vector3<f64> {
    q.scaled_axis()
}

impl FrameProblem<'_> {
    pub fn new<'a>(
        rig: &'a KeypointRig,
        limits: &'a [Option<JointLimit>],
        active: &'a [usize],
        slot_of: &'a [Option<usize>],
        target: Target<'a>,
        prior: Option<&'a Pose>,
        config: &'a FitConfig,
    ) -> FrameProblem<'a> {
        FrameProblem {
            rig,
            limits,
            active,
            slot_of,
            target,
            prior,
            config,
            posed: Posed::default(),
            scratch: Posed::default(),
            rows2: Vec::new(),
            blocks: vec![Vec::new(); rig.keypoints()],
        }
    }

    /// Evaluates the cost at `pose`; when `normal` is given, also the normal equations.
    fn evaluate(
        &mut self,
        pose: &Pose,
        mut normal: Option<(&mut DMatrix<f64>, &mut DVector<f64>)>,
    ) -> Result<f64, FitError> {
        self.rig.forward(pose, &mut self.posed)?;
        if let Some((jtj, jtr)) = normal.as_mut() {
            jtj.fill(0.0);
            jtr.fill(0.0);
            self.rig
                .keypoint_jacobian(&self.posed, self.slot_of, &mut self.blocks);
        }
        let cfg = self.config;
        let mut cost = 0.0;
        match self.target {
            Target::Views(cameras, observations) => {
                for (cam, view) in cameras.iter().zip(observations) {
                    for (k, obs) in view.iter().enumerate().take(self.rig.keypoints()) {
                        let Some(obs) = obs.filter(|o| o.confidence >= cfg.min_confidence) else {
                            continue;
                        };
                        let Some((px, jp)) = cam.project_with_jacobian(&self.posed.keypoints[k])
                        else {
                            continue;
                        };
                        let e = px - obs.pixel;
                        let (rho, w) = huber(e.norm(), cfg.huber_px);
                        cost += obs.confidence * rho;
                        if let Some((jtj, jtr)) = normal.as_mut() {
                            let w = obs.confidence * w;
                            self.rows2.clear();
                            self.rows2
                                .extend(self.blocks[k].iter().map(|(s, m)| (*s, jp * m)));
                            accumulate(jtj, jtr, &self.rows2, &e, w);
                        }
                    }
                }
            }
            Target::Points(points) => {
                let scale = cfg.point_weight;
                for (k, p) in points.iter().enumerate().take(self.rig.keypoints()) {
                    let Some((p, conf)) = p else { continue };
                    let e = (self.posed.keypoints[k] - p) * scale;
                    let (rho, w) = huber(e.norm(), cfg.huber_px);
                    cost += conf * rho;
                    if let Some((jtj, jtr)) = normal.as_mut() {
                        let rows: Vec<(usize, Matrix3<f64>)> = self.blocks[k]
                            .iter()
                            .map(|(s, m)| (*s, m * scale))
                            .collect();
                        accumulate(jtj, jtr, &rows, &e, conf * w);
                    }
                }
            }
        }
        // Priors on the active bones: towards the prediction (temporal) and the reference pose.
        for (s, &i) in self.active.iter().enumerate() {
            let ep_t = match self.rig.parents()[i] {
                Some(p) => self.posed.frames[p].transpose(),
                None => Matrix3::identity(),
            };
            let d = &pose.rotations[i];
            let temporal = self.prior.map(|prior| {
                (
                    cfg.temporal_weight,
                    log_map(&(d * prior.rotations[i].inverse())),
                )
            });
            let rest = self.rig.parents()[i].map(|_| (cfg.rest_weight, log_map(d)));
            let terms = temporal.into_iter().chain(rest);
            for (weight, e) in terms {
                let e = e * weight;
                cost += 0.5 * e.norm_squared();
                if let Some((jtj, jtr)) = normal.as_mut() {
                    let j = ep_t * weight;
                    let o = 3 + 3 * s;
                    let mut blk = jtj.fixed_view_mut::<3, 3>(o, o);
                    blk += j.transpose() * j;
                    let mut g = jtr.fixed_view_mut::<3, 1>(o, 0);
                    g += j.transpose() * e;
                }
            }
        }
        if let Some(prior) = self.prior {
            let e = (pose.translation - prior.translation) * cfg.temporal_translation_weight;
            cost += 0.5 * e.norm_squared();
            if let Some((jtj, jtr)) = normal.as_mut() {
                let w = cfg.temporal_translation_weight;
                let mut blk = jtj.fixed_view_mut::<3, 3>(0, 0);
                blk += Matrix3::identity() * (w * w);
                let mut g = jtr.fixed_view_mut::<3, 1>(0, 0);
                g += e * w;
            }
        }
        if let Some((jtj, _)) = normal.as_mut() {
            jtj.fill_lower_triangle_with_upper_triangle();
        }
        Ok(cost)
    }
}

/// The local turn `E_p^T exp(w) E_p` of bone `i` for a world-frame increment `w`.
fn single_step(
    rig: &KeypointRig,
    posed: &Posed,
    i: usize,
    w: &Vector3<f64>,
) -> UnitQuaternion<f64> {
    let turn = UnitQuaternion::from_scaled_axis(*w);
    match rig.parents()[i] {
        Some(p) => {
            let ep = UnitQuaternion::from_rotation_matrix(
                &nalgebra::Rotation3::from_matrix_unchecked(posed.frames[p]),
            );
            ep.inverse() * turn * ep
        }
        None => turn,
    }
}

/// Adds `w * rows^T rows` (upper triangle) and `w * rows^T e` for one residual.
fn accumulate<const R: usize>(
    jtj: &mut DMatrix<f64>,
    jtr: &mut DVector<f64>,
    rows: &[(usize, nalgebra::SMatrix<f64, R, 3>)],
    e: &nalgebra::SVector<f64, R>,
    w: f64,
) {
    for (a, ma) in rows {
        let ga: Matrix3x1<f64> = ma.transpose() * e * w;
        let mut g = jtr.fixed_view_mut::<3, 1>(3 * a, 0);
        g += ga;
        for (b, mb) in rows {
            if b < a {
                continue;
            }
            let mut blk = jtj.fixed_view_mut::<3, 3>(3 * a, 3 * b);
            blk += ma.transpose() * mb * w;
        }
    }
}

impl Problem for FrameProblem<'_> {
    type State = Pose;

    fn dim(&self) -> usize {
        3 + 3 * self.active.len()
    }

    fn linearize(
        &mut self,
        state: &Pose,
        jtj: &mut DMatrix<f64>,
        jtr: &mut DVector<f64>,
    ) -> Result<f64, FitError> {
        self.evaluate(state, Some((jtj, jtr)))
    }

    fn cost(&mut self, state: &Pose) -> Result<f64, FitError> {
        // Keep the linearisation point's frames for the next step.
        std::mem::swap(&mut self.posed, &mut self.scratch);
        let cost = self.evaluate(state, None);
        std::mem::swap(&mut self.posed, &mut self.scratch);
        cost
    }

    fn blocked(&self, state: &Pose, delta: &[f64], out: &mut Vec<usize>) {
        for (s, &i) in self.active.iter().enumerate() {
            let Some(limit) = &self.limits[i] else {
                continue;
            };
            let w = Vector3::new(delta[3 + 3 * s], delta[4 + 3 * s], delta[5 + 3 * s]);
            let q = state.rotations[i];
            let moved = single_step(self.rig, &self.posed, i, &w) * q;
            let wanted = moved.angle_to(&q);
            let undone = limit
                .clamp(&moved)
                .is_ok_and(|c| c.angle_to(&q) < 0.25 * wanted);
            if wanted > 1e-12 && undone {
                out.extend(3 + 3 * s..6 + 3 * s);
            }
        }
    }

    fn step(&self, state: &Pose, delta: &[f64]) -> Pose {
        let mut next = state.clone();
        retract(self.rig, &self.posed, &mut next, self.active, delta);
        for &i in self.active {
            // The chain runs on every step. A non-finite rotation (from a non-finite step) is
            // refused by the limit and left as it is; its cost is not finite, so the solver
            // rejects the step.
            if let Some(Ok(held)) = self.limits[i].as_ref().map(|l| l.clamp(&next.rotations[i])) {
                next.rotations[i] = held;
            }
        }
        next
    }
}
