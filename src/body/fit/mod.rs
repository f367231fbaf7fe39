//! Per-frame pose fit: Levenberg-Marquardt on the bone rotations and root translation, with
//! analytic world-frame Jacobians, robust confidence-weighted reprojection residuals over all
//! views, joint limits projected after every step, a temporal prior with a warm start from the
//! previous frames, and a one-off shape (phenotype) calibration per subject.
//!
//! ```text
//! frame 0:  triangulate -> rigid root init (Kabsch) -> LM on 3D points -> LM on 2D views
//! frame n:  constant-velocity prediction -> LM on 2D views with a temporal prior (2-3 steps)
//! ```

pub mod anny;
mod calibrate;
mod fitter;
mod jacobian;
pub mod lm;
mod problem;
mod residual;

pub use crate::body::model::kinematics::{KeypointRig, Posed};
pub use calibrate::{Calibration, ShapeModel};
pub use fitter::{FitOutput, PoseFitter, WARM_START_GAP_S};
pub use jacobian::retract;
pub use lm::{LevenbergMarquardt, Report, TerminationReason};
pub use residual::{residual_m, share_of_stature_pct};

use crate::body::limits::rom::RomError;
use crate::body::model::kinematics::RigError;
use crate::body::triangulate::{TriangulationConfig, TriangulationError};

/// Why a fit could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FitError {
    /// Inconsistent rig data.
    #[error("rig: {0}")]
    Rig(String),
    /// A pose with the wrong number of bone rotations.
    #[error("pose has {got} bone rotations, the rig has {expected} bones")]
    PoseSize {
        /// Bones in the rig.
        expected: usize,
        /// Rotations given.
        got: usize,
    },
    /// A setting out of range.
    #[error("fit setting `{field}` = {value}: expected {expected}")]
    BadSetting {
        /// The setting.
        field: &'static str,
        /// The value given.
        value: f64,
        /// What was expected.
        expected: &'static str,
    },
    /// Observations for a different number of views than cameras.
    #[error("{observations} views of observations for {cameras} cameras")]
    ViewCount {
        /// Cameras of the fitter.
        cameras: usize,
        /// Views given.
        observations: usize,
    },
    /// A bone index outside the rig, or a limit list of the wrong length.
    #[error("bone {index} is outside the rig of {bones} bones ({what})")]
    BadBone {
        /// The index.
        index: usize,
        /// Bones in the rig.
        bones: usize,
        /// Where it came from.
        what: &'static str,
    },
    /// The first frame of a track had too few triangulated keypoints to place the body.
    #[error("cannot initialise the pose: {points} keypoints triangulated, at least 3 needed")]
    NoInitialisation {
        /// Keypoints triangulated.
        points: usize,
    },
    /// The body model refused a request (for example a non-finite phenotype slider).
    #[error("body model: {0}")]
    Model(String),
    /// Shape calibration was given no frames.
    #[error("shape calibration needs at least one frame")]
    NoFrames,
    /// Triangulation failed.
    #[error(transparent)]
    Triangulation(#[from] TriangulationError),
    /// Default limits could not be built.
    #[error(transparent)]
    Limits(#[from] RomError),
}

impl From<RigError> for FitError {
    fn from(e: RigError) -> Self {
        match e {
            RigError::Invalid(what) => FitError::Rig(what),
            RigError::PoseSize { expected, got } => FitError::PoseSize { expected, got },
        }
    }
}

/// Fit settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitConfig {
    lm: LevenbergMarquardt,
    cold_iterations: usize,
    huber_px: f64,
    min_confidence: f64,
    temporal_weight: f64,
    temporal_translation_weight: f64,
    rest_weight: f64,
    point_weight: f64,
    triangulation: TriangulationConfig,
}

impl Default for FitConfig {
    fn default() -> Self {
        Self {
            lm: LevenbergMarquardt::default()
                .with_max_iterations(10)
                .and_then(|l| l.with_ftol(3e-2))
                .unwrap_or_default(),
            cold_iterations: 60,
            huber_px: 4.0,
            min_confidence: 0.2,
            temporal_weight: 60.0,
            temporal_translation_weight: 100.0,
            rest_weight: 1.0,
            point_weight: 250.0,
            triangulation: TriangulationConfig::default(),
        }
    }
}

fn positive(field: &'static str, v: f64) -> Result<f64, FitError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(FitError::BadSetting {
            field,
            value: v,
            expected: "a finite value > 0",
        })
    }
}

fn unit_interval(field: &'static str, v: f64) -> Result<f64, FitError> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(FitError::BadSetting {
            field,
            value: v,
            expected: "a value in [0, 1]",
        })
    }
}

/// Declares checked setters of `f64` settings: `with_x => x, check;` stores `check("x", v)?`.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident => $field:ident, $check:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, v: f64) -> Result<Self, FitError> {
                self.$field = $check(stringify!($field), v)?;
                Ok(self)
            }
        )*
    };
}

fn non_negative(field: &'static str, v: f64) -> Result<f64, FitError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(FitError::BadSetting {
            field,
            value: v,
            expected: "a finite value >= 0",
        })
    }
}

impl FitConfig {
    /// The solver used for warm-started frames (default: 10 iterations, ftol 3e-2).
    ///
    /// # Errors
    /// Never; present for symmetry with the other setters.
    pub fn with_solver(mut self, lm: LevenbergMarquardt) -> Result<Self, FitError> {
        self.lm = lm;
        Ok(self)
    }

    /// Iteration budget of each stage of a cold start (default 60).
    ///
    /// # Errors
    /// [`FitError::BadSetting`] when zero.
    pub fn with_cold_iterations(mut self, v: usize) -> Result<Self, FitError> {
        if v == 0 {
            return Err(FitError::BadSetting {
                field: "cold_iterations",
                value: 0.0,
                expected: "at least 1",
            });
        }
        self.cold_iterations = v;
        Ok(self)
    }

    setters! {
        /// Huber threshold in pixels (default 4): larger residuals count linearly.
        ///
        /// # Errors
        /// [`FitError::BadSetting`] unless positive.
        with_huber_px => huber_px, positive;
        /// Detections below this confidence are ignored (default 0.2).
        ///
        /// # Errors
        /// [`FitError::BadSetting`] outside [0, 1].
        with_min_confidence => min_confidence, unit_interval;
        /// Temporal prior weight, in pixels per radian of deviation from the prediction (default 60;
        /// 0 disables it).
        ///
        /// # Errors
        /// [`FitError::BadSetting`] when negative.
        with_temporal_weight => temporal_weight, non_negative;
        /// Temporal prior on the root translation, in pixels per metre (default 100).
        ///
        /// # Errors
        /// [`FitError::BadSetting`] when negative.
        with_temporal_translation_weight => temporal_translation_weight, non_negative;
        /// Weak prior towards the reference pose, in pixels per radian (default 1); it settles
        /// rotations the keypoints do not observe, such as twist bones.
        ///
        /// # Errors
        /// [`FitError::BadSetting`] when negative.
        with_rest_weight => rest_weight, non_negative;
        /// Weight of 3D residuals in the cold start, in pixels per metre (default 250).
        ///
        /// # Errors
        /// [`FitError::BadSetting`] unless positive.
        with_point_weight => point_weight, positive;
    }

    /// Triangulation settings used by the cold start.
    ///
    /// # Errors
    /// Never; present for symmetry with the other setters.
    pub fn with_triangulation(mut self, t: TriangulationConfig) -> Result<Self, FitError> {
        self.triangulation = t;
        Ok(self)
    }

    /// The warm-start solver.
    pub fn solver(&self) -> &LevenbergMarquardt {
        &self.lm
    }
}

#[cfg(test)]
mod tests;
