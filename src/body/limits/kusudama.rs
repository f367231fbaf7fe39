//! The kusudama: a chain of cones, each consecutive pair joined by the band between two tangent
//! cones.

use nalgebra::{UnitVector3, Vector3};

use super::cone::{angle, toward, unit};
use super::{Cone, LimitError, ANGLE_EPS};

/// Below this length of the mean of the unit cone axes, three or more cones have no usable pole.
const MIN_POLE_NORM: f64 = 0.05;

/// The band joining two consecutive cones `a` and `b`: on each side of the great circle through
/// their axes, a tangent cone of radius `radius` touching both from outside. The band is the
/// part of each spherical triangle (a, t, b) outside its tangent cone.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bridge {
    a: UnitVector3<f64>,
    b: UnitVector3<f64>,
    /// `a x b`, unnormalised; its sign against a direction says which side the direction is on.
    normal: Vector3<f64>,
    /// Tangent axes: `[0]` on the side of `+normal`, `[1]` on the side of `-normal`.
    tangents: [UnitVector3<f64>; 2],
    radius: f64,
    cos_radius: f64,
}

impl Bridge {
    fn new(i: usize, a: &Cone, b: &Cone) -> Result<Self, LimitError> {
        let (ca, cb) = (a.axis(), b.axis());
        let k = ca.dot(&cb);
        if k.abs() > 1.0 - 1e-9 {
            return Err(LimitError::ParallelAxes {
                first: i,
                second: i + 1,
                cos: k,
            });
        }
        let sum = a.half_angle() + b.half_angle();
        if sum >= std::f64::consts::PI - 1e-6 {
            return Err(LimitError::TooWide {
                first: i,
                second: i + 1,
                sum,
            });
        }
        // Default tangent radius of the EWBIK construction: thin cones get wide tangent cones.
        let radius = (std::f64::consts::PI - sum) / 2.0;
        let alpha_a = (a.half_angle() + radius).cos();
        let alpha_b = (b.half_angle() + radius).cos();
        // The tangent axis t satisfies t.a = alpha_a and t.b = alpha_b: t = la a + mu b + h n.
        let det = 1.0 - k * k;
        let la = (alpha_a - k * alpha_b) / det;
        let mu = (alpha_b - k * alpha_a) / det;
        let h2 = 1.0 - la * la - mu * mu - 2.0 * la * mu * k;
        let normal = ca.cross(&cb);
        let n = normal / normal.norm();
        let h = h2.max(0.0).sqrt();
        let in_plane = ca.into_inner() * la + cb.into_inner() * mu;
        let t_pos = UnitVector3::new_normalize(in_plane + n * h);
        let t_neg = UnitVector3::new_normalize(in_plane - n * h);
        Ok(Self {
            a: ca,
            b: cb,
            normal,
            tangents: [t_pos, t_neg],
            radius,
            cos_radius: radius.cos(),
        })
    }

    /// The tangent axis on the side of `d`.
    fn tangent_for(&self, d: &UnitVector3<f64>) -> UnitVector3<f64> {
        if d.dot(&self.normal) >= 0.0 {
            self.tangents[0]
        } else {
            self.tangents[1]
        }
    }

    /// Whether `d` lies in the closed spherical triangle (a, t, b).
    fn in_triangle(&self, t: &UnitVector3<f64>, d: &UnitVector3<f64>) -> bool {
        let orient = self.a.dot(&t.cross(&self.b)).signum();
        let tol = 1e-12;
        orient * d.dot(&self.a.cross(t)) >= -tol
            && orient * d.dot(&t.cross(&self.b)) >= -tol
            && orient * d.dot(&self.b.cross(&self.a)) >= -tol
    }

    /// Whether `d` is in the band (cones `a` and `b` themselves are tested separately).
    fn contains(&self, d: &UnitVector3<f64>) -> bool {
        let t = self.tangent_for(d);
        self.in_triangle(&t, d) && angle(&t, d) >= self.radius - ANGLE_EPS
    }

    /// When `d` is in a triangle but inside its tangent cone, the nearest point of the tangent
    /// circle, pushed out radially from the tangent axis.
    fn candidate(&self, d: &UnitVector3<f64>) -> Option<UnitVector3<f64>> {
        let t = self.tangent_for(d);
        if !self.in_triangle(&t, d) {
            return None;
        }
        let mid = UnitVector3::new_normalize(self.a.into_inner() + self.b.into_inner());
        Some(toward(&t, d, &mid, self.radius))
    }
}

/// A swing limit: a chain of cones joined pairwise by tangent-cone bands.
///
/// The allowed region is the union of the cones and, for every consecutive pair, the band
/// between them. Bands are only ever built between two cones; [`Kusudama::new`] refuses three or
/// more cones whose axes cancel, because the region then has no pole (centre) to be described
/// by — build such limits as shorter chains whose axes do not cancel.
#[derive(Debug, Clone, PartialEq)]
pub struct Kusudama {
    cones: Vec<Cone>,
    bridges: Vec<Bridge>,
    pole: UnitVector3<f64>,
}

impl Kusudama {
    /// A chain of cones, joined pairwise in the order given.
    ///
    /// # Errors
    /// [`LimitError::NoCone`] for an empty chain; [`LimitError::ParallelAxes`] and
    /// [`LimitError::TooWide`] when a consecutive pair cannot be joined by a tangent cone;
    /// [`LimitError::UndefinedPole`] for three or more cones whose unit axes sum to (nearly) zero.
    pub fn new(cones: Vec<Cone>) -> Result<Self, LimitError> {
        let Some(first) = cones.first() else {
            return Err(LimitError::NoCone);
        };
        let sum: Vector3<f64> = cones.iter().map(|c| c.axis().into_inner()).sum();
        let norm = sum.norm();
        let pole = match unit(sum) {
            Some(p) if cones.len() < 3 || norm >= MIN_POLE_NORM * cones.len() as f64 => p,
            _ if cones.len() >= 3 => {
                return Err(LimitError::UndefinedPole {
                    count: cones.len(),
                    norm,
                })
            }
            _ => first.axis(),
        };
        let bridges = cones
            .windows(2)
            .enumerate()
            .map(|(i, w)| Bridge::new(i, &w[0], &w[1]))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            cones,
            bridges,
            pole,
        })
    }

    /// A kusudama from `(axis, half_angle)` pairs; see [`Kusudama::new`].
    ///
    /// # Errors
    /// As [`Cone::new`] (with the cone's index) and [`Kusudama::new`].
    pub fn from_cones(cones: &[(Vector3<f64>, f64)]) -> Result<Self, LimitError> {
        let cones = cones
            .iter()
            .enumerate()
            .map(|(i, (axis, half))| Cone::indexed(i, *axis, *half))
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(cones)
    }

    /// The cones of the chain, in order.
    pub fn cones(&self) -> &[Cone] {
        &self.cones
    }

    /// The normalised sum of the cone axes: the region's centre, used to break ties.
    pub fn pole(&self) -> UnitVector3<f64> {
        self.pole
    }

    /// Whether `d` is allowed (boundary included, within [`super::ANGLE_EPS`]).
    pub fn contains(&self, d: &UnitVector3<f64>) -> bool {
        self.cones
            .iter()
            .any(|c| d.dot(&c.axis()) >= c.cos_half() || c.contains(d))
            || self.bridges.iter().any(|b| b.contains(d))
    }

    /// The allowed direction nearest to `d` (on the sphere); `d` itself when allowed.
    pub fn clamp(&self, d: &UnitVector3<f64>) -> UnitVector3<f64> {
        if self.contains(d) {
            return *d;
        }
        let from_bridges = self.bridges.iter().filter_map(|b| b.candidate(d));
        let from_cones = self
            .cones
            .iter()
            .map(|c| c.nearest_on_boundary(d, &self.pole));
        from_bridges
            .chain(from_cones)
            .map(|p| (angle(&p, d), p))
            .min_by(|x, y| x.0.total_cmp(&y.0))
            .map_or(*d, |(_, p)| p)
    }

    /// The angle from `d` to the allowed region (0 when inside).
    pub fn distance(&self, d: &UnitVector3<f64>) -> f64 {
        angle(&self.clamp(d), d)
    }

    /// The tangent-cone axes and radius of the band between cones `i` and `i + 1`.
    pub fn tangent_cones(&self, i: usize) -> Option<([UnitVector3<f64>; 2], f64)> {
        self.bridges.get(i).map(|b| (b.tangents, b.radius))
    }
}
