//! A limit cone: the directions within a half-angle of an axis.

use nalgebra::{UnitVector3, Vector3};

use super::{LimitError, ANGLE_EPS};

/// The set of unit directions within `half_angle` radians of `axis`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cone {
    axis: UnitVector3<f64>,
    half_angle: f64,
    cos_half: f64,
}

impl Cone {
    /// A cone around `axis` (normalised here) with a half-angle in (0, pi).
    ///
    /// # Errors
    /// [`LimitError::BadAxis`] or [`LimitError::BadHalfAngle`]; `index` names the cone in those
    /// errors (its place in a chain).
    pub fn new(axis: Vector3<f64>, half_angle: f64) -> Result<Self, LimitError> {
        Self::indexed(0, axis, half_angle)
    }

    pub(crate) fn indexed(
        index: usize,
        axis: Vector3<f64>,
        half_angle: f64,
    ) -> Result<Self, LimitError> {
        let unit_axis = unit(axis).ok_or(LimitError::BadAxis {
            index,
            axis: [axis.x, axis.y, axis.z],
        })?;
        if !(half_angle.is_finite() && half_angle > 0.0 && half_angle < std::f64::consts::PI) {
            return Err(LimitError::BadHalfAngle { index, half_angle });
        }
        Ok(Self {
            axis: unit_axis,
            half_angle,
            cos_half: half_angle.cos(),
        })
    }

    /// The cone's axis.
    pub fn axis(&self) -> UnitVector3<f64> {
        self.axis
    }

    /// The half-angle in radians.
    pub fn half_angle(&self) -> f64 {
        self.half_angle
    }

    /// Whether `d` lies in the cone (boundary included, within [`ANGLE_EPS`]).
    pub fn contains(&self, d: &UnitVector3<f64>) -> bool {
        angle(&self.axis, d) <= self.half_angle + ANGLE_EPS
    }

    pub(crate) fn cos_half(&self) -> f64 {
        self.cos_half
    }

    /// The point of the cone's boundary circle nearest to `d`; `fallback` picks the side when
    /// `d` is exactly opposite the axis.
    pub(crate) fn nearest_on_boundary(
        &self,
        d: &UnitVector3<f64>,
        fallback: &UnitVector3<f64>,
    ) -> UnitVector3<f64> {
        toward(&self.axis, d, fallback, self.half_angle)
    }
}

/// The point at `angle` from `from` on the great circle from `from` through `d`; when `d` is
/// (anti)parallel to `from`, through `fallback` instead (or any perpendicular direction).
pub(crate) fn toward(
    from: &UnitVector3<f64>,
    d: &UnitVector3<f64>,
    fallback: &UnitVector3<f64>,
    angle: f64,
) -> UnitVector3<f64> {
    let u = perpendicular_part(from, d)
        .or_else(|| perpendicular_part(from, fallback))
        .unwrap_or_else(|| any_perpendicular(from));
    UnitVector3::new_normalize(from.into_inner() * angle.cos() + u.into_inner() * angle.sin())
}

fn perpendicular_part(from: &UnitVector3<f64>, d: &UnitVector3<f64>) -> Option<UnitVector3<f64>> {
    let v = d.into_inner() - from.into_inner() * from.dot(d);
    UnitVector3::try_new(v, 1e-12)
}

/// A unit vector perpendicular to `v`.
pub(crate) fn any_perpendicular(v: &UnitVector3<f64>) -> UnitVector3<f64> {
    let other = if v.x.abs() < 0.9 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    UnitVector3::new_normalize(v.cross(&other))
}

/// `v` normalised, if it is finite and non-zero.
pub(crate) fn unit(v: Vector3<f64>) -> Option<UnitVector3<f64>> {
    if v.iter().all(|c| c.is_finite()) {
        UnitVector3::try_new(v, 1e-12)
    } else {
        None
    }
}

/// The angle between two unit vectors, accurate also for small and near-pi angles.
pub fn angle(a: &UnitVector3<f64>, b: &UnitVector3<f64>) -> f64 {
    a.cross(b).norm().atan2(a.dot(b))
}
