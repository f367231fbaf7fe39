//! The RF-DETR keypoint host graph, generated in Rust with seeded random weights.
//!
//! Users of the runtime have no Python and no upstream export, yet the demo, the benches and
//! `run`'s verdict must pay the real decoder's cost. [`HostGraph`] describes one graph (side,
//! width, split, keypoint slots, seed); [`HostGraph::encode`] writes it as ONNX bytes,
//! identical on every machine for the same description; [`cached`] keeps it under the user's
//! cache directory so it is generated once.
//!
//! | block | file |
//! |---|---|
//! | C2f projectors (taps split only) | `projector` |
//! | two-stage query selection, reference boxes, query positions | `selection` |
//! | detection sublayers of a decoder layer | `layer` |
//! | keypoint stage of a decoder layer, keypoint slots | `keypoint` |
//! | boxes, logits, keypoint fields | `heads` |
//!
//! Real width (the architecture of upstream's keypoint preview): hidden 256, 4 decoder
//! layers, 100 queries, 17 keypoints, 91 classes, 8 self-attention heads, deformable
//! cross-attention with 16 heads and 2 points, FFN 2048, keypoint FFN 1024, dual C2f
//! projector with 3 bottlenecks at 128 channels. Reduced width is for small test fixtures.
//!
//! # Keypoint slots
//!
//! With [`KeypointSlots::Top`]`(K)` the keypoint stage of every layer and the keypoint head
//! run on the first K query slots only; the sorted TopK makes them the K best proposals.
//! This is exact for those slots up to one coupling: upstream writes each slot's
//! instance-attention update into the detection stream (`target + instance_kp_layer_scale *
//! update`, then `kp_inst_norm`), and the next layer's self-attention mixes every slot. The
//! slots outside the K lose their update, so the kept slots see slightly different
//! neighbours. The layer scale is learned and initialised at 1e-6, the value a random export
//! carries; at that scale the kept slots' outputs match the full graph's within 1e-5 (the
//! tests measure it and the size of the coupling at larger scales). The other slots keep
//! their boxes (up to the same coupling) but lose the keypoint class term of logit 0, the
//! sum over 17 keypoints of the eighth keypoint field.

mod attention;
mod cache;
mod heads;
mod keypoint;
mod layer;
mod net;
mod projector;
mod selection;
#[cfg(test)]
mod tests;

use std::fmt;

pub(crate) use cache::replace_file;
pub use cache::{cache_dir, cache_root, cached};
pub use heads::OUTPUTS;

use keypoint::Slots;
use layer::LayerInputs;
use net::Net;

use crate::decode::{KeypointSlots, Split, PATCH, SIDE_MULTIPLE};

/// ONNX operator set of the generated graphs (GridSample needs 16).
const OPSET: i64 = 17;
/// Class logits per query (90 classes and the no-object logit).
pub const CLASSES: usize = 91;
/// Keypoints per query (COCO).
pub const KEYPOINTS: usize = 17;
/// Fields per keypoint, as the decoder reads them.
pub use crate::decode::keypoints::FIELDS as KEYPOINT_FIELDS;
/// Standard deviation of the last layer of the regression heads (upstream zero-initialises
/// them; a random export perturbs them with N(0, 0.02)).
const REGRESSION_STD: f32 = 0.02;
/// The `instance_kp_layer_scale` every layer starts from, as upstream initialises it.
pub const LAYER_SCALE: f32 = 1e-6;
/// Version of the generator, part of the file name: a cached graph of another version is
/// never taken for this one.
const GENERATOR_VERSION: u32 = 2;
/// The seed of [`HostGraph::real`].
pub const DEFAULT_SEED: u64 = 7;
/// ONNX metadata key of a generated graph's query slot count: a graph with top-K keypoint
/// slots returns K of its slots, so its `dets` output does not show how many it has.
pub const QUERY_SLOTS_KEY: &str = "hailo_edge.query_slots";

/// A graph description that cannot be generated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// The side is not a positive multiple of 24.
    #[error("decoder graph side {side}: expected a positive multiple of {SIDE_MULTIPLE} (patch {PATCH}, two windows per side)")]
    Side {
        /// The side asked for.
        side: usize,
    },
    /// No cache directory: none of `HAILO_EDGE_CACHE`, `XDG_CACHE_HOME`, `HOME` is set.
    #[error("no cache directory for decoder graphs: set HAILO_EDGE_CACHE, XDG_CACHE_HOME or HOME")]
    NoCacheDir,
    /// Reading or writing a cached graph failed.
    #[error("decoder graph cache {path}: {source}")]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// Layer widths of a generated graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Width {
    /// The real model's widths.
    #[default]
    Real,
    /// Small widths for test fixtures (hidden 64, 2 layers, 8 cross-attention heads, FFN
    /// 256, keypoint FFN 128, C2f with one bottleneck at 32). Nothing it costs says anything
    /// about the real model.
    Reduced,
}

impl Width {
    /// Short key for file names and reports.
    pub fn key(self) -> &'static str {
        match self {
            Self::Real => "real",
            Self::Reduced => "reduced",
        }
    }

    fn sizes(self) -> Sizes {
        match self {
            Self::Real => Sizes {
                width: 256,
                layers: 4,
                sa_heads: 8,
                ca_heads: 16,
                points: 2,
                ffn: 2048,
                keypoint_ffn: 1024,
                projector_hidden: 128,
                bottlenecks: 3,
                queries: 100,
            },
            Self::Reduced => Sizes {
                width: 64,
                layers: 2,
                sa_heads: 8,
                ca_heads: 8,
                points: 2,
                ffn: 256,
                keypoint_ffn: 128,
                projector_hidden: 32,
                bottlenecks: 1,
                queries: 100,
            },
        }
    }
}

impl fmt::Display for Width {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// The sizes of one width.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    width: usize,
    layers: usize,
    sa_heads: usize,
    ca_heads: usize,
    points: usize,
    ffn: usize,
    keypoint_ffn: usize,
    projector_hidden: usize,
    bottlenecks: usize,
    queries: usize,
}

/// One host graph: what it reads, how wide it is, how many slots run keypoints, its seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostGraph {
    /// Model input side in pixels (a multiple of 24); the maps are side / 12 square.
    pub side: usize,
    /// Layer widths.
    pub width: Width,
    /// Which maps the graph reads.
    pub split: Split,
    /// Query slots that run the keypoint branch.
    pub keypoint_slots: KeypointSlots,
    /// Seed of the random weights.
    pub seed: u64,
}

/// A generated graph: the ONNX bytes and what they hold.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// The ONNX file.
    pub bytes: Vec<u8>,
    /// Learned parameters (float weights, the folded keypoint initialiser included).
    pub parameters: u64,
}

/// Changes to the graph that only tests make: a broken slot order (the negative control of
/// the keypoint-slot comparison) and the layer scale (to measure the slot coupling).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Knobs {
    pub reversed_slots: bool,
    pub layer_scale: f32,
}

impl Default for Knobs {
    fn default() -> Self {
        Self {
            reversed_slots: false,
            layer_scale: LAYER_SCALE,
        }
    }
}

impl HostGraph {
    /// The real-width graph at the design split with keypoints for the top slot.
    pub fn real(side: usize) -> Self {
        Self {
            side,
            width: Width::Real,
            split: Split::Design,
            keypoint_slots: KeypointSlots::default(),
            seed: DEFAULT_SEED,
        }
    }

    /// The memory grid side (side / 12).
    pub fn grid(&self) -> usize {
        self.side / PATCH as usize
    }

    /// Query slots of the graph.
    pub fn queries(&self) -> usize {
        self.width.sizes().queries
    }

    /// Slots that run the keypoint branch (the `keypoints` output's second dimension).
    pub fn keypoint_count(&self) -> usize {
        self.keypoint_slots.count(self.queries())
    }

    /// Input names and shapes, in the graph's order.
    pub fn inputs(&self) -> Vec<(&'static str, [usize; 4])> {
        let g = self.grid();
        let c = self.split.channels();
        self.split
            .input_names()
            .iter()
            .map(|&n| (n, [1, c, g, g]))
            .collect()
    }

    /// Output names and shapes. The graph returns the keypoint slots alone: its last layer
    /// and heads run on those (the runtime reads no other slot).
    pub fn outputs(&self) -> [(&'static str, Vec<usize>); 3] {
        let q = self.keypoint_count();
        [
            (OUTPUTS[0], vec![1, q, 4]),
            (OUTPUTS[1], vec![1, q, CLASSES]),
            (
                OUTPUTS[2],
                vec![1, self.keypoint_count(), KEYPOINTS, KEYPOINT_FIELDS],
            ),
        ]
    }

    /// The file name of this graph: width, split, side, keypoint slots, seed and generator
    /// version, e.g. `decoder_real_design_288_kp1_s7_g2.onnx`.
    pub fn file_name(&self) -> String {
        format!(
            "decoder_{}_{}_{}_kp{}_s{}_g{GENERATOR_VERSION}.onnx",
            self.width, self.split, self.side, self.keypoint_slots, self.seed
        )
    }

    /// Checks the side.
    ///
    /// # Errors
    /// [`GraphError::Side`] when the side is not a positive multiple of 24.
    pub fn validate(&self) -> Result<(), GraphError> {
        if self.side == 0 || !self.side.is_multiple_of(SIDE_MULTIPLE as usize) {
            return Err(GraphError::Side { side: self.side });
        }
        Ok(())
    }

    /// The ONNX bytes of the graph; two calls give identical bytes.
    ///
    /// # Errors
    /// [`GraphError::Side`] for a side that is not a positive multiple of 24.
    pub fn encode(&self) -> Result<Vec<u8>, GraphError> {
        Ok(self.generate()?.bytes)
    }

    /// The ONNX bytes with the parameter count.
    ///
    /// # Errors
    /// [`GraphError::Side`] for a side that is not a positive multiple of 24.
    pub fn generate(&self) -> Result<Encoded, GraphError> {
        self.generate_with(Knobs::default())
    }

    pub(crate) fn generate_with(&self, knobs: Knobs) -> Result<Encoded, GraphError> {
        self.validate()?;
        let (model, parameters) = self.build(knobs);
        Ok(Encoded {
            bytes: crate::metrics::ops::builder::encode(&model),
            parameters,
        })
    }

    fn slots(&self, knobs: Knobs) -> Slots {
        let q = self.queries();
        let k = self.keypoint_count();
        if knobs.reversed_slots {
            Slots::Reversed(k)
        } else if k >= q {
            Slots::All
        } else {
            Slots::First(k)
        }
    }

    fn build(&self, knobs: Knobs) -> (tract_onnx::pb::ModelProto, u64) {
        let sizes = self.width.sizes();
        let g = self.grid();
        // The generator version stays out of the graph's own name, so a graph whose
        // content a new version leaves alone keeps its bytes.
        let name = format!(
            "rfdetr_kp_host_{}_{}_{}_kp{}_s{}",
            self.width, self.split, self.side, self.keypoint_slots, self.seed
        );
        let mut net = Net::new(&name, self.seed);
        let (memory, keypoint_memory) = self.memories(&mut net, &sizes);
        let slots = self.slots(knobs);

        let selected = selection::select(&mut net, &memory, &sizes, g);
        let inputs = keypoint::SlotInputs::new(
            &mut net,
            &sizes,
            &slots,
            &selected.reference,
            &selected.query_pos,
        );
        let mut tokens = keypoint::initial_tokens(&mut net, self.seed, &sizes, &slots);
        let mut target = selected.target.clone();
        let layer_inputs = LayerInputs {
            reference: &selected.reference,
            query_pos: &selected.query_pos,
            memory: &memory,
            grid: g,
        };
        let returned = slots.returned(sizes.queries);
        for l in 0..sizes.layers {
            let rows = if l + 1 == sizes.layers {
                returned
            } else {
                sizes.queries
            };
            target = layer::detection(&mut net, l, &sizes, &target, &layer_inputs, rows);
            (target, tokens) = keypoint::stage(
                &mut net,
                l,
                &sizes,
                &slots,
                knobs.layer_scale,
                &target,
                rows,
                &tokens,
                &inputs,
                &keypoint_memory,
                g,
            );
        }
        // A graph that returns the kept slots alone returns the first ones, whose boxes the
        // keypoint stage already took.
        let reference = if returned < sizes.queries {
            &inputs.reference
        } else {
            &selected.reference
        };
        heads::heads(
            &mut net,
            &sizes,
            &slots,
            (&target, returned),
            reference,
            &inputs.reference,
            &tokens,
        );
        let (mut model, parameters) = net.finish();
        // The slot count the outputs no longer show once they keep the keypoint slots alone.
        model
            .metadata_props
            .push(tract_onnx::pb::StringStringEntryProto {
                key: QUERY_SLOTS_KEY.to_owned(),
                value: sizes.queries.to_string(),
            });
        (model, parameters)
    }

    /// The detection memory and the keypoint memory as tokens (1, g*g, width).
    fn memories(&self, net: &mut Net, sizes: &Sizes) -> (String, String) {
        let (d, g) = (sizes.width, self.grid());
        let inputs = self.inputs();
        for (n, shape) in &inputs {
            let dims: Vec<_> = shape.iter().map(|&s| s.into()).collect();
            net.builder().input(n, &dims);
        }
        match self.split {
            Split::Taps => {
                let taps: Vec<&str> = inputs.iter().map(|(n, _)| *n).collect();
                let det = projector::projector(net, "backbone.0.projector", &taps, sizes);
                let kp = projector::projector(net, "backbone.0.cross_attn_projector", &taps, sizes);
                (
                    projector::tokens(net, &det, d, g),
                    projector::tokens(net, &kp, d, g),
                )
            }
            Split::Design => {
                let c = self.split.channels();
                let maps: Vec<String> = inputs
                    .iter()
                    .map(|(n, _)| {
                        let t = projector::tokens(net, n, c, g);
                        if c == d {
                            t
                        } else {
                            // Reduced width only: the device's 256-channel maps narrowed to
                            // the reduced hidden width (not part of the real model).
                            net.linear(&format!("reduced.adapter.{n}"), &t, c, d)
                        }
                    })
                    .collect();
                (maps[0].clone(), maps[1].clone())
            }
        }
    }
}
