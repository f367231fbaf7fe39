//! The graph under construction: the ONNX builder, seeded parameters and the small blocks
//! (linear, LayerNorm, MLP, shape ops) every part of the decoder is written with.
//!
//! Every learned parameter draws its values from its own random stream, seeded by the graph
//! seed and the parameter's name. A parameter therefore has the same values in every graph
//! that holds it, whatever else the graph contains: the design-split and taps-split graphs
//! share their decoder weights, and a graph with the keypoint branch on the top K slots
//! holds exactly the weights of the graph with every slot.

use crate::metrics::ops::builder::{Attr, GraphBuilder, SplitMix64};

/// How a parameter's values are drawn.
#[derive(Debug, Clone, Copy)]
pub(super) enum Init {
    /// Uniform with this standard deviation and mean zero.
    Std(f32),
    /// Every element equal.
    Fill(f32),
}

/// Standard deviation of biases and LayerNorm shifts (upstream's random export perturbs its
/// zero-initialised tensors with N(0, 0.02)).
pub(super) const BIAS_STD: f32 = 0.02;

/// Draws `len` values of `init` from the stream of (`seed`, `name`).
pub(super) fn draw(seed: u64, name: &str, len: usize, init: Init) -> Vec<f32> {
    let std = match init {
        Init::Fill(v) => return vec![v; len],
        Init::Std(std) => std,
    };
    let mut rng = SplitMix64::new(seed ^ fnv1a(name));
    // A uniform draw in [-a, a) has standard deviation a / sqrt(3).
    let half_width = std * 3f32.sqrt();
    (0..len).map(|_| rng.next_f32(half_width)).collect()
}

/// FNV-1a of a parameter name: the per-parameter stream offset.
fn fnv1a(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The graph being built, with its seed and the count of learned parameters.
pub(super) struct Net {
    b: GraphBuilder,
    seed: u64,
    consts: usize,
    params: u64,
}

impl Net {
    pub(super) fn new(name: &str, seed: u64) -> Self {
        Self {
            b: GraphBuilder::new(name, super::OPSET),
            seed,
            consts: 0,
            params: 0,
        }
    }

    pub(super) fn builder(&mut self) -> &mut GraphBuilder {
        &mut self.b
    }

    pub(super) fn finish(self) -> (tract_onnx::pb::ModelProto, u64) {
        (self.b.finish(), self.params)
    }

    /// A learned parameter named `name`.
    pub(super) fn param(&mut self, name: &str, shape: &[usize], init: Init) -> String {
        let len = shape.iter().product();
        let values = draw(self.seed, name, len, init);
        self.param_values(name, shape, &values)
    }

    /// A learned parameter with values chosen by the caller (already drawn or derived).
    pub(super) fn param_values(&mut self, name: &str, shape: &[usize], values: &[f32]) -> String {
        self.params += values.len() as u64;
        self.b.floats(name, shape, values)
    }

    /// A fixed float tensor that is not a learned parameter (proposals, frequencies, zeros).
    pub(super) fn constant(&mut self, shape: &[usize], values: &[f32]) -> String {
        let name = self.const_name("f");
        self.b.floats(&name, shape, values)
    }

    /// A scalar float constant.
    pub(super) fn scalar(&mut self, value: f32) -> String {
        let name = self.const_name("s");
        self.b.scalar(&name, value)
    }

    /// A 1-D int64 constant (shapes, axes, indices).
    pub(super) fn ints(&mut self, values: &[i64]) -> String {
        let name = self.const_name("i");
        self.b.ints(&name, values)
    }

    fn const_name(&mut self, kind: &str) -> String {
        self.consts += 1;
        format!("const.{kind}{}", self.consts)
    }

    /// One node with one output.
    pub(super) fn op(&mut self, op: &str, inputs: &[&str], attrs: &[(&str, Attr)]) -> String {
        self.b.node(op, "", inputs, attrs)
    }

    pub(super) fn add(&mut self, a: &str, b: &str) -> String {
        self.op("Add", &[a, b], &[])
    }

    pub(super) fn mul(&mut self, a: &str, b: &str) -> String {
        self.op("Mul", &[a, b], &[])
    }

    pub(super) fn reshape(&mut self, x: &str, shape: &[usize]) -> String {
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let s = self.ints(&dims);
        self.op("Reshape", &[x, &s], &[])
    }

    pub(super) fn transpose(&mut self, x: &str, perm: &[i64]) -> String {
        self.op("Transpose", &[x], &[("perm", Attr::Ints(perm.to_vec()))])
    }

    /// `x[start..end]` along `axis`.
    pub(super) fn slice(&mut self, x: &str, start: i64, end: i64, axis: i64) -> String {
        let (s, e, a) = (self.ints(&[start]), self.ints(&[end]), self.ints(&[axis]));
        self.op("Slice", &[x, &s, &e, &a], &[])
    }

    pub(super) fn concat(&mut self, parts: &[&str], axis: i64) -> String {
        self.op("Concat", parts, &[("axis", Attr::Int(axis))])
    }

    pub(super) fn unsqueeze(&mut self, x: &str, axis: i64) -> String {
        let a = self.ints(&[axis]);
        self.op("Unsqueeze", &[x, &a], &[])
    }

    pub(super) fn expand(&mut self, x: &str, shape: &[usize]) -> String {
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let s = self.ints(&dims);
        self.op("Expand", &[x, &s], &[])
    }

    pub(super) fn softmax(&mut self, x: &str) -> String {
        self.op("Softmax", &[x], &[("axis", Attr::Int(-1))])
    }

    pub(super) fn relu(&mut self, x: &str) -> String {
        self.op("Relu", &[x], &[])
    }

    pub(super) fn silu(&mut self, x: &str) -> String {
        let s = self.op("Sigmoid", &[x], &[]);
        self.mul(x, &s)
    }

    /// `x @ W + b` over the last axis, `W` with fan-in scaling, `b` small.
    pub(super) fn linear(&mut self, name: &str, x: &str, fin: usize, fout: usize) -> String {
        let std = 1.0 / (fin as f32).sqrt();
        self.linear_init(name, x, fin, fout, Init::Std(std), Init::Std(BIAS_STD))
    }

    /// A linear layer with chosen weight and bias initialisation.
    pub(super) fn linear_init(
        &mut self,
        name: &str,
        x: &str,
        fin: usize,
        fout: usize,
        weight: Init,
        bias: Init,
    ) -> String {
        let w = self.param(&format!("{name}.weight"), &[fin, fout], weight);
        let b = self.param(&format!("{name}.bias"), &[fout], bias);
        let y = self.op("MatMul", &[x, &w], &[]);
        self.add(&y, &b)
    }

    /// A linear layer with values the caller already drew (the bias of sampling offsets).
    pub(super) fn linear_bias_values(
        &mut self,
        name: &str,
        x: &str,
        fin: usize,
        weight: Init,
        bias: &[f32],
    ) -> String {
        let w = self.param(&format!("{name}.weight"), &[fin, bias.len()], weight);
        let b = self.param_values(&format!("{name}.bias"), &[bias.len()], bias);
        let y = self.op("MatMul", &[x, &w], &[]);
        self.add(&y, &b)
    }

    /// LayerNorm over the last axis (weight 1, a small random shift), epsilon `eps`.
    pub(super) fn layer_norm(&mut self, name: &str, x: &str, width: usize, eps: f32) -> String {
        let g = self.param(&format!("{name}.weight"), &[width], Init::Fill(1.0));
        let b = self.param(&format!("{name}.bias"), &[width], Init::Std(BIAS_STD));
        self.op(
            "LayerNormalization",
            &[x, &g, &b],
            &[("axis", Attr::Int(-1)), ("epsilon", Attr::Float(eps))],
        )
    }

    /// LayerNorm with the parameters of an earlier [`Net::layer_norm`] named `name`.
    pub(super) fn layer_norm_shared(&mut self, name: &str, x: &str, eps: f32) -> String {
        let (g, b) = (format!("{name}.weight"), format!("{name}.bias"));
        self.op(
            "LayerNormalization",
            &[x, &g, &b],
            &[("axis", Attr::Int(-1)), ("epsilon", Attr::Float(eps))],
        )
    }

    /// An MLP with ReLU between layers; the last layer's weights are drawn at `last_std`
    /// (upstream zero-initialises its regression heads; a random export perturbs them).
    pub(super) fn mlp(&mut self, name: &str, x: &str, dims: &[usize], last_std: f32) -> String {
        let mut y = x.to_owned();
        let layers = dims.len() - 1;
        for (i, pair) in dims.windows(2).enumerate() {
            let layer = format!("{name}.layers.{i}");
            y = if i + 1 == layers {
                let (w, b) = (Init::Std(last_std), Init::Std(BIAS_STD));
                self.linear_init(&layer, &y, pair[0], pair[1], w, b)
            } else {
                let lin = self.linear(&layer, &y, pair[0], pair[1]);
                self.relu(&lin)
            };
        }
        y
    }

    /// Box reparameterisation: `cxcy = d_xy * ref_wh + ref_cxcy`, `wh = exp(d_wh) * ref_wh`.
    pub(super) fn reparam(&mut self, delta: &str, reference: &str) -> String {
        let d_xy = self.slice(delta, 0, 2, -1);
        let d_wh = self.slice(delta, 2, 4, -1);
        let r_xy = self.slice(reference, 0, 2, -1);
        let r_wh = self.slice(reference, 2, 4, -1);
        let scaled = self.mul(&d_xy, &r_wh);
        let xy = self.add(&scaled, &r_xy);
        let e = self.op("Exp", &[&d_wh], &[]);
        let wh = self.mul(&e, &r_wh);
        self.concat(&[&xy, &wh], -1)
    }
}
