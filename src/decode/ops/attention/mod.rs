//! Scaled dot-product attention over short sequences as one op.
//!
//! The decoder's attention blocks export as `MatMul(Q, Kᵀ) -> Mul(scale) -> Softmax ->
//! MatMul(·, V)`. In the keypoint branch that is 100 instances × 8 heads of 18 tokens
//! each: 800 tiny products. tract runs each `MatMul` as a batched packed product
//! (packing A and B per batch item, then the kernel) and its `Softmax` pays per-row
//! overhead on 18-long rows; per layer that cost several times ONNX Runtime's, most of
//! it overhead rather than arithmetic.
//!
//! [`fuse_attention`] finds the chain in a decluttered model (after tract has folded
//! the head transposes into its `EinSum` axes) and replaces every consumer of the
//! softmax, the `AV` product, by a [`FastAttention`] that reads Q, K and V through their
//! strides and computes, per batch item, `softmax(scale · Q Kᵀ) V` in small contiguous
//! scratch buffers. When tract has split the `AV` product by query rows (it pushes
//! slices of the output through the product), each part becomes its own op over its
//! rows: attention rows are independent, so nothing is computed twice.
//!
//! The per-item loops: `small` where the CPU has AVX2 and FMA and the heads are at
//! most 16 wide, with every phase register-blocked over several query rows; otherwise
//! `kernel`: items of 4 query rows or more (the real model's 32-wide heads) multiply
//! on `gemm` with the softmax between the products, smaller ones run row at a time,
//! portable, AVX2 or NEON (`neon`, on aarch64).

use tract_onnx::tract_hir::internal::*;

use crate::text;

mod kernel;
#[cfg(target_arch = "aarch64")]
mod neon;
mod rewrite;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod small;

pub use rewrite::fuse_attention;

use kernel::{one, Operands, Scratch};

/// What one axis of an operand means in the attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The i-th independent batch axis (instances, heads).
    Batch(u8),
    /// Query rows.
    M,
    /// Key / value rows (the softmax axis).
    N,
    /// The query-key dot product axis.
    K,
    /// Value columns.
    D,
    /// An axis of length 1 that takes no part.
    Unit,
}

/// `O = softmax(scale · Q Kᵀ) V` over batch axes, for query rows `rows` (see the
/// module docs). Each operand's axes are described by [`Role`]s, so any layout tract
/// left (heads before or after tokens) is read in place.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastAttention {
    /// `f32::to_bits` of the factor applied to `Q Kᵀ` before the softmax.
    pub scale_bits: u32,
    /// Query rows computed (`start..end` of Q's M axis).
    pub rows: (usize, usize),
    pub q: TVec<Role>,
    pub k: TVec<Role>,
    pub v: TVec<Role>,
    pub o: TVec<Role>,
    /// Shape of the output.
    pub out_shape: TVec<usize>,
}

/// Strides (in elements) of a dense tensor's axes, gathered by role.
#[derive(Default)]
struct Walk {
    batch: [usize; 4],
    m: usize,
    n: usize,
    k: usize,
    d: usize,
}

fn walk(shape: &[usize], roles: &[Role]) -> TractResult<Walk> {
    ensure!(
        shape.len() == roles.len(),
        "shape {} has {} axes for {} roles",
        text::dims(shape),
        shape.len(),
        roles.len()
    );
    let mut w = Walk::default();
    let mut stride = 1;
    for (&dim, &role) in shape.iter().zip(roles).rev() {
        match role {
            Role::Batch(i) => *w.batch.get_mut(usize::from(i)).context("batch axis")? = stride,
            Role::M => w.m = stride,
            Role::N => w.n = stride,
            Role::K => w.k = stride,
            Role::D => w.d = stride,
            Role::Unit => ensure!(dim == 1, "unit axis of length {dim}"),
        }
        stride *= dim;
    }
    Ok(w)
}

/// Length of the axis with `role` (1 when absent).
fn dim_of(shape: &[usize], roles: &[Role], role: Role) -> usize {
    roles
        .iter()
        .position(|&r| r == role)
        .map_or(1, |p| shape[p])
}

/// Sizes of one attention problem.
#[derive(Clone, Copy)]
pub(super) struct Dims {
    pub(super) m0: usize,
    pub(super) m1: usize,
    pub(super) n: usize,
    pub(super) k: usize,
    pub(super) d: usize,
}

impl FastAttention {
    fn scale(&self) -> f32 {
        f32::from_bits(self.scale_bits)
    }

    /// Computes the output from dense Q, K, V of the given shapes.
    ///
    /// # Errors
    /// When the shapes do not fit the roles.
    pub fn compute(
        &self,
        q: (&[f32], &[usize]),
        k: (&[f32], &[usize]),
        v: (&[f32], &[usize]),
        out: &mut [f32],
    ) -> TractResult<()> {
        let (qw, kw, vw) = (
            walk(q.1, &self.q)?,
            walk(k.1, &self.k)?,
            walk(v.1, &self.v)?,
        );
        let ow = walk(&self.out_shape, &self.o)?;
        let dims = Dims {
            m0: self.rows.0,
            m1: self.rows.1,
            n: dim_of(k.1, &self.k, Role::N),
            k: dim_of(q.1, &self.q, Role::K),
            d: dim_of(v.1, &self.v, Role::D),
        };
        ensure!(
            dims.m1 <= dim_of(q.1, &self.q, Role::M)
                && dims.m0 < dims.m1
                && dim_of(k.1, &self.k, Role::K) == dims.k
                && dim_of(v.1, &self.v, Role::N) == dims.n,
            "attention operands {} {} {} do not fit rows {} to {}",
            text::dims(q.1),
            text::dims(k.1),
            text::dims(v.1),
            self.rows.0,
            self.rows.1
        );
        let batches: Vec<usize> = (0u8..)
            .map_while(|i| {
                self.q
                    .iter()
                    .position(|&r| r == Role::Batch(i))
                    .map(|p| q.1[p])
            })
            .collect();
        for (i, &len) in batches.iter().enumerate() {
            let role = Role::Batch(i as u8);
            ensure!(
                dim_of(k.1, &self.k, role) == len
                    && dim_of(v.1, &self.v, role) == len
                    && dim_of(&self.out_shape, &self.o, role) == len,
                "batch axis {i} differs between attention operands"
            );
        }
        ensure!(
            q.0.len() == q.1.iter().product::<usize>()
                && k.0.len() == k.1.iter().product::<usize>()
                && v.0.len() == v.1.iter().product::<usize>()
                && out.len() == self.out_shape.iter().product::<usize>(),
            "attention operand lengths do not match their shapes"
        );
        if out.is_empty() {
            return Ok(());
        }
        let mut scratch = Scratch::new(dims);
        let scale = self.scale();
        let mut idx = vec![0usize; batches.len()];
        let total: usize = batches.iter().product();
        let (mut pq, mut pk, mut pv, mut po) = (0usize, 0usize, 0usize, 0usize);
        for _ in 0..total {
            let ops = Operands {
                q: &q.0[pq..],
                k: &k.0[pk..],
                v: &v.0[pv..],
                qw: [qw.m, qw.k],
                kw: [kw.n, kw.k],
                vw: [vw.n, vw.d],
                ow: [ow.m, ow.d],
                scale,
            };
            one(&ops, dims, &mut scratch, &mut out[po..])?;
            // Odometer over the batch axes.
            for j in (0..batches.len()).rev() {
                idx[j] += 1;
                pq += qw.batch[j];
                pk += kw.batch[j];
                pv += vw.batch[j];
                po += ow.batch[j];
                if idx[j] < batches[j] {
                    break;
                }
                pq -= qw.batch[j] * batches[j];
                pk -= kw.batch[j] * batches[j];
                pv -= vw.batch[j] * batches[j];
                po -= ow.batch[j] * batches[j];
                idx[j] = 0;
            }
        }
        Ok(())
    }
}

impl super::Kernel for FastAttention {
    fn kernel_name(&self) -> StaticName {
        "FastAttention".into()
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        let (q, k, v) = args_3!(inputs);
        let mut out = Tensor::zero::<f32>(&self.out_shape)?;
        self.compute(
            (super::f32s(&q)?, q.shape()),
            (super::f32s(&k)?, k.shape()),
            (super::f32s(&v)?, v.shape()),
            super::f32s_mut(&mut out)?,
        )?;
        Ok(out)
    }

    fn output_fact(&self, _inputs: &[&TypedFact]) -> TractResult<TypedFact> {
        Ok(f32::fact(&self.out_shape[..]))
    }
}

super::tract_op!(FastAttention);

#[cfg(test)]
mod tests {
    use super::super::test_util::{max_abs_diff, max_diff, random};
    use super::kernel::{one_generic, Portable};
    use super::*;
    use tract_onnx::tract_hir::tract_core::ops::array::Slice;
    use tract_onnx::tract_hir::tract_core::ops::einsum::EinSum;
    use tract_onnx::tract_hir::tract_core::ops::math;
    use tract_onnx::tract_hir::tract_core::ops::nn::{Softmax, SoftmaxKind};

    /// Q, K, V (instances, tokens, heads, head width) and the attention chain as tract
    /// leaves it after decluttering. `split`: the AV product in two row ranges, the
    /// first with its single row dropped from the output, as tract splits it when a
    /// slice of the output follows. `softmax_axis`: 3 is the key axis (attention);
    /// another axis makes a chain that is not attention. `transposed`: the operands
    /// as (instances, heads, head width, tokens), so no row is contiguous and the
    /// gathering paths run.
    fn model(split: bool, softmax_axis: usize, transposed: bool) -> TypedModel {
        let shape = if transposed {
            [3, 4, 8, 18]
        } else {
            [3, 18, 4, 8]
        };
        let (q_in, k_in, v_in) = if transposed {
            ("abkm", "abkn", "abkn")
        } else {
            ("ambk", "anbk", "anbk")
        };
        let mut m = TypedModel::default();
        let q = m.add_source("q", f32::fact(shape)).unwrap();
        let k = m.add_source("k", f32::fact(shape)).unwrap();
        let v = m.add_source("v", f32::fact(shape)).unwrap();
        let einsum = |e: String| EinSum::new(e.parse().unwrap(), f32::datum_type());
        let s = m
            .wire_node("qk", einsum(format!("{q_in},{k_in}->abmn")), &[q, k])
            .unwrap()[0];
        let c = m.add_const("scale", tensor4(&[[[[0.35f32]]]])).unwrap();
        let s = m.wire_node("scaled", math::mul(), &[s, c]).unwrap()[0];
        let p = m
            .wire_node(
                "softmax",
                Softmax::new(tvec![softmax_axis], None, SoftmaxKind::Softmax),
                &[s],
            )
            .unwrap()[0];
        // In the V operand the head width plays D: rename k to d.
        let v_in = v_in.replace('k', "d");
        let outputs = if split {
            let p0 = m.wire_node("p0", Slice::new(2, 0, 1), &[p]).unwrap()[0];
            let p1 = m.wire_node("p1", Slice::new(2, 1, 18), &[p]).unwrap()[0];
            vec![
                m.wire_node("av0", einsum(format!("abmn,{v_in}->abd")), &[p0, v])
                    .unwrap()[0],
                // V first and an unusual output layout.
                m.wire_node("av1", einsum(format!("{v_in},abmn->dmba")), &[v, p1])
                    .unwrap()[0],
            ]
        } else {
            vec![
                m.wire_node("av", einsum(format!("abmn,{v_in}->ambd")), &[p, v])
                    .unwrap()[0],
            ]
        };
        m.select_output_outlets(&outputs).unwrap();
        m
    }

    fn run(m: &TypedModel) -> TVec<Tensor> {
        let inputs: TVec<TValue> = (0..3)
            .map(|i| {
                let fact = m.input_fact(i).unwrap();
                let shape = fact.shape.as_concrete().unwrap();
                let n: usize = shape.iter().product();
                Tensor::from_shape(shape, &random(n, 20 + i as u64, -2.0, 2.0))
                    .unwrap()
                    .into_tvalue()
            })
            .collect();
        let plan = SimplePlan::new(m.clone()).unwrap();
        plan.run(inputs)
            .unwrap()
            .into_iter()
            .map(|t| t.into_tensor())
            .collect()
    }

    fn fused_nodes(m: &TypedModel) -> usize {
        m.eval_order()
            .unwrap()
            .iter()
            .filter(|&&n| m.node(n).op_is::<FastAttention>())
            .count()
    }

    #[test]
    fn matches_tracts_einsum_softmax_chain() {
        for (split, transposed) in [(false, false), (true, false), (false, true), (true, true)] {
            let stock = model(split, 3, transposed);
            let want = run(&stock);
            let mut fused = stock.clone();
            let n = fuse_attention(&mut fused).unwrap();
            assert_eq!(n, if split { 2 } else { 1 });
            assert_eq!(fused_nodes(&fused), n, "stock products left running");
            let got = run(&fused);
            for (g, w) in got.iter().zip(&want) {
                let d = max_diff(g, w);
                assert!(d < 1e-5, "split {split}, transposed {transposed}: {d}");
            }
            // Negative control: the same op with another scale disagrees.
            let mut off = fused.clone();
            for node in off.nodes_mut() {
                if let Some(op) = node.op_as_mut::<FastAttention>() {
                    op.scale_bits = (0.7f32).to_bits();
                }
            }
            let wrong = run(&off);
            assert!(max_diff(&wrong[0], &want[0]) > 1e-3);
        }
    }

    /// The dispatched loops (AVX2 + FMA or the narrow-head path on x86-64, NEON on
    /// aarch64) against the portable ones, at sizes around the 8-lane width (tails
    /// of every kind), in place and gathered. They differ only in rounding: with
    /// `|q|, |k|, |v| <= 2` each score `scale · q·k` differs by at most
    /// `2 (k + 1) u · scale · 4 k` (`u = 2^-24`: two orders of a k-term sum, fused
    /// or not), each probability relatively by twice that plus `(2 n + 4) u` (the
    /// row sum's order, the division, the product), and each output, a convex
    /// combination of V's rows, by `2` times that plus `2 n u` (its own sum).
    #[test]
    fn portable_loops_agree_with_the_dispatched_ones() {
        let u = 2f32.powi(-24);
        let mut worst = 0.0f32;
        for (seed, (m, n, k, d)) in [
            (17, 18, 16, 8),
            (5, 3, 7, 3),
            (9, 13, 5, 11),
            (4, 33, 24, 17),
            // The detection layers' self-attention: 100 rows on gemm.
            (101, 100, 32, 32),
        ]
        .into_iter()
        .enumerate()
        {
            let seed = 10 * seed as u64;
            let q = random(m * k, seed + 1, -2.0, 2.0);
            let kk = random(n * k, seed + 2, -2.0, 2.0);
            let v = random(n * d, seed + 3, -2.0, 2.0);
            let dims = Dims {
                m0: 1,
                m1: m,
                n,
                k,
                d,
            };
            let scale = 0.3;
            let score = 2.0 * (k + 1) as f32 * u * scale * 4.0 * k as f32;
            let bound =
                2.0 * (2.0 * 2.0 * score + (2 * n + 4) as f32 * u) + 2.0 * (2 * n) as f32 * u;
            // Both the in-place and the gathering layouts (strides (1, row) read the
            // transposes).
            for (qw, kw, vw) in [([k, 1], [k, 1], [d, 1]), ([1, m], [1, n], [1, n])] {
                let run = |v: &[f32], generic: bool| {
                    let ops = Operands {
                        q: &q,
                        k: &kk,
                        v,
                        qw,
                        kw,
                        vw,
                        ow: [d, 1],
                        scale,
                    };
                    let mut o = vec![f32::NAN; (m - 1) * d];
                    if generic {
                        one_generic::<Portable>(&ops, dims, &mut Scratch::new(dims), &mut o);
                    } else {
                        one(&ops, dims, &mut Scratch::new(dims), &mut o).unwrap();
                    }
                    o
                };
                let (a, b) = (run(&v, false), run(&v, true));
                let diff = max_abs_diff(&a, &b);
                assert!(diff <= bound, "{m}x{n}x{k}x{d}: {diff} > {bound}");
                worst = worst.max(diff);
                // Rows are distributions over V's rows: bounded by V's range.
                assert!(a.iter().all(|x| x.abs() <= 2.0));
                // Negative control: V moved by `shift` moves every output by `shift`
                // (the probabilities sum to one), well outside the bound.
                let shift = (20.0 * bound).max(0.01);
                let moved: Vec<f32> = v.iter().map(|x| x + shift).collect();
                let moved = max_abs_diff(&a, &run(&moved, true));
                assert!(
                    moved > 0.9 * shift && moved > 10.0 * bound,
                    "{m}x{n}x{k}x{d}: moved V by {shift} gave {moved}"
                );
            }
        }
        eprintln!("attention, dispatched against portable: worst {worst}");
    }

    #[test]
    fn leaves_a_softmax_over_query_rows_alone() {
        let mut m = model(false, 2, false);
        assert_eq!(fuse_attention(&mut m).unwrap(), 0);
        assert_eq!(fused_nodes(&m), 0);
    }
}
