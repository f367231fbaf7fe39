//! What `fuse` writes: a JSON line per fused instant and the report at the end.

use std::collections::BTreeMap;

use serde::Serialize;

use super::boxes::{Presence, RigStats};
use crate::metrics::stats::ValueSummary;

/// One fused instant (a JSON line).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FusedLine {
    /// Wall-clock capture time, ns since the Unix epoch.
    pub wall_ns: u64,
    /// Views fused.
    pub views: usize,
    /// The rigs they came from.
    pub rigs: Vec<String>,
    /// Root translation, metres, world frame.
    pub translation: Option<[f64; 3]>,
    /// 3D keypoints, metres, in the skeleton's keypoint order (ANNY's 23).
    pub keypoints_3d: Option<Vec<[f64; 3]>>,
    /// The fit residual, millimetres.
    pub residual_mm: Option<f64>,
    /// MPJPE against the synthetic truth, millimetres (`--truth`).
    pub mpjpe_mm: Option<f64>,
    /// The MPJPE of each rig's own views fitted alone, millimetres (`--truth`).
    pub by_rig_mpjpe_mm: BTreeMap<String, f64>,
    /// Why the fit failed, when it did.
    pub fit_error: Option<String>,
}

/// One rig in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RigReport {
    pub name: String,
    /// At the end of the run.
    pub presence: Presence,
    /// Why it is not fused, when refused.
    pub refused: Option<String>,
    /// Cameras taken in.
    pub cameras: usize,
    #[serde(flatten)]
    pub stats: RigStats,
}

/// The fused fit against each rig's own, on the same instants.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accuracy {
    /// Instants every rig fused at the time gave two views or more to, so each could be
    /// fitted alone: what the figures below are the mean over.
    pub shared_instants: u64,
    /// Mean MPJPE of the fit over all views, mm.
    pub fused_mpjpe_mm: Option<f64>,
    /// Mean MPJPE of each rig's views fitted alone, mm.
    pub by_rig_mpjpe_mm: BTreeMap<String, f64>,
    /// Mean MPJPE of the fused fit over every instant (shared or not), mm.
    pub all_instants_mpjpe_mm: Option<f64>,
}

/// Running sums behind [`Accuracy`].
#[derive(Debug, Clone, Default)]
pub struct AccuracySums {
    shared: u64,
    fused_m: f64,
    by_rig_m: BTreeMap<usize, (f64, u64)>,
    any: u64,
    any_m: f64,
}

impl AccuracySums {
    /// Adds one shared instant: the fused MPJPE and each rig's alone (metres).
    pub fn add(&mut self, fused_m: f64, by_rig_m: &BTreeMap<usize, f64>) {
        self.shared += 1;
        self.fused_m += fused_m;
        for (&r, &m) in by_rig_m {
            let e = self.by_rig_m.entry(r).or_default();
            e.0 += m;
            e.1 += 1;
        }
    }

    /// Adds the fused MPJPE of any instant (metres).
    pub fn add_any(&mut self, fused_m: f64) {
        self.any += 1;
        self.any_m += fused_m;
    }

    /// Means in millimetres, rigs named by `name`.
    pub fn summary(&self, name: impl Fn(usize) -> String) -> Accuracy {
        let mean = |sum: f64, n: u64| (n > 0).then(|| sum / n as f64 * 1e3);
        Accuracy {
            shared_instants: self.shared,
            fused_mpjpe_mm: mean(self.fused_m, self.shared),
            by_rig_mpjpe_mm: self
                .by_rig_m
                .iter()
                .filter_map(|(&r, &(s, n))| mean(s, n).map(|m| (name(r), m)))
                .collect(),
            all_instants_mpjpe_mm: mean(self.any_m, self.any),
        }
    }
}

/// What a fuse run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FuseReport {
    /// `hailo-edge.fuse-report/1`.
    pub schema: &'static str,
    pub seconds: f64,
    pub rigs: Vec<RigReport>,
    /// Instants fused.
    pub instants: u64,
    pub instants_per_s: f64,
    pub views_fused: u64,
    /// Instants whose fit failed (their lines carry the error).
    pub fit_errors: u64,
    /// Views that came after their instant was fused.
    pub late: u64,
    /// Views of a camera already in their instant.
    pub duplicates: u64,
    /// Payloads on the view keys that were not views (each logged with its key).
    pub malformed: u64,
    /// Views dropped on arrival because the fusing thread was too far behind.
    pub overflow: u64,
    /// From an instant's first view arriving to its fused body, ms.
    pub latency_ms: Option<ValueSummary>,
    /// CPU time of the fusing thread per fused instant, ms.
    pub cpu_ms_per_instant: Option<f64>,
    /// With `--truth`: the fused fit against each rig's own.
    pub accuracy: Option<Accuracy>,
}

impl FuseReport {
    /// A few lines for a person.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "fused {} instants in {:.1} s ({:.1}/s), {} views; {} late, {} malformed, {} dropped behind, {} fit errors\n",
            self.instants,
            self.seconds,
            self.instants_per_s,
            self.views_fused,
            self.late,
            self.malformed,
            self.overflow,
            self.fit_errors
        );
        if let Some(l) = &self.latency_ms {
            s += &format!(
                "latency (first view to body): p50 {:.1} ms, p99 {:.1} ms\n",
                l.p50, l.p99
            );
        }
        for r in &self.rigs {
            let state = match (&r.presence, &r.refused) {
                (_, Some(why)) => format!("refused: {why}"),
                (Presence::Absent, _) => "absent".into(),
                _ if r.stats.skewed => "clock off".into(),
                _ => "fused".into(),
            };
            s += &format!(
                "rig {}: {state}; {} cameras, {} views, {} fused, {} late, {} not fused; {} gaps, {} returns; clock {}\n",
                crate::output::printable(&r.name),
                r.cameras,
                r.stats.views,
                r.stats.fused,
                r.stats.late,
                r.stats.not_fused,
                r.stats.gaps,
                r.stats.returns,
                r.stats
                    .clock_offset_ms
                    .map_or("not measured".into(), |ms| format!("{ms:+.2} ms"))
            );
        }
        if let Some(a) = &self.accuracy {
            let rigs: Vec<String> = a
                .by_rig_mpjpe_mm
                .iter()
                .map(|(r, m)| format!("{} alone {m:.1} mm", crate::output::printable(r)))
                .collect();
            s += &format!(
                "MPJPE over {} instants every rig saw: fused {}; {}\n",
                a.shared_instants,
                a.fused_mpjpe_mm
                    .map_or("none".into(), |m| format!("{m:.1} mm")),
                rigs.join(", ")
            );
        }
        s
    }
}
