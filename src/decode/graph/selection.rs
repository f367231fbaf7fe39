//! Two-stage query selection: every memory token proposes a box, the `queries` tokens with
//! the highest class logit are kept (ONNX `TopK`, sorted, so slot 0 is the best proposal),
//! and the decoder's fixed reference boxes and query positions are derived from them.

use std::f32::consts::PI;

use super::net::{Init, Net, BIAS_STD};
use super::{Sizes, CLASSES, REGRESSION_STD};
use crate::metrics::ops::builder::Attr;

/// Epsilon of the decoder's LayerNorms.
pub(super) const EPS: f32 = 1e-5;

/// Width and height of every token's proposal box (`0.05 * 2^level`, level 0).
const PROPOSAL_SIDE: f32 = 0.05;

/// Class-head bias: the logit of a prior probability of 0.01, as upstream initialises it.
pub(super) const CLASS_PRIOR_BIAS: f32 = -4.595_12;

/// What the decoder layers start from.
pub(super) struct Selected {
    /// Reference boxes (1, Q, 4), cxcywh, fixed for every layer.
    pub reference: String,
    /// Query position embedding (1, Q, width).
    pub query_pos: String,
    /// Content queries (1, Q, width): learned constants.
    pub target: String,
}

/// Selects the queries from `memory` (1, g*g, width).
pub(super) fn select(net: &mut Net, memory: &str, sizes: &Sizes, grid: usize) -> Selected {
    let (d, q) = (sizes.width, sizes.queries);
    let tokens = grid * grid;
    let out = net.linear("transformer.enc_output", memory, d, d);
    let normed = net.layer_norm("transformer.enc_output_norm", &out, d, EPS);
    let logits = class_head(net, "transformer.enc_out_class_embed", &normed, d);
    let best = net.op(
        "ReduceMax",
        &[&logits],
        &[("axes", Attr::Ints(vec![-1])), ("keepdims", Attr::Int(0))],
    );
    let k = net.ints(&[q as i64]);
    let top = net.builder().node_n(
        "TopK",
        "",
        &[&best, &k],
        &[
            ("axis", Attr::Int(-1)),
            ("largest", Attr::Int(1)),
            ("sorted", Attr::Int(1)),
        ],
        2,
    );
    let index = net.unsqueeze(&top[1], -1);
    let index_d = net.expand(&index, &[1, q, d]);
    let picked = net.op(
        "GatherElements",
        &[&out, &index_d],
        &[("axis", Attr::Int(1))],
    );
    // The same LayerNorm again on the selected rows, as upstream applies it.
    let picked = net.layer_norm_shared("transformer.enc_output_norm", &picked, EPS);
    let props = net.constant(&[1, tokens, 4], &proposals(grid));
    let index_4 = net.expand(&index, &[1, q, 4]);
    let picked_props = net.op(
        "GatherElements",
        &[&props, &index_4],
        &[("axis", Attr::Int(1))],
    );
    let delta = net.mlp(
        "transformer.enc_out_bbox_embed",
        &picked,
        &[d, d, d, 4],
        REGRESSION_STD,
    );
    let two_stage = net.reparam(&delta, &picked_props);
    let refpoint = net.param(
        "transformer.refpoint_embed",
        &[1, q, 4],
        Init::Std(BIAS_STD),
    );
    let reference = net.reparam(&refpoint, &two_stage);

    let sine = sine_embed(net, &reference, sizes);
    let head_std = 1.0 / (d as f32).sqrt();
    let query_pos = net.mlp(
        "transformer.decoder.ref_point_head",
        &sine,
        &[2 * d, d, d],
        head_std,
    );
    let target = net.param("transformer.query_feat", &[1, q, d], Init::Std(1.0));
    Selected {
        reference,
        query_pos,
        target,
    }
}

/// A class head: `width` -> 91 logits, the bias at the prior's logit.
pub(super) fn class_head(net: &mut Net, name: &str, x: &str, width: usize) -> String {
    let std = 1.0 / (width as f32).sqrt();
    net.linear_init(
        name,
        x,
        width,
        CLASSES,
        Init::Std(std),
        Init::Fill(CLASS_PRIOR_BIAS),
    )
}

/// Proposal boxes of the tokens, row-major over (y, x): the cell centre, side 0.05.
fn proposals(grid: usize) -> Vec<f32> {
    let mut v = Vec::with_capacity(grid * grid * 4);
    for y in 0..grid {
        for x in 0..grid {
            let g = grid as f32;
            v.extend_from_slice(&[
                (x as f32 + 0.5) / g,
                (y as f32 + 0.5) / g,
                PROPOSAL_SIDE,
                PROPOSAL_SIDE,
            ]);
        }
    }
    v
}

/// Sine embedding of the reference boxes: (1, Q, 4) -> (1, Q, 2 * width), coordinates in
/// the order y, x, w, h, each as `width / 2` interleaved sin/cos features of
/// `2 pi * coord / 10000^(2 i / (width / 2))`.
fn sine_embed(net: &mut Net, reference: &str, sizes: &Sizes) -> String {
    let (d, q) = (sizes.width, sizes.queries);
    let feats = d / 2;
    let order = net.ints(&[1, 0, 2, 3]);
    let yxwh = net.op("Gather", &[reference, &order], &[("axis", Attr::Int(-1))]);
    let freqs: Vec<f32> = (0..feats / 2)
        .map(|i| 2.0 * PI / 10000f32.powf(2.0 * i as f32 / feats as f32))
        .collect();
    let freqs = net.constant(&[feats / 2], &freqs);
    let x = net.unsqueeze(&yxwh, -1);
    let x = net.mul(&x, &freqs); // (1, Q, 4, feats / 2)
    let s = net.op("Sin", &[&x], &[]);
    let c = net.op("Cos", &[&x], &[]);
    let s = net.unsqueeze(&s, -1);
    let c = net.unsqueeze(&c, -1);
    let sc = net.concat(&[&s, &c], -1); // (1, Q, 4, feats / 2, 2)
    net.reshape(&sc, &[1, q, 4 * feats])
}
