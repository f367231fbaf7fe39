//! Settings a rig leaves out, derived from the rest of it: batch sizes,
//! scheduler thresholds and timeouts, the in-flight limit, and each camera's
//! preprocessing fit.

use super::{CameraConfig, FitMode, GraphConfig, RigConfig};
use crate::limits::MAX_IN_FLIGHT;
use crate::preprocess::Fit;

impl RigConfig {
    /// The cameras feeding `graph`.
    pub fn cameras_of<'a>(&'a self, graph: &'a str) -> impl Iterator<Item = &'a CameraConfig> {
        self.cameras.iter().filter(move |c| c.graph == graph)
    }

    /// Scheduler threshold for a graph: as configured, else its camera count.
    pub fn threshold(&self, graph: &GraphConfig) -> u32 {
        graph.threshold.unwrap_or_else(|| {
            u32::try_from(self.cameras_of(&graph.name).count()).unwrap_or(u32::MAX)
        })
    }

    /// Scheduler timeout for a graph: as configured, else half the shortest
    /// frame period of its cameras.
    pub fn timeout_ms(&self, graph: &GraphConfig) -> f64 {
        graph.timeout_ms.unwrap_or_else(|| {
            let fastest = self
                .cameras_of(&graph.name)
                .map(|c| c.fps)
                .fold(0.0_f64, f64::max);
            if fastest > 0.0 {
                500.0 / fastest
            } else {
                0.0
            }
        })
    }

    /// Most frames past the camera queues at once: as configured, else one
    /// batch per graph plus one frame per decoder thread (at least one
    /// instant of every camera), within [`MAX_IN_FLIGHT`].
    pub fn in_flight(&self) -> usize {
        self.decoder.in_flight.unwrap_or_else(|| {
            let batches: usize = self.graphs.iter().map(|g| usize::from(self.batch(g))).sum();
            (batches.saturating_add(self.decoder.threads.max(1)))
                .min(MAX_IN_FLIGHT)
                .max(self.cameras.len())
        })
    }

    /// Batch size for a graph: as configured, else its camera count.
    pub fn batch(&self, graph: &GraphConfig) -> u16 {
        graph.batch.unwrap_or_else(|| {
            u16::try_from(self.cameras_of(&graph.name).count().max(1)).unwrap_or(u16::MAX)
        })
    }
}

impl CameraConfig {
    /// How the preprocessor fits this camera's frames to its graph input:
    /// the `fit` mode, a letterbox padding with `pad`.
    pub fn preprocess_fit(&self) -> Fit {
        match self.fit {
            FitMode::Crop => Fit::Crop,
            FitMode::Letterbox => Fit::Letterbox { pad: [self.pad; 3] },
        }
    }
}
