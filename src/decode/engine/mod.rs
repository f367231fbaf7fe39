//! The engines that run the decoder graph: [`tract`] (pure Rust, the default) and
//! `ort` (ONNX Runtime, cargo feature `ort`). Both implement [`Decoder`](super::Decoder)
//! and hand their outputs as ndarray views of the engine's own buffers to one shape
//! check, so the one copy of an output is the one into [`RawOutput`].

#[cfg(feature = "ort")]
pub mod ort;
pub mod tract;

use std::path::PathBuf;

use ndarray::{Array, ArrayViewD, Axis, Dimension};

use super::{keypoints, DecodeError, FeatureMaps, MapSpec, RawOutput};
use crate::text::dims;

/// Output names of the RF-DETR export, in the order [`RawOutput`] is built from.
pub const OUTPUT_NAMES: [&str; 3] = ["dets", "labels", "keypoints"];

/// What every engine knows of its graph: the file and its input maps, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GraphInputs {
    pub(crate) path: PathBuf,
    pub(crate) maps: Vec<MapSpec>,
}

impl GraphInputs {
    /// The graph at `path` with input `maps`, once it has at least one map and
    /// outputs named as [`OUTPUT_NAMES`]; gives the index of each of those among
    /// `outputs` (the graph's output names, in its order).
    ///
    /// # Errors
    /// [`DecodeError::Graph`] naming the file and what is missing.
    pub(crate) fn new<S: AsRef<str>>(
        path: &std::path::Path,
        maps: Vec<MapSpec>,
        outputs: &[S],
    ) -> Result<(GraphInputs, [usize; 3]), DecodeError> {
        let graph_err = |message: String| DecodeError::Graph {
            path: path.to_path_buf(),
            message,
        };
        let mut index = [0; 3];
        for (slot, want) in index.iter_mut().zip(OUTPUT_NAMES) {
            *slot = outputs
                .iter()
                .position(|n| n.as_ref() == want)
                .ok_or_else(|| {
                    let names: Vec<&str> = outputs.iter().map(AsRef::as_ref).collect();
                    graph_err(format!(
                        "no output named \"{want}\" (outputs: {})",
                        names.join(", ")
                    ))
                })?;
        }
        if maps.is_empty() {
            return Err(graph_err("no inputs, expected feature maps".into()));
        }
        let graph = GraphInputs {
            path: path.to_path_buf(),
            maps,
        };
        Ok((graph, index))
    }

    /// [`DecodeError::InputMaps`] unless `maps` are the graph's inputs (names and
    /// shapes, in order).
    pub(crate) fn check(&self, maps: &FeatureMaps) -> Result<(), DecodeError> {
        if maps.specs() == self.maps.as_slice() {
            Ok(())
        } else {
            Err(DecodeError::InputMaps {
                expected: self.maps.clone(),
                found: maps.specs().to_vec(),
            })
        }
    }
}

/// Checks one graph input, `name` with `shape` and element type `is_f32`: an f32 map
/// `(1, C, H, W)`; `found` says what it is, for the error.
///
/// # Errors
/// [`DecodeError::Graph`] naming the input and what it is.
pub(crate) fn map_spec(
    path: &std::path::Path,
    name: &str,
    shape: Option<Vec<usize>>,
    is_f32: bool,
    found: &str,
) -> Result<MapSpec, DecodeError> {
    shape
        .and_then(|s| <[usize; 4]>::try_from(s).ok())
        .filter(|s| s[0] == 1 && s[1..].iter().all(|&d| d > 0) && is_f32)
        .map(|shape| MapSpec {
            name: name.to_owned(),
            shape,
        })
        .ok_or_else(|| DecodeError::Graph {
            path: path.to_path_buf(),
            message: format!("input {name} is {found}, expected f32 (1, channels, height, width)"),
        })
}

/// Checks the three output tensors' shapes (1, Q, 4), (1, Q, C), (1, S, K, 8) and
/// copies them, batch axis dropped, into a [`RawOutput`]. S ≤ Q is the number of
/// keypoint slots: the first S query slots carry keypoints
/// ([`KeypointSlots`](super::KeypointSlots)).
///
/// # Errors
/// [`DecodeError::Run`] naming the shapes found and expected.
pub(crate) fn raw_output(
    dets: ArrayViewD<'_, f32>,
    labels: ArrayViewD<'_, f32>,
    keypoints: ArrayViewD<'_, f32>,
) -> Result<RawOutput, DecodeError> {
    let (ds, ls, ks) = (dets.shape(), labels.shape(), keypoints.shape());
    let q = ds.get(1).copied().unwrap_or(0);
    if ds != [1, q, 4]
        || ls.len() != 3
        || ls[..2] != [1, q]
        || ks.len() != 4
        || ks[0] != 1
        || ks[1] == 0
        || ks[1] > q
        || ks[3] != keypoints::FIELDS
    {
        return Err(DecodeError::Run(format!(
            "outputs dets {}, labels {}, keypoints {}; expected (1,Q,4), (1,Q,C), (1,S,K,{}) with S ≤ Q",
            dims(ds),
            dims(ls),
            dims(ks),
            keypoints::FIELDS
        )));
    }
    Ok(RawOutput {
        dets: unbatched(dets)?,
        labels: unbatched(labels)?,
        keypoints: unbatched(keypoints)?,
    })
}

/// A copy of `view` without its leading batch axis, as a `D`-dimensional array.
fn unbatched<D: Dimension>(view: ArrayViewD<'_, f32>) -> Result<Array<f32, D>, DecodeError> {
    view.index_axis_move(Axis(0), 0)
        .into_dimensionality::<D>()
        .map(|v| v.to_owned())
        .map_err(|e| DecodeError::Run(e.to_string()))
}
