//! The rig file: cameras, graphs, device, decoder, body and outputs, in TOML.
//!
//! Every choice from a closed set (backend, simulator profile and clock,
//! camera source, pixel format, fit, decoder engine, keypoint origin) is its
//! type, so an unknown value fails while the file is read, with its key, the
//! value and the allowed values named. Unknown keys are errors too (every
//! table denies unknown fields), and values that parse but cannot work
//! together are refused by [`RigConfig::validate`] with the key that is wrong,
//! so a typo never silently falls back to a default.
//!
//! | module | what it holds |
//! |---|---|
//! | [`schema`] | the tables and their defaults |
//! | [`values`] | the closed sets with no type elsewhere |
//! | [`validate`](mod@validate) | the checks across keys |
//! | [`derived`] | defaults derived from other keys (batch, threshold, timeout, in flight) |
//! | [`demo`] | the built-in demo rig |
//!
//! `[decoder] retain_memory` (default true) is read by the `hailo-edge run`
//! command, not by the library: it sets the process's allocator before the rig
//! starts ([`crate::rig::alloc`]).

pub mod demo;
pub mod derived;
mod locate;
pub mod schema;
pub mod validate;
pub mod values;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bounds;
#[cfg(test)]
mod tests_calib;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use schema::{
    BodyConfig, CameraConfig, DecoderConfig, DeviceConfig, GraphConfig, OutputConfig, RecordFrames,
    SwitchingConfig,
};
pub use values::{
    BackendChoice, CameraSource, CameraSourceError, FitMode, KeypointsFrom, PublishTarget,
    PublishTargetError, SimProfileName,
};

/// A whole rig.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RigConfig {
    /// The unit of the translations in the cameras' calibration files (`"m"`, the
    /// default, or `"mm"`), converted to metres when they are read.
    #[serde(default)]
    pub unit: crate::camera::calib::Unit,
    #[serde(default)]
    pub device: DeviceConfig,
    #[serde(default)]
    pub switching: SwitchingConfig,
    #[serde(rename = "graph")]
    pub graphs: Vec<GraphConfig>,
    #[serde(rename = "camera")]
    pub cameras: Vec<CameraConfig>,
    #[serde(default)]
    pub decoder: DecoderConfig,
    #[serde(default)]
    pub body: BodyConfig,
    #[serde(default)]
    pub output: OutputConfig,
}

/// A rig file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("cannot read rig file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// TOML that does not parse, or a table that does not fit the schema where
    /// no single key is to blame.
    #[error("rig file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A key whose value does not parse: an unknown key, a value of the wrong
    /// type, or a value outside its closed set (the message lists the set).
    #[error("rig file {path}, line {line}: `{key}`: {message}")]
    Value {
        path: PathBuf,
        line: usize,
        key: String,
        message: String,
    },
    /// Values that parse but cannot work.
    #[error("rig file {path}: `{key}`: {problem}")]
    Invalid {
        path: PathBuf,
        key: String,
        problem: String,
    },
}

impl RigConfig {
    /// Reads and validates a rig file.
    ///
    /// # Errors
    /// [`ConfigError::Read`] when the file cannot be read,
    /// [`ConfigError::Value`] for unknown keys and values that do not parse
    /// (naming the key and its line), [`ConfigError::Parse`] for other TOML
    /// errors, [`ConfigError::Invalid`] for values that cannot work.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses and validates rig TOML; `path` names it in errors and anchors
    /// relative paths.
    ///
    /// # Errors
    /// As [`RigConfig::load`].
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let mut rig: RigConfig = toml::from_str(text).map_err(|e| {
            match e.span().and_then(|span| locate::key_at(text, span.start)) {
                Some(at) => ConfigError::Value {
                    path: path.to_owned(),
                    line: at.line,
                    key: at.key,
                    message: e.message().trim_end().to_owned(),
                },
                None => ConfigError::Parse {
                    path: path.to_owned(),
                    message: e.to_string().trim_end().to_owned(),
                },
            }
        })?;
        if let Some(dir) = path.parent() {
            rig.resolve_paths(dir);
        }
        rig.validate(path)?;
        Ok(rig)
    }

    /// Makes relative paths relative to the rig file's folder: HEFs, decoder
    /// and reference ONNX files, calibrations, replayed recordings, the body
    /// model and the outputs. Paths given on the command line stay relative
    /// to the working directory.
    fn resolve_paths(&mut self, dir: &Path) {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() && !p.as_os_str().is_empty() {
                *p = dir.join(&*p);
            }
        };
        for g in &mut self.graphs {
            fix(&mut g.hef);
            if let Some(p) = &mut g.decoder_onnx {
                fix(p);
            }
            if let Some(p) = &mut g.reference_onnx {
                fix(p);
            }
        }
        for c in &mut self.cameras {
            if let Some(p) = &mut c.calibration_file {
                fix(p);
            }
            // A V4L2 device node is a system path, never the rig's own file.
            if let CameraSource::Replay(p) = &mut c.source {
                fix(p);
            }
        }
        if let Some(p) = &mut self.body.model {
            fix(p);
        }
        let out = &mut self.output;
        for p in [&mut out.jsonl, &mut out.report, &mut out.record]
            .into_iter()
            .flatten()
        {
            fix(p);
        }
    }
}
