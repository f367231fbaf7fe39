//! Why a rig could not run: each failure carries the error of the part that
//! failed and names the key, file, camera or graph it comes from.

use std::fmt;
use std::path::PathBuf;

use super::config::{BackendChoice, ConfigError};
use crate::body::fit::FitError;
use crate::body::BodyError;
use crate::camera::calib::CalibError;
use crate::camera::record::RecordError;
use crate::camera::replay::ReplayError;
use crate::camera::SourceError;
use crate::decode::DecodeError;
use crate::npu::NpuError;
use crate::preprocess::PreprocessError;

/// Why a rig could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    #[error(transparent)]
    Rig(#[from] ConfigError),
    /// A run option the rig cannot honour.
    #[error("{flag}: {what}")]
    Option { flag: &'static str, what: String },
    #[error("`{key}`: file {path} does not exist")]
    MissingFile { key: String, path: PathBuf },
    /// A graph's HEF, reference or decoder ONNX that cannot be used (boxed:
    /// a HEF's error is large, and every result of the build carries this).
    #[error("`{key}` ({path}): {source}")]
    Graph {
        key: String,
        path: PathBuf,
        source: Box<GraphError>,
    },
    #[error("camera `{camera}`: {source}")]
    Camera {
        camera: String,
        source: CameraSetupError,
    },
    #[error(transparent)]
    Foxglove {
        source: crate::publish::foxglove_ws::FoxgloveError,
    },
    #[error(transparent)]
    Zenoh {
        source: crate::publish::zenoh::ZenohError,
    },
    #[error("NPU: opening device (backend `{backend}`): {source}")]
    OpenDevice {
        backend: BackendChoice,
        source: NpuError,
    },
    #[error("NPU: graph `{graph}` ({path}): {step}: {source}")]
    GraphSetup {
        graph: String,
        path: PathBuf,
        step: GraphStep,
        source: NpuError,
    },
    #[error("NPU: running the graphs: {source}")]
    Npu { source: NpuError },
    /// The simulator's utilisation (`device.utilisation`) that cannot be resolved.
    #[error("`device.utilisation` = {value}: {source}")]
    Utilisation {
        value: String,
        source: crate::metrics::utilisation_source::SourceError,
    },
    /// The body model file (its path) or the embedded model (`embedded`).
    #[error("body model {model}: {source}")]
    BodyModel { model: String, source: BodyError },
    /// A body model whose keypoints the decoder's do not match.
    #[error("body model ({model}): {source}")]
    BodyKeypoints {
        model: &'static str,
        #[source]
        source: crate::decode::keypoints::KeypointOrderError,
    },
    /// The fit's rig from the body model.
    #[error("body rig: {source}")]
    BodyRig {
        #[from]
        source: crate::scene::BodyRigError,
    },
    /// Calibrations that cannot stand together in one rig.
    #[error("calibrations: {source}")]
    Calibrations {
        source: crate::camera::calib::checks::RigCheckError,
    },
    /// A calibration the fit cannot use (camera `index` of the rig, in file order).
    #[error("camera {index}: the fit cannot use its calibration: {source}")]
    FitCamera {
        index: usize,
        source: crate::geom::CameraError,
    },
    #[error("pose fitter: {source}")]
    Fitter { source: FitError },
    #[error("recording: {source}")]
    Record {
        #[from]
        source: RecordError,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    /// A stage's thread could not be started.
    #[error("cannot start a stage's thread: {source}")]
    Spawn { source: std::io::Error },
    #[error(transparent)]
    Panicked(#[from] super::stage::Panicked),
}

/// What is wrong with a graph's file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
    #[error(transparent)]
    Hef(#[from] hef::HefError),
    #[error("no network group")]
    NoNetworkGroup,
    #[error("no input stream")]
    NoInput,
    #[error(transparent)]
    Input(#[from] PreprocessError),
    #[error("output {stream} is an NMS output; the decoder reads image maps (g, g, C)")]
    NmsOutput { stream: String },
    #[error(transparent)]
    Pairing(#[from] Box<crate::decode::PairingError>),
    #[error(
        "no decoder_onnx, and no decoder can be generated for this HEF: its outputs ({outputs}) \
         are neither the design split (features, cross_attn_features) nor the taps split \
         (tap0..tap3), or its input is not square; set decoder_onnx"
    )]
    NoGeneratedDecoder { outputs: String },
    #[error(transparent)]
    Generate(crate::decode::graph::GraphError),
    #[error(
        "the decoder runs the keypoint branch on {found} of its {queries} query slots; \
         decoder.keypoint_slots asks for {configured}: use a decoder built for it, or drop the key"
    )]
    KeypointSlots {
        configured: crate::decode::KeypointSlots,
        found: usize,
        queries: usize,
    },
    /// The simulator's reference model.
    #[error(transparent)]
    Reference(#[from] crate::npu::sim::ReferenceError),
    #[error(transparent)]
    Decoder(#[from] DecodeError),
}

/// Why a rig camera cannot be set up: its device, calibration, placement, source or
/// capture thread.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CameraSetupError {
    #[error("device {path} does not exist (`{key}`)")]
    NoDevice { key: String, path: PathBuf },
    #[error("`{key}` is needed: the fit needs every real camera calibrated")]
    NeedsCalibration { key: String },
    #[error(transparent)]
    Calibration(#[from] CalibError),
    /// A camera placed around the synthetic subject.
    #[error(transparent)]
    Placement(#[from] crate::geom::CameraError),
    #[error(transparent)]
    Preprocess(#[from] PreprocessError),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("{path}: {source}")]
    Open { path: PathBuf, source: SourceError },
    #[error("no synthetic source")]
    NoSyntheticSource,
    /// A synthetic camera asked to film something it does not render.
    #[error("`{key}` is synthetic: it renders the demo's subject, not a {what}")]
    SyntheticCannotFilm { key: String, what: &'static str },
    #[error("V4L2 capture needs 64-bit Linux")]
    V4l2Unsupported,
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error("{path} has no camera {camera}")]
    NotRecorded { path: PathBuf, camera: usize },
    /// A recording replayed into a camera of another size.
    #[error("{} records {}x{} frames, but `{key}` and height say {}x{}", path.display(), recorded.0, recorded.1, configured.0, configured.1)]
    ReplaySize {
        path: PathBuf,
        recorded: (u32, u32),
        key: String,
        configured: (u32, u32),
    },
    #[error("capture thread: {0}")]
    CaptureThread(#[source] std::io::Error),
}

/// The step of setting a graph up on the device that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphStep {
    LoadHef,
    SetBatchSize,
    Configure,
    SchedulerPriority,
    SchedulerThreshold,
    SchedulerTimeout,
}

impl fmt::Display for GraphStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::LoadHef => "loading the HEF",
            Self::SetBatchSize => "setting the batch size",
            Self::Configure => "configuring",
            Self::SchedulerPriority => "scheduler priority",
            Self::SchedulerThreshold => "scheduler threshold",
            Self::SchedulerTimeout => "scheduler timeout",
        })
    }
}
