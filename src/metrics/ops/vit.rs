//! The RF-DETR keypoint backbone as an ONNX graph with random weights, for counting.
//!
//! The device half of the keypoint model is a DINOv2-small ViT (width 384, 12 layers, 6 heads,
//! MLP 1536, LayerScale, no register tokens, one CLS token, patch 12) whose hidden states after
//! layers 3, 6, 9 and 12 go through the shared final LayerNorm, lose the CLS token and are
//! folded back into `(1, 384, H/12, W/12)` maps; then two P4 projectors (C2f: 1x1 conv
//! 1536 -> 256, three bottlenecks of two 3x3 convs at 128 channels, 1x1 conv 640 -> 256), one
//! for the detection memory and one for the keypoint cross-attention. At `num_windows = 1`
//! every layer attends globally over `N = (side / patch)^2 + 1` tokens, and the position
//! embedding (bicubically resized at export) is a constant. `num_windows = 2` (as trained)
//! cuts the grid into four windows with a CLS token each, stacked in the batch; layers 3, 6
//! and 9 (0-based) attend over all windows, the others within each.
//!
//! [`VitSpec::analytic_macs`] is the closed form of the same count; the graph built by
//! [`VitSpec::build`] and counted by [`crate::metrics::ops`] must agree with it exactly.

use tract_onnx::pb;

use super::builder::{Attr, Dim, GraphBuilder};
use crate::decode::{Split, PATCH};

mod layer;

use layer::LayerConstants;

/// A backbone spec that cannot be built, with the fields that disagree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The input side is not a positive multiple of the patch.
    #[error("side {side} is not a positive multiple of patch {patch}")]
    Side {
        /// The input side.
        side: usize,
        /// The patch size.
        patch: usize,
    },
    /// The heads do not divide the embedding width.
    #[error("{heads} heads do not divide width {embed}")]
    Heads {
        /// The attention heads.
        heads: usize,
        /// The embedding width.
        embed: usize,
    },
    /// Too few layers for the last tap.
    #[error("{layers} layers, the taps need {needed}")]
    Layers {
        /// The layers of the spec.
        layers: usize,
        /// The layers the last tap reads.
        needed: usize,
    },
    /// The patch grid cannot be cut into the windows.
    #[error("a grid of {grid} patches cannot be cut into {windows} windows per side")]
    Windows {
        /// Patches per side.
        grid: usize,
        /// Windows per side.
        windows: usize,
    },
    /// More projectors than the model has.
    #[error("{0} projectors, at most 2")]
    Projectors(usize),
}

/// The shape of the backbone graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VitSpec {
    /// Input side in pixels (square input).
    pub side: usize,
    /// Patch size of the patch-embedding convolution.
    pub patch: usize,
    /// Embedding width.
    pub embed: usize,
    /// Transformer layers.
    pub layers: usize,
    /// Attention heads.
    pub heads: usize,
    /// MLP hidden width.
    pub mlp: usize,
    /// Number of P4 C2f projectors after the ViT (0, 1 or 2).
    pub projectors: usize,
    /// Windows per side: the patch grid is cut into `num_windows^2` windows, each with its own
    /// CLS token, stacked in the batch; layers 3, 6 and 9 (0-based) attend over all windows,
    /// the others within each window. 1 is the graph the Hailo compiler accepts.
    pub num_windows: usize,
}

/// Output channels of a projector.
const PROJ_OUT: usize = Split::Design.channels();
/// Hidden channels of the C2f (`out * 0.5`).
const C2F_HIDDEN: usize = 128;
/// Bottlenecks per C2f.
const C2F_BLOCKS: usize = 3;
/// Taps: hidden states after these layers (1-based).
const TAPS: [usize; 4] = [3, 6, 9, 12];

impl VitSpec {
    /// The RF-DETR keypoint device half at `side`: ViT-S/12 plus two P4 projectors.
    pub fn rfdetr_keypoint(side: usize) -> Self {
        Self {
            side,
            patch: PATCH as usize,
            embed: 384,
            layers: 12,
            heads: 6,
            mlp: 1536,
            projectors: 2,
            num_windows: 1,
        }
    }

    /// The patch grid side.
    pub fn grid(&self) -> usize {
        self.side / self.patch
    }

    /// Tokens per window: the window's patches plus its CLS token.
    pub fn window_tokens(&self) -> usize {
        let w = self.grid() / self.num_windows.max(1);
        w * w + 1
    }

    /// Tokens per layer over all windows (`(side / patch)^2 + 1` at one window).
    pub fn tokens(&self) -> usize {
        self.num_windows * self.num_windows * self.window_tokens()
    }

    /// Whether layer `l` (0-based) attends over all windows.
    fn is_global(&self, l: usize) -> bool {
        self.num_windows == 1 || TAPS[..3].contains(&l)
    }

    /// Checks the spec can be built: the side a multiple of the patch, heads dividing the width.
    ///
    /// # Errors
    /// The first [`SpecError`] the spec breaks.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.patch == 0 || self.side == 0 || !self.side.is_multiple_of(self.patch) {
            return Err(SpecError::Side {
                side: self.side,
                patch: self.patch,
            });
        }
        if self.heads == 0 || !self.embed.is_multiple_of(self.heads) {
            return Err(SpecError::Heads {
                heads: self.heads,
                embed: self.embed,
            });
        }
        if self.layers < TAPS[3] {
            return Err(SpecError::Layers {
                layers: self.layers,
                needed: TAPS[3],
            });
        }
        if self.num_windows == 0 || !self.grid().is_multiple_of(self.num_windows) {
            return Err(SpecError::Windows {
                grid: self.grid(),
                windows: self.num_windows,
            });
        }
        if self.projectors > 2 {
            return Err(SpecError::Projectors(self.projectors));
        }
        Ok(())
    }

    /// MACs in closed form, split into (patch embedding, transformer layers, projectors).
    pub fn analytic_parts(&self) -> (u64, u64, u64) {
        let (g, n, d, h) = (
            self.grid() as u64,
            self.tokens() as u64,
            self.embed as u64,
            self.mlp as u64,
        );
        let p = self.patch as u64;
        let patch = g * g * d * 3 * p * p;
        // qkv (3 d^2) + output projection (d^2) + MLP (2 d h) per token, plus QK^T and AV
        // over all tokens (global layers) or within each window.
        let (windows, wt) = (
            (self.num_windows * self.num_windows) as u64,
            self.window_tokens() as u64,
        );
        let layers: u64 = (0..self.layers)
            .map(|l| {
                let attention = if self.is_global(l) {
                    2 * n * n * d
                } else {
                    windows * 2 * wt * wt * d
                };
                n * (4 * d * d + 2 * d * h) + attention
            })
            .sum();
        let (c, out, blocks) = (C2F_HIDDEN as u64, PROJ_OUT as u64, C2F_BLOCKS as u64);
        let taps = TAPS.len() as u64;
        let per_position = taps * d * 2 * c + blocks * 2 * 9 * c * c + (2 + blocks) * c * out;
        let projectors = self.projectors as u64 * g * g * per_position;
        (patch, layers, projectors)
    }

    /// Total MACs in closed form.
    pub fn analytic_macs(&self) -> u64 {
        let (a, b, c) = self.analytic_parts();
        a + b + c
    }

    /// Builds the graph (input `image`, `1x3xSIDExSIDE`; outputs the four taps, or the
    /// projector outputs when there are projectors). Weights are deterministic random values.
    ///
    /// # Errors
    /// [`SpecError`] when the spec does not [validate](Self::validate).
    pub fn build(&self) -> Result<pb::ModelProto, SpecError> {
        self.validate()?;
        let mut b = GraphBuilder::new(&format!("vit_p{}_{}", self.patch, self.side), 17);
        let image = b.input(
            "image",
            &[Dim::from(1), 3.into(), self.side.into(), self.side.into()],
        );
        let mut x = self.embed_patches(&mut b, &image);
        if self.num_windows > 1 {
            x = self.cut_windows(&mut b, &x);
        }
        let c = self.layer_constants(&mut b);
        let mut taps = Vec::new();
        for l in 0..self.layers {
            x = self.layer(&mut b, &c, l, &x);
            if TAPS.contains(&(l + 1)) {
                taps.push(self.tap(&mut b, &c, &x, l + 1));
            }
        }
        self.outputs(&mut b, &taps);
        Ok(b.finish())
    }

    /// Patch embedding, flattened to tokens, with the CLS token prepended and the (baked)
    /// position embedding added: `(1, 1 + g^2, d)`.
    fn embed_patches(&self, b: &mut GraphBuilder, image: &str) -> String {
        let (d, g, n1) = (self.embed, self.grid(), self.grid() * self.grid() + 1);
        let pw = b.random("patch.w", &[d, 3, self.patch, self.patch], 0.02);
        let pb_ = b.random("patch.b", &[d], 0.02);
        let p = self.patch as i64;
        let conv = b.node(
            "Conv",
            "patch_embed",
            &[image, &pw, &pb_],
            &[("strides", Attr::Ints(vec![p, p]))],
        );
        let s = b.ints("shape.tokens_t", &[1, d as i64, (g * g) as i64]);
        let flat = b.node("Reshape", "patch_flatten", &[&conv, &s], &[]);
        let tok = b.node(
            "Transpose",
            "patch_tokens",
            &[&flat],
            &[("perm", Attr::Ints(vec![0, 2, 1]))],
        );
        let cls = b.random("cls_token", &[1, 1, d], 0.02);
        let cat = b.node(
            "Concat",
            "with_cls",
            &[&cls, &tok],
            &[("axis", Attr::Int(1))],
        );
        let pos = b.random("pos_embed", &[1, n1, d], 0.02);
        b.node("Add", "add_pos", &[&cat, &pos], &[])
    }

    /// The graph outputs: the taps themselves, or each projector over the concatenated taps.
    fn outputs(&self, b: &mut GraphBuilder, taps: &[String]) {
        if self.projectors == 0 {
            for t in taps {
                b.output(t);
            }
        } else {
            let refs: Vec<&str> = taps.iter().map(String::as_str).collect();
            let fused = b.node("Concat", "taps_concat", &refs, &[("axis", Attr::Int(1))]);
            for i in 0..self.projectors {
                let out = c2f(b, &format!("projector{i}"), &fused, TAPS.len() * self.embed);
                b.output(&out);
            }
        }
    }

    /// The tap after layer `layer` (1-based): the tokens regrouped per window, the final
    /// LayerNorm, each window's CLS dropped, the windows folded back into a `(1, d, g, g)` map.
    fn tap(&self, b: &mut GraphBuilder, c: &LayerConstants, x: &str, layer: usize) -> String {
        let per_window = if self.num_windows > 1 {
            b.node(
                "Reshape",
                &format!("tap{layer}.windows"),
                &[x, &c.windowed.seq],
                &[],
            )
        } else {
            x.to_string()
        };
        let (d, g, nw) = (
            self.embed as i64,
            self.grid() as i64,
            self.num_windows as i64,
        );
        let normed = b.node(
            "LayerNormalization",
            &format!("tap{layer}.norm"),
            &[&per_window, &c.ln_w, &c.ln_b],
            &[("axis", Attr::Int(-1))],
        );
        let (st, en, ax) = (
            b.ints(&format!("tap{layer}.starts"), &[1]),
            b.ints(&format!("tap{layer}.ends"), &[self.window_tokens() as i64]),
            b.ints(&format!("tap{layer}.axes"), &[1]),
        );
        let body = b.node(
            "Slice",
            &format!("tap{layer}.drop_cls"),
            &[&normed, &st, &en, &ax],
            &[],
        );
        // (window row, window col, row in window, col in window, d) -> (d, rows, cols).
        let win = g / nw;
        regroup(
            b,
            &body,
            (&format!("tap{layer}.split"), &[nw, nw, win, win, d]),
            vec![4, 0, 2, 1, 3],
            (&format!("tap{layer}.shape"), &[1, d, g, g]),
            &format!("tap{layer}"),
        )
    }

    /// Cuts `(1, 1 + g^2, d)` into `num_windows^2` windows of `(1 + w^2, d)`, stacked in the
    /// batch, each with a copy of the CLS token.
    fn cut_windows(&self, b: &mut GraphBuilder, x: &str) -> String {
        let (d, g, nw) = (
            self.embed as i64,
            self.grid() as i64,
            self.num_windows as i64,
        );
        let win = g / nw;
        let axis = b.ints("win.axis", &[1]);
        let (zero, one, end) = (
            b.ints("win.zero", &[0]),
            b.ints("win.one", &[1]),
            b.ints("win.end", &[g * g + 1]),
        );
        let cls = b.node("Slice", "win.cls", &[x, &zero, &one, &axis], &[]);
        let patches = b.node("Slice", "win.patches", &[x, &one, &end, &axis], &[]);
        let p = regroup(
            b,
            &patches,
            ("win.grid", &[nw, win, nw, win, d]),
            vec![0, 2, 1, 3, 4],
            ("win.stacked", &[nw * nw, win * win, d]),
            "win.stack",
        );
        let cls_shape = b.ints("win.cls_shape", &[nw * nw, 1, d]);
        let cls = b.node("Expand", "win.cls_copies", &[&cls, &cls_shape], &[]);
        b.node(
            "Concat",
            "win.with_cls",
            &[&cls, &p],
            &[("axis", Attr::Int(1))],
        )
    }
}

/// Reshapes `x` to `split`, permutes its axes by `perm` and reshapes the result to `shape`,
/// in a node named `name`; the two shapes are constants with the names given beside them.
fn regroup(
    b: &mut GraphBuilder,
    x: &str,
    (split_name, split): (&str, &[i64]),
    perm: Vec<i64>,
    (shape_name, shape): (&str, &[i64]),
    name: &str,
) -> String {
    let split = b.ints(split_name, split);
    let t = b.node("Reshape", "", &[x, &split], &[]);
    let t = b.node("Transpose", "", &[&t], &[("perm", Attr::Ints(perm))]);
    let shape = b.ints(shape_name, shape);
    b.node("Reshape", name, &[&t, &shape], &[])
}

/// One C2f projector (norms omitted: they are not MACs). Returns the output tensor.
fn c2f(b: &mut GraphBuilder, name: &str, x: &str, in_ch: usize) -> String {
    let c = C2F_HIDDEN;
    let cv1 = conv_silu(b, &format!("{name}.cv1"), x, in_ch, 2 * c, 1);
    let split = b.ints(&format!("{name}.split_sizes"), &[c as i64, c as i64]);
    let halves = b.node_n(
        "Split",
        &format!("{name}.split"),
        &[&cv1, &split],
        &[("axis", Attr::Int(1))],
        2,
    );
    let mut parts = halves.clone();
    for i in 0..C2F_BLOCKS {
        let last = parts.last().cloned().unwrap_or_default();
        let y = conv_silu(b, &format!("{name}.m{i}.cv1"), &last, c, c, 3);
        let y = conv_silu(b, &format!("{name}.m{i}.cv2"), &y, c, c, 3);
        parts.push(y);
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    let cat = b.node(
        "Concat",
        &format!("{name}.concat"),
        &refs,
        &[("axis", Attr::Int(1))],
    );
    conv_silu(
        b,
        &format!("{name}.cv2"),
        &cat,
        (2 + C2F_BLOCKS) * c,
        PROJ_OUT,
        1,
    )
}

/// A bias-free `k x k` convolution (same padding) followed by SiLU.
fn conv_silu(
    b: &mut GraphBuilder,
    name: &str,
    x: &str,
    cin: usize,
    cout: usize,
    k: usize,
) -> String {
    let w = b.random(&format!("{name}.w"), &[cout, cin, k, k], 0.02);
    let pad = (k / 2) as i64;
    let y = b.node(
        "Conv",
        name,
        &[x, &w],
        &[("pads", Attr::Ints(vec![pad; 4]))],
    );
    let s = b.node("Sigmoid", "", &[&y], &[]);
    b.node("Mul", &format!("{name}.silu"), &[&y, &s], &[])
}
