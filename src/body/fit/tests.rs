//! Tests of the fit on a small articulated toy body.

use nalgebra::{DMatrix, Matrix3, Point2, Point3, Rotation3, UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};

use super::jacobian::retract;
use super::*;
use crate::body::limits::rom::{declare, Arc, Shape};
use crate::body::limits::JointLimit;
use crate::body::triangulate::Observation;
use crate::body::{KeypointTerm, Pose};
use crate::geom::Camera;
use crate::scene::{demo_rig, turned};

/// Toy body: (name, parent, rest head). Root at the pelvis, Z up.
const BONES: [(&str, Option<usize>, [f64; 3]); 11] = [
    ("root", None, [0.0, 0.0, 0.0]),
    ("spine", Some(0), [0.0, 0.0, 0.1]),
    ("head", Some(1), [0.0, 0.0, 0.55]),
    ("arm.L", Some(1), [0.18, 0.0, 0.45]),
    ("forearm.L", Some(3), [0.22, 0.0, 0.17]),
    ("arm.R", Some(1), [-0.18, 0.0, 0.45]),
    ("forearm.R", Some(5), [-0.22, 0.0, 0.17]),
    ("thigh.L", Some(0), [0.1, 0.0, -0.05]),
    ("shin.L", Some(7), [0.1, 0.0, -0.48]),
    ("thigh.R", Some(0), [-0.1, 0.0, -0.05]),
    ("shin.R", Some(9), [-0.1, 0.0, -0.48]),
];

/// Toy keypoints: (terms of (bone, weight), rest position).
type KeypointSpec = (Vec<(usize, f64)>, [f64; 3]);

fn keypoint_spec() -> Vec<KeypointSpec> {
    vec![
        (vec![(2, 1.0)], [0.0, -0.08, 0.68]),            // nose
        (vec![(2, 1.0)], [0.05, -0.05, 0.7]),            // eye
        (vec![(1, 0.7), (3, 0.3)], [0.18, 0.0, 0.45]),   // shoulder L
        (vec![(1, 0.7), (5, 0.3)], [-0.18, 0.0, 0.45]),  // shoulder R
        (vec![(3, 0.5), (4, 0.5)], [0.22, 0.0, 0.17]),   // elbow L
        (vec![(5, 0.5), (6, 0.5)], [-0.22, 0.0, 0.17]),  // elbow R
        (vec![(4, 1.0)], [0.25, -0.02, -0.08]),          // wrist L
        (vec![(6, 1.0)], [-0.25, -0.02, -0.08]),         // wrist R
        (vec![(0, 0.6), (7, 0.4)], [0.1, 0.0, -0.05]),   // hip L
        (vec![(0, 0.6), (9, 0.4)], [-0.1, 0.0, -0.05]),  // hip R
        (vec![(7, 0.5), (8, 0.5)], [0.1, 0.0, -0.48]),   // knee L
        (vec![(9, 0.5), (10, 0.5)], [-0.1, 0.0, -0.48]), // knee R
        (vec![(8, 1.0)], [0.1, 0.03, -0.9]),             // ankle L
        (vec![(10, 1.0)], [-0.1, 0.03, -0.9]),           // ankle R
        (vec![(8, 1.0)], [0.1, -0.12, -0.95]),           // toe L
        (vec![(10, 1.0)], [-0.1, -0.12, -0.95]),         // toe R
    ]
}

/// The toy as a shape model: overall scale and limb scale.
struct Toy;

fn rot(seed: u64) -> Matrix3<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let axis = Vector3::new(
        rng.gen_range(-1.0..1.0),
        rng.gen_range(-1.0..1.0),
        rng.gen_range(-1.0..1.0),
    );
    Rotation3::new(axis.normalize() * rng.gen_range(0.0..0.5)).into_inner()
}

impl ShapeModel for Toy {
    fn shape_len(&self) -> usize {
        2
    }
    fn shape_range(&self) -> (f64, f64) {
        (0.5, 1.5)
    }
    fn default_shape(&self) -> Vec<f64> {
        vec![1.0, 1.0]
    }
    fn rig(&self, shape: &[f64]) -> Result<KeypointRig, FitError> {
        let scale = |p: [f64; 3], limb: bool| {
            let v = Vector3::from(p) * shape[0];
            let v = if limb {
                Vector3::new(v.x, v.y, v.z * shape[1])
            } else {
                v
            };
            Point3::from(v)
        };
        let names = BONES.iter().map(|b| b.0.to_owned()).collect();
        let parents = BONES.iter().map(|b| b.1).collect();
        let heads = BONES
            .iter()
            .enumerate()
            .map(|(i, b)| scale(b.2, i >= 3))
            .collect();
        // Arbitrary rest and reference orientations exercise the frame algebra.
        let rest = (0..BONES.len()).map(|i| rot(i as u64)).collect();
        let mut reference: Vec<Matrix3<f64>> =
            (0..BONES.len()).map(|i| rot(100 + i as u64)).collect();
        reference[0] = Matrix3::identity();
        let mut terms = Vec::new();
        for (k, (bones, p)) in keypoint_spec().into_iter().enumerate() {
            let p = scale(p, k >= 4);
            for (bone, w) in bones {
                terms.push(KeypointTerm {
                    keypoint: k,
                    bone,
                    a: p.coords * w,
                    b: w,
                });
            }
        }
        Ok(KeypointRig::new(
            names, parents, heads, rest, reference, &terms, 16,
        )?)
    }
}

/// The toy at its default shape, its limits, and a generator seeded with `seed`.
fn toy_setup(seed: u64) -> (KeypointRig, Vec<Option<JointLimit>>, rand::rngs::StdRng) {
    let rig = Toy.rig(&[1.0, 1.0]).unwrap();
    let limits = toy_limits(&rig);
    (rig, limits, rand::rngs::StdRng::seed_from_u64(seed))
}

/// Generous cones about each bone's reference direction, and knees that only bend backwards.
fn toy_limits(rig: &KeypointRig) -> Vec<Option<JointLimit>> {
    let mut posed = Posed::default();
    rig.forward(&Pose::identity(rig.bones()), &mut posed)
        .unwrap();
    (0..rig.bones())
        .map(|j| {
            if j == 0 {
                return None;
            }
            let child = (0..rig.bones()).find(|&c| rig.parents()[c] == Some(j));
            let dir = match child {
                Some(c) => posed.heads[c] - posed.heads[j],
                None => Vector3::z(),
            };
            // Knees: an arc of 2.2 rad backwards from the straight leg, 0.1 rad of play.
            let shape = if j == 8 || j == 10 {
                let bent = Rotation3::new(Vector3::x() * -2.2) * dir;
                let (play, span) = (0.1f64.to_degrees(), 2.2f64.to_degrees());
                Shape::arc(dir, bent, Arc::hinge(-play, span + play, play, 60.0))
            } else {
                Shape::cone(dir, 1.2f64.to_degrees(), 60.0)
            };
            Some(declare(rig.names()[j].as_str(), dir, &shape.links()).unwrap())
        })
        .collect()
}

/// A random pose of every bone, within 0.2 m of the origin.
fn random_pose(
    rig: &KeypointRig,
    limits: &[Option<JointLimit>],
    rng: &mut impl Rng,
    amount: f64,
) -> Pose {
    let every: Vec<usize> = (0..rig.bones()).collect();
    crate::scene::motion::random_pose(rig, limits, &every, amount, 0.2, rng)
}

fn observe(
    rig: &KeypointRig,
    pose: &Pose,
    noise: f64,
    rng: &mut impl Rng,
) -> Vec<Vec<Option<Observation>>> {
    let mut posed = Posed::default();
    rig.forward(pose, &mut posed).unwrap();
    let n = Normal::new(0.0, noise.max(1e-12)).unwrap();
    cameras()
        .iter()
        .map(|cam| {
            posed
                .keypoints
                .iter()
                .map(|kp| {
                    let px = cam.project(kp)?;
                    let px = Point2::new(px.x + n.sample(rng), px.y + n.sample(rng));
                    cam.contains(&px).then_some(Observation {
                        pixel: px,
                        confidence: 0.9,
                    })
                })
                .collect()
        })
        .collect()
}

fn mpjpe(a: &[Point3<f64>], b: &[Point3<f64>]) -> f64 {
    a.iter().zip(b).map(|(a, b)| (a - b).norm()).sum::<f64>() / a.len() as f64
}

/// The cameras the toy is seen by: the demo rig's three body cameras and a fourth between
/// two of them (the demo's face camera frames a face, which the toy has not).
fn cameras() -> Vec<Camera> {
    let rig = demo_rig();
    let mut cameras = rig[..3].to_vec();
    cameras.extend(turned(&rig[..1], 60.0));
    cameras
}

fn fitter(rig: KeypointRig, limits: Vec<Option<JointLimit>>) -> PoseFitter {
    let active = (0..rig.bones()).collect();
    PoseFitter::new(rig, limits, active, cameras(), FitConfig::default()).unwrap()
}

#[test]
fn analytic_jacobian_matches_finite_differences() {
    let rig = Toy.rig(&[1.1, 0.9]).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let pose = random_pose(&rig, &vec![None; rig.bones()], &mut rng, 0.8);
    let active: Vec<usize> = (0..rig.bones()).collect();
    let slot_of: Vec<Option<usize>> = active.iter().map(|&i| Some(i)).collect();
    let mut posed = Posed::default();
    rig.forward(&pose, &mut posed).unwrap();
    let mut blocks = vec![Vec::new(); rig.keypoints()];
    rig.keypoint_jacobian(&posed, &slot_of, &mut blocks);
    let p = 3 + 3 * active.len();
    let mut analytic = DMatrix::zeros(3 * rig.keypoints(), p);
    for (k, bl) in blocks.iter().enumerate() {
        for (s, m) in bl {
            analytic.fixed_view_mut::<3, 3>(3 * k, 3 * s).copy_from(m);
        }
    }
    let h = 1e-6;
    let mut numeric = DMatrix::zeros(3 * rig.keypoints(), p);
    for i in 0..p {
        let eval = |sign: f64| {
            let mut delta = vec![0.0; p];
            delta[i] = sign * h;
            let mut moved = pose.clone();
            retract(&rig, &posed, &mut moved, &active, &delta);
            let mut out = Posed::default();
            rig.forward(&moved, &mut out).unwrap();
            out.keypoints
        };
        let (plus, minus) = (eval(1.0), eval(-1.0));
        for k in 0..rig.keypoints() {
            numeric
                .fixed_view_mut::<3, 1>(3 * k, i)
                .copy_from(&((plus[k] - minus[k]) / (2.0 * h)));
        }
    }
    let err = (&analytic - &numeric).amax();
    assert!(err < 1e-7, "max |analytic - numeric| = {err}");
    // Negative control: dropping the lever arm of one bone is detected.
    let mut broken = analytic.clone();
    broken.fixed_view_mut::<3, 3>(0, 3 * 3).fill(0.0);
    assert!((&broken - &numeric).amax() > 1e-3);
}

#[test]
fn noiseless_views_recover_the_pose() {
    let (rig, limits, mut rng) = toy_setup(11);
    let mut f = fitter(rig.clone(), limits.clone());
    let mut worst: f64 = 0.0;
    for _ in 0..10 {
        let truth = random_pose(&rig, &limits, &mut rng, 0.6);
        let mut posed = Posed::default();
        rig.forward(&truth, &mut posed).unwrap();
        f.reset();
        let out = f.fit(&observe(&rig, &truth, 0.0, &mut rng)).unwrap();
        assert!(out.cold_start);
        worst = worst.max(mpjpe(&out.keypoints, &posed.keypoints));
    }
    assert!(worst < 0.005, "worst MPJPE {worst} m");
}

#[test]
fn warm_started_smooth_sequence_needs_few_iterations() {
    let (rig, limits, mut rng) = toy_setup(12);
    let a = random_pose(&rig, &limits, &mut rng, 0.5);
    let b = random_pose(&rig, &limits, &mut rng, 0.5);
    let mut f = fitter(rig.clone(), limits.clone());
    let mut errors = Vec::new();
    for i in 0..40 {
        let t = f64::from(i) / 39.0;
        let pose = a.interpolate(&b, t);
        let mut posed = Posed::default();
        rig.forward(&pose, &mut posed).unwrap();
        let out = f.fit(&observe(&rig, &pose, 2.0, &mut rng)).unwrap();
        if i > 0 {
            assert!(!out.cold_start);
            assert!(out.report.iterations <= 3, "frame {i}: {:?}", out.report);
        }
        errors.push(mpjpe(&out.keypoints, &posed.keypoints));
    }
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    assert!(mean < 0.02, "mean MPJPE {mean} m");
}

#[test]
fn limits_hold_at_every_step() {
    let rig = Toy.rig(&[1.0, 1.0]).unwrap();
    let limits = toy_limits(&rig);
    // The target bends the left knee forwards, which the limits forbid.
    let mut truth = Pose::identity(rig.bones());
    truth.rotations[8] = UnitQuaternion::from_scaled_axis(Vector3::x() * 1.0);
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    let obs = observe(&rig, &truth, 0.0, &mut rng);
    let out = fitter(rig.clone(), limits.clone()).fit(&obs).unwrap();
    for (j, l) in limits.iter().enumerate() {
        if let Some(l) = l {
            assert!(
                l.contains(&out.pose.rotations[j]),
                "bone {j} outside its limit"
            );
        }
    }
    // Negative control: without limits the fit follows the forbidden bend.
    let free = fitter(rig.clone(), vec![None; rig.bones()])
        .fit(&obs)
        .unwrap();
    assert!(!limits[8]
        .as_ref()
        .unwrap()
        .contains(&free.pose.rotations[8]));
}

#[test]
fn shape_is_calibrated_from_the_first_frames() {
    let truth_shape = [1.08, 0.93];
    let true_rig = Toy.rig(&truth_shape).unwrap();
    let rig = Toy.rig(&Toy.default_shape()).unwrap();
    let limits = toy_limits(&rig);
    let mut rng = rand::rngs::StdRng::seed_from_u64(14);
    let frames: Vec<_> = (0..4)
        .map(|_| {
            let pose = random_pose(&true_rig, &limits, &mut rng, 0.4);
            observe(&true_rig, &pose, 1.0, &mut rng)
        })
        .collect();
    let mut f = fitter(rig, limits);
    let cal = f.calibrate_shape(&Toy, &frames, 6).unwrap();
    // Pose and shape trade off on so small a body; the shape must at least close most of the gap.
    let gap =
        |s: &[f64]| ((s[0] - truth_shape[0]).powi(2) + (s[1] - truth_shape[1]).powi(2)).sqrt();
    assert!(gap(&cal.shape) < 0.5 * gap(&Toy.default_shape()), "{cal:?}");
    assert!(cal.final_error_px < cal.initial_error_px, "{cal:?}");
}

#[test]
fn bad_input_is_refused_with_names() {
    let rig = Toy.rig(&[1.0, 1.0]).unwrap();
    let err = PoseFitter::new(
        rig.clone(),
        vec![None; 3],
        vec![],
        cameras(),
        FitConfig::default(),
    )
    .unwrap_err();
    assert!(matches!(err, FitError::BadBone { .. }), "{err}");
    let mut f = fitter(rig.clone(), vec![None; rig.bones()]);
    assert!(matches!(
        f.fit(&[vec![]]),
        Err(FitError::ViewCount {
            cameras: 4,
            observations: 1
        })
    ));
    let empty = vec![vec![None; 16]; 4];
    assert!(matches!(
        f.fit(&empty),
        Err(FitError::NoInitialisation { points: 0 })
    ));
    assert!(FitConfig::default().with_huber_px(0.0).is_err());
    assert!(FitConfig::default().with_min_confidence(2.0).is_err());
    let bad_parent = KeypointRig::new(
        vec!["a".into(), "b".into()],
        vec![None, Some(1)],
        vec![Point3::origin(); 2],
        vec![Matrix3::identity(); 2],
        vec![Matrix3::identity(); 2],
        &[],
        0,
    )
    .map_err(FitError::from);
    assert!(matches!(bad_parent, Err(FitError::Rig(m)) if m.contains("bone 1 `b`")));
}

#[test]
fn a_long_gap_or_a_step_back_in_time_starts_cold() {
    let (rig, limits, mut rng) = toy_setup(13);
    let pose = random_pose(&rig, &limits, &mut rng, 0.3);
    let mut f = fitter(rig.clone(), limits.clone());
    let mut cold_at = |t: f64, f: &mut PoseFitter| {
        f.fit_at(&observe(&rig, &pose, 1.0, &mut rng), t)
            .unwrap()
            .cold_start
    };
    assert!(cold_at(0.0, &mut f), "the first frame");
    // Negative control: short, regular gaps warm-start.
    assert!(!cold_at(0.1, &mut f));
    assert!(!cold_at(0.2, &mut f));
    // Irregular but short: still warm (from the last pose alone).
    assert!(!cold_at(0.21, &mut f));
    // Longer than WARM_START_GAP_S: cold.
    assert!(cold_at(0.21 + WARM_START_GAP_S + 0.01, &mut f));
    assert!(!cold_at(0.6, &mut f));
    // Back in time: cold.
    assert!(cold_at(0.5, &mut f));
}
