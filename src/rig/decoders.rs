//! Each graph's decoder: which ONNX runs it, how the HEF's outputs pair with its inputs,
//! and the loaded decoders of the decoder threads.
//!
//! A graph names its decoder with `decoder_onnx`. Without it the rig runs the generated
//! real-width RF-DETR host graph ([`crate::decode::graph`]) for the HEF's side and split,
//! with `decoder.keypoint_slots`: random weights, so its keypoints mean nothing, but its
//! cost is the real model's, which is what a rig without its own decoder measures.

use std::path::PathBuf;

use crate::decode::graph::{cached, HostGraph};
use crate::decode::pairing::{DeviceOutput, PairingSides};
use crate::decode::{Decoder, DecoderSignature, Pairing, Split};

use super::build::{need_file, read_hef};
use super::config::{GraphConfig, RigConfig};
use super::{GraphError, RunError};

/// The ONNX a graph's decoder runs, and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderChoice {
    /// The ONNX file.
    pub path: PathBuf,
    /// The generated graph, when the rig names no file.
    pub generated: Option<HostGraph>,
}

impl DecoderChoice {
    /// What runs, in words, for reports.
    pub fn describe(&self) -> String {
        match &self.generated {
            None => self.path.display().to_string(),
            Some(g) => format!(
                "generated {} RF-DETR host graph at {}, {} split, keypoint slots {}, random weights ({})",
                g.width.key(),
                g.side,
                g.split,
                g.keypoint_slots,
                self.path.display()
            ),
        }
    }
}

/// Every graph's decoder: its `decoder_onnx`, else the generated graph for its HEF
/// (generated once and cached).
///
/// # Errors
/// [`RunError::MissingFile`] / [`RunError::Graph`] naming the HEF, or the graph's
/// `decoder_onnx` key when no graph can be generated for its HEF.
pub fn choose(rig: &RigConfig) -> Result<Vec<DecoderChoice>, RunError> {
    rig.graphs
        .iter()
        .enumerate()
        .map(|(i, g)| match &g.decoder_onnx {
            Some(path) => Ok(DecoderChoice {
                path: path.clone(),
                generated: None,
            }),
            None => generate(i, g, rig),
        })
        .collect()
}

fn generate(i: usize, g: &GraphConfig, rig: &RigConfig) -> Result<DecoderChoice, RunError> {
    let key = format!("graph[{i}].decoder_onnx");
    let bad = |source: GraphError| RunError::Graph {
        key: key.clone(),
        path: g.hef.clone(),
        source: Box::new(source),
    };
    let hef = read_hef(i, &g.hef)?;
    let group = hef
        .network_groups
        .first()
        .ok_or_else(|| bad(GraphError::NoNetworkGroup))?;
    let side = match group.inputs.first().map(|s| s.shape) {
        Some(hef::StreamShape::Image { height, width, .. }) if height == width => {
            Some(height as usize)
        }
        _ => None,
    };
    let short: Vec<&str> = group
        .outputs
        .iter()
        .map(hef::StreamInfo::layer_name)
        .collect();
    let (Some(side), Some(split)) = (side, Split::recognise(&short)) else {
        return Err(bad(GraphError::NoGeneratedDecoder {
            outputs: short.join(", "),
        }));
    };
    let graph = HostGraph {
        split,
        keypoint_slots: rig.decoder.keypoint_slots.unwrap_or_default(),
        ..HostGraph::real(side)
    };
    let path = cached(&graph).map_err(|e| bad(GraphError::Generate(e)))?;
    Ok(DecoderChoice {
        path,
        generated: Some(graph),
    })
}

/// Every graph's pairing of HEF outputs with decoder inputs, read from the files without
/// opening a device, so a program can show it before a run starts.
///
/// # Errors
/// As [`choose`], and [`RunError::Graph`] naming the HEF or the decoder ONNX when they do
/// not pair.
pub fn pairings(rig: &RigConfig, choices: &[DecoderChoice]) -> Result<Vec<Pairing>, RunError> {
    rig.graphs
        .iter()
        .zip(choices)
        .enumerate()
        .map(|(i, (g, choice))| {
            let hef = read_hef(i, &g.hef)?;
            let group = hef.network_groups.first().ok_or_else(|| RunError::Graph {
                key: format!("graph[{i}].hef"),
                path: g.hef.clone(),
                source: Box::new(GraphError::NoNetworkGroup),
            })?;
            pair(i, g, group, rig, choice)
        })
        .collect()
}

/// Pairs the HEF's outputs with the decoder's inputs by name (and `[graph.inputs]`), after
/// checking the decoder's keypoint slots against `decoder.keypoint_slots`.
///
/// # Errors
/// [`RunError::Graph`] naming the decoder ONNX when its inputs cannot be read or its slots
/// disagree, or the `graph[i].inputs` key with both lists when they do not pair.
pub(super) fn pair(
    i: usize,
    g: &GraphConfig,
    group: &hef::NetworkGroup,
    rig: &RigConfig,
    choice: &DecoderChoice,
) -> Result<Pairing, RunError> {
    let onnx = &choice.path;
    let decoder_key = format!("graph[{i}].decoder_onnx");
    need_file(decoder_key.clone(), onnx)?;
    let decoder_err = |source: GraphError| RunError::Graph {
        key: decoder_key.clone(),
        path: onnx.clone(),
        source: Box::new(source),
    };
    let signature = DecoderSignature::read(onnx).map_err(|e| decoder_err(e.into()))?;
    if let (Some(want), Some(queries), Some(has)) = (
        rig.decoder.keypoint_slots,
        signature.queries,
        signature.keypoint_slots,
    ) {
        if want.count(queries) != has {
            return Err(decoder_err(GraphError::KeypointSlots {
                configured: want,
                found: has,
                queries,
            }));
        }
    }
    let key = format!("graph[{i}].inputs");
    let bad = |source: GraphError| RunError::Graph {
        key: key.clone(),
        path: g.hef.clone(),
        source: Box::new(source),
    };
    let mut outputs = Vec::with_capacity(group.outputs.len());
    for s in &group.outputs {
        let hef::StreamShape::Image {
            height,
            width,
            features,
        } = s.shape
        else {
            return Err(bad(GraphError::NmsOutput {
                stream: s.name.clone(),
            }));
        };
        outputs.push(DeviceOutput {
            stream: s.name.clone(),
            height: height as usize,
            width: width as usize,
            channels: features as usize,
        });
    }
    let sides = PairingSides {
        hef: g.hef.clone(),
        onnx: onnx.clone(),
        key: key.clone(),
    };
    Pairing::by_name(&sides, &outputs, &signature.inputs, &g.inputs).map_err(|e| bad(e.into()))
}

/// The decoder of every graph, loaded once per decoder thread.
///
/// # Errors
/// [`RunError::MissingFile`] / [`RunError::Graph`] naming the decoder ONNX.
pub fn load(rig: &RigConfig, choices: &[DecoderChoice]) -> Result<Vec<Box<dyn Decoder>>, RunError> {
    choices
        .iter()
        .enumerate()
        .map(|(i, choice)| {
            let key = format!("graph[{i}].decoder_onnx");
            need_file(key.clone(), &choice.path)?;
            crate::decode::load(rig.decoder.engine, &choice.path).map_err(|e| RunError::Graph {
                key,
                path: choice.path.clone(),
                source: Box::new(e.into()),
            })
        })
        .collect()
}
