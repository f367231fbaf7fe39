//! One body from an instant's views of every box: the pose fit over all their cameras, and
//! with a synthetic truth, each box's own fit of the same instant to compare with.

use std::collections::BTreeMap;
use std::sync::Arc;

use nalgebra::{Point2, Point3};

use crate::body::fit::{FitConfig, FitError, FitOutput, PoseFitter};
use crate::body::triangulate::Observation;
use crate::geom::Camera;
use crate::scene::observe::mpjpe;
use crate::scene::{BodyRig, BodyScene};

use super::boxes::Boxes;
use super::instants::Instant;

/// What an instant's fits gave.
#[derive(Debug)]
pub struct Solved {
    /// The fit over every view of the instant.
    pub fit: Result<FitOutput, FitError>,
    /// The boxes (indices) its views came from, in order.
    pub rigs: Vec<usize>,
    /// Its MPJPE against the synthetic truth, metres.
    pub mpjpe_m: Option<f64>,
    /// Per box (index): the MPJPE of its own views' fit, metres.
    pub by_rig_mpjpe_m: BTreeMap<usize, f64>,
}

/// Longest gap, s, across which a fit starts from the previous instant's pose. The fit's
/// temporal prior pulls toward that pose, which at a few instants a second is where the
/// subject was, not where it is: past this gap every fit starts from scratch, so the fused
/// fit and each box's own are fitted alike whatever rate the boxes keep.
pub const WARM_GAP_S: f64 = 0.05;

/// A fitter and the time of its last fit.
struct Timed {
    fitter: PoseFitter,
    last_s: Option<f64>,
}

impl Timed {
    fn fit(
        &mut self,
        observations: &[Vec<Option<Observation>>],
        time_s: f64,
    ) -> Result<FitOutput, FitError> {
        if self
            .last_s
            .is_none_or(|l| !(time_s > l && time_s - l <= WARM_GAP_S))
        {
            self.fitter.reset();
        }
        self.last_s = Some(time_s);
        self.fitter.fit_at(observations, time_s)
    }
}

/// The fitters: one over all slots, and one per box for the comparison.
pub struct Solver {
    body: Arc<BodyRig>,
    /// The fused fitter and the slot count it was built for.
    fused: Option<(usize, Timed)>,
    /// Per box: its slots and its own fitter.
    by_rig: BTreeMap<usize, (Vec<usize>, Timed)>,
    truth: Option<BodyScene>,
}

impl Solver {
    /// A solver for `body`; `truth`, when given, scores every fit and fits each box alone too.
    pub fn new(body: Arc<BodyRig>, truth: Option<BodyScene>) -> Self {
        Self {
            body,
            fused: None,
            by_rig: BTreeMap::new(),
            truth,
        }
    }

    fn fitter(&self, cameras: Vec<Camera>) -> Result<Timed, FitError> {
        PoseFitter::new(
            self.body.rig.clone(),
            self.body.limits.clone(),
            self.body.active.clone(),
            cameras,
            FitConfig::default(),
        )
        .map(|fitter| Timed {
            fitter,
            last_s: None,
        })
    }

    /// Fits `instant` over every slot of `boxes`.
    pub fn solve(&mut self, instant: &Instant, boxes: &Boxes) -> Solved {
        let keypoints = self.body.rig.keypoints();
        let time_s = instant.wall_ns as f64 * 1e-9;
        let slots = boxes.slots.len();
        let mut rigs: Vec<usize> = instant
            .views
            .iter()
            .map(|v| boxes.slots[v.slot].0)
            .collect();
        rigs.sort_unstable();
        rigs.dedup();
        let all: Vec<usize> = (0..slots).collect();
        let every = observations(instant, &all, keypoints);
        // Slots are only ever added, so a fitter over as many slots is over these ones.
        let fused = match self.fused.take() {
            Some((n, f)) if n == slots => Ok(f),
            _ => self.fitter(boxes.calibrations()),
        };
        let fit = fused.and_then(|mut f| {
            let out = f.fit(&every, time_s);
            self.fused = Some((slots, f));
            out
        });
        let Some(truth) = &self.truth else {
            return Solved {
                fit,
                rigs,
                mpjpe_m: None,
                by_rig_mpjpe_m: BTreeMap::new(),
            };
        };
        let truth = truth.keypoints(time_s);
        let score = |out: &FitOutput| {
            let est: Vec<Option<Point3<f64>>> = out.keypoints.iter().map(|p| Some(*p)).collect();
            mpjpe(&est, &truth)
        };
        let mpjpe_m = fit.as_ref().ok().and_then(score);
        let mut by_rig_mpjpe_m = BTreeMap::new();
        for &r in &rigs {
            let cameras = &boxes.boxes[r].cameras;
            if self
                .by_rig
                .get(&r)
                .is_none_or(|(s, _)| s.len() != cameras.len())
            {
                let own: Vec<usize> = cameras.values().map(|&(s, _)| s).collect();
                let cams = cameras.values().map(|&(_, c)| c).collect();
                match self.fitter(cams) {
                    Ok(f) => {
                        self.by_rig.insert(r, (own, f));
                    }
                    Err(_) => continue,
                }
            }
            let Some((own, f)) = self.by_rig.get_mut(&r) else {
                continue;
            };
            let obs = observations(instant, own, keypoints);
            if let Some(m) = f.fit(&obs, time_s).ok().as_ref().and_then(score) {
                by_rig_mpjpe_m.insert(r, m);
            }
        }
        Solved {
            fit,
            rigs,
            mpjpe_m,
            by_rig_mpjpe_m,
        }
    }
}

/// The observations of `slots` (in that order) in `instant`: a keypoint with visibility 0,
/// or not finite, is not observed; confidence is visibility times score.
fn observations(
    instant: &Instant,
    slots: &[usize],
    keypoints: usize,
) -> Vec<Vec<Option<Observation>>> {
    slots
        .iter()
        .map(|&s| {
            let mut obs = vec![None; keypoints];
            if let Some(v) = instant.views.iter().find(|v| v.slot == s) {
                for (o, k) in obs.iter_mut().zip(&v.keypoints) {
                    let [x, y, vis, score] = k.map(f64::from);
                    if vis > 0.0 && x.is_finite() && y.is_finite() {
                        *o = Some(Observation {
                            pixel: Point2::new(x, y),
                            confidence: (vis * score).clamp(0.0, 1.0),
                        });
                    }
                }
            }
            obs
        })
        .collect()
}
