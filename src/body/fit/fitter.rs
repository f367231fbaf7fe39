//! The per-subject pose tracker: cold start, warm start and outputs.

use nalgebra::{Isometry3, Matrix3, Point3, Rotation3, Translation3, UnitQuaternion, Vector3};

use super::lm::Report;
use super::problem::{FrameProblem, Target};
use super::{FitConfig, FitError};
use crate::body::limits::JointLimit;
use crate::body::triangulate::{triangulate, Observation};
use crate::body::Pose;
use crate::body::{KeypointRig, Posed};
use crate::geom::Camera;

/// Produces mesh vertices for a pose (for example the full ANNY forward), when wanted.
pub type VertexFn = dyn Fn(&Pose) -> Option<Vec<Point3<f64>>> + Send + Sync;

/// One frame's fit.
#[derive(Debug, Clone, PartialEq)]
pub struct FitOutput {
    /// The fitted pose.
    pub pose: Pose,
    /// The 3D keypoints of the fitted pose.
    pub keypoints: Vec<Point3<f64>>,
    /// World transform of every bone (its posed frame and head).
    pub joints: Vec<Isometry3<f64>>,
    /// Mesh vertices, when a vertex function is set.
    pub vertices: Option<Vec<Point3<f64>>>,
    /// Reprojection error in pixels, `[view][keypoint]`, where the keypoint was observed.
    pub residuals: Vec<Vec<Option<f64>>>,
    /// The fit residual, metres ([`super::residual_m`]): RMS reprojection error back-projected
    /// at each keypoint's depth, over the observations the fit used.
    pub residual_m: Option<f64>,
    /// What the solver did (both stages summed on a cold start).
    pub report: Report,
    /// Whether this frame was fitted from scratch (no previous frame).
    pub cold_start: bool,
}

/// Longest gap, s, between two frames over which a fit still warm-starts from
/// the previous pose: a body moves too far in longer gaps (at a brisk walk,
/// limbs travel tens of centimetres in a quarter of a second) for the
/// previous pose to sit in the basin of the right one.
pub const WARM_START_GAP_S: f64 = 0.25;

/// Fits a rig to multi-view keypoints frame after frame.
pub struct PoseFitter {
    rig: KeypointRig,
    limits: Vec<Option<JointLimit>>,
    active: Vec<usize>,
    slot_of: Vec<Option<usize>>,
    cameras: Vec<Camera>,
    config: FitConfig,
    history: [Option<Pose>; 2],
    /// Times of the poses in `history`, s (frames fitted through [`Self::fit_at`]).
    history_s: [Option<f64>; 2],
    vertices: Option<Box<VertexFn>>,
    posed: Posed,
}

impl std::fmt::Debug for PoseFitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoseFitter")
            .field("bones", &self.rig.bones())
            .field("active", &self.active)
            .field("cameras", &self.cameras.len())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PoseFitter {
    /// A fitter of `rig` seen by `cameras`, optimising the bones in `active` (the root, if
    /// listed, also turns the whole body; the root translation is always fitted) and holding
    /// each bone in `limits[bone]`.
    ///
    /// # Errors
    /// [`FitError::BadBone`] for an active bone outside the rig or a limit list of the wrong
    /// length.
    pub fn new(
        rig: KeypointRig,
        limits: Vec<Option<JointLimit>>,
        active: Vec<usize>,
        cameras: Vec<Camera>,
        config: FitConfig,
    ) -> Result<Self, FitError> {
        let bones = rig.bones();
        if limits.len() != bones {
            return Err(FitError::BadBone {
                index: limits.len(),
                bones,
                what: "length of the limit list",
            });
        }
        let mut slot_of = vec![None; bones];
        for (s, &i) in active.iter().enumerate() {
            if i >= bones {
                return Err(FitError::BadBone {
                    index: i,
                    bones,
                    what: "active bone",
                });
            }
            slot_of[i] = Some(s);
        }
        Ok(Self {
            rig,
            limits,
            active,
            slot_of,
            cameras,
            config,
            history: [None, None],
            history_s: [None, None],
            vertices: None,
            posed: Posed::default(),
        })
    }

    /// Sets (or, with `None`, clears) the function that turns a fitted pose into mesh
    /// vertices; without one, [`FitOutput::vertices`] is `None` and costs nothing.
    pub fn set_vertex_fn(&mut self, f: Option<Box<VertexFn>>) {
        self.vertices = f;
    }

    /// Whether fitted frames carry mesh vertices.
    pub fn has_vertex_fn(&self) -> bool {
        self.vertices.is_some()
    }

    /// Forgets the previous frames: the next frame is a cold start.
    pub fn reset(&mut self) {
        self.history = [None, None];
        self.history_s = [None, None];
    }

    /// Fits one frame captured at `time_s` (seconds on any steady clock).
    ///
    /// Unlike [`Self::fit`], which takes frames as evenly spaced, this knows
    /// when frames were dropped: after a gap longer than [`WARM_START_GAP_S`]
    /// (or a step back in time) the previous pose is too stale to start from
    /// and the frame is a cold start; when the last two gaps differ by more
    /// than a factor of two, the constant-velocity prediction would
    /// extrapolate the wrong distance, so the frame starts from the last pose
    /// alone.
    ///
    /// # Errors
    /// As [`Self::fit`].
    pub fn fit_at(
        &mut self,
        observations: &[Vec<Option<Observation>>],
        time_s: f64,
    ) -> Result<FitOutput, FitError> {
        match self.history_s {
            [Some(last), _] if !(time_s - last <= WARM_START_GAP_S && time_s > last) => {
                self.reset();
            }
            [Some(last), Some(before)] => {
                let ratio = (time_s - last) / (last - before);
                if !(0.5..=2.0).contains(&ratio) {
                    self.history[1] = None;
                }
            }
            _ => {}
        }
        let before = self.history_s[0];
        let out = self.fit(observations)?;
        self.history_s = [Some(time_s), before];
        Ok(out)
    }

    /// The rig being fitted.
    pub fn rig(&self) -> &KeypointRig {
        &self.rig
    }

    /// Replaces the rig (after a shape calibration); keeps limits and history.
    ///
    /// # Errors
    /// [`FitError::BadBone`] when the new rig has a different number of bones.
    pub fn set_rig(&mut self, rig: KeypointRig) -> Result<(), FitError> {
        if rig.bones() != self.rig.bones() {
            return Err(FitError::BadBone {
                index: rig.bones(),
                bones: self.rig.bones(),
                what: "bones of the new rig",
            });
        }
        self.rig = rig;
        Ok(())
    }

    /// The cameras.
    pub fn cameras(&self) -> &[Camera] {
        &self.cameras
    }

    /// The settings.
    pub fn config(&self) -> &FitConfig {
        &self.config
    }

    /// Fits one frame of detections, `observations[view][keypoint]`.
    ///
    /// # Errors
    /// [`FitError::ViewCount`], [`FitError::NoInitialisation`] on a cold start with fewer than
    /// three triangulated keypoints, or a triangulation error.
    pub fn fit(
        &mut self,
        observations: &[Vec<Option<Observation>>],
    ) -> Result<FitOutput, FitError> {
        if observations.len() != self.cameras.len() {
            return Err(FitError::ViewCount {
                cameras: self.cameras.len(),
                observations: observations.len(),
            });
        }
        let (pose, report, cold) = match &self.history {
            [Some(last), before] => {
                let prediction = self.predict(last, before.as_ref());
                let lm = self.config.lm;
                let mut problem = self.problem(
                    Target::Views(&self.cameras, observations),
                    Some(&prediction),
                );
                let (pose, report) = lm.minimize(&mut problem, prediction.clone())?;
                (pose, report, false)
            }
            [None, _] => {
                let (pose, report) = self.cold_start(observations)?;
                (pose, report, true)
            }
        };
        self.history = [Some(pose.clone()), self.history[0].take()];
        // A frame fitted without a time makes the times of the history unknown.
        self.history_s = [None, None];
        self.output(pose, report, cold, observations)
    }

    /// The fit problem of this fitter's rig, limits and settings for `target`, with an optional
    /// temporal prior.
    fn problem<'a>(&'a self, target: Target<'a>, prior: Option<&'a Pose>) -> FrameProblem<'a> {
        FrameProblem::new(
            &self.rig,
            &self.limits,
            &self.active,
            &self.slot_of,
            target,
            prior,
            &self.config,
        )
    }

    /// Constant-velocity prediction from the last two poses, held in the limits.
    fn predict(&self, last: &Pose, before: Option<&Pose>) -> Pose {
        let Some(before) = before else {
            return last.clone();
        };
        let mut p = last.clone();
        p.translation = last.translation * 2.0 - before.translation;
        for (i, (r, b)) in p.rotations.iter_mut().zip(&before.rotations).enumerate() {
            *r = UnitQuaternion::new_normalize(((*r * b.inverse()) * *r).into_inner());
            // A non-finite prediction is refused by the limit and left as it is; the fit's
            // cost at it is not finite, so the solver never accepts it.
            if let Some(Ok(held)) = self.limits[i].as_ref().map(|l| l.clamp(r)) {
                *r = held;
            }
        }
        p
    }

    fn cold_start(
        &mut self,
        observations: &[Vec<Option<Observation>>],
    ) -> Result<(Pose, Report), FitError> {
        let tri = triangulate(&self.cameras, observations, &self.config.triangulation)?;
        let points: Vec<Option<(Point3<f64>, f64)>> = tri
            .iter()
            .map(|t| t.map(|t| (t.point, t.confidence.max(1e-3))))
            .collect();
        let start = self.rigid_start(&points)?;
        let lm = self
            .config
            .lm
            .with_max_iterations(self.config.cold_iterations)
            .and_then(|l| l.with_ftol(1e-4))?;
        let mut stage1 = self.problem(Target::Points(&points), None);
        let (pose, r1) = lm.minimize(&mut stage1, start)?;
        let mut stage2 = self.problem(Target::Views(&self.cameras, observations), None);
        let (pose, mut r2) = lm.minimize(&mut stage2, pose)?;
        log::debug!("cold start: 3D stage {r1:?}, 2D stage {r2:?}");
        r2.iterations += r1.iterations;
        r2.evaluations += r1.evaluations;
        Ok((pose, r2))
    }

    /// The reference pose turned and moved rigidly onto the triangulated points (Kabsch).
    fn rigid_start(&mut self, points: &[Option<(Point3<f64>, f64)>]) -> Result<Pose, FitError> {
        let mut pose = Pose::identity(self.rig.bones());
        self.rig.forward(&pose, &mut self.posed)?;
        let pairs: Vec<(Point3<f64>, Point3<f64>, f64)> = points
            .iter()
            .zip(&self.posed.keypoints)
            .filter_map(|(p, m)| p.map(|(p, w)| (*m, p, w)))
            .collect();
        if pairs.len() < 3 {
            return Err(FitError::NoInitialisation {
                points: pairs.len(),
            });
        }
        let total: f64 = pairs.iter().map(|p| p.2).sum();
        let cm = pairs.iter().map(|p| p.0.coords * p.2).sum::<Vector3<f64>>() / total;
        let cp = pairs.iter().map(|p| p.1.coords * p.2).sum::<Vector3<f64>>() / total;
        let h: Matrix3<f64> = pairs
            .iter()
            .map(|p| (p.1.coords - cp) * (p.0.coords - cm).transpose() * p.2)
            .sum();
        let svd = h.svd(true, true);
        let (Some(u), Some(vt)) = (svd.u, svd.v_t) else {
            return Err(FitError::NoInitialisation {
                points: pairs.len(),
            });
        };
        let mut s = Matrix3::identity();
        if (u * vt).determinant() < 0.0 {
            s[(2, 2)] = -1.0;
        }
        let rot = Rotation3::from_matrix_unchecked(u * s * vt);
        // The root turns about its head, which the reference pose puts at the origin.
        pose.rotations[0] = UnitQuaternion::from_rotation_matrix(&rot);
        pose.translation = cp - rot * cm;
        Ok(pose)
    }

    fn output(
        &mut self,
        pose: Pose,
        report: Report,
        cold_start: bool,
        observations: &[Vec<Option<Observation>>],
    ) -> Result<FitOutput, FitError> {
        self.rig.forward(&pose, &mut self.posed)?;
        let joints = (0..self.rig.bones())
            .map(|j| {
                let rot =
                    UnitQuaternion::from_rotation_matrix(&self.posed.bone_rotation(&self.rig, j));
                Isometry3::from_parts(Translation3::from(self.posed.heads[j].coords), rot)
            })
            .collect();
        let residuals = self
            .cameras
            .iter()
            .zip(observations)
            .map(|(cam, view)| {
                view.iter()
                    .zip(&self.posed.keypoints)
                    .map(|(o, kp)| {
                        let o = o.as_ref()?;
                        Some((cam.project(kp)? - o.pixel).norm())
                    })
                    .collect()
            })
            .collect();
        let vertices = self.vertices.as_ref().and_then(|f| f(&pose));
        let residual_m = super::residual_m(
            &self.cameras,
            observations,
            &self.posed.keypoints,
            self.config.min_confidence,
        );
        Ok(FitOutput {
            keypoints: self.posed.keypoints.clone(),
            pose,
            joints,
            vertices,
            residuals,
            residual_m,
            report,
            cold_start,
        })
    }
}
