//! The rig: cameras, graphs, NPU, decoder, multi-view sync, fit and sinks.
//!
//! | module | what it does |
//! |---|---|
//! | [`config`] | the rig file (TOML), its checks and the built-in demo rig |
//! | [`build`] | opening the device, graphs, cameras, decoders and fitter a rig names |
//! | [`stage`] | the stages of a frame's path, in order: capture, NPU, decode, sync, fit, sinks |
//! | [`work`] | what travels between the stages |
//! | [`stats`], [`report`], [`status`] | live counters, the final report, the status line |
//! | [`stamp`] | clocks and per-stage stamps |
//! | [`run`](mod@run) | starting, stopping and draining a rig |
//!
//! The camera queues are the capture threads' own drop-oldest queues
//! ([`stage::capture`]); every other queue is bounded and blocking, so a
//! slow stage backs up to the camera queues, where the oldest frames drop and are
//! counted.

pub mod build;
pub mod config;
pub mod report;
pub mod run;
pub mod stage;
pub mod stamp;
pub mod stats;
pub mod status;
pub mod work;

use std::path::PathBuf;

pub use config::{ConfigError, RigConfig};
pub use report::Report;
pub use run::{run, RunOptions};

/// Why a rig could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    #[error(transparent)]
    Rig(#[from] ConfigError),
    #[error("rig: {0}")]
    Config(String),
    #[error("`{key}`: file {path} does not exist")]
    MissingFile { key: String, path: PathBuf },
    #[error("`{key}` ({path}): {message}")]
    Graph {
        key: String,
        path: PathBuf,
        message: String,
    },
    #[error("camera `{camera}`: {message}")]
    Camera { camera: String, message: String },
    #[error("NPU: {what}: {source}")]
    Npu {
        what: String,
        source: crate::npu::NpuError,
    },
    #[error("body model: {0}")]
    Body(String),
    #[error("recording: {0}")]
    Record(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("thread: {0}")]
    Thread(String),
}
