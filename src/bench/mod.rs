//! Driving the NPU to measure it: [`measure`] runs HEFs on a device and measures fps, latency,
//! busy and compute share, switches and the link; this module is the `hailo-edge bench` sweep: batch size x scheduler threshold x timeout x one graph or
//! two (3:1 traffic, like the rig), over a set of HEFs, and the files it writes.
//!
//! | file | what |
//! |---|---|
//! | `report.json` | schema `hailo-edge.utilisation/1`: per graph, its best point; `plan --from` reads it |
//! | `sweep.json` | every point with every figure and its provenance |
//! | `report.csv` | one row per point and graph |
//! | `*.svg`, `*.png` | fps vs batch, utilisation vs batch, latency CDF, switch-cost histogram ([`plots`]) |

mod files;
pub mod kernels;
pub mod measure;
pub mod plots;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

pub use files::{check_provenance, utilisation_report, write_csv, ProvenanceError};

use crate::npu::{Device, NpuError};
use measure::{GraphRun, MeasureError, RunConfig, RunMeasurement};

/// Errors of a sweep.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The sweep is impossible (no HEF, empty list, ...).
    #[error("invalid sweep: {0}")]
    Config(String),
    /// Opening the device failed.
    #[error("opening the device: {0}")]
    Open(#[source] NpuError),
    /// A point failed.
    #[error("point {point}: {source}")]
    Point {
        /// The point's label.
        point: String,
        /// What failed.
        source: MeasureError,
    },
    /// Writing an output failed.
    #[error("writing {path}: {reason}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Which graph combinations to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphsMode {
    /// Each HEF alone.
    One,
    /// The first two HEFs together, 3 frames of the first per frame of the second.
    Two,
    /// Both of the above.
    Both,
}

/// What to sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepConfig {
    /// The HEFs (the first network group of each).
    pub hefs: Vec<PathBuf>,
    /// Batch sizes.
    pub batches: Vec<u16>,
    /// Scheduler thresholds, frames.
    pub thresholds: Vec<u32>,
    /// Scheduler timeouts.
    pub timeouts: Vec<Duration>,
    /// One graph, two, or both.
    pub graphs: GraphsMode,
    /// Run time of each point (device time on the simulator's virtual clock).
    pub duration: Duration,
    /// Frames of the first HEF per frame of the second in two-graph points.
    pub pair_ratio: (u32, u32),
    /// Operations per frame (GOPS) given per HEF, for HEFs that carry none.
    pub ops_override: BTreeMap<PathBuf, f64>,
}

/// One point of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// A short label, e.g. `backbone_288 b4 t0 0ms`.
    pub label: String,
    /// `alone` or `pair`.
    pub mode: &'static str,
    /// What to run.
    pub run: RunConfig,
}

impl SweepConfig {
    /// The points, in order: per batch, threshold and timeout, each HEF alone then the pair.
    ///
    /// # Errors
    /// [`BenchError::Config`] for an empty list or a pair asked of fewer than two HEFs.
    pub fn points(&self) -> Result<Vec<SweepPoint>, BenchError> {
        let empty = |what: &str| BenchError::Config(format!("no {what} given"));
        if self.hefs.is_empty() {
            return Err(empty("HEF"));
        }
        if self.batches.is_empty() {
            return Err(empty("batch size"));
        }
        if self.thresholds.is_empty() {
            return Err(empty("scheduler threshold"));
        }
        if self.timeouts.is_empty() {
            return Err(empty("scheduler timeout"));
        }
        if let Some(b) = self.batches.iter().find(|&&b| b == 0) {
            return Err(BenchError::Config(format!(
                "batch size {b}, expected at least 1"
            )));
        }
        let pair = matches!(self.graphs, GraphsMode::Two | GraphsMode::Both);
        if pair && self.hefs.len() < 2 {
            return Err(BenchError::Config(format!(
                "--graphs {} needs two HEFs, got {}",
                if self.graphs == GraphsMode::Two {
                    "two"
                } else {
                    "both"
                },
                self.hefs.len()
            )));
        }
        let stem = |p: &PathBuf| {
            p.file_stem().map_or_else(
                || p.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            )
        };
        let graph = |hef: &PathBuf| GraphRun {
            ops_override: self.ops_override.get(hef).copied(),
            ..GraphRun::new(hef)
        };
        let mut points = Vec::new();
        for &batch in &self.batches {
            for &threshold in &self.thresholds {
                for &timeout in &self.timeouts {
                    let settings = format!("b{batch} t{threshold} {}ms", timeout.as_millis());
                    let base = RunConfig {
                        graphs: Vec::new(),
                        batch,
                        threshold,
                        timeout,
                        duration: self.duration,
                    };
                    if self.graphs != GraphsMode::Two {
                        for hef in &self.hefs {
                            points.push(SweepPoint {
                                label: format!("{} {settings}", stem(hef)),
                                mode: "alone",
                                run: RunConfig {
                                    graphs: vec![graph(hef)],
                                    ..base.clone()
                                },
                            });
                        }
                    }
                    if pair {
                        let (a, b) = (&self.hefs[0], &self.hefs[1]);
                        let (wa, wb) = self.pair_ratio;
                        points.push(SweepPoint {
                            label: format!("{}+{} {wa}:{wb} {settings}", stem(a), stem(b)),
                            mode: "pair",
                            run: RunConfig {
                                graphs: vec![graph(a).with_weight(wa), graph(b).with_weight(wb)],
                                ..base
                            },
                        });
                    }
                }
            }
        }
        Ok(points)
    }
}

/// One measured point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointResult {
    /// The point's label.
    pub label: String,
    /// `alone` or `pair`.
    pub mode: &'static str,
    /// What it measured.
    pub measurement: RunMeasurement,
}

/// A finished sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    /// What ran (backend, device, profile, clock).
    pub backend: String,
    /// Every point.
    pub points: Vec<PointResult>,
}

impl Sweep {
    /// The sweep as pretty JSON (`sweep.json`).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| unreachable!("plain data serialises: {e}"))
    }
}

/// Runs every point of `config` on a fresh device from `open` (so each point's statistics
/// start at zero), calling `progress` before each point with its index and label.
///
/// # Errors
/// [`BenchError`] naming the point that failed.
pub fn run_sweep(
    open: impl Fn() -> Result<Device, NpuError>,
    config: &SweepConfig,
    mut progress: impl FnMut(usize, &str),
) -> Result<Sweep, BenchError> {
    let points = config.points()?;
    let mut results = Vec::with_capacity(points.len());
    let mut backend = String::new();
    for (i, point) in points.into_iter().enumerate() {
        progress(i, &point.label);
        let device = open().map_err(BenchError::Open)?;
        backend = device.describe();
        let measurement =
            measure::measure(&device, &point.run).map_err(|source| BenchError::Point {
                point: point.label.clone(),
                source,
            })?;
        log::info!("{}: done", point.label);
        results.push(PointResult {
            label: point.label,
            mode: point.mode,
            measurement,
        });
    }
    Ok(Sweep {
        backend,
        points: results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(graphs: GraphsMode, hefs: usize) -> SweepConfig {
        SweepConfig {
            hefs: (0..hefs)
                .map(|i| PathBuf::from(format!("g{i}.hef")))
                .collect(),
            batches: vec![1, 2, 4, 8],
            thresholds: vec![0, 8],
            timeouts: vec![Duration::ZERO, Duration::from_millis(20)],
            graphs,
            duration: Duration::from_secs(1),
            pair_ratio: (3, 1),
            ops_override: BTreeMap::new(),
        }
    }

    #[test]
    fn points_cover_the_grid() {
        let both = config(GraphsMode::Both, 2).points().unwrap();
        assert_eq!(both.len(), 4 * 2 * 2 * 3);
        let pairs: Vec<_> = both.iter().filter(|p| p.mode == "pair").collect();
        assert_eq!(pairs.len(), 16);
        let weights: Vec<u32> = pairs[0].run.graphs.iter().map(|g| g.weight).collect();
        assert_eq!(weights, [3, 1]);
        assert_eq!(pairs[0].label, "g0+g1 3:1 b1 t0 0ms");
        assert_eq!(
            config(GraphsMode::One, 3).points().unwrap().len(),
            4 * 2 * 2 * 3
        );
        assert_eq!(config(GraphsMode::Two, 2).points().unwrap().len(), 16);
    }

    #[test]
    fn impossible_sweeps_are_refused_with_the_reason() {
        let err = config(GraphsMode::Two, 1).points().unwrap_err().to_string();
        assert!(err.contains("needs two HEFs"), "{err}");
        let mut c = config(GraphsMode::One, 1);
        c.batches = vec![1, 0];
        assert!(c.points().unwrap_err().to_string().contains("batch size 0"));
        let mut c = config(GraphsMode::One, 1);
        c.timeouts.clear();
        assert!(c.points().unwrap_err().to_string().contains("timeout"));
        assert!(config(GraphsMode::One, 0).points().is_err());
    }
}
