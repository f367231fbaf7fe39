//! The checks a rig must pass beyond its types: ranges, names that must match
//! across tables, and choices that need each other.

use std::path::Path;

use super::{CameraSource, ConfigError, KeypointsFrom, RigConfig, SwitchingConfig};
use crate::camera::controls::check_request;
use crate::limits::{
    MAX_BATCH, MAX_CAMERAS, MAX_CAMERA_SIDE, MAX_DECODER_THREADS, MAX_FRAMES_PER_SWITCH,
    MAX_GRAPHS, MAX_IN_FLIGHT, MAX_NOISE_PX, MAX_SCHEDULER_TIMEOUT, MAX_THRESHOLD,
};
use crate::npu::sim::TimeBase;

/// `value` of a key beyond its bound, named with the bound and what sets it.
fn beyond(value: impl std::fmt::Display, bound: impl std::fmt::Display, why: &str) -> String {
    format!("{value} exceeds the bound {bound} ({why}; see docs/limits.md)")
}

impl RigConfig {
    /// Checks values that parse but cannot work.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the first offending key.
    pub fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let bad = |key: String, problem: String| ConfigError::Invalid {
            path: path.to_owned(),
            key,
            problem,
        };
        self.validate_decoder().map_err(|(k, p)| bad(k, p))?;
        if !(self.body.noise_px >= 0.0 && self.body.noise_px <= MAX_NOISE_PX) {
            return Err(bad(
                "body.noise_px".into(),
                format!(
                    "{} is not a number of pixels from 0 to {MAX_NOISE_PX} (the largest camera side)",
                    crate::limits::number(self.body.noise_px)
                ),
            ));
        }
        if let Some(p) = self
            .body
            .subject
            .filter(|p| p.iter().any(|v| !v.is_finite()))
        {
            return Err(bad(
                "body.subject".into(),
                format!(
                    "[{}] is not a finite point",
                    p.map(crate::limits::number).join(", ")
                ),
            ));
        }
        if let SwitchingConfig::Manual { frames_per_switch } = self.switching {
            if !(1..=MAX_FRAMES_PER_SWITCH).contains(&frames_per_switch) {
                return Err(bad(
                    "switching.frames_per_switch".into(),
                    format!("{frames_per_switch} is outside 1..={MAX_FRAMES_PER_SWITCH}"),
                ));
            }
        }
        if let (TimeBase::Virtual | TimeBase::Manual(_), Some(c)) = (
            &self.device.clock,
            self.cameras
                .iter()
                .find(|c| matches!(c.source, CameraSource::V4l2(_))),
        ) {
            return Err(bad(
                "device.clock".into(),
                format!(
                    "`virtual` cannot pace camera `{}` ({}): a V4L2 camera delivers frames in real time; \
                     use clock = \"realtime\"",
                    c.name, c.source
                ),
            ));
        }
        self.validate_graphs().map_err(|(k, p)| bad(k, p))?;
        self.validate_cameras().map_err(|(k, p)| bad(k, p))?;
        match self.body.keypoints {
            KeypointsFrom::GroundTruth if self.cameras.iter().any(|c| !c.source.is_synthetic()) => {
                Err(bad(
                    "body.keypoints".into(),
                    "`ground_truth` needs synthetic cameras; real cameras have no ground truth"
                        .into(),
                ))
            }
            KeypointsFrom::GroundTruth | KeypointsFrom::Decoder => Ok(()),
        }
    }

    /// The decoder table: threads, niceness and the in-flight limit.
    fn validate_decoder(&self) -> Result<(), (String, String)> {
        if self.decoder.threads == 0 {
            return Err(("decoder.threads".into(), "must be at least 1".into()));
        }
        if self.decoder.threads > MAX_DECODER_THREADS {
            return Err((
                "decoder.threads".into(),
                beyond(
                    self.decoder.threads,
                    MAX_DECODER_THREADS,
                    "each thread loads its own decoder",
                ),
            ));
        }
        if !(0..=19).contains(&self.decoder.nice) {
            return Err((
                "decoder.nice".into(),
                format!("{} is not a niceness from 0 to 19", self.decoder.nice),
            ));
        }
        if let Some(n) = self.decoder.in_flight {
            if n > MAX_IN_FLIGHT {
                return Err((
                    "decoder.in_flight".into(),
                    beyond(
                        n,
                        MAX_IN_FLIGHT,
                        "each frame in flight holds its job buffer and feature maps",
                    ),
                ));
            }
            // Cameras of one rate are admitted an instant at a time, and a
            // graph's batch must fit: fewer slots would never admit anything.
            let need = self
                .graphs
                .iter()
                .map(|g| usize::from(self.batch(g)))
                .max()
                .unwrap_or(1)
                .max(self.cameras.len());
            if n < need {
                return Err((
                    "decoder.in_flight".into(),
                    format!(
                        "{n} is too few: at least {need} (the cameras of one instant, and the largest batch)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The graphs: how many, their names and scheduler settings, and that a
    /// camera feeds each.
    fn validate_graphs(&self) -> Result<(), (String, String)> {
        let tables = [
            (
                "graph",
                self.graphs.len(),
                MAX_GRAPHS,
                "HailoRT configures at most 8 network groups",
            ),
            (
                "camera",
                self.cameras.len(),
                MAX_CAMERAS,
                "more than one Hailo-10H feeds",
            ),
        ];
        for (key, n, max, why) in tables {
            if n == 0 {
                return Err((key.into(), format!("at least one [[{key}]] is needed")));
            }
            if n > max {
                return Err((
                    key.into(),
                    beyond(format!("{n} [[{key}]] tables"), max, why),
                ));
            }
        }
        for (i, g) in self.graphs.iter().enumerate() {
            let key = |f: &str| format!("graph[{i}].{f}");
            if g.name.is_empty() {
                return Err((key("name"), "must not be empty".into()));
            }
            if self.graphs[..i].iter().any(|o| o.name == g.name) {
                return Err((key("name"), format!("`{}` is used twice", g.name)));
            }
            if g.priority > 31 {
                return Err((key("priority"), format!("{} is outside 0..=31", g.priority)));
            }
            if let Some(b) = g.batch {
                if !(1..=MAX_BATCH).contains(&b) {
                    return Err((key("batch"), format!("{b} is outside 1..={MAX_BATCH}")));
                }
            }
            if let Some(t) = g.threshold {
                if t > MAX_THRESHOLD {
                    return Err((
                        key("threshold"),
                        beyond(t, MAX_THRESHOLD, "the most frames a rig has in flight"),
                    ));
                }
            }
            if let Some(t) = g.timeout_ms {
                let max_ms = MAX_SCHEDULER_TIMEOUT.as_secs_f64() * 1e3;
                if !(t >= 0.0 && t <= max_ms) {
                    return Err((
                        key("timeout_ms"),
                        format!(
                            "{} is not a number of milliseconds from 0 to {max_ms} (the bound)",
                            crate::limits::number(t)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The cameras: unique names, sizes, rates and the graph each feeds.
    fn validate_cameras(&self) -> Result<(), (String, String)> {
        for (i, c) in self.cameras.iter().enumerate() {
            let key = |f: &str| format!("camera[{i}].{f}");
            if self.cameras[..i].iter().any(|o| o.name == c.name) {
                return Err((key("name"), format!("`{}` is used twice", c.name)));
            }
            for (side, value) in [("width", c.width), ("height", c.height)] {
                if !(1..=MAX_CAMERA_SIDE).contains(&value) {
                    return Err((
                        key(side),
                        format!(
                            "{value} is outside 1..={MAX_CAMERA_SIDE} pixels (the widest V4L2 sensor mode)"
                        ),
                    ));
                }
            }
            if c.world_origin {
                if c.calibration_file.is_none() {
                    return Err((
                        key("world_origin"),
                        "needs `calibration_file`: the key lets that file lack R and T".into(),
                    ));
                }
                if let Some(o) = self.cameras[..i].iter().find(|o| o.world_origin) {
                    return Err((
                        key("world_origin"),
                        format!(
                            "camera `{}` is the world origin already; one camera is",
                            o.name
                        ),
                    ));
                }
            }
            if !(c.fps > 0.0 && c.fps <= 1000.0) {
                return Err((key("fps"), format!("{} is outside (0, 1000]", c.fps)));
            }
            if !c.controls.is_empty() && !matches!(c.source, CameraSource::V4l2(_)) {
                return Err((
                    key("controls"),
                    format!(
                        "camera `{}` reads {}: controls are set on V4L2 cameras only",
                        c.name, c.source
                    ),
                ));
            }
            for (name, value) in &c.controls {
                check_request(name, value).map_err(|takes| {
                    (
                        key(&format!("controls.{name}")),
                        format!("{value} is not {takes}"),
                    )
                })?;
            }
            if !self.graphs.iter().any(|g| g.name == c.graph) {
                let names: Vec<_> = self.graphs.iter().map(|g| g.name.as_str()).collect();
                return Err((
                    key("graph"),
                    format!(
                        "no graph named `{}` (graphs: {})",
                        c.graph,
                        names.join(", ")
                    ),
                ));
            }
        }
        for (i, g) in self.graphs.iter().enumerate() {
            if !self.cameras.iter().any(|c| c.graph == g.name) {
                return Err((
                    format!("graph[{i}].name"),
                    format!("no camera feeds graph `{}`", g.name),
                ));
            }
        }
        Ok(())
    }
}
