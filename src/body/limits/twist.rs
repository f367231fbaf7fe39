//! Twist about the bone axis: the swing-twist split and the allowed twist range.

use std::f64::consts::PI;

use nalgebra::{Quaternion, UnitQuaternion, UnitVector3};

use super::LimitError;

/// Splits `q` into `swing * twist(angle)`: the twist is the rotation about `axis` by `angle`
/// (in (-pi, pi]) and the swing has no component about `axis`, so it is the shortest arc from
/// `axis` to `q * axis`.
pub fn swing_twist(q: &UnitQuaternion<f64>, axis: &UnitVector3<f64>) -> (UnitQuaternion<f64>, f64) {
    let v = q.imag();
    let along = v.dot(axis);
    let w = q.w;
    if along.abs() < 1e-15 && w.abs() < 1e-15 {
        // A half-turn about an axis perpendicular to `axis`: all swing, no twist.
        return (*q, 0.0);
    }
    let mut angle = 2.0 * along.atan2(w);
    if angle > PI {
        angle -= 2.0 * PI;
    } else if angle <= -PI {
        angle += 2.0 * PI;
    }
    let twist = UnitQuaternion::new_normalize(Quaternion::from_parts(w, axis.into_inner() * along));
    (q * twist.inverse(), angle)
}

/// An allowed range of twist angles `[min, max]` in radians, within [-pi, pi].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TwistRange {
    min: f64,
    max: f64,
}

impl Default for TwistRange {
    /// The full circle: no twist limit.
    fn default() -> Self {
        Self { min: -PI, max: PI }
    }
}

impl TwistRange {
    /// The range `[min, max]`.
    ///
    /// # Errors
    /// [`LimitError::BadTwist`] unless `-pi <= min <= max <= pi` (all finite).
    pub fn new(min: f64, max: f64) -> Result<Self, LimitError> {
        if min.is_finite() && max.is_finite() && -PI <= min && min <= max && max <= PI {
            Ok(Self { min, max })
        } else {
            Err(LimitError::BadTwist { min, max })
        }
    }

    /// The range from degrees.
    ///
    /// # Errors
    /// As [`TwistRange::new`].
    pub fn from_degrees(min: f64, max: f64) -> Result<Self, LimitError> {
        Self::new(min.to_radians(), max.to_radians())
    }

    /// Lower bound (radians).
    pub fn min(&self) -> f64 {
        self.min
    }

    /// Upper bound (radians).
    pub fn max(&self) -> f64 {
        self.max
    }

    /// Whether `angle` is in range.
    pub fn contains(&self, angle: f64) -> bool {
        (self.min - 1e-12..=self.max + 1e-12).contains(&angle)
    }
}
