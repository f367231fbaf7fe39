//! The CPU decoder: the host part of the RF-DETR keypoint model, from backbone features to keypoints.
//!
//! The NPU runs the device half of the model; its feature maps come back as quantised
//! NHWC buffers. Where the device half ends is a [`Split`]: by default the ViT and both
//! projectors, two 256-channel maps `features` and `cross_attn_features`. This module
//! turns the maps into keypoints in camera pixels:
//!
//! | step | module | what it does |
//! |---|---|---|
//! | 0 | [`pairing`] | match each HEF output to the decoder input of the same name, once, when a rig is built |
//! | 1 | [`input`] | dequantise the device buffers into the NCHW f32 maps the ONNX expects, in one pass, into reused buffers |
//! | 2 | [`Decoder`] ([`engine::tract`], `engine::ort`) | run the decoder and heads (and the projectors in the taps split) from an ONNX file |
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
pub mod pairing;
pub mod split;

use std::path::{Path, PathBuf};
use std::str::FromStr;

use ndarray::{Array2, Array3, ArrayView1};

pub use input::{FeatureMaps, MapSpec};
pub use keypoints::{Detection, Keypoint, KeypointMapping};
pub use pairing::{Pairing, PairingError};
pub use split::{KeypointSlots, Split, PATCH, SIDE_MULTIPLE};

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
    /// Feature maps that do not match the graph's inputs.
    #[error(
        "feature maps are {}; the decoder reads {}",
        input::specs_text(found),
        input::specs_text(expected)
    )]
    InputMaps {
        expected: Vec<MapSpec>,
        found: Vec<MapSpec>,
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

/// The raw outputs of the decoder graph for one frame (batch 1), the batch axis dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct RawOutput {
    /// Boxes (Q, 4): cx, cy, w, h, normalised to the model input.
    pub dets: Array2<f32>,
    /// Class logits (Q, classes); `sigmoid` gives the score.
    pub labels: Array2<f32>,
    /// Keypoint fields (S, K, 8) of the first S ≤ Q query slots (the keypoint slots,
    /// [`KeypointSlots`]), K = 17 for COCO; see [`keypoints`] for the 8 fields.
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

    /// Query slots that carry keypoints: the first this many.
    pub fn keypoint_slots(&self) -> usize {
        self.keypoints.dim().0
    }

    /// Class logits of query `q`.
    pub fn logits(&self, q: usize) -> ArrayView1<'_, f32> {
        self.labels.row(q)
    }

    /// The 8 fields of keypoint `k` of query `q` (`q` below [`RawOutput::keypoint_slots`]).
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

/// A loaded decoder graph that turns backbone maps into raw detections.
pub trait Decoder: Send {
    /// The engine behind this decoder.
    fn engine(&self) -> Engine;
    /// The graph's input maps, names and shapes, in the graph's order.
    fn inputs(&self) -> &[MapSpec];
    /// Runs the graph on one frame's maps.
    ///
    /// # Errors
    /// [`DecodeError::InputMaps`] when the maps do not match [`Decoder::inputs`],
    /// [`DecodeError::Run`] when the engine fails.
    fn run(&mut self, maps: &mut FeatureMaps) -> Result<RawOutput, DecodeError>;

    /// The split this graph is built for, recognised from its input names; `None` for
    /// a graph with other names (paired through `[graph.inputs]`).
    fn split(&self) -> Option<Split> {
        let names: Vec<&str> = self.inputs().iter().map(|m| m.name.as_str()).collect();
        Split::recognise(&names)
    }

    /// Fresh feature-map buffers of the right names and shapes for this decoder.
    fn new_maps(&self) -> FeatureMaps {
        FeatureMaps::new(self.inputs())
    }
}

/// What a decoder ONNX declares, read from the file without preparing a graph: its
/// input maps and, when its outputs have static shapes, the query and keypoint-slot
/// counts. A rig pairs the inputs with a HEF's outputs before any engine loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecoderSignature {
    /// Input maps, names and shapes, in the graph's order.
    pub inputs: Vec<MapSpec>,
    /// Query slots of the model: the generated graphs' `hailo_edge.query_slots` metadata,
    /// else dim 1 of `dets`.
    pub queries: Option<usize>,
    /// Query slots with keypoints (dim 1 of `keypoints`).
    pub keypoint_slots: Option<usize>,
}

impl DecoderSignature {
    /// Reads the signature of the ONNX at `path`.
    ///
    /// # Errors
    /// [`DecodeError::Load`] when the file cannot be read or parsed,
    /// [`DecodeError::Graph`] for an input that is not a static f32 (1, C, H, W) map.
    pub fn read(path: &Path) -> Result<Self, DecodeError> {
        use std::collections::BTreeSet;
        use tract_onnx::pb::tensor_shape_proto::dimension::Value;
        use tract_onnx::pb::{type_proto, ValueInfoProto};

        let load = |message: String| DecodeError::Load {
            path: path.to_path_buf(),
            message,
        };
        let bytes = std::fs::read(path).map_err(|e| load(e.to_string()))?;
        let proto = <tract_onnx::pb::ModelProto as prost::Message>::decode(bytes.as_slice())
            .map_err(|e| load(format!("not an ONNX model: {e}")))?;
        let graph = proto
            .graph
            .ok_or_else(|| load("an ONNX model without a graph".into()))?;
        let tensor = |v: &ValueInfoProto| match v.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(type_proto::Value::TensorType(t)) => Some(t.clone()),
            _ => None,
        };
        let dims = |t: &type_proto::Tensor| {
            t.shape.as_ref().map(|s| {
                s.dim
                    .iter()
                    .map(|d| match d.value {
                        Some(Value::DimValue(n)) if n > 0 => n as usize,
                        _ => 0,
                    })
                    .collect::<Vec<_>>()
            })
        };
        let weights: BTreeSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
        let inputs = graph
            .input
            .iter()
            .filter(|v| !weights.contains(v.name.as_str()))
            .map(|v| {
                let t = tensor(v);
                let shape = t.as_ref().and_then(dims);
                let is_f32 = t.as_ref().is_some_and(|t| t.elem_type == 1);
                let found = shape
                    .as_deref()
                    .map_or("without a shape".into(), crate::text::dims);
                engine::map_spec(path, &v.name, shape, is_f32, &found)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let dim1 = |name: &str| {
            graph
                .output
                .iter()
                .find(|v| v.name == name)
                .and_then(tensor)
                .and_then(|t| dims(&t))
                .and_then(|d| d.get(1).copied())
                .filter(|&n| n > 0)
        };
        let stated = proto
            .metadata_props
            .iter()
            .find(|p| p.key == crate::decode::graph::QUERY_SLOTS_KEY)
            .map(|p| {
                p.value.parse::<usize>().map_err(|_| {
                    load(format!(
                        "metadata {} is \"{}\", expected a whole number",
                        crate::decode::graph::QUERY_SLOTS_KEY,
                        p.value
                    ))
                })
            })
            .transpose()?;
        Ok(Self {
            inputs,
            queries: stated.or_else(|| dim1("dets")),
            keypoint_slots: dim1("keypoints"),
        })
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
