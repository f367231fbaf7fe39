//! The detection sublayers of one decoder layer (post-norm): self-attention over the
//! queries, deformable cross-attention on the detection memory, FFN.

use super::attention::{Deformable, SelfAttention};
use super::net::Net;
use super::selection::EPS;
use super::Sizes;

/// What every layer reads besides its target.
pub(super) struct LayerInputs<'a> {
    pub reference: &'a str,
    pub query_pos: &'a str,
    pub memory: &'a str,
    pub grid: usize,
}

/// The detection part of layer `l`: (1, Q, width) -> (1, rows, width).
///
/// Every slot is a key and a value of the self-attention; the first `rows` slots are its
/// queries and go on through the cross-attention and the FFN. Rows are independent after
/// the self-attention, so the first `rows` rows equal those of the layer over every slot.
/// The last layer of a graph that returns only its keypoint slots runs on those alone.
pub(super) fn detection(
    net: &mut Net,
    l: usize,
    sizes: &Sizes,
    target: &str,
    inputs: &LayerInputs<'_>,
    rows: usize,
) -> String {
    let (d, q) = (sizes.width, sizes.queries);
    let name = format!("transformer.decoder.layers.{l}");
    let with_pos = net.add(target, inputs.query_pos);
    let (queries, kept, query_pos, reference) = if rows < q {
        let end = rows as i64;
        (
            net.slice(&with_pos, 0, end, 1),
            net.slice(target, 0, end, 1),
            net.slice(inputs.query_pos, 0, end, 1),
            net.slice(inputs.reference, 0, end, 1),
        )
    } else {
        (
            with_pos.clone(),
            target.to_owned(),
            inputs.query_pos.to_owned(),
            inputs.reference.to_owned(),
        )
    };
    let attention = SelfAttention {
        name: &format!("{name}.self_attn"),
        width: d,
        heads: sizes.sa_heads,
        batch: 1,
        queries: rows,
        tokens: q,
    };
    let sa = attention.build(net, &queries, &with_pos, target);
    let sum = net.add(&kept, &sa);
    let target = net.layer_norm(&format!("{name}.norm1"), &sum, d, EPS);

    let with_pos = net.add(&target, &query_pos);
    let cross = Deformable {
        name: &format!("{name}.cross_attn"),
        width: d,
        heads: sizes.ca_heads,
        points: sizes.points,
        queries: rows,
        grid: inputs.grid,
    };
    let ca = cross.build(net, &with_pos, &reference, inputs.memory);
    let sum = net.add(&target, &ca);
    let target = net.layer_norm(&format!("{name}.norm2"), &sum, d, EPS);

    let ffn = feed_forward(net, &format!("{name}.linear"), &target, d, sizes.ffn);
    let sum = net.add(&target, &ffn);
    net.layer_norm(&format!("{name}.norm3"), &sum, d, EPS)
}

/// `linear2(relu(linear1(x)))`, parameters `{name}1` and `{name}2`.
pub(super) fn feed_forward(
    net: &mut Net,
    name: &str,
    x: &str,
    width: usize,
    hidden: usize,
) -> String {
    let h = net.linear(&format!("{name}1"), x, width, hidden);
    let h = net.relu(&h);
    net.linear(&format!("{name}2"), &h, hidden, width)
}
