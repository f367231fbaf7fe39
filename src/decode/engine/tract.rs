//! The tract engine: pure Rust, the default.
//!
//! The ONNX graph is loaded with the fast [`GridSample`](crate::decode::ops::grid_sample) kernel
//! registered (or, for comparisons, tract's own kernel), optimised once, and run with
//! one reused execution state. tract still allocates each intermediate tensor per run,
//! so a program that keeps freed blocks in the process (`hailo-edge run` does, under
//! the rig key `decoder.retain_memory`) saves the page faults of touching them again.

use std::path::Path;

use tract_onnx::prelude::*;
use tract_onnx::tract_hir::tract_core::optim::Optimizer;

use super::{map_spec, raw_output, GraphInputs};
use crate::decode::input::specs_text;
use crate::decode::ops::attention::fuse_attention;
use crate::decode::ops::deform_project::fuse_value_projection;
use crate::decode::ops::deform_sample::fuse_deformable_sampling;
use crate::decode::ops::fast_ops::speed_up;
use crate::decode::ops::gather::fast_gather;
use crate::decode::ops::grid_sample::onnx_fast;
use crate::decode::ops::input_reshape::fold_input_reshapes;
use crate::decode::ops::layer_norm::fuse_layer_norm;
use crate::decode::ops::linear::fuse_linear;
use crate::decode::ops::trig::fast_trig;
use crate::decode::{DecodeError, Decoder, Engine, FeatureMaps, MapSpec, RawOutput};

/// Which kernels tract runs the decoder with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TractKernels {
    /// hailo-edge's kernels where they apply ([`ops`](crate::decode::ops)): the fast
    /// GridSample fused with the attention weighting, fused short-sequence attention
    /// and layer norms, and the broadcasting / short-softmax replacements.
    Fast,
    /// tract 0.23's own ops only (for comparison benchmarks and tests).
    Stock,
}

impl TractKernels {
    /// The kernels' name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fast => "fast",
            Self::Stock => "stock",
        }
    }
}

/// A decoder graph prepared by tract.
pub struct TractDecoder {
    graph: GraphInputs,
    state: TypedSimpleState,
    /// Per input, the shape the optimised graph reads it in, when that is not
    /// the graph's input shape (`ops::input_reshape`).
    feed_shapes: Vec<Option<TVec<usize>>>,
    /// Position of dets, labels and keypoints among the model outputs.
    output_index: [usize; 3],
}

impl std::fmt::Debug for TractDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TractDecoder")
            .field("graph", &self.graph)
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
        let model = read(path, kernel).map_err(load_err)?;
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
        let mut maps = Vec::new();
        for (i, outlet) in model.input_outlets().map_err(load_err)?.iter().enumerate() {
            let fact = model.input_fact(i).map_err(load_err)?;
            maps.push(map_spec(
                path,
                &model.node(outlet.node).name,
                fact.shape.as_concrete().map(<[usize]>::to_vec),
                fact.datum_type == f32::datum_type(),
                &fact.format_dt_shape(),
            )?);
        }
        let (graph, output_index) = GraphInputs::new(path, maps, &names)?;
        let (model, feed_shapes) = prepare(model, kernel).map_err(load_err)?;
        log::debug!("{}: inputs fed as {feed_shapes:?}", path.display());
        let plan = model.into_runnable().map_err(load_err)?;
        let state = plan.spawn().map_err(load_err)?;
        log::info!(
            "decoder {}: tract, {} kernels, inputs {}",
            path.display(),
            kernel.name(),
            specs_text(&graph.maps)
        );
        Ok(Self {
            graph,
            state,
            feed_shapes,
            output_index,
        })
    }
}

/// Reads an ONNX file into a typed tract model, with hailo-edge's GridSample for
/// [`TractKernels::Fast`].
///
/// # Errors
/// When tract cannot read or type the file.
pub fn read(path: &Path, kernel: TractKernels) -> TractResult<TypedModel> {
    let onnx = match kernel {
        TractKernels::Fast => onnx_fast(),
        TractKernels::Stock => tract_onnx::onnx(),
    };
    onnx.model_for_path(path)?.into_typed()
}

/// Declutters and optimises a typed decoder graph, with hailo-edge's rewrites for
/// [`TractKernels::Fast`]. Returns the model and, per input, the shape it is fed in
/// when that differs from the graph's (`fold_input_reshapes`).
///
/// The decoder, its benchmark and the profiler all prepare graphs here, so they run
/// the same plan.
///
/// # Errors
/// When tract rejects a rewrite or the optimisation.
pub fn prepare(
    mut model: TypedModel,
    kernel: TractKernels,
) -> TractResult<(TypedModel, Vec<Option<TVec<usize>>>)> {
    let inputs = model.inputs.len();
    if kernel == TractKernels::Stock {
        return Ok((model.into_optimized()?, vec![None; inputs]));
    }
    declutter(&mut model)?;
    let fused = fuse_hot_ops(&mut model)?;
    declutter(&mut model)?;
    model.optimize()?;
    let swapped = speed_up(&mut model)? + fast_trig(&mut model)? + fast_gather(&mut model)?;
    let feeds = fold_input_reshapes(&mut model)?;
    log::debug!("{fused}; {swapped} nodes on fast kernels");
    Ok((model, feeds))
}

/// tract's declutter passes but `PushSliceUp`.
///
/// That pass moves a slice above the op that makes its input by splitting the op into
/// one op per slice. The keypoint branch reads query slot 0 of every detection layer, so
/// each layer's linear layers, attention and sampling ran twice, on slot 0 and on slots
/// 1..100: a second pass over every weight matrix, a one-row product at matrix-vector
/// speed, and chains the rewrites below no longer recognise. The split saves no work
/// here, since the detection stream needs all 100 slots.
pub(crate) fn declutter_passes() -> Optimizer {
    let mut passes = Optimizer::declutter();
    passes
        .passes
        .retain(|p| !format!("{p:?}").starts_with("PushSliceUp"));
    passes
}

/// Declutters `model` with [`declutter_passes`].
pub(crate) fn declutter(model: &mut TypedModel) -> TractResult<()> {
    declutter_passes().session().optimize(model)
}

/// Puts hailo-edge's kernels in place of the chains they replace in a decluttered
/// graph, in the order the rewrites depend on (the value projection is found behind a
/// fused sampling, and the linear layers left after it go to [`fuse_linear`]).
/// Returns what was replaced, as a line for the log.
///
/// # Errors
/// When tract rejects a rewrite.
pub(crate) fn fuse_hot_ops(model: &mut TypedModel) -> TractResult<String> {
    let sampling = fuse_deformable_sampling(model)?;
    let projected = fuse_value_projection(model)?;
    let attention = fuse_attention(model)?;
    let norms = fuse_layer_norm(model)?;
    let linears = fuse_linear(model)?;
    Ok(format!(
        "fused {sampling} deformable samplings ({projected} projecting sampled rows only), \
         {attention} attention products, {norms} layer norms, {linears} linear layers"
    ))
}

impl Decoder for TractDecoder {
    fn engine(&self) -> Engine {
        Engine::Tract
    }

    fn inputs(&self) -> &[MapSpec] {
        &self.graph.maps
    }

    fn run(&mut self, maps: &mut FeatureMaps) -> Result<RawOutput, DecodeError> {
        self.graph.check(maps)?;
        let run_err = |e: TractError| DecodeError::Run(format!("{e:#}"));
        // The maps' Arcs are lent to tract; the state drops them at the end of the
        // turn, so the next frame's dequantisation writes into the same buffers.
        let inputs = maps.lend(&self.feed_shapes).map_err(run_err)?;
        let outputs = self.state.run(inputs).map_err(run_err)?;
        let [d, l, k] = self
            .output_index
            .map(|i| outputs[i].to_plain_array_view::<f32>());
        raw_output(
            d.map_err(run_err)?,
            l.map_err(run_err)?,
            k.map_err(run_err)?,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declutter_passes_are_tracts_but_the_slice_split() {
        let names =
            |o: &Optimizer| -> Vec<String> { o.passes.iter().map(|p| format!("{p:?}")).collect() };
        let stock = names(&Optimizer::declutter());
        let ours = names(&declutter_passes());
        // The filter can say no: tract's list has the pass (a tract that renamed it
        // would fail here rather than split the products again unnoticed).
        assert!(
            stock.iter().any(|p| p.starts_with("PushSliceUp")),
            "{stock:?}"
        );
        assert_eq!(ours.len(), stock.len() - 1, "{ours:?}");
        assert!(!ours.iter().any(|p| p.starts_with("PushSliceUp")));
    }

    /// The names of the ops that read an input of the decoder's plan.
    fn input_readers(decoder: &TractDecoder) -> Vec<String> {
        let model = decoder.state.plan().model();
        let mut readers = Vec::new();
        for outlet in model.input_outlets().unwrap() {
            for s in model.outlet_successors(*outlet) {
                readers.push(model.node(s.node).op.name().to_string());
            }
        }
        readers
    }

    #[test]
    fn the_fixture_decoders_read_their_maps_without_a_reshape_copy() {
        for side in [288, 432] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures")
                .join(format!("decoder_reduced_{side}.onnx"));
            let fast = TractDecoder::load(&path, TractKernels::Fast).unwrap();
            let readers = input_readers(&fast);
            assert!(!readers.is_empty());
            assert!(
                !readers.iter().any(|r| r == "IntoShape"),
                "{side}: {readers:?}"
            );
            // The check can say no: stock tract reshapes each map (a copy).
            let stock = TractDecoder::load(&path, TractKernels::Stock).unwrap();
            assert_eq!(stock.feed_shapes, vec![None; 2]);
            assert!(input_readers(&stock).iter().any(|r| r == "IntoShape"));
        }
    }
}
