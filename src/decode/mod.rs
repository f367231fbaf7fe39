//! The CPU decoder: the host part of the RF-DETR keypoint model, from backbone features to keypoints.
//!
//! The NPU runs the ViT backbone; its four tapped maps come back as quantised NHWC
//! buffers. This module turns them into keypoints in camera pixels:
//!
//! | step | module | what it does |
//! |---|---|---|
//! | 1 | [`input`] | dequantise the device buffers into the NCHW f32 maps the ONNX expects, in one pass, into reused buffers |
//! | 2 | [`Decoder`] ([`tract_engine`], `ort_engine`) | run the projectors, decoder and heads from an ONNX file |
//! | 3 | [`keypoints`] | pick the top detections and map their keypoints back to camera pixels |
//!
//! Engines are chosen by a config key ([`Engine`]): `tract` (pure Rust, the default, with
//! the fast [`grid_sample`] kernel) or `ort` (ONNX Runtime, loaded at run time; cargo
//! feature `ort`).

pub mod attention;
pub mod deform_sample;
pub mod fast_ops;
mod graph_patch;
pub mod grid_sample;
pub mod input;
mod input_reshape;
pub mod keypoints;
pub mod layer_norm;
#[cfg(feature = "ort")]
pub mod ort_engine;
pub mod tract_engine;

use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use input::FeatureMaps;
pub use keypoints::{Detection, Keypoint, KeypointMapping};

/// Number of backbone maps the decoder reads (ViT taps after layers 3, 6, 9 and 12).
pub const TAPS: usize = 4;

/// Helpers shared by the kernel tests: seeded inputs and the largest difference.
#[cfg(test)]
pub(crate) mod test_util {
    use tract_onnx::prelude::Tensor;

    /// `n` values in `[lo, hi)` from a xorshift seeded by `seed`: repeatable inputs.
    pub fn random(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
            })
            .collect()
    }

    /// The largest absolute element difference of two f32 tensors of one shape.
    pub fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
        assert_eq!(a.shape(), b.shape());
        let (a, b) = (super::f32s(a).unwrap(), super::f32s(b).unwrap());
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }
}

/// The elements of a dense f32 tensor.
pub(crate) fn f32s(t: &tract_onnx::prelude::Tensor) -> tract_onnx::prelude::TractResult<&[f32]> {
    t.try_as_plain_ram()?.as_slice::<f32>()
}

/// The elements of a dense f32 tensor, writable.
pub(crate) fn f32s_mut(
    t: &mut tract_onnx::prelude::Tensor,
) -> tract_onnx::prelude::TractResult<&mut [f32]> {
    t.to_plain_array_view_mut::<f32>()?
        .into_slice()
        .ok_or_else(|| tract_onnx::tract_hir::internal::format_err!("tensor is not contiguous"))
}

/// Errors of the decoder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// An engine name that is not one of the known keys.
    #[error("unknown decoder engine {0:?}: expected \"tract\" or \"ort\"")]
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
    #[error("feature maps are {found:?}, the decoder expects {expected:?}")]
    InputShape {
        expected: [usize; 4],
        found: [usize; 4],
    },
    /// A device buffer that does not match its stream description.
    #[error("backbone output {stream}: {message}")]
    Buffer { stream: String, message: String },
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

/// The raw outputs of the decoder graph for one frame (batch 1).
#[derive(Debug, Clone, PartialEq)]
pub struct RawOutput {
    /// Boxes (Q, 4): cx, cy, w, h, normalised to the model input.
    pub dets: Vec<[f32; 4]>,
    /// Class logits (Q × classes), row-major; `sigmoid` gives the score.
    pub labels: Vec<f32>,
    /// Number of class logits per query.
    pub classes: usize,
    /// Keypoint fields (Q × K × 8), row-major; see [`keypoints`] for the 8 fields.
    pub keypoints: Vec<f32>,
    /// Keypoints per query (17 for COCO).
    pub keypoints_per_query: usize,
}

impl RawOutput {
    /// Number of queries.
    pub fn queries(&self) -> usize {
        self.dets.len()
    }

    /// Class logits of query `q`.
    pub fn logits(&self, q: usize) -> &[f32] {
        &self.labels[q * self.classes..(q + 1) * self.classes]
    }

    /// The 8 fields of keypoint `k` of query `q`.
    pub fn keypoint(&self, q: usize, k: usize) -> &[f32] {
        let i = (q * self.keypoints_per_query + k) * keypoints::FIELDS;
        &self.keypoints[i..i + keypoints::FIELDS]
    }

    /// Largest absolute difference to another output of the same shape (for engine
    /// comparisons); `None` when the shapes differ.
    pub fn max_abs_diff(&self, other: &RawOutput) -> Option<f32> {
        if self.dets.len() != other.dets.len()
            || self.labels.len() != other.labels.len()
            || self.keypoints.len() != other.keypoints.len()
        {
            return None;
        }
        let a = self
            .dets
            .iter()
            .flatten()
            .chain(&self.labels)
            .chain(&self.keypoints);
        let b = other
            .dets
            .iter()
            .flatten()
            .chain(&other.labels)
            .chain(&other.keypoints);
        Some(a.zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max))
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
        Engine::Tract => Ok(Box::new(tract_engine::TractDecoder::load(
            path,
            tract_engine::TractKernels::Fast,
        )?)),
        #[cfg(feature = "ort")]
        Engine::Ort => Ok(Box::new(ort_engine::OrtDecoder::load(path, 1)?)),
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
            dets: vec![[0.5; 4]; 2],
            labels: vec![0.0; 6],
            classes: 3,
            keypoints: vec![0.0; 2 * 17 * 8],
            keypoints_per_query: 17,
        };
        let mut b = a.clone();
        assert_eq!(a.max_abs_diff(&b), Some(0.0));
        b.keypoints[100] = 0.25;
        assert_eq!(a.max_abs_diff(&b), Some(0.25));
        b.labels.pop();
        assert_eq!(a.max_abs_diff(&b), None);
    }
}
