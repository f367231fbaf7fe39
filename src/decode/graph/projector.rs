//! The P4 projector (LW-DETR's `MultiScaleProjector` at one level): the four ViT taps
//! concatenated on channels, a C2f block, then a channel LayerNorm. Only the taps split
//! runs it on the host; the design split receives its output from the device.
//!
//! C2f: a ConvX 1x1 to `2c`, split in two halves; `n` bottlenecks of two 3x3 ConvX chained
//! on the second half (no shortcut); the concatenation of both halves and every bottleneck
//! output; a ConvX 1x1 to the hidden width. A ConvX is a convolution without bias, a
//! LayerNorm over channels (epsilon 1e-6) and SiLU.

use super::net::{Init, Net};
use super::Sizes;
use crate::metrics::ops::builder::Attr;

/// Channels of each ViT tap.
pub(super) const TAP_CHANNELS: usize = 384;

/// Epsilon of the projector's channel LayerNorms.
const EPS: f32 = 1e-6;

/// One projector over `taps` (each (1, 384, g, g)) -> (1, width, g, g).
pub(super) fn projector(net: &mut Net, name: &str, taps: &[&str], sizes: &Sizes) -> String {
    let c = sizes.projector_hidden;
    let x = net.concat(taps, 1);
    let stem = conv_x(
        net,
        &format!("{name}.cv1"),
        &x,
        taps.len() * TAP_CHANNELS,
        2 * c,
        1,
    );
    let split = net.ints(&[c as i64, c as i64]);
    let halves = net
        .builder()
        .node_n("Split", "", &[&stem, &split], &[("axis", Attr::Int(1))], 2);
    let mut parts = halves.clone();
    for i in 0..sizes.bottlenecks {
        let prev = parts.last().cloned().unwrap_or_default();
        let a = conv_x(net, &format!("{name}.m.{i}.cv1"), &prev, c, c, 3);
        let b = conv_x(net, &format!("{name}.m.{i}.cv2"), &a, c, c, 3);
        parts.push(b);
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    let joined = net.concat(&refs, 1);
    let fin = (2 + sizes.bottlenecks) * c;
    let y = conv_x(net, &format!("{name}.cv2"), &joined, fin, sizes.width, 1);
    channel_norm(net, &format!("{name}.norm"), &y, sizes.width)
}

/// Convolution (no bias, "same" padding), channel LayerNorm, SiLU.
fn conv_x(net: &mut Net, name: &str, x: &str, cin: usize, cout: usize, k: usize) -> String {
    let std = 1.0 / ((cin * k * k) as f32).sqrt();
    let w = net.param(
        &format!("{name}.conv.weight"),
        &[cout, cin, k, k],
        Init::Std(std),
    );
    let pad = (k / 2) as i64;
    let y = net.op(
        "Conv",
        &[x, &w],
        &[
            ("kernel_shape", Attr::Ints(vec![k as i64; 2])),
            ("pads", Attr::Ints(vec![pad; 4])),
            ("strides", Attr::Ints(vec![1, 1])),
        ],
    );
    let y = channel_norm(net, &format!("{name}.bn"), &y, cout);
    net.silu(&y)
}

/// LayerNorm over the channel axis of an NCHW map.
fn channel_norm(net: &mut Net, name: &str, x: &str, width: usize) -> String {
    let t = net.transpose(x, &[0, 2, 3, 1]);
    let n = net.layer_norm(name, &t, width, EPS);
    net.transpose(&n, &[0, 3, 1, 2])
}

/// An NCHW map (1, width, g, g) as memory tokens (1, g*g, width), row-major over (y, x).
pub(super) fn tokens(net: &mut Net, map: &str, width: usize, grid: usize) -> String {
    let flat = net.reshape(map, &[1, width, grid * grid]);
    net.transpose(&flat, &[0, 2, 1])
}
