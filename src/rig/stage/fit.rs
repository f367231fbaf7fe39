//! Multi-view sync by capture time, then triangulation + pose fit with a warm
//! start; each fitted instant goes on to the [`sinks`](super::sinks).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_channel::Receiver;
use nalgebra::Point2;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

use crate::body::fit::{share_of_stature_pct, FitError, FitOutput, PoseFitter};
use crate::body::triangulate::Observation;
use crate::body::SkeletonNaming;
use crate::rig::stage::sync::{Group, SyncConfig, Synchronizer};
use crate::scene::observe::mpjpe;
use crate::scene::GroundTruth;

use crate::geom::time::{thread_cpu_ns, Clock};
use crate::rig::stamp::Leg;
use crate::rig::stats::{DropStage, LiveStats};
use crate::rig::work::ViewResult;

use super::sinks::{FitRecord, FrameResult, Sinks, ViewRecord};
use super::Stage;

/// Where the fit's 2D keypoints come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeypointSource {
    /// The decoder's top detection.
    Decoder,
    /// Synthetic cameras' ground truth plus Gaussian pixel noise (seeded).
    GroundTruth { noise_px: f64, seed: u64 },
}

/// What the sync measures a view's arrival, and so a camera's silence, in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    /// The host's monotonic clock: cameras that deliver in real time.
    Wall,
    /// The newest capture stamp seen: on a virtual clock the host's speed says nothing
    /// about a camera, and a view queued behind a slow decoder is late, not silent.
    CaptureTime,
}

/// The fit thread's state.
pub struct FitStage {
    pub input: Receiver<ViewResult>,
    pub cameras: usize,
    pub fitter: Option<PoseFitter>,
    pub keypoints: KeypointSource,
    pub keypoint_count: usize,
    pub stats: Arc<LiveStats>,
    pub clock: Arc<dyn Clock>,
    pub arrivals: Arrivals,
    /// Where each fitted instant goes.
    pub sinks: Sinks,
    pub sync: SyncConfig,
    pub bone_names: Vec<String>,
    /// The bones the fit turns (reported by name).
    pub active: Vec<usize>,
    /// The skeleton the results' bone names and keypoint indices count in.
    pub naming: SkeletonNaming,
    /// The subject's stature, metres, that residuals are reported as a share of.
    pub stature_m: Option<f64>,
    /// Extra time per view (a deliberately slow stage, for backpressure tests).
    pub delay: Option<std::time::Duration>,
}

impl Stage for FitStage {
    type Output = std::io::Result<()>;

    fn name(&self) -> String {
        "fit".into()
    }

    /// Runs until the input closes, then resolves what the sync still holds.
    ///
    /// # Errors
    /// Writing the JSON lines failed.
    fn run(mut self) -> Self::Output {
        let cpu0 = thread_cpu_ns();
        let mut fit_cpu = 0u64;
        let mut sync = Synchronizer::new(&self.sync);
        let mut last = vec![None::<u64>; self.cameras];
        let mut newest = 0u64;
        let mut pushed = vec![0u64; self.cameras];
        let mut grouped = vec![0u64; self.cameras];
        let mut io_error = self.sinks.header(&self.naming).err();
        let mut handle = |me: &mut Self, groups: Vec<Group<ViewResult>>, grouped: &mut Vec<u64>| {
            for g in groups {
                for m in g.members.iter().flatten() {
                    grouped[m.meta.camera] += 1;
                }
                if let Err(e) = me.fit_group(g, &mut fit_cpu) {
                    io_error.get_or_insert(e);
                }
            }
        };
        while let Ok(view) = self.input.recv() {
            if let Some(d) = self.delay {
                std::thread::sleep(d);
            }
            let c = view.meta.camera;
            let t = view.meta.stamps.capture_ns();
            if c >= self.cameras || last[c].is_some_and(|l| t <= l) {
                // Out of order for the sync: counted, never silently lost.
                if let Some(cc) = self.stats.cameras.get(c) {
                    cc.drop_at(DropStage::Sync);
                }
                continue;
            }
            last[c] = Some(t);
            pushed[c] += 1;
            newest = newest.max(t);
            let arrival = match self.arrivals {
                Arrivals::Wall => self.clock.now_ns(),
                Arrivals::CaptureTime => newest,
            };
            let groups = sync.push_at(view, arrival);
            handle(&mut self, groups, &mut grouped);
        }
        let groups = sync.finish();
        handle(&mut self, groups, &mut grouped);
        // Frames the sync did not put into any group (between anchors).
        for c in 0..self.cameras {
            for _ in grouped[c]..pushed[c] {
                self.stats.cameras[c].drop_at(DropStage::Sync);
            }
        }
        self.sinks.flush()?;
        let total = thread_cpu_ns().saturating_sub(cpu0);
        self.stats.cpu.fit.fetch_add(fit_cpu, Ordering::Relaxed);
        self.stats
            .cpu
            .sync_sinks
            .fetch_add(total.saturating_sub(fit_cpu), Ordering::Relaxed);
        io_error.map_or(Ok(()), Err)
    }
}

impl FitStage {
    fn observations(&self, view: &ViewResult) -> Vec<Option<Observation>> {
        let mut obs = vec![None; self.keypoint_count];
        match self.keypoints {
            KeypointSource::GroundTruth { noise_px, seed } => {
                let noise = Normal::new(0.0, noise_px).ok().filter(|_| noise_px > 0.0);
                if let Some(truth) = &view.meta.truth {
                    // Each view's noise is drawn from its own seed, so a view's keypoints
                    // do not depend on which views were fitted before it.
                    let rng = &mut rand::rngs::StdRng::seed_from_u64(
                        seed ^ ((view.meta.camera as u64) << 48) ^ view.meta.sequence,
                    );
                    for (o, k) in obs.iter_mut().zip(&truth.keypoints_2d) {
                        *o = k.map(|[x, y]| {
                            let (dx, dy) = match &noise {
                                Some(n) => (n.sample(rng), n.sample(rng)),
                                None => (0.0, 0.0),
                            };
                            Observation {
                                pixel: Point2::new(f64::from(x) + dx, f64::from(y) + dy),
                                confidence: 1.0,
                            }
                        });
                    }
                }
            }
            KeypointSource::Decoder => {
                if let Some(d) = &view.detection {
                    // The decoder's 17 COCO keypoints are the first 17 of the body's
                    // (checked by name when the rig is built).
                    for (o, k) in obs.iter_mut().zip(&d.keypoints) {
                        *o = Some(Observation {
                            pixel: Point2::new(f64::from(k.x), f64::from(k.y)),
                            confidence: f64::from(k.score * k.visibility).clamp(0.0, 1.0),
                        });
                    }
                }
            }
        }
        obs
    }

    /// Fits one group of views, counts its frames and hands the result to
    /// the sinks.
    fn fit_group(&mut self, group: Group<ViewResult>, fit_cpu: &mut u64) -> std::io::Result<()> {
        let now = self.clock.now_ns();
        let mut members = group.members;
        for m in members.iter_mut().flatten() {
            m.meta.stamps.leave(Leg::Sync, now);
        }
        let observations: Vec<Vec<Option<Observation>>> = members
            .iter()
            .map(|m| match m {
                Some(v) => self.observations(v),
                None => vec![None; self.keypoint_count],
            })
            .collect();
        let fitted = self.fit(&observations, group.anchor_ns, fit_cpu);
        let done = self.clock.now_ns();
        let records = self.sinks.any();
        let (fit, fit_error) = match fitted {
            Some(Ok(out)) => {
                let truth = members.iter().flatten().find_map(|m| m.meta.truth.clone());
                let quality = Quality::of(&out, truth.as_deref(), self.stature_m);
                quality.count(&self.stats, out.cold_start);
                let record =
                    records.then(|| fit_record(&out, &quality, &self.active, &self.bone_names));
                (record, None)
            }
            Some(Err(e)) => (None, Some(e.to_string())),
            None => (None, None),
        };
        let seen = match self.keypoints {
            KeypointSource::Decoder => Seen::Decoder,
            KeypointSource::GroundTruth { .. } => Seen::Observed(&observations),
        };
        let views = account_views(
            &self.stats,
            &mut members,
            fit_error.is_none(),
            done,
            records.then_some(seen),
        );
        if !records {
            return Ok(());
        }
        self.sinks.write(&FrameResult {
            capture_ns: group.anchor_ns,
            views,
            fit,
            fit_error,
        })
    }

    /// Fits the group's views, timing the fit on this thread's CPU clock.
    fn fit(
        &mut self,
        observations: &[Vec<Option<Observation>>],
        anchor_ns: u64,
        fit_cpu: &mut u64,
    ) -> Option<Result<FitOutput, FitError>> {
        let c0 = thread_cpu_ns();
        // Capture time of the instant: the fitter warm-starts only across
        // short gaps (whole instants drop when the host falls behind).
        let time_s = anchor_ns as f64 * 1e-9;
        let fitted = self.fitter.as_mut().map(|f| f.fit_at(observations, time_s));
        *fit_cpu += thread_cpu_ns().saturating_sub(c0);
        fitted
    }
}

/// How well one fit matches: its mean reprojection residual, its residual as
/// a share of stature and, for synthetic cameras, its error against the
/// ground truth.
struct Quality {
    residual_px: Option<f64>,
    residual_m: Option<f64>,
    residual_stature_pct: Option<f64>,
    mpjpe_m: Option<f64>,
}

impl Quality {
    fn of(out: &FitOutput, truth: Option<&GroundTruth>, stature_m: Option<f64>) -> Self {
        let residuals: Vec<f64> = out.residuals.iter().flatten().flatten().copied().collect();
        let residual_px =
            (!residuals.is_empty()).then(|| residuals.iter().sum::<f64>() / residuals.len() as f64);
        let mpjpe_m = truth.and_then(|t| {
            let est: Vec<_> = out.keypoints.iter().map(|p| Some(*p)).collect();
            let tr: Vec<_> = t
                .keypoints_3d
                .iter()
                .map(|p| nalgebra::Point3::new(f64::from(p[0]), f64::from(p[1]), f64::from(p[2])))
                .collect();
            mpjpe(&est, &tr)
        });
        let residual_stature_pct = out
            .residual_m
            .zip(stature_m)
            .map(|(r, s)| share_of_stature_pct(r, s));
        Self {
            residual_px,
            residual_m: out.residual_m,
            residual_stature_pct,
            mpjpe_m,
        }
    }

    /// Adds one fitted group to the live fit counters.
    fn count(&self, stats: &LiveStats, cold_start: bool) {
        stats.cpu.fitted_groups.fetch_add(1, Ordering::Relaxed);
        let mut q = stats.fit.lock().unwrap_or_else(|e| e.into_inner());
        q.fits += 1;
        q.cold_starts += u64::from(cold_start);
        if let Some(r) = self.residual_px {
            q.residual_sum_px += r;
            q.residual_count += 1;
        }
        if let Some(p) = self.residual_stature_pct {
            q.residual_stature_pct.record(p);
        }
        if let Some(m) = self.mpjpe_m {
            q.mpjpe_sum_m += m;
            q.mpjpe_count += 1;
            q.last_mpjpe_m = Some(m);
        }
    }
}

/// The fitted body as the sinks write it: the `active` bones by name.
fn fit_record<'a>(
    out: &FitOutput,
    quality: &Quality,
    active: &[usize],
    bone_names: &'a [String],
) -> FitRecord<'a> {
    FitRecord {
        translation: out.pose.translation.into(),
        rotations: active
            .iter()
            .filter_map(|&j| {
                let v = out.pose.rotations[j].scaled_axis();
                bone_names.get(j).map(|n| (n.as_str(), [v.x, v.y, v.z]))
            })
            .collect(),
        keypoints_3d: out.keypoints.iter().map(|p| [p.x, p.y, p.z]).collect(),
        residual_px: quality.residual_px,
        residual_mm: quality.residual_m.map(|m| m * 1e3),
        residual_stature_pct: quality.residual_stature_pct,
        mpjpe_mm: quality.mpjpe_m.map(|m| m * 1e3),
        cold_start: out.cold_start,
    }
}

/// Where a view's recorded keypoints come from: the keypoints the fit used.
#[derive(Clone, Copy)]
enum Seen<'a> {
    /// The decoder's top detection, with its visibility and score.
    Decoder,
    /// Synthetic truth plus noise: the observations, per group member.
    Observed(&'a [Vec<Option<Observation>>]),
}

/// Counts each view of a group as processed (stamped and timed) when the fit
/// succeeded, as dropped at the fit when it failed; returns the per-view
/// records when `records` says what they carry (a sink takes them).
fn account_views(
    stats: &LiveStats,
    members: &mut [Option<ViewResult>],
    fitted: bool,
    done_ns: u64,
    records: Option<Seen<'_>>,
) -> Vec<ViewRecord> {
    let mut views = Vec::new();
    for (i, m) in members.iter_mut().enumerate() {
        let Some(m) = m else { continue };
        let c = m.meta.camera;
        if !fitted {
            stats.cameras[c].drop_at(DropStage::Fit);
            continue;
        }
        m.meta.stamps.leave(Leg::Fit, done_ns);
        stats.cameras[c].processed.fetch_add(1, Ordering::Relaxed);
        stats.record_latency(&m.meta.stamps);
        match records {
            Some(Seen::Decoder) => views.push(view_record(m, None)),
            Some(Seen::Observed(obs)) => views.push(view_record(m, obs.get(i))),
            None => {}
        }
    }
    views
}

/// One view as the sinks write it: the keypoints the fit used (the decoder's, or
/// `observed` when given) and per-stage latencies.
fn view_record(m: &ViewResult, observed: Option<&Vec<Option<Observation>>>) -> ViewRecord {
    let mut timing_ms = std::collections::BTreeMap::new();
    for stage in Leg::ALL {
        if let Some(ns) = m.meta.stamps.latency_ns(stage) {
            timing_ms.insert(stage.name(), ns as f64 / 1e6);
        }
    }
    if let Some(ns) = m.meta.stamps.total_ns() {
        timing_ms.insert(crate::rig::stats::END_TO_END, ns as f64 / 1e6);
    }
    ViewRecord {
        camera: m.meta.camera,
        sequence: m.meta.sequence,
        capture_ns: m.meta.stamps.capture_ns(),
        keypoints: match observed {
            Some(obs) => obs
                .iter()
                .map(|o| match o {
                    Some(o) => [o.pixel.x as f32, o.pixel.y as f32, 1.0, o.confidence as f32],
                    None => [0.0; 4],
                })
                .collect(),
            None => m
                .detection
                .as_ref()
                .map(|d| {
                    d.keypoints
                        .iter()
                        .map(|k| [k.x, k.y, k.visibility, k.score])
                        .collect()
                })
                .unwrap_or_default(),
        },
        timing_ms,
    }
}
