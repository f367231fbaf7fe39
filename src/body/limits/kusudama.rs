//! The kusudama: one cone (axis, half-angle) and one twist range, and its fixed single-cone
//! projection.

use nalgebra::{UnitVector3, Vector3};

use super::{LimitError, TwistRange, ANGLE_EPS};

/// Floor of the squared length of a direction's part perpendicular to the axis, below which
/// the projection takes [`Kusudama::fallback`]; also keeps every divisor away from zero.
pub const TINY: f64 = 1e-24;

/// One cone of allowed directions (within `half_angle` of `axis`) and one range of twist.
///
/// A kusudama holds exactly one cone by type; a limit that needs more is a
/// [`super::Chain`]. The cosine and sine of the half-angle and the fallback direction are
/// kept so that the projection is the fixed sequence the module documents.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kusudama {
    axis: UnitVector3<f64>,
    half_angle: f64,
    cos_half: f64,
    sin_half: f64,
    fallback: UnitVector3<f64>,
    twist: TwistRange,
}

#[cfg(test)]
thread_local! {
    /// Single-cone projections and twist clamps performed on this thread (tests count them).
    pub(crate) static OPS: std::cell::Cell<[usize; 2]> = const { std::cell::Cell::new([0; 2]) };
}

impl Kusudama {
    /// The cone about `axis` (normalised here) with a half-angle in (0, pi), and `twist`.
    ///
    /// # Errors
    /// [`LimitError::BadAxis`] or [`LimitError::BadHalfAngle`] (naming link 0).
    pub fn new(axis: Vector3<f64>, half_angle: f64, twist: TwistRange) -> Result<Self, LimitError> {
        Self::at(0, axis, half_angle, twist)
    }

    /// A kusudama from a declaration that lists its cones; it is refused unless it lists
    /// exactly one, since no kusudama carries two or more cones.
    ///
    /// # Errors
    /// [`LimitError::ConeCount`] for zero or several cones, else as [`Kusudama::new`]; `link`
    /// names the kusudama's place in its chain.
    pub fn from_declared(
        link: usize,
        cones: &[(Vector3<f64>, f64)],
        twist: TwistRange,
    ) -> Result<Self, LimitError> {
        match cones {
            [(axis, half_angle)] => Self::at(link, *axis, *half_angle, twist),
            _ => Err(LimitError::ConeCount {
                link,
                count: cones.len(),
            }),
        }
    }

    fn at(
        link: usize,
        axis: Vector3<f64>,
        half_angle: f64,
        twist: TwistRange,
    ) -> Result<Self, LimitError> {
        let unit_axis = unit(axis).ok_or(LimitError::BadAxis {
            link,
            axis: [axis.x, axis.y, axis.z],
        })?;
        if !(half_angle.is_finite() && half_angle > 0.0 && half_angle < std::f64::consts::PI) {
            return Err(LimitError::BadHalfAngle { link, half_angle });
        }
        Ok(Self {
            axis: unit_axis,
            half_angle,
            cos_half: half_angle.cos(),
            sin_half: half_angle.sin(),
            fallback: any_perpendicular(&unit_axis),
            twist,
        })
    }

    /// The cone's unit axis.
    pub fn axis(&self) -> UnitVector3<f64> {
        self.axis
    }

    /// The half-angle in radians.
    pub fn half_angle(&self) -> f64 {
        self.half_angle
    }

    /// Cosine of the half-angle: a direction `d` is inside when `d . axis >= cos_half`.
    pub fn cos_half(&self) -> f64 {
        self.cos_half
    }

    /// Sine of the half-angle.
    pub fn sin_half(&self) -> f64 {
        self.sin_half
    }

    /// The unit direction perpendicular to the axis that the projection uses for a direction
    /// (anti)parallel to the axis, where the great circle through both is not defined.
    pub fn fallback(&self) -> UnitVector3<f64> {
        self.fallback
    }

    /// The twist range.
    pub fn twist(&self) -> TwistRange {
        self.twist
    }

    /// Whether `d` lies in the cone (boundary included, within [`ANGLE_EPS`]).
    pub fn contains(&self, d: &UnitVector3<f64>) -> bool {
        d.dot(&self.axis) >= self.cos_half || angle(&self.axis, d) <= self.half_angle + ANGLE_EPS
    }

    /// The single-cone clamp of the module documentation: `d` when inside, else the point of
    /// the boundary circle on the great circle from the axis through `d`. The same operations
    /// run for every input; the two branches are computed and one is selected.
    pub fn project(&self, d: &UnitVector3<f64>) -> UnitVector3<f64> {
        #[cfg(test)]
        OPS.with(|c| c.set([c.get()[0] + 1, c.get()[1]]));
        let a = self.axis.into_inner();
        let k = d.dot(&a);
        let p = d.into_inner() - a * k;
        let pp = p.dot(&p);
        let n = pp.max(TINY).sqrt();
        let u = select(pp > TINY, p / n, self.fallback.into_inner());
        let b = a * self.cos_half + u * self.sin_half;
        UnitVector3::new_unchecked(select(k >= self.cos_half, d.into_inner(), b))
    }

    /// The twist clamp: `min(max(t, lo), hi)`.
    pub fn clamp_twist(&self, t: f64) -> f64 {
        #[cfg(test)]
        OPS.with(|c| c.set([c.get()[0], c.get()[1] + 1]));
        t.max(self.twist.min()).min(self.twist.max())
    }
}

/// `if cond { a } else { b }` over values both already computed (ONNX `Where`).
fn select(cond: bool, a: Vector3<f64>, b: Vector3<f64>) -> Vector3<f64> {
    if cond {
        a
    } else {
        b
    }
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
