//! Camera poses refined from a recording of a person moving: the body is the calibration
//! object. A camera bumped after the board calibration is found again from the keypoints
//! every camera sees, with no board at hand.
//!
//! The unknowns are the poses of the cameras not held and every keypoint's position at every
//! frame; the residuals are each keypoint's reprojection in each camera that saw it (in units
//! of the keypoints' pixel noise, weighted by confidence, Huber-robust), and, where lengths
//! are stated, the distance between the two ends of a rigid segment at each frame (in units of
//! the lengths' spread). The held cameras fix the world. The scale comes from two held
//! cameras (their baseline, from the board) or from the segment lengths (the calibrated
//! phenotype's, from a stated stature). Lens intrinsics are held: a body's keypoints are too
//! coarse to move them.
//!
//! The keypoints are eliminated frame by frame (the Schur complement: no residual ties two
//! frames), so the solver works on the cameras' few dozen parameters however long the
//! recording.

use nalgebra::{DMatrix, DVector, Point3, Vector3};

use super::problem::{camera_pose, huber, pose_jacobian, retract, with_pose};
use super::{rms, rms_where, solver, solver_pass, CalibrateError};
use crate::body::fit::lm::{LevenbergMarquardt, Problem};
use crate::body::fit::FitError;
use crate::body::triangulate::{triangulate, Observation, TriangulationConfig};
use crate::geom::Camera;

/// What the cameras saw of a moving body: `frames[f][camera][k]`, keypoint `k` of frame `f`
/// as camera `camera` saw it, `None` where it did not.
pub type BodyFrames = Vec<Vec<Vec<Option<Observation>>>>;

/// A rigid segment between two keypoints and its length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// One end's keypoint index.
    pub a: usize,
    /// The other end's.
    pub b: usize,
    /// Its length (metres).
    pub length_m: f64,
}

/// How the refinement weighs its residuals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodySettings {
    /// The keypoints' pixel noise (standard deviation).
    pub noise_px: f64,
    /// The stated segment lengths' spread (standard deviation, metres).
    pub segment_sigma_m: f64,
    /// Huber threshold of the reprojection (pixels).
    pub huber_px: f64,
    /// Largest reprojection RMS (pixels) the refinement is accepted with.
    pub max_rms_px: f64,
    /// The solver.
    pub lm: LevenbergMarquardt,
}

impl Default for BodySettings {
    fn default() -> Self {
        Self {
            noise_px: 2.0,
            segment_sigma_m: 0.005,
            huber_px: 6.0,
            max_rms_px: 8.0,
            lm: LevenbergMarquardt::default()
                .with_ftol(1e-10)
                .and_then(|l| l.with_max_iterations(200))
                .unwrap_or_default(),
        }
    }
}

/// The refined cameras and how well they explain the keypoints.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyRefinement {
    /// The cameras, in the rig's order (the held ones as given).
    pub cameras: Vec<Camera>,
    /// Reprojection RMS over every keypoint seen (pixels).
    pub rms_px: f64,
    /// Reprojection RMS per camera (pixels).
    pub per_camera_px: Vec<f64>,
    /// Frames used (those with a keypoint two cameras saw).
    pub frames: usize,
    /// Keypoint positions solved, over all frames.
    pub points: usize,
}

/// One keypoint seen by one camera.
#[derive(Debug, Clone, Copy)]
struct Seen {
    camera: usize,
    point: usize,
    pixel: nalgebra::Point2<f64>,
    weight: f64,
}

/// The cameras and the keypoints' positions.
#[derive(Debug, Clone)]
struct BodyState {
    cameras: Vec<Camera>,
    points: Vec<Point3<f64>>,
}

/// One frame's keypoints in the problem: the seen keypoints and segments that involve them,
/// and, from the last linearisation, what the reduced camera system needs to move them.
struct Frame {
    /// First point and count.
    points: (usize, usize),
    /// Range of `BodyProblem::seen`.
    seen: std::ops::Range<usize>,
    /// Range of `BodyProblem::segments`.
    segments: std::ops::Range<usize>,
    /// The inverse of the points' block of the normal matrix.
    v_inverse: DMatrix<f64>,
    /// The cameras-by-points block.
    w: DMatrix<f64>,
    /// The points' gradient.
    g: DVector<f64>,
}

/// The least-squares problem, over the cameras' poses alone: each frame's points are
/// eliminated at every linearisation (the Schur complement; no residual ties two frames)
/// and follow the cameras' step by back-substitution in [`Problem::step`]. The solver sees
/// a few dozen parameters however long the recording.
struct BodyProblem {
    seen: Vec<Seen>,
    /// Point index pairs and lengths.
    segments: Vec<(usize, usize, f64)>,
    camera_at: Vec<Option<usize>>,
    camera_dim: usize,
    frames: Vec<Frame>,
    settings: BodySettings,
}

impl BodyProblem {
    /// A seen keypoint's residual in pixels.
    fn residual(&self, s: &BodyState, o: &Seen) -> Option<nalgebra::Vector2<f64>> {
        s.cameras[o.camera]
            .project(&s.points[o.point])
            .map(|px| px - o.pixel)
    }

    fn residuals(&self, s: &BodyState) -> Vec<Option<nalgebra::Vector2<f64>>> {
        self.seen.iter().map(|o| self.residual(s, o)).collect()
    }
}

impl Problem for BodyProblem {
    type State = BodyState;

    fn dim(&self) -> usize {
        self.camera_dim
    }

    fn linearize(
        &mut self,
        s: &BodyState,
        jtj: &mut DMatrix<f64>,
        jtr: &mut DVector<f64>,
    ) -> Result<f64, FitError> {
        jtj.fill(0.0);
        jtr.fill(0.0);
        let nc = self.camera_dim;
        let sigma = self.settings.noise_px;
        let sigma_l = self.settings.segment_sigma_m;
        let delta = self.settings.huber_px / sigma;
        let mut cost = 0.0;
        for f in 0..self.frames.len() {
            let (first, n) = self.frames[f].points;
            let m = 3 * n;
            let mut v = DMatrix::zeros(m, m);
            let mut w = DMatrix::zeros(nc, m);
            let mut g = DVector::zeros(m);
            for o in &self.seen[self.frames[f].seen.clone()] {
                let cam = &s.cameras[o.camera];
                let rotated = cam.rotation * s.points[o.point].coords;
                let Some((px, jc)) = cam.project_camera_with_jacobian(&(rotated + cam.translation))
                else {
                    return Ok(f64::INFINITY);
                };
                let scale = o.weight.sqrt() / sigma;
                let r = (px - o.pixel) * scale;
                let (rho, hw) = huber(r.norm_squared(), delta);
                cost += rho;
                let jp = jc * cam.rotation * scale;
                let at = 3 * (o.point - first);
                let mut vb = v.fixed_view_mut::<3, 3>(at, at);
                vb += hw * jp.transpose() * jp;
                let mut gb = g.fixed_rows_mut::<3>(at);
                gb += hw * jp.transpose() * r;
                if let Some(ca) = self.camera_at[o.camera] {
                    let jcam = jc * pose_jacobian(&rotated) * scale;
                    let mut u = jtj.fixed_view_mut::<6, 6>(ca, ca);
                    u += hw * jcam.transpose() * jcam;
                    let mut gc = jtr.fixed_rows_mut::<6>(ca);
                    gc += hw * jcam.transpose() * r;
                    let mut wb = w.fixed_view_mut::<6, 3>(ca, at);
                    wb += hw * jcam.transpose() * jp;
                }
            }
            for &(a, b, length) in &self.segments[self.frames[f].segments.clone()] {
                let d = s.points[a] - s.points[b];
                let norm = d.norm();
                if norm < 1e-9 {
                    continue;
                }
                let r = (norm - length) / sigma_l;
                cost += 0.5 * r * r;
                let u: Vector3<f64> = d / (norm * sigma_l);
                let (pa, pb) = (3 * (a - first), 3 * (b - first));
                for (p, sp) in [(pa, 1.0), (pb, -1.0)] {
                    let mut gb = g.fixed_rows_mut::<3>(p);
                    gb += sp * u * r;
                    for (q, sq) in [(pa, 1.0), (pb, -1.0)] {
                        let mut vb = v.fixed_view_mut::<3, 3>(p, q);
                        vb += sp * sq * u * u.transpose();
                    }
                }
            }
            // Every point is seen twice or more, so its block is positive definite; a
            // tiny ridge keeps a degenerate one from stopping the solve.
            for i in 0..m {
                v[(i, i)] += 1e-12;
            }
            let Some(v_inverse) = v.cholesky().map(|c| c.inverse()) else {
                return Ok(f64::INFINITY);
            };
            let wv = &w * &v_inverse;
            *jtj -= &wv * w.transpose();
            *jtr -= &wv * &g;
            let frame = &mut self.frames[f];
            frame.v_inverse = v_inverse;
            frame.w = w;
            frame.g = g;
        }
        Ok(cost)
    }

    fn cost(&mut self, s: &BodyState) -> Result<f64, FitError> {
        let sigma = self.settings.noise_px;
        let delta = self.settings.huber_px / sigma;
        let mut cost = 0.0;
        for o in &self.seen {
            let Some(r) = self.residual(s, o) else {
                return Ok(f64::INFINITY);
            };
            cost += huber((r * (o.weight.sqrt() / sigma)).norm_squared(), delta).0;
        }
        for &(a, b, length) in &self.segments {
            let r = ((s.points[a] - s.points[b]).norm() - length) / self.settings.segment_sigma_m;
            cost += 0.5 * r * r;
        }
        Ok(cost)
    }

    /// The cameras move by `delta`; each frame's points by their back-substituted step
    /// `V^-1 (-g - W^T delta)` from the last linearisation.
    fn step(&self, s: &BodyState, delta: &[f64]) -> BodyState {
        let mut out = s.clone();
        for (c, cam) in out.cameras.iter_mut().enumerate() {
            if let Some(at) = self.camera_at[c] {
                *cam = with_pose(cam, &retract(&camera_pose(cam), &delta[at..at + 6]));
            }
        }
        let dc = DVector::from_column_slice(delta);
        for frame in &self.frames {
            if frame.g.is_empty() {
                continue;
            }
            let dp = &frame.v_inverse * (-&frame.g - frame.w.tr_mul(&dc));
            let (first, n) = frame.points;
            for i in 0..n {
                out.points[first + i] += Vector3::new(dp[3 * i], dp[3 * i + 1], dp[3 * i + 2]);
            }
        }
        out
    }
}

/// Refines the poses of the cameras not `held` from the keypoints `frames[f][camera][k]`
/// they saw of a moving body, with `segments` stating rigid lengths (empty: none).
///
/// # Errors
/// [`CalibrateError::Degenerate`] when no camera is held, or one alone with no segment
/// lengths (the scale would be free); [`CalibrateError::NeverSeen`] for a camera to refine
/// that sees no keypoint another camera also saw; [`CalibrateError::BodyResidual`] per camera
/// over `settings.max_rms_px`; [`CalibrateError::NotConverged`].
pub fn refine_from_body(
    cameras: &[Camera],
    names: &[String],
    held: &[bool],
    frames: &[Vec<Vec<Option<Observation>>>],
    segments: &[Segment],
    settings: &BodySettings,
) -> Result<BodyRefinement, CalibrateError> {
    let name = |c: usize| names.get(c).cloned().unwrap_or_else(|| format!("#{c}"));
    let holding = held.iter().take(cameras.len()).filter(|&&h| h).count();
    if holding == 0 || (holding == 1 && segments.is_empty()) {
        return Err(CalibrateError::Degenerate {
            camera: "rig".into(),
            what: if holding == 0 {
                "no camera is held, so the body fixes no world"
            } else {
                "one camera held and no segment lengths leave the scale free: hold two cameras or state the stature"
            },
        });
    }
    let (mut problem, points) = BodyProblem::gather(cameras, held, frames, segments, settings);
    // A camera with a block of parameters is one to refine.
    for (c, at) in problem.camera_at.iter().enumerate() {
        if at.is_some() && !problem.seen.iter().any(|o| o.camera == c) {
            return Err(CalibrateError::NeverSeen { camera: name(c) });
        }
    }
    let state = BodyState {
        cameras: cameras.to_vec(),
        points,
    };
    let state = solver_pass(&mut problem, state, &settings.lm)?;
    let state = solver("rig", "body", &mut problem, state, &settings.lm)?;
    let residuals = problem.residuals(&state);
    let per_camera_px: Vec<f64> = (0..cameras.len())
        .map(|c| rms_where(&problem.seen, &residuals, |o| o.camera == c))
        .collect();
    for (c, &e) in per_camera_px.iter().enumerate() {
        if e > settings.max_rms_px {
            return Err(CalibrateError::BodyResidual {
                camera: name(c),
                rms_px: e,
                limit_px: settings.max_rms_px,
            });
        }
    }
    Ok(BodyRefinement {
        rms_px: rms(residuals.iter()),
        per_camera_px,
        frames: problem.frames.len(),
        points: state.points.len(),
        cameras: state.cameras,
    })
}

impl BodyProblem {
    /// The problem `frames` pose: each frame's keypoints triangulated from the cameras'
    /// poses as the start of its points (a frame that does not triangulate is left out), each
    /// sighting of a point, each stated segment between two of a frame's points, and a block
    /// of six pose parameters for each camera not held. Returns it with the points' start.
    fn gather(
        cameras: &[Camera],
        held: &[bool],
        frames: &[Vec<Vec<Option<Observation>>>],
        segments: &[Segment],
        settings: &BodySettings,
    ) -> (Self, Vec<Point3<f64>>) {
        let config = TriangulationConfig::default();
        let mut points = Vec::new();
        let mut seen = Vec::new();
        let mut seg = Vec::new();
        let mut blocks: Vec<Frame> = Vec::new();
        for frame in frames {
            let Ok(start) = triangulate(cameras, frame, &config) else {
                continue;
            };
            let first = points.len();
            let (seen_from, segments_from) = (seen.len(), seg.len());
            let mut index = vec![None; start.len()];
            for (k, t) in start.iter().enumerate() {
                let Some(t) = t else { continue };
                index[k] = Some(points.len());
                points.push(t.point);
                for (c, view) in frame.iter().enumerate() {
                    if let Some(Some(o)) = view.get(k) {
                        seen.push(Seen {
                            camera: c,
                            point: points.len() - 1,
                            pixel: o.pixel,
                            weight: o.confidence.clamp(0.0, 1.0),
                        });
                    }
                }
            }
            for s in segments {
                if let (Some(Some(a)), Some(Some(b))) = (index.get(s.a), index.get(s.b)) {
                    seg.push((*a, *b, s.length_m));
                }
            }
            if points.len() > first {
                blocks.push(Frame {
                    points: (first, points.len() - first),
                    seen: seen_from..seen.len(),
                    segments: segments_from..seg.len(),
                    v_inverse: DMatrix::zeros(0, 0),
                    w: DMatrix::zeros(0, 0),
                    g: DVector::zeros(0),
                });
            }
        }
        let mut dim = 0;
        let camera_at = (0..cameras.len())
            .map(|c| {
                (!held.get(c).copied().unwrap_or(false)).then(|| {
                    dim += 6;
                    dim - 6
                })
            })
            .collect();
        let problem = Self {
            seen,
            segments: seg,
            camera_at,
            camera_dim: dim,
            frames: blocks,
            settings: *settings,
        };
        (problem, points)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use nalgebra::{Rotation3, Unit};
    use rand::SeedableRng;

    use super::*;
    use crate::body::model::Model;
    use crate::calibrate::synthetic::{centre, errors};
    use crate::scene::observe::{observe, Detections};
    use crate::scene::{BodyRig, BodyScene};

    fn names() -> Vec<String> {
        crate::scene::DEMO_CAMERA_NAMES.map(String::from).to_vec()
    }

    /// 20 s of a subject moving through 25 random poses, at 30 fps (600 frames), 2 px noise,
    /// 5 % of detections dropped.
    fn recording(cameras: &[Camera]) -> (BodyFrames, Vec<Vec<Point3<f64>>>) {
        let body = Arc::new(BodyRig::anny(Model::embedded().unwrap(), true).unwrap());
        let scene = BodyScene::new(body, 25, 0.8, 1);
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let detections = Detections {
            noise_px: 2.0,
            drop_rate: 0.05,
        };
        let truth: Vec<Vec<Point3<f64>>> = (0..600)
            .map(|k| scene.keypoints(f64::from(k) / 30.0))
            .collect();
        let frames = truth
            .iter()
            .map(|points| observe(cameras, points, detections, &mut rng))
            .collect();
        (frames, truth)
    }

    /// `c` turned 10 degrees about a slanted axis through its centre and moved 10 cm.
    fn bumped(c: &Camera) -> Camera {
        let axis = Unit::new_normalize(Vector3::new(1.0, 1.0, 0.0));
        let turn = Rotation3::from_axis_angle(&axis, 10f64.to_radians());
        let rotation = turn.matrix() * c.rotation;
        let eye = centre(c).coords + Vector3::new(0.06, 0.08, 0.0);
        let mut out = *c;
        out.rotation = rotation;
        out.translation = -(rotation * eye);
        out
    }

    #[test]
    fn a_bumped_camera_is_found_again_from_the_body() {
        let truth = crate::scene::demo_rig();
        let (frames, _) = recording(&truth);
        let mut start = truth.to_vec();
        start[1] = bumped(&truth[1]);
        let before = errors(&truth[1], &start[1]);
        assert!(
            before.position_mm > 99.0 && before.rotation_deg > 9.9,
            "{before:?}"
        );
        let held = [true, false, true, true];
        let got = refine_from_body(
            &start,
            &names(),
            &held,
            &frames,
            &[],
            &BodySettings::default(),
        )
        .unwrap();
        let e = errors(&truth[1], &got.cameras[1]);
        eprintln!(
            "left: {:.2} mm, {:.3} deg; RMS {:.2} px over {} frames, {} points",
            e.position_mm, e.rotation_deg, got.rms_px, got.frames, got.points
        );
        assert!(e.position_mm < 5.0, "{} mm", e.position_mm);
        assert!(e.rotation_deg < 0.3, "{} deg", e.rotation_deg);
        assert_eq!(got.cameras[0], start[0], "a held camera stays");
        // Negative control: holding the bumped camera instead leaves the rig unable to
        // explain the keypoints.
        let err = refine_from_body(
            &start,
            &names(),
            &[false, true, true, true],
            &frames,
            &[],
            &BodySettings::default(),
        )
        .unwrap_err();
        assert!(matches!(err, CalibrateError::BodyResidual { .. }), "{err}");
    }

    #[test]
    fn the_stature_gives_the_scale_with_one_camera_held() {
        let truth = crate::scene::demo_rig();
        let (frames, points) = recording(&truth);
        // Limb segments (COCO order: shoulder-elbow, elbow-wrist, hip-knee, knee-ankle), at
        // the subject's lengths.
        let pairs = [
            (5, 7),
            (6, 8),
            (7, 9),
            (8, 10),
            (11, 13),
            (12, 14),
            (13, 15),
            (14, 16),
        ];
        let length = |a: usize, b: usize| {
            points.iter().map(|p| (p[a] - p[b]).norm()).sum::<f64>() / points.len() as f64
        };
        let segments = |scale: f64| -> Vec<Segment> {
            pairs
                .iter()
                .map(|&(a, b)| Segment {
                    a,
                    b,
                    length_m: scale * length(a, b),
                })
                .collect()
        };
        let mut start = truth.to_vec();
        start[1] = bumped(&truth[1]);
        start[2] = bumped(&truth[2]);
        let got = refine_from_body(
            &start,
            &names(),
            &[true, false, false, false],
            &frames,
            &segments(1.0),
            &BodySettings::default(),
        )
        .unwrap();
        for (c, t) in truth.iter().enumerate().take(3).skip(1) {
            let e = errors(t, &got.cameras[c]);
            eprintln!(
                "{}: {:.2} mm, {:.3} deg",
                names()[c],
                e.position_mm,
                e.rotation_deg
            );
            assert!(e.position_mm < 30.0 && e.rotation_deg < 0.3, "{e:?}");
        }
        // Negative controls: lengths stated 5 % long put the cameras 5 % farther out, and one
        // held camera without lengths is refused.
        let long = refine_from_body(
            &start,
            &names(),
            &[true, false, false, false],
            &frames,
            &segments(1.05),
            &BodySettings::default(),
        )
        .unwrap();
        let far = errors(&truth[1], &long.cameras[1]).position_mm;
        eprintln!("5 % long: left {far:.1} mm");
        assert!(far > 100.0, "{far} mm");
        let err = refine_from_body(
            &start,
            &names(),
            &[true, false, false, false],
            &frames,
            &[],
            &BodySettings::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("state the stature"), "{err}");
    }
}
