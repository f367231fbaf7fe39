//! A chain of single-cone kusudamas, applied in a fixed order; its region is the intersection
//! of their cones.

use std::f64::consts::FRAC_PI_2;

use nalgebra::{UnitVector3, Vector3};

use super::kusudama::{angle, unit};
use super::{Kusudama, LimitError, TwistRange};

/// Tolerance on the axis tests of the order rules (cosines).
const AXIS_TOL: f64 = 1e-9;

/// Kusudamas applied one after another: a direction is allowed when every cone allows it, a
/// twist when every range does.
///
/// The order is part of the limit: [`Chain::new`] accepts only orders in which one pass of
/// single-cone projections lands in every cone, so [`Chain::clamp`] runs each projection
/// exactly once.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    links: Vec<Kusudama>,
    twist: TwistRange,
}

impl Chain {
    /// The chain of `links`, applied in the order given.
    ///
    /// Every later kusudama `j` must keep every earlier one `i`: projecting a direction of
    /// cone `i` onto cone `j` must stay in cone `i`. Four rules, each proven, are accepted:
    /// - nested axes: `j`'s axis is `i`'s, or its opposite with the half-angles summing to at
    ///   least pi (the projection runs along the great circles through the common axis);
    /// - a cap then a cut: `i` is at most 90 degrees wide, `j` at least 90 degrees, their axes
    ///   perpendicular (the projection moves a direction of `i` towards `i`'s axis);
    /// - `j`'s excluded cap (the directions outside it) lies inside cone `i` (the projection
    ///   never leaves the excluded cap's closure);
    /// - `i` is under 90 degrees wide and holds `j`'s axis (the projection runs along the arc
    ///   towards that axis, which the convex cap `i` contains).
    ///
    /// # Errors
    /// [`LimitError::EmptyChain`], [`LimitError::Unordered`] naming the pair no rule covers,
    /// [`LimitError::DisjointTwist`] when the twist ranges have no angle in common.
    pub fn new(links: Vec<Kusudama>) -> Result<Self, LimitError> {
        let Some(first) = links.first() else {
            return Err(LimitError::EmptyChain);
        };
        for (j, later) in links.iter().enumerate() {
            if let Some(i) = links[..j].iter().position(|earlier| !keeps(earlier, later)) {
                return Err(LimitError::Unordered {
                    first: i,
                    second: j,
                });
            }
        }
        let mut twist = first.twist();
        for (link, k) in links.iter().enumerate() {
            let (lo, hi) = (
                twist.min().max(k.twist().min()),
                twist.max().min(k.twist().max()),
            );
            twist = TwistRange::new(lo, hi).map_err(|_| LimitError::DisjointTwist { link })?;
        }
        Ok(Self { links, twist })
    }

    /// The kusudamas, in the order they are applied.
    pub fn cones(&self) -> &[Kusudama] {
        &self.links
    }

    /// The intersection of the twist ranges.
    pub fn twist(&self) -> TwistRange {
        self.twist
    }

    /// Whether every cone allows `d` (boundary included, within [`super::ANGLE_EPS`]).
    pub fn contains(&self, d: &UnitVector3<f64>) -> bool {
        self.links.iter().all(|k| k.contains(d))
    }

    /// Whether every twist range allows `t` (radians).
    pub fn twist_contains(&self, t: f64) -> bool {
        self.twist.contains(t)
    }

    /// An allowed direction for `d` (normalised here): one single-cone projection per
    /// kusudama, in order. An allowed direction comes back unchanged.
    ///
    /// # Errors
    /// [`LimitError::NotFinite`] for a zero or non-finite `d`.
    pub fn clamp(&self, d: &Vector3<f64>) -> Result<UnitVector3<f64>, LimitError> {
        let d = unit(*d).ok_or(LimitError::NotFinite { what: "direction" })?;
        Ok(self.clamp_unit(&d))
    }

    pub(crate) fn clamp_unit(&self, d: &UnitVector3<f64>) -> UnitVector3<f64> {
        self.links.iter().fold(*d, |d, k| k.project(&d))
    }

    /// The twist angle `t` through every range, in order (`min(max(t, lo), hi)` each).
    pub fn clamp_twist(&self, t: f64) -> f64 {
        self.links.iter().fold(t, |t, k| k.clamp_twist(t))
    }

    /// The angle from `d` to the chain's clamp of it (0 when allowed).
    pub fn distance(&self, d: &UnitVector3<f64>) -> f64 {
        angle(&self.clamp_unit(d), d)
    }
}

/// Whether projecting onto `later` keeps every direction of `earlier` inside it.
fn keeps(earlier: &Kusudama, later: &Kusudama) -> bool {
    let (ai, aj) = (earlier.axis(), later.axis());
    let (hi, hj) = (earlier.half_angle(), later.half_angle());
    let cos = ai.dot(&aj);
    let same_axis = cos >= 1.0 - AXIS_TOL;
    let opposed = cos <= -1.0 + AXIS_TOL && hi + hj >= std::f64::consts::PI - AXIS_TOL;
    let cap_then_cut = hi < FRAC_PI_2 && hj >= FRAC_PI_2 && cos.abs() <= AXIS_TOL;
    let excluded_inside = angle(&ai, &-aj) + (std::f64::consts::PI - hj) <= hi + AXIS_TOL;
    let towards_inside = hi < FRAC_PI_2 && earlier.contains(&aj);
    same_axis || opposed || cap_then_cut || excluded_inside || towards_inside
}
