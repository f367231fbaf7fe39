//! The CPU decoder: the host part of the RF-DETR keypoint model, from backbone features to keypoints.
//!
//! The NPU runs the ViT backbone; its four tapped maps come back as quantised NHWC
//! buffers. This module turns them into keypoints in camera pixels:
//!
//! | step | module | what it does |
//! |---|---|---|
//! | 1 | [`input`] | dequantise the device buffers into the NCHW f32 maps the ONNX expects, in one pass, into reused buffers |
//! | 2 | [`Decoder`] ([`engine::tract`], `engine::ort`) | run the projectors, decoder and heads from an ONNX file |
//! | 3 | [`keypoints`] | pick the top detections and map their keypoints back to camera pixels |
//!
//! Engines are chosen by a config key ([`Engine`]): `tract` (pure Rust, the default, with
//! the fast kernels of [`ops`]) or `ort` (ONNX Runtime, loaded at run time; cargo
//! feature `ort`).

pub mod engine;
pub mod graph;
pub mod input;
pub mod keypoints;
pub mod ops;
pub mod split;

use std::path::{Path, PathBuf};
use std::str::FromStr;

use ndarray::{Array2, Array3, ArrayView1};

pub use input::FeatureMaps;
pub use keypoints::{Detection, Keypoint, KeypointMapping};
pub use split::{KeypointSlots, Split};

/// Number of backbone maps the decoder reads (ViT taps after layers 3, 6, 9 and 12).
pub const TAPS: usize = 4;

/// Errors of the decoder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// An engine name that is not one of the known keys.
    #[error("unknown decoder engine \"{0}\": expected \"tract\" or \"ort\"")]
    UnknownEngine(String),
    /// The `ort` engine was asked for in a build without the `ort` feature.
    #[error("decoder engine \"ort\" needs hailo-edge built with `--features ort`")]
    OrtNotBuilt,
    /// The ONNX file could not be loaded or prepared by an engine.
    #[error("decoder {path}: {message}")]
    Load { path: PathBuf, message: String },
    /// The ONNX graph does not have the decoder's inputs or outputs.
    #[error("decoder {path}: {message}")]
    Graph { path: PathBuf, message: String },
    /// Running the graph failed.
    #[error("decoder run failed: {0}")]
    Run(String),
    /// Feature maps that do not match the graph's input shape.
    #[error(
        "feature maps are {}, the decoder expects {}",
        shape_text(found),
        shape_text(expected)
    )]
    InputShape {
        expected: [usize; 4],
        found: [usize; 4],
    },
    /// A device buffer that does not match its stream description.
    #[error("backbone output {stream}: {message}")]
    Buffer { stream: String, message: String },
}

/// A shape as `(a, b, c)`, for messages.
pub(crate) fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("({})", dims.join(", "))
}

/// Which inference engine runs the decoder graph (config key `decoder.engine`).
///
/// Parsed from its key (`"tract"`, `"ort"`), also when deserialised from a config file,
/// so an unknown value is an error naming it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize, serde::Serialize,
)]
#[serde(try_from = "String", into = "&'static str")]
pub enum Engine {
    /// tract, pure Rust, with the fast GridSample kernel.
    #[default]
    Tract,
    /// ONNX Runtime through the `ort` crate, loaded from `ORT_DYLIB_PATH`.
    Ort,
}

impl Engine {
    /// The config key of this engine.
    pub fn key(self) -> &'static str {
        match self {
            Self::Tract => "tract",
            Self::Ort => "ort",
        }
    }
}

impl TryFrom<String> for Engine {
    type Error = DecodeError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Engine> for &'static str {
    fn from(e: Engine) -> Self {
        e.key()
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

impl FromStr for Engine {
    type Err = DecodeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tract" => Ok(Self::Tract),
            "ort" | "onnxruntime" => Ok(Self::Ort),
            other => Err(DecodeError::UnknownEngine(other.to_string())),
        }
    }
}

/// The raw outputs of the decoder graph for one frame (batch 1), the batch axis dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct RawOutput {
    /// Boxes (Q, 4): cx, cy, w, h, normalised to the model input.
    pub dets: Array2<f32>,
    /// Class logits (Q, classes); `sigmoid` gives the score.
    pub labels: Array2<f32>,
    /// Keypoint fields (Q, K, 8), K = 17 for COCO; see [`keypoints`] for the 8 fields.
    pub keypoints: Array3<f32>,
}

impl RawOutput {
    /// Number of queries.
    pub fn queries(&self) -> usize {
        self.dets.nrows()
    }

    /// Number of class logits per query.
    pub fn classes(&self) -> usize {
        self.labels.ncols()
    }

    /// Keypoints per query (17 for COCO).
    pub fn keypoints_per_query(&self) -> usize {
        self.keypoints.dim().1
    }

    /// Class logits of query `q`.
    pub fn logits(&self, q: usize) -> ArrayView1<'_, f32> {
        self.labels.row(q)
    }

    /// The 8 fields of keypoint `k` of query `q`.
    pub fn keypoint(&self, q: usize, k: usize) -> ArrayView1<'_, f32> {
        self.keypoints.slice(ndarray::s![q, k, ..])
    }

    /// Largest absolute difference to another output of the same shape (for engine
    /// comparisons); `None` when the shapes differ.
    pub fn max_abs_diff(&self, other: &RawOutput) -> Option<f32> {
        if self.dets.dim() != other.dets.dim()
            || self.labels.dim() != other.labels.dim()
            || self.keypoints.dim() != other.keypoints.dim()
        {
            return None;
        }
        let diff = self.elements().zip(other.elements());
        Some(diff.map(|(x, y)| (x - y).abs()).fold(0.0, f32::max))
    }

    /// Every value: the boxes, then the logits, then the keypoint fields.
    fn elements(&self) -> impl Iterator<Item = &f32> {
        self.dets.iter().chain(&self.labels).chain(&self.keypoints)
    }
}

/// A loaded decoder graph that turns four backbone maps into raw detections.
pub trait Decoder: Send {
    /// The engine behind this decoder.
    fn engine(&self) -> Engine;
    /// Shape of each input map: (1, channels, grid, grid).
    fn input_shape(&self) -> [usize; 4];
    /// Runs the graph on one frame's maps.
    ///
    /// # Errors
    /// [`DecodeError::InputShape`] when the maps do not match [`Decoder::input_shape`],
    /// [`DecodeError::Run`] when the engine fails.
    fn run(&mut self, maps: &mut FeatureMaps) -> Result<RawOutput, DecodeError>;

    /// Fresh feature-map buffers of the right shape for this decoder.
    fn new_maps(&self) -> FeatureMaps {
        let [_, c, h, w] = self.input_shape();
        FeatureMaps::new(c, h, w)
    }
}

/// Loads a decoder ONNX with the chosen engine.
///
/// # Errors
/// [`DecodeError::Load`]/[`DecodeError::Graph`] naming the file, or
/// [`DecodeError::OrtNotBuilt`] for `Engine::Ort` without the `ort` feature.
pub fn load(engine: Engine, path: &Path) -> Result<Box<dyn Decoder>, DecodeError> {
    match engine {
        Engine::Tract => Ok(Box::new(engine::tract::TractDecoder::load(
            path,
            engine::tract::TractKernels::Fast,
        )?)),
        #[cfg(feature = "ort")]
        Engine::Ort => Ok(Box::new(engine::ort::OrtDecoder::load(path, 1)?)),
        #[cfg(not(feature = "ort"))]
        Engine::Ort => Err(DecodeError::OrtNotBuilt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_keys_parse_and_unknown_is_named() {
        assert_eq!("tract".parse::<Engine>().unwrap(), Engine::Tract);
        assert_eq!("ort".parse::<Engine>().unwrap(), Engine::Ort);
        assert_eq!(Engine::default(), Engine::Tract);
        let err = "tensorrt".parse::<Engine>().unwrap_err().to_string();
        assert!(
            err.contains("\"tensorrt\"") && err.contains("tract"),
            "{err}"
        );
    }

    #[test]
    fn max_abs_diff_sees_a_change() {
        let a = RawOutput {
            dets: Array2::from_elem((2, 4), 0.5),
            labels: Array2::zeros((2, 3)),
            keypoints: Array3::zeros((2, 17, 8)),
        };
        let mut b = a.clone();
        assert_eq!(a.max_abs_diff(&b), Some(0.0));
        b.keypoints[[0, 12, 4]] = 0.25;
        assert_eq!(a.max_abs_diff(&b), Some(0.25));
        b.labels = Array2::zeros((2, 2));
        assert_eq!(a.max_abs_diff(&b), None);
    }
}
