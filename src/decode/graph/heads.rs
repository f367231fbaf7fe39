//! The output heads: boxes and class logits from the normalised detection stream, the
//! keypoint fields from the keypoint tokens, and the keypoint class term added to the
//! logits of the slots that ran the keypoint branch.

use super::keypoint::Slots;
use super::net::Net;
use super::selection::{class_head, EPS};
use super::{Sizes, CLASSES, KEYPOINTS, KEYPOINT_FIELDS, REGRESSION_STD};
use crate::metrics::ops::builder::Attr;

/// The graph's output names: the ones the engines read.
pub use crate::decode::engine::OUTPUT_NAMES as OUTPUTS;

/// Writes `dets` (1, Q, 4), `labels` (1, Q, 91) and `keypoints` (1, K, 17, 8) from a
/// target of Q slots (every slot, or the K kept ones).
///
/// Keypoint fields: x, y reparameterised against the parent's reference box
/// (`x = raw_x * ref_w + ref_cx`), then the six raw fields (findable, visible, three
/// precision-matrix parameters, class term). The class term summed over the 17 keypoints is
/// added to logit 0 (the keypoint class) of its slot; slots outside the kept ones get none.
pub(super) fn heads(
    net: &mut Net,
    sizes: &Sizes,
    slots: &Slots,
    (target, q): (&str, usize),
    reference: &str,
    slot_reference: &str,
    tokens: &str,
) {
    let d = sizes.width;
    let k = slots.count(sizes.queries);
    let hs = net.layer_norm("transformer.decoder.norm", target, d, EPS);
    let delta = net.mlp("bbox_embed", &hs, &[d, d, d, 4], REGRESSION_STD);
    let boxes = net.reparam(&delta, reference);
    net.builder()
        .node_to("Identity", &[&boxes], &[], OUTPUTS[0]);
    net.builder().output_typed(OUTPUTS[0], &[1, q, 4]);

    let logits = class_head(net, "class_embed", &hs, d);
    let raw = net.mlp(
        "keypoint_embed",
        tokens,
        &[d, d, d, KEYPOINT_FIELDS],
        REGRESSION_STD,
    );
    let parent = net.unsqueeze(slot_reference, 2);
    let parent = net.expand(&parent, &[1, k, KEYPOINTS, 4]);
    let raw_xy = net.slice(&raw, 0, 2, -1);
    let p_xy = net.slice(&parent, 0, 2, -1);
    let p_wh = net.slice(&parent, 2, 4, -1);
    let xy = net.mul(&raw_xy, &p_wh);
    let xy = net.add(&xy, &p_xy);
    let rest = net.slice(&raw, 2, KEYPOINT_FIELDS as i64, -1);
    net.builder().node_to(
        "Concat",
        &[&xy, &rest],
        &[("axis", Attr::Int(-1))],
        OUTPUTS[2],
    );
    net.builder()
        .output_typed(OUTPUTS[2], &[1, k, KEYPOINTS, KEYPOINT_FIELDS]);

    let class_term = net.slice(&raw, 7, 8, -1);
    let axes = net.ints(&[2]);
    let boost = net.op(
        "ReduceSum",
        &[&class_term, &axes],
        &[("keepdims", Attr::Int(0))],
    ); // (1, K, 1)
    let boost = if k < q {
        let zeros = net.constant(&[1, q - k, 1], &vec![0.0; q - k]);
        net.concat(&[&boost, &zeros], 1)
    } else {
        boost
    };
    let others = net.constant(&[1, q, CLASSES - 1], &vec![0.0; q * (CLASSES - 1)]);
    let boost = net.concat(&[&boost, &others], -1);
    net.builder()
        .node_to("Add", &[&logits, &boost], &[], OUTPUTS[1]);
    net.builder().output_typed(OUTPUTS[1], &[1, q, CLASSES]);
}
