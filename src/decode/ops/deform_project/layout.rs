//! The memory in the layout [`FastDeformProject`](super::FastDeformProject) gathers from.
//!
//! The design split's memory reaches the decoder channel-major, `(1, D, S)`, while the
//! projection gathers whole token rows of D channels. Every deformable sampling of a view
//! reads the same memory, so the rewrite transposes it once, with [`TokenMajor`], and
//! feeds the token-major copy to all of them instead of transposing it in each.

use tract_onnx::tract_hir::internal::*;

/// Side of the square tiles the transpose walks: a tile's rows and columns both stay in
/// the L1 cache, so neither the reads nor the strided writes miss on every element.
const TILE: usize = 16;

/// `(1, D, S...)` channel-major -> `(1, S, D)` token-major, S the product of the
/// trailing axes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TokenMajor {
    /// Channels D.
    pub channels: usize,
    /// Tokens S.
    pub tokens: usize,
}

impl TokenMajor {
    /// Writes the transpose of `src` `(D, S)` into `dst` `(S, D)`.
    pub fn transpose(&self, src: &[f32], dst: &mut [f32]) {
        let (d, s) = (self.channels, self.tokens);
        for k0 in (0..d).step_by(TILE) {
            for t0 in (0..s).step_by(TILE) {
                for k in k0..(k0 + TILE).min(d) {
                    let row = &src[k * s..(k + 1) * s];
                    for t in t0..(t0 + TILE).min(s) {
                        dst[t * d + k] = row[t];
                    }
                }
            }
        }
    }
}

impl super::super::Kernel for TokenMajor {
    fn kernel_name(&self) -> StaticName {
        "TokenMajor".into()
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        let memory = args_1!(inputs);
        let (d, s) = (self.channels, self.tokens);
        ensure!(
            memory.len() == d * s && memory.shape().iter().find(|&&x| x != 1) == Some(&d),
            "TokenMajor: memory {:?}, expected {d} channels of {s} tokens",
            memory.shape()
        );
        let mut out = Tensor::zero::<f32>(&[1, s, d])?;
        self.transpose(
            super::super::f32s(&memory)?,
            super::super::f32s_mut(&mut out)?,
        );
        Ok(out)
    }

    fn output_fact(&self, _inputs: &[&TypedFact]) -> TractResult<TypedFact> {
        Ok(f32::fact([1, self.tokens, self.channels]))
    }
}

super::super::tract_op!(TokenMajor);
