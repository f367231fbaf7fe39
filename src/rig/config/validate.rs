//! The checks a rig must pass beyond its types: ranges, names that must match
//! across tables, and choices that need each other.

use std::path::Path;

use super::{ConfigError, KeypointsFrom, RigConfig, SwitchingConfig};

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
        if !(self.body.noise_px >= 0.0 && self.body.noise_px.is_finite()) {
            return Err(bad(
                "body.noise_px".into(),
                "must be a finite number >= 0".into(),
            ));
        }
        if let SwitchingConfig::Manual {
            frames_per_switch: 0,
        } = self.switching
        {
            return Err(bad(
                "switching.frames_per_switch".into(),
                "must be at least 1".into(),
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
        if !(0..=19).contains(&self.decoder.nice) {
            return Err((
                "decoder.nice".into(),
                format!("{} is not a niceness from 0 to 19", self.decoder.nice),
            ));
        }
        if let Some(n) = self.decoder.in_flight {
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
        if self.graphs.is_empty() {
            return Err(("graph".into(), "at least one [[graph]] is needed".into()));
        }
        if self.graphs.len() > 8 {
            return Err((
                "graph".into(),
                format!(
                    "{} graphs; HailoRT configures at most 8 network groups",
                    self.graphs.len()
                ),
            ));
        }
        if self.cameras.is_empty() {
            return Err(("camera".into(), "at least one [[camera]] is needed".into()));
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
            if g.batch == Some(0) {
                return Err((key("batch"), "must be at least 1".into()));
            }
            if let Some(t) = g.timeout_ms {
                if !(t >= 0.0 && t.is_finite()) {
                    return Err((key("timeout_ms"), "must be a finite number >= 0".into()));
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
            if c.width == 0 || c.height == 0 {
                return Err((key("width"), "width and height must be positive".into()));
            }
            if !(c.fps > 0.0 && c.fps <= 1000.0) {
                return Err((key("fps"), format!("{} is outside (0, 1000]", c.fps)));
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
