//! Fit and triangulation speed, single-threaded, on ANNY in the demo rig's four cameras.
//!
//! `fit/warm_frame` fits one frame of a smooth sequence warm-started from the previous frames
//! (target <= 1 ms). `fit/warm_frame_peer_lm_crate` solves the same frame with the
//! `levenberg-marquardt` crate (rust-cv) from the previous frame's pose, over the same analytic
//! Jacobian but without limits, robust weights or priors; the ratio of the two is printed.
//!
//! ```sh
//! cargo bench --bench bench_fit
//! ```

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use hailo_edge::body::fit::{anny, retract, FitConfig, KeypointRig, Posed};
use hailo_edge::body::triangulate::{triangulate, Observation, TriangulationConfig};
use hailo_edge::body::Model;
use hailo_edge::body::Pose;
use hailo_edge::geom::Camera;
use hailo_edge::scene::demo_rig;
use hailo_edge::scene::{motion, observe};
use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt};
use nalgebra::{DMatrix, DVector, Dyn, Matrix3, Owned};
use rand::SeedableRng;

type Frames = Vec<Vec<Vec<Option<Observation>>>>;

struct Scene {
    model: &'static Model,
    cameras: Vec<Camera>,
    rig: KeypointRig,
    active: Vec<usize>,
    frames: Frames,
}

fn scene() -> Scene {
    let model = Model::embedded().expect("embedded model");
    let cameras = demo_rig().to_vec();
    let rig = anny::rig_from_rest(model, &model.rest(&Default::default())).expect("rig");
    let limits = anny::default_limits(&rig).expect("limits");
    let active = anny::active_bones(&rig).expect("active bones");
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let a = motion::random_pose(&rig, &limits, &active, 0.6, 0.3, &mut rng);
    let b = motion::random_pose(&rig, &limits, &active, 0.6, 0.3, &mut rng);
    let detections = observe::Detections {
        noise_px: 2.0,
        drop_rate: 0.05,
    };
    let frames = motion::sequence(&a, &b, 120)
        .iter()
        .map(|p| observe::observe(&cameras, &motion::keypoints(&rig, p), detections, &mut rng))
        .collect();
    Scene {
        model,
        cameras,
        rig,
        active,
        frames,
    }
}

/// Times warm frames only: every pass over the sequence starts with an untimed cold frame.
fn time_warm(
    fitter: &mut hailo_edge::body::fit::PoseFitter,
    frames: &Frames,
    iters: u64,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut i = 0usize;
    for _ in 0..iters {
        if i.is_multiple_of(frames.len()) {
            fitter.reset();
            fitter.fit(&frames[0]).expect("cold frame");
            i += 1;
        }
        let t = Instant::now();
        let out = fitter.fit(&frames[i % frames.len()]).expect("warm frame");
        total += t.elapsed();
        std::hint::black_box(out);
        i += 1;
    }
    total
}

/// The same frame as a `levenberg-marquardt` problem: tangent increments from a base pose.
struct Peer<'a> {
    rig: &'a KeypointRig,
    cameras: &'a [Camera],
    obs: &'a [Vec<Option<Observation>>],
    active: &'a [usize],
    slot_of: Vec<Option<usize>>,
    base: Pose,
    base_posed: Posed,
    x: DVector<f64>,
    posed: Posed,
}

impl<'a> Peer<'a> {
    /// The problem of frame `f` of the scene, linearised at `base` (posed as `base_posed`),
    /// with zero increments.
    fn start(
        s: &'a Scene,
        slot_of: &[Option<usize>],
        f: usize,
        base: Pose,
        base_posed: Posed,
    ) -> Self {
        let dim = 3 + 3 * s.active.len();
        let mut problem = Peer {
            rig: &s.rig,
            cameras: &s.cameras,
            obs: &s.frames[f],
            active: &s.active,
            slot_of: slot_of.to_vec(),
            base,
            posed: base_posed.clone(),
            base_posed,
            x: DVector::zeros(dim),
        };
        problem.set_params(&DVector::zeros(dim));
        problem
    }

    fn observations(&self) -> impl Iterator<Item = (&Camera, usize, &Observation)> {
        self.cameras.iter().zip(self.obs).flat_map(|(c, v)| {
            v.iter()
                .enumerate()
                .filter_map(move |(k, o)| o.as_ref().map(|o| (c, k, o)))
        })
    }
}

impl LeastSquaresProblem<f64, Dyn, Dyn> for Peer<'_> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, Dyn>;
    type ParameterStorage = Owned<f64, Dyn>;

    fn set_params(&mut self, x: &DVector<f64>) {
        self.x.copy_from(x);
        let mut pose = self.base.clone();
        retract(
            self.rig,
            &self.base_posed,
            &mut pose,
            self.active,
            x.as_slice(),
        );
        self.rig.forward(&pose, &mut self.posed).expect("pose size");
    }

    fn params(&self) -> DVector<f64> {
        self.x.clone()
    }

    fn residuals(&self) -> Option<DVector<f64>> {
        let r: Vec<f64> = self
            .observations()
            .flat_map(|(c, k, o)| {
                let w = o.confidence.sqrt();
                match c.project(&self.posed.keypoints[k]) {
                    Some(p) => [(p.x - o.pixel.x) * w, (p.y - o.pixel.y) * w],
                    None => [0.0, 0.0],
                }
            })
            .collect();
        Some(DVector::from_vec(r))
    }

    fn jacobian(&self) -> Option<DMatrix<f64>> {
        let mut blocks: Vec<Vec<(usize, Matrix3<f64>)>> = vec![Vec::new(); self.rig.keypoints()];
        self.rig
            .keypoint_jacobian(&self.posed, &self.slot_of, &mut blocks);
        let rows = self.observations().count();
        let mut j = DMatrix::zeros(2 * rows, self.x.len());
        for (r, (c, k, o)) in self.observations().enumerate() {
            let Some((_, jp)) = c.project_with_jacobian(&self.posed.keypoints[k]) else {
                continue;
            };
            let w = o.confidence.sqrt();
            for (s, m) in &blocks[k] {
                j.fixed_view_mut::<2, 3>(2 * r, 3 * s)
                    .copy_from(&(jp * m * w));
            }
        }
        Some(j)
    }
}

fn bench(c: &mut Criterion) {
    let s = scene();
    let mut fitter = anny::fitter(
        s.model,
        &Default::default(),
        s.cameras.clone(),
        FitConfig::default(),
    )
    .expect("fitter");
    let mut group = c.benchmark_group("fit");
    group.bench_function("warm_frame", |b| {
        b.iter_custom(|n| time_warm(&mut fitter, &s.frames, n))
    });

    // Peer: previous frame's pose from our own fit as the start, frame by frame.
    fitter.reset();
    let starts: Vec<Pose> = s
        .frames
        .iter()
        .map(|f| fitter.fit(f).expect("fit").pose)
        .collect();
    let mut slot_of = vec![None; s.rig.bones()];
    for (k, &i) in s.active.iter().enumerate() {
        slot_of[i] = Some(k);
    }
    // The same relative-decrease tolerance as our warm-start solver.
    let peer_lm = LevenbergMarquardt::new().with_ftol(3e-2);
    let mut peer_iters = Vec::new();
    group.sample_size(10);
    group.bench_function("warm_frame_peer_lm_crate", |b| {
        b.iter_custom(|n| {
            let mut total = Duration::ZERO;
            for i in 0..n as usize {
                let f = 1 + i % (s.frames.len() - 1);
                let base = starts[f - 1].clone();
                let mut base_posed = Posed::default();
                s.rig.forward(&base, &mut base_posed).expect("pose size");
                let t = Instant::now();
                let problem = Peer::start(&s, &slot_of, f, base, base_posed);
                let (problem, report) = peer_lm.minimize(problem);
                total += t.elapsed();
                peer_iters.push(report.number_of_evaluations);
                std::hint::black_box(problem.x);
            }
            total
        })
    });
    group.sample_size(100);
    group.bench_function("keypoint_forward", |b| {
        let mut posed = Posed::default();
        b.iter(|| s.rig.forward(std::hint::black_box(&starts[5]), &mut posed))
    });
    group.finish();

    let config = TriangulationConfig::default();
    c.bench_function("triangulate/frame_23_keypoints_4_views", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % s.frames.len();
            triangulate(&s.cameras, &s.frames[i], &config).expect("triangulate")
        })
    });

    // The ratio, measured here in one run on the same frames.
    let ours = time_warm(&mut fitter, &s.frames, 2000).as_secs_f64() / 2000.0;
    let t = Instant::now();
    let runs = 50;
    for i in 0..runs {
        let f = 1 + i % (s.frames.len() - 1);
        let base = starts[f - 1].clone();
        let mut base_posed = Posed::default();
        s.rig.forward(&base, &mut base_posed).expect("pose size");
        let problem = Peer::start(&s, &slot_of, f, base, base_posed);
        let (problem, report) = peer_lm.minimize(problem);
        if i == 0 {
            println!(
                "peer on the first frame: {} after {} evaluations",
                termination(&report.termination),
                report.number_of_evaluations
            );
        }
        std::hint::black_box(problem.x);
    }
    let peer = t.elapsed().as_secs_f64() / runs as f64;
    let mean_evals = peer_iters.iter().sum::<usize>() as f64 / peer_iters.len().max(1) as f64;
    println!(
        "warm frame: ours {:.3} ms, levenberg-marquardt crate {:.3} ms ({mean_evals:.1} evaluations): peer / ours = {:.1}x",
        ours * 1e3,
        peer * 1e3,
        peer / ours
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);

/// Why the peer stopped, in words.
fn termination(reason: &levenberg_marquardt::TerminationReason) -> String {
    use levenberg_marquardt::TerminationReason as R;
    match reason {
        R::Converged { ftol, xtol } => match (ftol, xtol) {
            (true, true) => "converged (cost and step tolerances)".into(),
            (true, false) => "converged (cost tolerance)".into(),
            _ => "converged (step tolerance)".into(),
        },
        R::ResidualsZero => "converged (residuals zero)".into(),
        R::Orthogonal => "converged (residuals orthogonal to the Jacobian)".into(),
        R::LostPatience => "stopped: evaluation limit reached".into(),
        R::NoImprovementPossible(why) => format!("stopped: no improvement possible ({why})"),
        R::User(why) | R::Numerical(why) | R::WrongDimensions(why) => format!("failed: {why}"),
        R::NoParameters => "failed: no parameters".into(),
        R::NoResiduals => "failed: no residuals".into(),
    }
}
