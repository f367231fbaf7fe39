//! Shape (phenotype) calibration over the first frames of a subject.
//!
//! Alternates a pose fit of every frame at the current shape with one damped Gauss-Newton step
//! on the shape parameters, poses held fixed, over the confidence-weighted reprojection
//! residuals of all frames. The shape Jacobian is taken by central differences: a shape has few
//! parameters (ANNY's six phenotype sliders) and is calibrated once per subject.

use nalgebra::{DMatrix, DVector};

use super::fitter::PoseFitter;
use super::FitError;
use crate::body::triangulate::Observation;
use crate::body::Pose;
use crate::body::{KeypointRig, Posed};

/// A body model whose rig depends on a few shape parameters.
pub trait ShapeModel {
    /// Number of shape parameters.
    fn shape_len(&self) -> usize;
    /// Allowed range of every shape parameter.
    fn shape_range(&self) -> (f64, f64);
    /// The shape to start from.
    fn default_shape(&self) -> Vec<f64>;
    /// The rig at `shape`.
    ///
    /// # Errors
    /// Whatever keeps the model from building the rig.
    fn rig(&self, shape: &[f64]) -> Result<KeypointRig, FitError>;
}

/// The outcome of a shape calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The calibrated shape parameters.
    pub shape: Vec<f64>,
    /// Mean reprojection error (pixels) over all frames before the first shape step.
    pub initial_error_px: f64,
    /// The same after the last round.
    pub final_error_px: f64,
    /// Rounds run.
    pub rounds: usize,
}

impl PoseFitter {
    /// Calibrates the subject's shape over `frames` (`frames[f][view][keypoint]`, consecutive
    /// frames of one subject) in `rounds` rounds, installs the calibrated rig and resets the
    /// tracking history.
    ///
    /// # Errors
    /// [`FitError::NoFrames`], or any error of the model or of the pose fit.
    pub fn calibrate_shape<M: ShapeModel>(
        &mut self,
        model: &M,
        frames: &[Vec<Vec<Option<Observation>>>],
        rounds: usize,
    ) -> Result<Calibration, FitError> {
        if frames.is_empty() {
            return Err(FitError::NoFrames);
        }
        let (lo, hi) = model.shape_range();
        let mut shape = model.default_shape();
        let mut initial = None;
        let mut last_error = f64::NAN;
        for _ in 0..rounds.max(1) {
            self.set_rig(model.rig(&shape)?)?;
            let poses = self.fit_each(frames)?;
            let r0 = self.residual_vector(self.rig(), &poses, frames)?;
            let err = mean_pixel_error(&r0);
            initial.get_or_insert(err);
            last_error = err;
            let n = shape.len();
            let mut jac = DMatrix::zeros(r0.len(), n);
            for i in 0..n {
                let h = 1e-4;
                let mut plus = shape.clone();
                let mut minus = shape.clone();
                plus[i] += h;
                minus[i] -= h;
                let rp = self.residual_vector(&model.rig(&plus)?, &poses, frames)?;
                let rm = self.residual_vector(&model.rig(&minus)?, &poses, frames)?;
                jac.set_column(i, &((rp - rm) / (2.0 * h)));
            }
            let jtj = jac.transpose() * &jac;
            let damping = 1e-3 * jtj.diagonal().max().max(1e-12);
            let a = jtj + DMatrix::identity(n, n) * damping;
            let Some(ch) = a.cholesky() else { break };
            let step = -ch.solve(&(jac.transpose() * &r0));
            let scale = (0.1 / step.amax().max(1e-12)).min(1.0);
            for (s, d) in shape.iter_mut().zip(step.iter()) {
                *s = (*s + d * scale).clamp(lo, hi);
            }
            log::debug!("shape calibration: error {err:.3} px, shape {shape:?}");
        }
        self.set_rig(model.rig(&shape)?)?;
        let poses = self.fit_each(frames)?;
        let final_error = mean_pixel_error(&self.residual_vector(self.rig(), &poses, frames)?);
        self.reset();
        Ok(Calibration {
            shape,
            initial_error_px: initial.unwrap_or(last_error),
            final_error_px: final_error,
            rounds: rounds.max(1),
        })
    }

    /// Fits every frame from scratch (calibration frames need not be consecutive).
    fn fit_each(
        &mut self,
        frames: &[Vec<Vec<Option<Observation>>>],
    ) -> Result<Vec<Pose>, FitError> {
        frames
            .iter()
            .map(|f| {
                self.reset();
                self.fit(f).map(|o| o.pose)
            })
            .collect()
    }

    /// Stacked `sqrt(confidence) * (projection - detection)` over frames, views and keypoints;
    /// a keypoint behind a camera contributes zeros so the layout never changes.
    fn residual_vector(
        &self,
        rig: &KeypointRig,
        poses: &[Pose],
        frames: &[Vec<Vec<Option<Observation>>>],
    ) -> Result<DVector<f64>, FitError> {
        let mut posed = Posed::default();
        let mut out = Vec::new();
        let min_conf = self.config().min_confidence;
        for (pose, frame) in poses.iter().zip(frames) {
            rig.forward(pose, &mut posed)?;
            for (cam, view) in self.cameras().iter().zip(frame) {
                for (obs, kp) in view.iter().zip(&posed.keypoints) {
                    let Some(obs) = obs.filter(|o| o.confidence >= min_conf) else {
                        continue;
                    };
                    let w = obs.confidence.sqrt();
                    match cam.project(kp) {
                        Some(px) => {
                            out.extend([(px.x - obs.pixel.x) * w, (px.y - obs.pixel.y) * w])
                        }
                        None => out.extend([0.0, 0.0]),
                    }
                }
            }
        }
        Ok(DVector::from_vec(out))
    }
}

fn mean_pixel_error(r: &DVector<f64>) -> f64 {
    let pairs = r.len() / 2;
    if pairs == 0 {
        return 0.0;
    }
    (0..pairs)
        .map(|i| (r[2 * i].powi(2) + r[2 * i + 1].powi(2)).sqrt())
        .sum::<f64>()
        / pairs as f64
}
