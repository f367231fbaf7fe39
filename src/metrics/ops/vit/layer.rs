//! One transformer layer of the backbone: the constants all layers share, the layout of
//! its attention, its attention block and its MLP block.

use super::VitSpec;
use crate::metrics::ops::builder::{Attr, GraphBuilder};

impl VitSpec {
    /// The constants every layer reads: the shared LayerNorm, the attention layouts, the
    /// attention scale, the GELU scalars and the q, k, v indices.
    pub(super) fn layer_constants(&self, b: &mut GraphBuilder) -> LayerConstants {
        let (d, nw) = (self.embed, self.num_windows);
        let ln_w = b.filled("ln.w", &[d], 1.0);
        let ln_b = b.filled("ln.b", &[d], 0.0);
        let global = self.attention_shapes(b, "global", 1, self.tokens());
        let windowed = self.attention_shapes(b, "windowed", nw * nw, self.window_tokens());
        let hd = self.embed / self.heads;
        let scale = b.scalar("attn.scale", 1.0 / (hd as f32).sqrt());
        let (half, one, rsqrt2) = (
            b.scalar("half", 0.5),
            b.scalar("one", 1.0),
            b.scalar("rsqrt2", 0.707_106_77),
        );
        let idx: Vec<String> = (0..3)
            .map(|i| b.scalar_int(&format!("idx{i}"), i))
            .collect();
        LayerConstants {
            ln_w,
            ln_b,
            global,
            windowed,
            scale,
            half,
            one,
            rsqrt2,
            idx,
        }
    }

    /// The attention layout of `batch` sequences of `len` tokens, its constants tagged `tag`.
    fn attention_shapes(
        &self,
        b: &mut GraphBuilder,
        tag: &str,
        batch: usize,
        len: usize,
    ) -> AttentionShapes {
        let (d, heads, hd) = (self.embed, self.heads, self.embed / self.heads);
        let (bt, ln) = (batch as i64, len as i64);
        AttentionShapes {
            seq: b.ints(&format!("shape.{tag}.seq"), &[bt, ln, d as i64]),
            qkv: b.ints(
                &format!("shape.{tag}.qkv"),
                &[bt, ln, 3, heads as i64, hd as i64],
            ),
        }
    }

    /// Transformer layer `l` (0-based): the tokens laid out for its attention (global or
    /// windowed), then the attention and the MLP blocks.
    pub(super) fn layer(
        &self,
        b: &mut GraphBuilder,
        c: &LayerConstants,
        l: usize,
        x: &str,
    ) -> String {
        let shapes = if self.is_global(l) {
            &c.global
        } else {
            &c.windowed
        };
        let x = if self.num_windows > 1 {
            b.node("Reshape", &format!("l{l}.layout"), &[x, &shapes.seq], &[])
        } else {
            x.to_string()
        };
        let x = self.attention(b, c, l, &x, shapes);
        self.mlp(b, c, l, &x)
    }

    /// The pre-norm multi-head self-attention block of layer `l`, with LayerScale and the
    /// residual: its output tokens.
    fn attention(
        &self,
        b: &mut GraphBuilder,
        c: &LayerConstants,
        l: usize,
        x: &str,
        shapes: &AttentionShapes,
    ) -> String {
        let d = self.embed;
        let h = c.norm(b, l, x, "norm1");
        let qkv = linear(b, l, "qkv", &h, d, 3 * d);
        let qkv = b.node("Reshape", "", &[&qkv, &shapes.qkv], &[]);
        let qkv = b.node(
            "Transpose",
            "",
            &[&qkv],
            &[("perm", Attr::Ints(vec![2, 0, 3, 1, 4]))],
        );
        let q = b.node("Gather", "", &[&qkv, &c.idx[0]], &[("axis", Attr::Int(0))]);
        let k = b.node("Gather", "", &[&qkv, &c.idx[1]], &[("axis", Attr::Int(0))]);
        let v = b.node("Gather", "", &[&qkv, &c.idx[2]], &[("axis", Attr::Int(0))]);
        let kt = b.node(
            "Transpose",
            "",
            &[&k],
            &[("perm", Attr::Ints(vec![0, 1, 3, 2]))],
        );
        let att = b.node("MatMul", &format!("l{l}.attn.qk"), &[&q, &kt], &[]);
        let att = b.node("Mul", "", &[&att, &c.scale], &[]);
        let att = b.node("Softmax", "", &[&att], &[("axis", Attr::Int(-1))]);
        let ctx = b.node("MatMul", &format!("l{l}.attn.av"), &[&att, &v], &[]);
        let ctx = b.node(
            "Transpose",
            "",
            &[&ctx],
            &[("perm", Attr::Ints(vec![0, 2, 1, 3]))],
        );
        let ctx = b.node("Reshape", "", &[&ctx, &shapes.seq], &[]);
        let o = linear(b, l, "proj", &ctx, d, d);
        scaled_residual(b, l, 1, x, &o, d)
    }

    /// The pre-norm MLP block of layer `l` with exact GELU (`x * 0.5 * (1 + erf(x / sqrt 2))`),
    /// LayerScale and the residual: its output tokens.
    fn mlp(&self, b: &mut GraphBuilder, c: &LayerConstants, l: usize, x: &str) -> String {
        let (d, mlp) = (self.embed, self.mlp);
        let h = c.norm(b, l, x, "norm2");
        let f = linear(b, l, "fc1", &h, d, mlp);
        let e = b.node("Mul", "", &[&f, &c.rsqrt2], &[]);
        let e = b.node("Erf", "", &[&e], &[]);
        let e = b.node("Add", "", &[&e, &c.one], &[]);
        let e = b.node("Mul", "", &[&e, &c.half], &[]);
        let f = b.node("Mul", &format!("l{l}.gelu"), &[&f, &e], &[]);
        let f = linear(b, l, "fc2", &f, mlp, d);
        scaled_residual(b, l, 2, x, &f, d)
    }
}

/// Reshape targets of one attention layout: the token sequence `(batch, len, d)` and the
/// projections split into `(batch, len, 3, heads, head_dim)`.
pub(super) struct AttentionShapes {
    pub(super) seq: String,
    qkv: String,
}

/// The constant tensors that every transformer layer reads.
pub(super) struct LayerConstants {
    /// Weight and bias of the LayerNorm that all layers and taps share.
    pub(super) ln_w: String,
    pub(super) ln_b: String,
    /// The layout of the layers that attend over all windows.
    global: AttentionShapes,
    /// The layout of the layers that attend within each window.
    pub(super) windowed: AttentionShapes,
    /// `1 / sqrt(head_dim)`.
    scale: String,
    /// The GELU's 0.5, 1 and `1 / sqrt 2`.
    half: String,
    one: String,
    rsqrt2: String,
    /// Indices 0, 1 and 2: q, k and v in the split projections.
    idx: Vec<String>,
}

impl LayerConstants {
    /// The shared LayerNorm over `x`, in a node named `l{l}.{tag}`.
    fn norm(&self, b: &mut GraphBuilder, l: usize, x: &str, tag: &str) -> String {
        b.node(
            "LayerNormalization",
            &format!("l{l}.{tag}"),
            &[x, &self.ln_w, &self.ln_b],
            &[("axis", Attr::Int(-1))],
        )
    }
}

/// The linear layer `l{l}.{name}` of layer `l` over `x`: `cin` to `cout` features, with
/// random weight `l{l}.{name}.w` and bias `l{l}.{name}.b`.
fn linear(b: &mut GraphBuilder, l: usize, name: &str, x: &str, cin: usize, cout: usize) -> String {
    let w = b.random(&format!("l{l}.{name}.w"), &[cin, cout], 0.02);
    let bias = b.random(&format!("l{l}.{name}.b"), &[cout], 0.02);
    let y = b.node("MatMul", &format!("l{l}.{name}"), &[x, &w], &[]);
    b.node("Add", "", &[&y, &bias], &[])
}

/// The end of block `k` (1 attention, 2 MLP) of layer `l`: its output `y` scaled by the
/// LayerScale `l{l}.ls{k}` (`d` values) and added to the block's input `x` as `l{l}.res{k}`.
fn scaled_residual(b: &mut GraphBuilder, l: usize, k: usize, x: &str, y: &str, d: usize) -> String {
    let ls = b.filled(&format!("l{l}.ls{k}"), &[d], 1e-5);
    let y = b.node("Mul", "", &[y, &ls], &[]);
    b.node("Add", &format!("l{l}.res{k}"), &[x, &y], &[])
}
