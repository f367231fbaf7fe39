//! `gate`: does a HEF compute what its reference ONNX computes, on the same frames?
//!
//! The HEF runs on the device (the part, or the simulator) and its float reference ONNX
//! runs on the CPU (tract), both on the same frames: image files, a recording, a camera or
//! the synthetic subject, each through the rig's preprocessing into the HEF's input tensor.
//! Both sides get that tensor's real values (the input's quant info read back); the device
//! takes them as FLOAT32 and quantises them as HailoRT's input transform does, and gives
//! FLOAT32 outputs dequantised with each output's quant info. Outputs are paired by name
//! (a HEF output `<group>/<name>` with the ONNX output `<name>`, [`hef::layer_name`]), and
//! each pair is held to a [`Bound`]: a relative error and a largest difference in
//! quantisation steps.
//!
//! On the simulator the device's outputs are its reference path: the same ONNX (or the one
//! given as [`GateConfig::sim_onnx`]) run on the quantised inputs, its outputs quantised
//! to the device type with the HEF's quant info and dequantised again. The gate then
//! measures what quantisation alone costs; on the part it measures the compiled network.
//!
//! ```no_run
//! use hailo_edge::gate::{self, FrameSource, GateConfig};
//!
//! let config = GateConfig::new("body.hef", "body_device_half.onnx", FrameSource::Synthetic { frames: 2 });
//! let report = gate::run(&config)?;
//! for line in report.lines() {
//!     println!("{line}");
//! }
//! assert!(report.passed());
//! # Ok::<(), hailo_edge::gate::GateError>(())
//! ```

mod compare;
mod frames;
mod report;
mod run;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use compare::{Bound, OutputFigures, Worst};
pub use frames::{FrameInfo, FrameSource};
pub use report::{GateReport, PairLine};
pub use run::run;

use crate::camera::replay::ReplayError;
use crate::camera::SourceError;
use crate::npu::sim::ReferenceError;
use crate::npu::{Backend, NpuError};
use crate::preprocess::{PreprocessConfig, PreprocessError};

/// What [`run`] gates.
#[derive(Debug, Clone)]
pub struct GateConfig {
    /// The HEF (its first network group, as HailoRT's `create_infer_model` loads it).
    pub hef: PathBuf,
    /// The float reference ONNX: one NHWC `[1, h, w, c]` input per HEF input, one output
    /// per HEF output named like the output's last component.
    pub onnx: PathBuf,
    /// The frames.
    pub frames: FrameSource,
    /// How frames become the input tensor (fit, filter, normalisation), as in a rig file.
    pub preprocess: PreprocessConfig,
    /// The device.
    pub backend: Backend,
    /// What each output may differ by.
    pub bound: Bound,
    /// On the simulator, the ONNX its reference path runs (default: [`GateConfig::onnx`]).
    pub sim_onnx: Option<PathBuf>,
    /// How long one frame may take on the device.
    pub timeout: Duration,
}

impl GateConfig {
    /// `hef` against `onnx` on `frames`, with the default backend, preprocessing and bound.
    pub fn new(hef: impl AsRef<Path>, onnx: impl AsRef<Path>, frames: FrameSource) -> Self {
        GateConfig {
            hef: hef.as_ref().to_path_buf(),
            onnx: onnx.as_ref().to_path_buf(),
            frames,
            preprocess: PreprocessConfig::default(),
            backend: Backend::Auto,
            bound: Bound::default(),
            sim_onnx: None,
            timeout: Duration::from_secs(60),
        }
    }
}

/// The keys of a gate file (TOML), for settings kept with a deployment rather than typed
/// as flags:
///
/// ```toml
/// [bound]
/// rel = 0.1        # relative error, ‖device − reference‖₂ / ‖reference‖₂
/// max_steps = 32   # largest |difference| of one element, in quantisation steps
///
/// [preprocess]     # as a camera's preprocessing in a rig file
/// fit = { mode = "crop" }
/// ```
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateFile {
    /// The bound (default [`Bound::default`]).
    #[serde(default)]
    pub bound: Option<Bound>,
    /// How frames become the input tensor.
    #[serde(default)]
    pub preprocess: Option<PreprocessConfig>,
}

impl GateFile {
    /// Reads a gate file.
    ///
    /// # Errors
    /// [`GateError::Read`] or [`GateError::Config`], naming the file.
    pub fn load(path: &Path) -> Result<GateFile, GateError> {
        let text = std::fs::read_to_string(path).map_err(|source| GateError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        toml::from_str(&text).map_err(|e| GateError::Config {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    }

    /// `config` with this file's settings.
    pub fn apply(&self, mut config: GateConfig) -> GateConfig {
        if let Some(bound) = self.bound {
            config.bound = bound;
        }
        if let Some(pre) = self.preprocess {
            config.preprocess = pre;
        }
        config
    }
}

/// Why a gate could not run (a run that breaks the bound is a [`GateReport`] that did not
/// pass, not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    #[error(transparent)]
    Hef(#[from] hef::HefError),
    #[error("HEF {}: no network group", hef.display())]
    NoNetworkGroup { hef: PathBuf },
    #[error(
        "HEF {}: the gate feeds frames to one image input; group {group} has {count} inputs",
        hef.display()
    )]
    InputCount {
        hef: PathBuf,
        group: String,
        count: usize,
    },
    #[error("HEF {}: input {stream} is {layout}; the gate compares RGB inputs", hef.display())]
    InputLayout {
        hef: PathBuf,
        stream: String,
        layout: crate::preprocess::InputLayout,
    },
    #[error("HEF {}: {source}", hef.display())]
    InputSpec {
        hef: PathBuf,
        #[source]
        source: PreprocessError,
    },
    #[error("reference ONNX: {0}")]
    Reference(#[source] Box<ReferenceError>),
    #[error("{} against {}: {source}", hef.display(), onnx.display())]
    Pairing {
        hef: PathBuf,
        onnx: PathBuf,
        #[source]
        source: Box<ReferenceError>,
    },
    #[error("{what}: {source}")]
    Device {
        what: &'static str,
        #[source]
        source: NpuError,
    },
    #[error(
        "the simulator gives synthetic outputs for {group}: its reference ONNX is not registered"
    )]
    SyntheticOutputs { group: String },
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a gate file: {reason}", path.display())]
    Config { path: PathBuf, reason: String },
    #[error("{}: not a readable PNG or JPEG image: {reason}", path.display())]
    Image { path: PathBuf, reason: String },
    #[error("{}: {source}", path.display())]
    Recording {
        path: PathBuf,
        #[source]
        source: ReplayError,
    },
    #[error(
        "{}: no camera {} in the recording (it has {})",
        path.display(),
        camera.map_or("at all".to_owned(), |c| format!("cam{c}")),
        if cameras.is_empty() { "none".to_owned() } else { cameras.join(", ") }
    )]
    NoCamera {
        path: PathBuf,
        camera: Option<u32>,
        cameras: Vec<String>,
    },
    #[error("{what}: {source}")]
    Source {
        what: String,
        #[source]
        source: SourceError,
    },
    #[error("the {kind} source gave no frames")]
    NoFrames { kind: &'static str },
    #[error("frame {frame}: {source}")]
    Preprocess {
        frame: String,
        #[source]
        source: PreprocessError,
    },
    #[error("frame {frame}: the reference ONNX failed: {source}")]
    Run {
        frame: String,
        #[source]
        source: Box<ReferenceError>,
    },
    #[error("cannot write the report {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
