//! The unrolled fit on the demo motion: precision x iterations -> MPJPE and residual as a
//! share of stature.
//!
//! Each sequence is the run's synthetic subject ([`BodyScene`], seeded) seen by the demo rig's
//! four cameras with Gaussian pixel noise. Frame 0 is fitted by the CPU fit (a cold start);
//! every later frame by the unrolled graph, warm-started from its own previous output, on the
//! keypoints triangulated from that frame's detections. Quantisation ranges are calibrated
//! (min/max) on other seeds than those measured.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use nalgebra::Point3;
use rand::SeedableRng;

use super::quant::Quantiser;
use super::{Eval, Mode, UnrolledConfig, UnrolledError, UnrolledFit};
use crate::body::fit::{residual_m, share_of_stature_pct, FitConfig, PoseFitter};
use crate::body::triangulate::{triangulate, Observation, TriangulationConfig};
use crate::body::{Pose, Posed};
use crate::geom::Camera;
use crate::metrics::stats::ValueStats;
use crate::scene::observe::{mpjpe, observe, Detections};
use crate::scene::{demo_rig, BodyRig, BodyScene};

/// One instant of a sequence.
#[derive(Debug, Clone)]
pub struct Frame {
    /// True keypoints.
    pub truth: Vec<Point3<f64>>,
    /// Detections, `[view][keypoint]`.
    pub observations: Vec<Vec<Option<Observation>>>,
    /// Triangulated targets with their confidences.
    pub targets: Vec<Option<(Point3<f64>, f64)>>,
}

/// A demo sequence and its start.
#[derive(Debug, Clone)]
pub struct Sequence {
    /// The frames.
    pub frames: Vec<Frame>,
    /// The CPU fit of frame 0.
    pub start: Pose,
}

/// How the sequences are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SequenceSpec {
    /// Frames per second.
    pub fps: f64,
    /// Frames per sequence.
    pub frames: usize,
    /// Pixel noise of the detections.
    pub noise_px: f64,
}

impl Default for SequenceSpec {
    fn default() -> Self {
        Self {
            fps: 60.0,
            frames: 120,
            noise_px: 2.0,
        }
    }
}

/// Why the evaluation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvaluateError {
    /// The unrolled fit failed.
    #[error(transparent)]
    Unrolled(#[from] UnrolledError),
    /// The CPU fit of a start frame failed.
    #[error("CPU fit of frame 0: {0}")]
    Fit(#[from] crate::body::fit::FitError),
    /// Triangulation failed.
    #[error(transparent)]
    Triangulation(#[from] crate::body::triangulate::TriangulationError),
}

/// The demo rig's cameras.
pub fn cameras() -> Vec<Camera> {
    demo_rig().to_vec()
}

/// The sequence of `seed`.
///
/// # Errors
/// [`EvaluateError`] when triangulation or the start fit fails.
pub fn sequence(
    body: &Arc<BodyRig>,
    seed: u64,
    spec: SequenceSpec,
) -> Result<Sequence, EvaluateError> {
    let scene = BodyScene::new(Arc::clone(body), 6, 0.8, seed);
    let cams = cameras();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed);
    let detections = Detections {
        noise_px: spec.noise_px,
        drop_rate: 0.0,
    };
    let mut frames = Vec::with_capacity(spec.frames);
    for i in 0..spec.frames {
        let truth = scene.keypoints(i as f64 / spec.fps);
        let observations = observe(&cams, &truth, detections, &mut rng);
        let targets = triangulate(&cams, &observations, &TriangulationConfig::default())?
            .iter()
            .map(|t| t.map(|t| (t.point, t.confidence)))
            .collect();
        frames.push(Frame {
            truth,
            observations,
            targets,
        });
    }
    let mut fitter = PoseFitter::new(
        body.rig.clone(),
        body.limits.clone(),
        body.active.clone(),
        cams,
        FitConfig::default(),
    )?;
    let start = fitter.fit(&frames[0].observations)?.pose;
    Ok(Sequence { frames, start })
}

/// Errors of a fit over sequences.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scores {
    /// Mean MPJPE, mm.
    pub mpjpe_mm: f64,
    /// Residual as a percentage of stature, median over frames (NaN when the rig has no
    /// stature or no frame was observed).
    pub residual_p50_pct: f64,
    /// The same, 99th percentile.
    pub residual_p99_pct: f64,
    /// Frames scored.
    pub frames: usize,
}

/// Scores of the unrolled fit `fit` with `mode` over `sequences` (frames after the first).
///
/// # Errors
/// [`UnrolledError`] from the graph.
pub fn score(
    body: &BodyRig,
    fit: &UnrolledFit,
    mode: &Mode,
    sequences: &[Sequence],
) -> Result<(Scores, Mode), UnrolledError> {
    let cams = cameras();
    let mut eval = Eval::new(mode.clone());
    let mut posed = Posed::default();
    let (mut errors, mut shares) = (Vec::new(), ValueStats::default());
    for seq in sequences {
        let mut pose = seq.start.clone();
        for frame in &seq.frames[1..] {
            pose = fit.run(&mut eval, &pose, &frame.targets)?.pose;
            body.rig.forward(&pose, &mut posed)?;
            let est: Vec<Option<Point3<f64>>> = posed.keypoints.iter().map(|p| Some(*p)).collect();
            if let Some(m) = mpjpe(&est, &frame.truth) {
                errors.push(m);
            }
            // Without a stature (a rig built without its mesh) no share is reported.
            let residual = residual_m(&cams, &frame.observations, &posed.keypoints, 0.2);
            if let Some((r, stature)) = residual.zip(body.stature_m) {
                shares.record(share_of_stature_pct(r, stature));
            }
        }
    }
    let shares = shares.summary();
    let scores = Scores {
        mpjpe_mm: 1e3 * errors.iter().sum::<f64>() / errors.len().max(1) as f64,
        residual_p50_pct: shares.map_or(f64::NAN, |s| s.p50),
        residual_p99_pct: shares.map_or(f64::NAN, |s| s.p99),
        frames: errors.len(),
    };
    Ok((scores, eval.mode))
}

/// Min/max of every tensor of `fit` over `sequences` at f32.
///
/// # Errors
/// [`UnrolledError`] from the graph.
pub fn calibrate(
    body: &BodyRig,
    fit: &UnrolledFit,
    sequences: &[Sequence],
) -> Result<BTreeMap<String, (f32, f32)>, UnrolledError> {
    match score(body, fit, &Mode::Observe(BTreeMap::new()), sequences)?.1 {
        Mode::Observe(ranges) => Ok(ranges),
        _ => Ok(BTreeMap::new()),
    }
}

/// The classes to hold in 16 bits, and each class's MPJPE (mm) alone at 8 bits.
pub type Sensitivity = (BTreeSet<String>, Vec<(String, f64)>);

/// The tensor classes that, quantised alone to 8 bits, raise the MPJPE over `sequences` by
/// more than `tolerance_mm` above f32: the ones to hold in 16 bits. Also returns each class's
/// MPJPE alone at 8 bits.
///
/// # Errors
/// [`UnrolledError`] from the graph.
pub fn sensitive(
    body: &BodyRig,
    fit: &UnrolledFit,
    ranges: &BTreeMap<String, (f32, f32)>,
    sequences: &[Sequence],
    tolerance_mm: f64,
) -> Result<Sensitivity, UnrolledError> {
    let exact = score(body, fit, &Mode::Exact, sequences)?.0.mpjpe_mm;
    let classes: Vec<String> = Quantiser::classes(ranges).into_iter().collect();
    // Each class is scored on its own: the classes are split between the cores.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = classes.len().div_ceil(threads).max(1);
    let scored: Vec<Result<Vec<(String, f64)>, UnrolledError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = classes
            .chunks(per)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|class| {
                            let q = Quantiser::only(ranges.clone(), class, 8);
                            let m = score(body, fit, &Mode::Quantise(q), sequences)?.0.mpjpe_mm;
                            Ok((class.clone(), m))
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let mut wide = BTreeSet::new();
    let mut each = Vec::new();
    for part in scored {
        for (class, m) in part? {
            if m.is_nan() || m > exact + tolerance_mm {
                wide.insert(class.clone());
            }
            each.push((class, m));
        }
    }
    Ok((wide, each))
}

/// A test case for another runtime: the graph's inputs for `pose` and `targets` and the
/// evaluator's f32 outputs, each named as in the ONNX graph, as
/// `{"inputs": {name: {"shape": [..], "data": [..]}}, "outputs": {..}}` (data row-major).
///
/// # Errors
/// As [`UnrolledFit::inputs`] and [`UnrolledFit::evaluate`].
pub fn case(
    fit: &UnrolledFit,
    pose: &Pose,
    targets: &[Option<(Point3<f64>, f64)>],
) -> Result<serde_json::Value, UnrolledError> {
    let inputs = fit.inputs(pose, targets)?;
    let outputs = fit.evaluate(&mut Eval::new(Mode::Exact), inputs.clone())?;
    let named = |names: &[&str], arrays: &[ndarray::ArrayD<f32>]| {
        let map: serde_json::Map<String, serde_json::Value> = names
            .iter()
            .zip(arrays)
            .map(|(n, a)| {
                let data: Vec<f32> = a.iter().copied().collect();
                (
                    (*n).to_owned(),
                    serde_json::json!({"shape": a.shape(), "data": data}),
                )
            })
            .collect();
        serde_json::Value::Object(map)
    };
    Ok(serde_json::json!({
        "inputs": named(&["rotations", "translation", "targets", "confidence"], &inputs),
        "outputs": named(&["fitted_rotations", "fitted_translation", "keypoints"], &outputs),
    }))
}

/// The unrolled fit of `body`, with its limit clamps or (`clamp` false) without.
///
/// # Errors
/// As [`UnrolledFit::new`].
pub fn unrolled(
    body: &BodyRig,
    clamp: bool,
    config: UnrolledConfig,
) -> Result<UnrolledFit, UnrolledError> {
    let none = vec![None; body.rig.bones()];
    let limits = if clamp { &body.limits } else { &none };
    UnrolledFit::new(&body.rig, limits, &body.active, config)
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The precision.
    pub precision: String,
    /// Gauss-Newton steps.
    pub iterations: usize,
    /// The scores.
    pub scores: Scores,
}

/// The table: for each iteration count, f32, all 8-bit, and 8-bit with the `wide` classes at
/// 16 bits, each calibrated on `calibration`. With `clamp` false the graph has no limit
/// section (the motion stays within the limits either way).
///
/// # Errors
/// [`UnrolledError`] from the graph.
pub fn table(
    body: &BodyRig,
    iterations: &[usize],
    clamp: bool,
    config: UnrolledConfig,
    wide: &BTreeSet<String>,
    calibration: &[Sequence],
    sequences: &[Sequence],
) -> Result<Vec<Row>, UnrolledError> {
    let mut rows = Vec::new();
    for &n in iterations {
        let fit = unrolled(body, clamp, config.with_iterations(n)?)?;
        let ranges = calibrate(body, &fit, calibration)?;
        let modes = [
            ("f32".to_owned(), Mode::Exact),
            (
                "uint8, every tensor".to_owned(),
                Mode::Quantise(Quantiser::new(ranges.clone(), 8, BTreeSet::new(), 16)),
            ),
            (
                format!("uint8 + uint16 for {} classes", wide.len()),
                Mode::Quantise(Quantiser::new(ranges.clone(), 8, wide.clone(), 16)),
            ),
            (
                "uint16, every tensor".to_owned(),
                Mode::Quantise(Quantiser::new(ranges, 16, BTreeSet::new(), 16)),
            ),
        ];
        for (precision, mode) in modes {
            let scores = score(body, &fit, &mode, sequences)?.0;
            rows.push(Row {
                precision,
                iterations: n,
                scores,
            });
        }
    }
    Ok(rows)
}

/// The table as Markdown.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| precision | iterations | MPJPE (mm) | residual p50 (% of stature) | residual p99 (% of stature) |\n|---|---|---|---|---|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {:.1} | {:.3} | {:.3} |\n",
            r.precision,
            r.iterations,
            r.scores.mpjpe_mm,
            r.scores.residual_p50_pct,
            r.scores.residual_p99_pct
        ));
    }
    s
}
