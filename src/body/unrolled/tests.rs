use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use nalgebra::{Point3, UnitQuaternion, Vector3};
use prost::Message;

use super::evaluate::{self, SequenceSpec};
use super::quant::Quantiser;
use super::verify::{decode, disallowed_ops, run_tract};
use super::*;
use crate::body::limits::JointLimit;
use crate::body::Model;
use crate::scene::BodyRig;

fn body() -> Arc<BodyRig> {
    Arc::new(BodyRig::anny(Model::embedded().unwrap(), true).unwrap())
}

/// The unrolled fit of `body` without limit clamps.
fn fit(body: &BodyRig, iterations: usize) -> UnrolledFit {
    let config = UnrolledConfig::default()
        .with_iterations(iterations)
        .unwrap();
    evaluate::unrolled(body, false, config).unwrap()
}

/// One single-cone limit of half-angle `half` about the reference direction of `bone`.
fn one_cone(body: &BodyRig, bone: usize, half: f64) -> Vec<Option<JointLimit>> {
    use crate::body::limits::{Chain, Kusudama, TwistRange};
    let axis = body.rig.reference_directions()[bone];
    let twist = TwistRange::new(-3.0, 3.0).unwrap();
    let chain = Chain::new(vec![Kusudama::new(axis, half, twist).unwrap()]).unwrap();
    let mut limits = vec![None; body.rig.bones()];
    limits[bone] = Some(JointLimit::new(axis, chain).unwrap());
    limits
}

#[test]
fn the_clamp_turns_a_bone_onto_its_cone_and_leaves_one_inside_alone() {
    let body = body();
    let elbow = body.active[7];
    let axis = body.rig.reference_directions()[elbow];
    let across = axis.cross(&Vector3::x()).normalize();
    let angle_of = |pose: &Pose| (pose.rotations[elbow] * axis).angle(&axis);
    let config = UnrolledConfig::default().with_iterations(1).unwrap();
    let limits = one_cone(&body, elbow, 0.3);
    let clamped = UnrolledFit::new(&body.rig, &limits, &body.active, config).unwrap();
    let free = fit(&body, 1);
    // No confidence anywhere: only the clamp acts.
    let (_, _, targets) = problem(&body);
    let none: Targets = targets.iter().map(|t| t.map(|(p, _)| (p, 0.0))).collect();
    let mut pose = Pose::identity(body.rig.bones());
    for (turn, inside) in [(1.0, false), (0.2, true)] {
        pose.rotations[elbow] = UnitQuaternion::from_scaled_axis(across * turn);
        let out = clamped
            .run(&mut Eval::new(Mode::Exact), &pose, &none)
            .unwrap();
        let a = angle_of(&out.pose);
        if inside {
            assert!((a - turn).abs() < 1e-3, "{a} rad, was {turn}");
        } else {
            assert!((a - 0.3).abs() < 2e-3, "{a} rad, cone 0.3");
        }
        // Negative control: without the clamp the bone stays where it was.
        let kept = free.run(&mut Eval::new(Mode::Exact), &pose, &none).unwrap();
        assert!((angle_of(&kept.pose) - turn).abs() < 1e-3);
    }
}

/// A pose a little away from `truth` on every fitted bone, and its exact keypoint targets.
type Targets = Vec<Option<(Point3<f64>, f64)>>;

fn problem(body: &BodyRig) -> (Pose, Pose, Targets) {
    let mut truth = Pose::identity(body.rig.bones());
    truth.translation = Vector3::new(0.05, -0.02, 0.9);
    for (i, &b) in body.active.iter().enumerate().skip(1) {
        let s = 0.05 * ((i % 5) as f64 - 2.0);
        truth.rotations[b] = UnitQuaternion::from_scaled_axis(Vector3::new(s, 0.5 * s, -0.3 * s));
    }
    let mut start = truth.clone();
    start.translation += Vector3::new(0.03, 0.02, -0.02);
    for &b in &body.active {
        start.rotations[b] =
            UnitQuaternion::from_scaled_axis(Vector3::new(0.04, -0.03, 0.02)) * start.rotations[b];
    }
    let targets = body
        .keypoints(&truth)
        .into_iter()
        .map(|p| Some((p, 1.0)))
        .collect();
    (truth, start, targets)
}

fn max_diff(a: &ArrayD<f32>, b: &ArrayD<f32>) -> f32 {
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn mpjpe_m(body: &BodyRig, pose: &Pose, truth: &Pose) -> f64 {
    let (a, b) = (body.keypoints(pose), body.keypoints(truth));
    a.iter().zip(&b).map(|(x, y)| (x - y).norm()).sum::<f64>() / a.len() as f64
}

#[test]
fn more_steps_fit_closer_and_the_graph_keypoints_are_the_rigs() {
    let body = body();
    let (truth, start, targets) = problem(&body);
    let before = mpjpe_m(&body, &start, &truth);
    let mut errors = Vec::new();
    for n in [1, 4] {
        let out = fit(&body, n)
            .run(&mut Eval::new(Mode::Exact), &start, &targets)
            .unwrap();
        errors.push(mpjpe_m(&body, &out.pose, &truth));
        // The graph's own forward kinematics agree with the rig's at f32.
        let rig_kp = body.keypoints(&out.pose);
        let worst = out
            .keypoints
            .iter()
            .zip(&rig_kp)
            .map(|(a, b)| (a - b).norm())
            .fold(0.0, f64::max);
        assert!(worst < 2e-4, "graph keypoints {worst} m from the rig's");
    }
    assert!(
        errors[0] < before && errors[1] < errors[0],
        "{before} -> {errors:?}"
    );
    assert!(errors[1] < 0.01, "{errors:?}");
    // Negative control: with no confidence anywhere there is nothing to fit, and nothing moves.
    let none: Vec<_> = targets.iter().map(|t| t.map(|(p, _)| (p, 0.0))).collect();
    let still = fit(&body, 4)
        .run(&mut Eval::new(Mode::Exact), &start, &none)
        .unwrap();
    assert!((mpjpe_m(&body, &still.pose, &truth) - before).abs() < 2e-3);
}

#[test]
fn the_exported_graph_uses_the_compiled_ops_and_tract_agrees_with_the_evaluator() {
    let body = body();
    let (_, start, targets) = problem(&body);
    // With a clamp section, so tract runs every part of the graph.
    let config = UnrolledConfig::default().with_iterations(2).unwrap();
    let limits = one_cone(&body, body.active[7], 0.05);
    let f = UnrolledFit::new(&body.rig, &limits, &body.active, config).unwrap();
    let bytes = f.onnx().unwrap();
    assert_eq!(disallowed_ops(&bytes).unwrap(), Vec::new());
    let inputs = f.inputs(&start, &targets).unwrap();
    let ours = f
        .evaluate(&mut Eval::new(Mode::Exact), inputs.clone())
        .unwrap();
    let theirs = run_tract(&bytes, &inputs).unwrap();
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(a.shape(), b.shape());
        assert!(max_diff(a, b) < 2e-4, "tract differs by {}", max_diff(a, b));
    }
    // Negative control: the same graph with a perturbed damping weight is caught.
    let mut model = decode(&bytes).unwrap();
    let lambda = model
        .graph
        .as_mut()
        .unwrap()
        .initializer
        .iter_mut()
        .find(|t| t.name == "c/ne/lambda")
        .unwrap();
    let mut v: Vec<f32> = lambda
        .raw_data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    v.iter_mut().for_each(|x| *x *= 30.0);
    lambda.raw_data = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let perturbed = run_tract(&model.encode_to_vec(), &inputs).unwrap();
    assert!(max_diff(&ours[2], &perturbed[2]) > 2e-3);
    // And a graph with an operator outside the set is flagged.
    let mut g = crate::metrics::ops::builder::GraphBuilder::new("sub", 13);
    let a = g.input("a", &[1.into()]);
    g.node("Sub", "", &[a.as_str(), a.as_str()], &[]);
    let flagged = disallowed_ops(&crate::metrics::ops::builder::encode(&g.finish())).unwrap();
    assert_eq!(flagged, vec![("Sub".to_owned(), 1)]);
}

#[test]
fn quantised_runs_lose_precision_and_sixteen_bits_lose_less() {
    let body = body();
    let spec = SequenceSpec {
        fps: 60.0,
        frames: 6,
        noise_px: 2.0,
    };
    // Calibrated on the measured motion's own span (other seeds clip where the subject
    // stands elsewhere, at any bit width).
    let calibration = [evaluate::sequence(&body, 1, spec).unwrap()];
    let measured = [evaluate::sequence(&body, 1, spec).unwrap()];
    let f = fit(&body, 2);
    let ranges = evaluate::calibrate(&body, &f, &calibration).unwrap();
    assert!(ranges.contains_key("s1/solve/x0"));
    let score = |mode: Mode| evaluate::score(&body, &f, &mode, &measured).unwrap().0;
    let exact = score(Mode::Exact);
    let q8 = score(Mode::Quantise(Quantiser::new(
        ranges.clone(),
        8,
        BTreeSet::new(),
        16,
    )));
    let q16 = score(Mode::Quantise(Quantiser::new(
        ranges.clone(),
        16,
        BTreeSet::new(),
        16,
    )));
    assert!(exact.frames == 5 && exact.mpjpe_mm < 40.0, "{exact:?}");
    assert!(
        (q16.mpjpe_mm - exact.mpjpe_mm).abs() < (q8.mpjpe_mm - exact.mpjpe_mm).abs(),
        "{exact:?} {q8:?} {q16:?}"
    );
    // Negative control: a quantiser that holds no tensor changes nothing.
    let none = score(Mode::Quantise(Quantiser::new(
        BTreeMap::new(),
        8,
        BTreeSet::new(),
        16,
    )));
    assert_eq!(none, exact);
}
