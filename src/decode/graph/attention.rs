//! The two attention blocks of the decoder: multi-head self-attention and the deformable
//! cross-attention (MSDeformAttn with one feature level).

use std::f32::consts::PI;

use super::net::{Init, Net, BIAS_STD};
use crate::metrics::ops::builder::Attr;

/// Standard deviation of the sampling-offset and attention-weight projections. Upstream
/// zero-initialises both weights (the offsets come from the bias alone); the random export
/// perturbs them so the sampling depends on the query.
const DEFORM_STD: f32 = 0.02;

/// Multi-head attention of `queries` query tokens over `tokens` key and value tokens, in
/// `batch` independent groups.
///
/// `q_in` is (batch, queries, width), `k_in` and `v_in` (batch, tokens, width); the result
/// is (batch, queries, width).
pub(super) struct SelfAttention<'a> {
    pub name: &'a str,
    pub width: usize,
    pub heads: usize,
    pub batch: usize,
    pub queries: usize,
    pub tokens: usize,
}

impl SelfAttention<'_> {
    pub(super) fn build(&self, net: &mut Net, q_in: &str, k_in: &str, v_in: &str) -> String {
        let (d, h, b, t) = (self.width, self.heads, self.batch, self.tokens);
        let (dh, tq) = (d / h, self.queries);
        let q = net.linear(&format!("{}.q", self.name), q_in, d, d);
        let k = net.linear(&format!("{}.k", self.name), k_in, d, d);
        let v = net.linear(&format!("{}.v", self.name), v_in, d, d);
        let q = net.reshape(&q, &[b, tq, h, dh]);
        let q = net.transpose(&q, &[0, 2, 1, 3]);
        let k = net.reshape(&k, &[b, t, h, dh]);
        let k = net.transpose(&k, &[0, 2, 3, 1]);
        let v = net.reshape(&v, &[b, t, h, dh]);
        let v = net.transpose(&v, &[0, 2, 1, 3]);
        let scores = net.op("MatMul", &[&q, &k], &[]);
        let scale = net.scalar(1.0 / (dh as f32).sqrt());
        let scores = net.mul(&scores, &scale);
        let weights = net.softmax(&scores);
        let out = net.op("MatMul", &[&weights, &v], &[]);
        let out = net.transpose(&out, &[0, 2, 1, 3]);
        let out = net.reshape(&out, &[b, tq, d]);
        net.linear(&format!("{}.out_proj", self.name), &out, d, d)
    }
}

/// Deformable cross-attention with one level: each of `queries` queries samples `points`
/// points per head around its reference box, with softmax weights.
///
/// The sampling is ONNX `GridSample` (bilinear, zeros padding, `align_corners = 0`), as
/// upstream exports it; offsets are box-relative (`ref_xy + offset / points * ref_wh / 2`).
pub(super) struct Deformable<'a> {
    pub name: &'a str,
    pub width: usize,
    pub heads: usize,
    pub points: usize,
    pub queries: usize,
    pub grid: usize,
}

impl Deformable<'_> {
    /// `query` (1, queries, width), `reference` (1, queries, 4) cxcywh in [0, 1],
    /// `memory` (1, grid^2, width) -> (1, queries, width).
    pub(super) fn build(
        &self,
        net: &mut Net,
        query: &str,
        reference: &str,
        memory: &str,
    ) -> String {
        let (d, h, p, lq, g) = (self.width, self.heads, self.points, self.queries, self.grid);
        let dh = d / h;
        let value = net.linear(&format!("{}.value_proj", self.name), memory, d, d);
        let value = net.reshape(&value, &[1, g * g, h, dh]);
        let value = net.transpose(&value, &[0, 2, 3, 1]);
        let value = net.reshape(&value, &[h, dh, g, g]);

        let offsets = net.linear_bias_values(
            &format!("{}.sampling_offsets", self.name),
            query,
            d,
            Init::Std(DEFORM_STD),
            &direction_grid(h, p),
        );
        let offsets = net.reshape(&offsets, &[1, lq, h, p, 2]);
        let weights = net.linear_init(
            &format!("{}.attention_weights", self.name),
            query,
            d,
            h * p,
            Init::Std(DEFORM_STD),
            Init::Std(BIAS_STD),
        );
        let weights = net.reshape(&weights, &[1, lq, h, p]);
        let weights = net.softmax(&weights);

        let r_xy = net.slice(reference, 0, 2, -1);
        let r_xy = net.reshape(&r_xy, &[1, lq, 1, 1, 2]);
        let r_wh = net.slice(reference, 2, 4, -1);
        let r_wh = net.reshape(&r_wh, &[1, lq, 1, 1, 2]);
        let spread = net.scalar(0.5 / p as f32);
        let shift = net.mul(&offsets, &r_wh);
        let shift = net.mul(&shift, &spread);
        let loc = net.add(&r_xy, &shift);
        let (two, one) = (net.scalar(2.0), net.scalar(1.0));
        let loc2 = net.mul(&loc, &two);
        let grid = net.op("Sub", &[&loc2, &one], &[]);
        let grid = net.transpose(&grid, &[0, 2, 1, 3, 4]);
        let grid = net.reshape(&grid, &[h, lq, p, 2]);
        let sampled = net.op(
            "GridSample",
            &[&value, &grid],
            &[
                ("mode", Attr::Str("bilinear".into())),
                ("padding_mode", Attr::Str("zeros".into())),
                ("align_corners", Attr::Int(0)),
            ],
        ); // (h, dh, lq, p)
        let weights = net.transpose(&weights, &[0, 2, 1, 3]);
        let weights = net.reshape(&weights, &[h, 1, lq, p]);
        let weighted = net.mul(&sampled, &weights);
        let axes = net.ints(&[-1]);
        let out = net.op(
            "ReduceSum",
            &[&weighted, &axes],
            &[("keepdims", Attr::Int(0))],
        );
        let out = net.reshape(&out, &[1, d, lq]);
        let out = net.transpose(&out, &[0, 2, 1]);
        net.linear(&format!("{}.output_proj", self.name), &out, d, d)
    }
}

/// The sampling-offset bias of Deformable DETR's initialisation: head `i` looks along the
/// direction `2 pi i / heads`, normalised to the unit square, point `j` at `j + 1` steps.
fn direction_grid(heads: usize, points: usize) -> Vec<f32> {
    let mut bias = Vec::with_capacity(heads * points * 2);
    for i in 0..heads {
        let theta = 2.0 * PI * i as f32 / heads as f32;
        let (c, s) = (theta.cos(), theta.sin());
        let norm = c.abs().max(s.abs());
        for j in 0..points {
            let step = (j + 1) as f32;
            bias.push(c / norm * step);
            bias.push(s / norm * step);
        }
    }
    bias
}

#[cfg(test)]
mod tests {
    use super::direction_grid;

    #[test]
    fn direction_grid_points_outward_per_head() {
        let b = direction_grid(4, 2);
        // Head 0 looks right, head 1 up (+y), point 1 twice as far as point 0.
        assert_eq!(&b[0..4], &[1.0, 0.0, 2.0, 0.0]);
        assert!((b[4]).abs() < 1e-6 && (b[5] - 1.0).abs() < 1e-6);
        assert!((b[7] - 2.0).abs() < 1e-6);
    }
}
