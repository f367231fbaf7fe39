//! The tract engine: pure Rust, the default.
//!
//! The ONNX graph is loaded with the fast [`GridSample`](super::grid_sample) kernel
//! registered (or, for comparisons, tract's own kernel), optimised once, and run with
//! one reused execution state. tract still allocates each intermediate tensor per run,
//! so a program that keeps freed blocks in the process (`hailo-edge run` does, under
//! the rig key `decoder.retain_memory`) saves the page faults of touching them again.

use std::path::{Path, PathBuf};

use tract_onnx::prelude::*;

use super::attention::fuse_attention;
use super::deform_sample::fuse_deformable_sampling;
use super::fast_ops::speed_up;
use super::grid_sample::onnx_fast;
use super::input_reshape::fold_input_reshapes;
use super::layer_norm::fuse_layer_norm;
use super::{DecodeError, Decoder, Engine, FeatureMaps, RawOutput, TAPS};

/// Which kernels tract runs the decoder with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TractKernels {
    /// hailo-edge's kernels where they apply: [`super::grid_sample::FastGridSample`]
    /// fused with the attention weighting ([`super::deform_sample`]), fused
    /// short-sequence attention ([`super::attention`]) and layer norms
    /// ([`super::layer_norm`]), and the broadcasting / short-softmax replacements of
    /// [`super::fast_ops`].
    Fast,
    /// tract 0.23's own ops only (for comparison benchmarks and tests).
    Stock,
}

/// Output names of the RF-DETR export, in the order [`RawOutput`] is built from.
pub const OUTPUT_NAMES: [&str; 3] = ["dets", "labels", "keypoints"];

/// A decoder graph prepared by tract.
pub struct TractDecoder {
    path: PathBuf,
    state: TypedSimpleState,
    input_shape: [usize; 4],
    /// Per input, the shape the optimised graph reads it in, when that is not
    /// `input_shape` ([`super::input_reshape`]).
    feed_shapes: Vec<Option<TVec<usize>>>,
    /// Position of dets, labels and keypoints among the model outputs.
    output_index: [usize; 3],
}

impl std::fmt::Debug for TractDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TractDecoder")
            .field("path", &self.path)
            .field("input_shape", &self.input_shape)
            .finish_non_exhaustive()
    }
}

impl TractDecoder {
    /// Loads, checks and optimises a decoder ONNX.
    ///
    /// # Errors
    /// [`DecodeError::Load`] when tract cannot read or optimise the file,
    /// [`DecodeError::Graph`] when its inputs or outputs are not the decoder's.
    pub fn load(path: &Path, kernel: TractKernels) -> Result<Self, DecodeError> {
        let load_err = |e: TractError| DecodeError::Load {
            path: path.to_path_buf(),
            message: format!("{e:#}"),
        };
        let graph_err = |message: String| DecodeError::Graph {
            path: path.to_path_buf(),
            message,
        };
        let onnx = match kernel {
            TractKernels::Fast => onnx_fast(),
            TractKernels::Stock => tract_onnx::onnx(),
        };
        let model = onnx.model_for_path(path).map_err(load_err)?;
        let model = model.into_typed().map_err(load_err)?;
        let names: Vec<String> = model
            .output_outlets()
            .map_err(load_err)?
            .iter()
            .map(|o| {
                model
                    .outlet_label(*o)
                    .unwrap_or(&model.node(o.node).name)
                    .to_string()
            })
            .collect();
        let mut output_index = [0; 3];
        for (slot, want) in output_index.iter_mut().zip(OUTPUT_NAMES) {
            *slot = names.iter().position(|n| n == want).ok_or_else(|| {
                graph_err(format!("no output named {want:?} (outputs: {names:?})"))
            })?;
        }
        let inputs = model.input_outlets().map_err(load_err)?.len();
        if inputs != TAPS {
            return Err(graph_err(format!(
                "{inputs} inputs, expected {TAPS} feature maps"
            )));
        }
        let mut input_shape = None;
        for i in 0..TAPS {
            let fact = model.input_fact(i).map_err(load_err)?;
            let shape = fact
                .shape
                .as_concrete()
                .and_then(|s| <[usize; 4]>::try_from(s).ok())
                .filter(|s| s[0] == 1 && fact.datum_type == f32::datum_type())
                .ok_or_else(|| {
                    graph_err(format!(
                        "input {i} is {fact:?}, expected f32 (1, channels, grid, grid)"
                    ))
                })?;
            if input_shape.is_some_and(|s| s != shape) {
                return Err(graph_err(format!("input {i} is {shape:?}, unlike input 0")));
            }
            input_shape = Some(shape);
        }
        let input_shape = input_shape.expect("TAPS > 0");
        let mut model = model.into_decluttered().map_err(load_err)?;
        if kernel == TractKernels::Fast {
            let fused = fuse_deformable_sampling(&mut model).map_err(load_err)?;
            let attention = fuse_attention(&mut model).map_err(load_err)?;
            let norms = fuse_layer_norm(&mut model).map_err(load_err)?;
            log::debug!(
                "{}: fused {fused} deformable sampling chains, {attention} attention products, {norms} layer norms",
                path.display()
            );
        }
        let mut model = model.into_optimized().map_err(load_err)?;
        let mut feed_shapes = vec![None; TAPS];
        if kernel == TractKernels::Fast {
            let swapped = speed_up(&mut model).map_err(load_err)?;
            feed_shapes = fold_input_reshapes(&mut model).map_err(load_err)?;
            log::debug!(
                "{}: {swapped} nodes on fast kernels, inputs fed as {feed_shapes:?}",
                path.display()
            );
        }
        let plan = model.into_runnable().map_err(load_err)?;
        let state = plan.spawn().map_err(load_err)?;
        log::info!(
            "decoder {}: tract, {kernel:?} kernels, input {input_shape:?}",
            path.display()
        );
        Ok(Self {
            path: path.to_path_buf(),
            state,
            input_shape,
            feed_shapes,
            output_index,
        })
    }
}

impl Decoder for TractDecoder {
    fn engine(&self) -> Engine {
        Engine::Tract
    }

    fn input_shape(&self) -> [usize; 4] {
        self.input_shape
    }

    fn run(&mut self, maps: &mut FeatureMaps) -> Result<RawOutput, DecodeError> {
        if maps.shape() != self.input_shape {
            return Err(DecodeError::InputShape {
                expected: self.input_shape,
                found: maps.shape(),
            });
        }
        // The maps' Arcs are lent to tract; the state drops them at the end of the
        // turn, so the next frame's dequantisation writes into the same buffers.
        let inputs = maps
            .lend(&self.feed_shapes)
            .map_err(|e| DecodeError::Run(format!("{e:#}")))?;
        let outputs = self
            .state
            .run(inputs)
            .map_err(|e| DecodeError::Run(format!("{e:#}")))?;
        let [d, l, k] = self.output_index;
        raw_output(&outputs[d], &outputs[l], &outputs[k])
    }
}

/// Checks the three output tensors' shapes and copies them into a [`RawOutput`].
pub(crate) fn raw_output(
    dets: &Tensor,
    labels: &Tensor,
    keypoints: &Tensor,
) -> Result<RawOutput, DecodeError> {
    let run_err = |m: String| DecodeError::Run(m);
    let (ds, ls, ks) = (dets.shape(), labels.shape(), keypoints.shape());
    let q = ds.get(1).copied().unwrap_or(0);
    if ds != [1, q, 4]
        || ls.len() != 3
        || ls[..2] != [1, q]
        || ks.len() != 4
        || ks[..2] != [1, q]
        || ks[3] != super::keypoints::FIELDS
    {
        return Err(run_err(format!(
            "outputs dets {ds:?}, labels {ls:?}, keypoints {ks:?}; expected (1,Q,4), (1,Q,C), (1,Q,K,{})",
            super::keypoints::FIELDS
        )));
    }
    let f = |t: &Tensor| {
        super::f32s(t)
            .map(<[f32]>::to_vec)
            .map_err(|e| run_err(format!("{e:#}")))
    };
    let flat = f(dets)?;
    Ok(RawOutput {
        dets: flat
            .chunks_exact(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect(),
        labels: f(labels)?,
        classes: ls[2],
        keypoints: f(keypoints)?,
        keypoints_per_query: ks[2],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_decoders_read_their_maps_without_a_reshape_copy() {
        for (side, grid) in [(288, 24usize), (432, 36)] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures")
                .join(format!("decoder_{side}.onnx"));
            let fast = TractDecoder::load(&path, TractKernels::Fast).unwrap();
            let flat: TVec<usize> = tvec![1, 384, grid * grid];
            assert_eq!(fast.feed_shapes, vec![Some(flat); TAPS], "{side}");
            // Stock tract keeps the ONNX's shapes (and its copies).
            let stock = TractDecoder::load(&path, TractKernels::Stock).unwrap();
            assert_eq!(stock.feed_shapes, vec![None; TAPS]);
        }
    }
}
