//! The nine operators the backbone compiled, behind one trait with two implementations: an
//! evaluator over f32 arrays (optionally fake-quantising every tensor it makes) and an emitter
//! of ONNX nodes. The unrolled fit is written once against the trait, so the graph that is
//! exported and the Rust evaluation that is measured are the same sequence of operations.

use std::collections::BTreeMap;

use ndarray::{ArrayD, Axis, IxDyn};

use super::quant::{Precision, Quantiser};
use super::UnrolledError;
use crate::metrics::ops::builder::{Attr, Dim, GraphBuilder};
use crate::text::dims;

/// The operator set: MatMul, Gather, Mul, Add, ReduceSum, Min, Concat, Reshape (Where is
/// allowed too, but its condition would need a comparison, which the set lacks; selects are
/// written as Min ramps instead).
pub trait Ops {
    /// A float tensor.
    type T: Clone;
    /// An index tensor (for Gather).
    type I: Clone;

    /// A float constant (a weight; quantised as one).
    fn constant(&mut self, name: &str, value: ArrayD<f32>) -> Result<Self::T, UnrolledError>;
    /// An int64 index constant.
    fn indices(&mut self, name: &str, shape: &[usize], values: Vec<i64>) -> Self::I;
    /// `a @ b` (ONNX MatMul: batched over leading axes, a 2-D side broadcast).
    fn matmul(&mut self, name: &str, a: &Self::T, b: &Self::T) -> Result<Self::T, UnrolledError>;
    /// `data` gathered along `axis` at `indices`.
    fn gather(
        &mut self,
        name: &str,
        data: &Self::T,
        indices: &Self::I,
        axis: usize,
    ) -> Result<Self::T, UnrolledError>;
    /// An element-wise operator of `a` and `b`, broadcast.
    fn elementwise(
        &mut self,
        op: Elementwise,
        name: &str,
        a: &Self::T,
        b: &Self::T,
    ) -> Result<Self::T, UnrolledError>;
    /// `a + b`, broadcast.
    fn add(&mut self, name: &str, a: &Self::T, b: &Self::T) -> Result<Self::T, UnrolledError> {
        self.elementwise(Elementwise::Add, name, a, b)
    }
    /// `a * b`, broadcast.
    fn mul(&mut self, name: &str, a: &Self::T, b: &Self::T) -> Result<Self::T, UnrolledError> {
        self.elementwise(Elementwise::Mul, name, a, b)
    }
    /// `min(a, b)`, broadcast.
    fn min(&mut self, name: &str, a: &Self::T, b: &Self::T) -> Result<Self::T, UnrolledError> {
        self.elementwise(Elementwise::Min, name, a, b)
    }
    /// Sum over `axis`, kept as a dimension of 1.
    fn reduce_sum(
        &mut self,
        name: &str,
        a: &Self::T,
        axis: usize,
    ) -> Result<Self::T, UnrolledError>;
    /// Concatenation along `axis`.
    fn concat(
        &mut self,
        name: &str,
        parts: &[&Self::T],
        axis: usize,
    ) -> Result<Self::T, UnrolledError>;
    /// The same elements in `shape` (row-major).
    fn reshape(
        &mut self,
        name: &str,
        a: &Self::T,
        shape: &[usize],
    ) -> Result<Self::T, UnrolledError>;
}

/// The element-wise operators of the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elementwise {
    /// Add.
    Add,
    /// Mul.
    Mul,
    /// Min.
    Min,
}

impl Elementwise {
    /// The ONNX operator type.
    pub fn onnx(self) -> &'static str {
        match self {
            Elementwise::Add => "Add",
            Elementwise::Mul => "Mul",
            Elementwise::Min => "Min",
        }
    }
}

/// What the evaluator does with each tensor it makes.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Plain f32.
    Exact,
    /// f32, recording every tensor's range (calibration).
    Observe(BTreeMap<String, (f32, f32)>),
    /// Every tensor fake-quantised as the quantiser says.
    Quantise(Quantiser),
}

/// Evaluates the operators on f32 arrays.
#[derive(Debug, Clone)]
pub struct Eval {
    /// What happens to each tensor.
    pub mode: Mode,
}

fn shape_error(op: &str, name: &str, what: String) -> UnrolledError {
    UnrolledError::Shape {
        op: op.to_owned(),
        tensor: name.to_owned(),
        what,
    }
}

impl Eval {
    /// An evaluator in `mode`.
    pub fn new(mode: Mode) -> Self {
        Self { mode }
    }

    fn finish(&mut self, name: &str, mut a: ArrayD<f32>) -> ArrayD<f32> {
        match &mut self.mode {
            Mode::Exact => {}
            Mode::Observe(ranges) => {
                let (lo, hi) = a
                    .iter()
                    .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
                        (lo.min(v), hi.max(v))
                    });
                let r = ranges.entry(name.to_owned()).or_insert((lo, hi));
                *r = (r.0.min(lo), r.1.max(hi));
            }
            Mode::Quantise(q) => {
                if let Some((range, Precision::Bits(bits))) = q.plan(name) {
                    super::quant::fake_quantise(&mut a, range, bits);
                }
            }
        }
        a
    }

    fn broadcast2(
        op: &str,
        name: &str,
        a: &ArrayD<f32>,
        b: &ArrayD<f32>,
    ) -> Result<(ArrayD<f32>, ArrayD<f32>), UnrolledError> {
        let n = a.ndim().max(b.ndim());
        let pad = |s: &[usize]| {
            let mut v = vec![1; n - s.len()];
            v.extend_from_slice(s);
            v
        };
        let (sa, sb) = (pad(a.shape()), pad(b.shape()));
        let mut out = Vec::with_capacity(n);
        for (x, y) in sa.iter().zip(&sb) {
            out.push(match (x, y) {
                (x, y) if x == y => *x,
                (1, y) => *y,
                (x, 1) => *x,
                _ => {
                    return Err(shape_error(
                        op,
                        name,
                        format!(
                            "shapes {} and {} do not broadcast",
                            dims(a.shape()),
                            dims(b.shape())
                        ),
                    ))
                }
            });
        }
        let view = |t: &ArrayD<f32>, s: &[usize]| {
            t.view()
                .into_shape_with_order(IxDyn(s))
                .ok()
                .and_then(|v| v.broadcast(IxDyn(&out)).map(|b| b.to_owned()))
        };
        let a2 = view(&a.as_standard_layout().to_owned(), &sa);
        let b2 = view(&b.as_standard_layout().to_owned(), &sb);
        a2.zip(b2)
            .ok_or_else(|| shape_error(op, name, "cannot broadcast".into()))
    }
}

impl Ops for Eval {
    type T = ArrayD<f32>;
    type I = ArrayD<i64>;

    fn constant(&mut self, name: &str, value: ArrayD<f32>) -> Result<Self::T, UnrolledError> {
        Ok(self.finish(name, value))
    }

    fn indices(&mut self, _name: &str, shape: &[usize], values: Vec<i64>) -> Self::I {
        ArrayD::from_shape_vec(IxDyn(shape), values)
            .unwrap_or_else(|_| ArrayD::from_elem(IxDyn(&[0]), 0))
    }

    fn matmul(&mut self, name: &str, a: &Self::T, b: &Self::T) -> Result<Self::T, UnrolledError> {
        let bad = |what: String| shape_error("MatMul", name, what);
        let (sa, sb) = (a.shape(), b.shape());
        if sa.len() < 2 || sb.len() < 2 || sa[sa.len() - 1] != sb[sb.len() - 2] {
            return Err(bad(format!("{} @ {}", dims(sa), dims(sb))));
        }
        let (m, k, n) = (sa[sa.len() - 2], sa[sa.len() - 1], sb[sb.len() - 1]);
        let batch_a: usize = sa[..sa.len() - 2].iter().product();
        let batch_b: usize = sb[..sb.len() - 2].iter().product();
        let batch = batch_a.max(batch_b);
        if batch_a != batch && batch_a != 1 || batch_b != batch && batch_b != 1 {
            return Err(bad(format!("batches of {} @ {}", dims(sa), dims(sb))));
        }
        let a3 = a.as_standard_layout();
        let b3 = b.as_standard_layout();
        let (a3, b3) = (
            a3.as_slice().unwrap_or_default(),
            b3.as_slice().unwrap_or_default(),
        );
        let mut out = vec![0f32; batch * m * n];
        // Row by row of `b` (contiguous), each output summed over `j` in increasing order.
        for (i, block) in out.chunks_exact_mut((m * n).max(1)).enumerate() {
            let ao = if batch_a == 1 { 0 } else { i * m * k };
            let bo = if batch_b == 1 { 0 } else { i * k * n };
            let (a, b) = (&a3[ao..ao + m * k], &b3[bo..bo + k * n]);
            for (row, a_row) in block
                .chunks_exact_mut(n.max(1))
                .zip(a.chunks_exact(k.max(1)))
            {
                for (&x, b_row) in a_row.iter().zip(b.chunks_exact(n.max(1))) {
                    for (o, &y) in row.iter_mut().zip(b_row) {
                        *o += x * y;
                    }
                }
            }
        }
        let lead = if (batch_a >= batch_b && sa.len() > 2) || sb.len() == 2 {
            &sa[..sa.len() - 2]
        } else {
            &sb[..sb.len() - 2]
        };
        let mut shape = lead.to_vec();
        shape.extend([m, n]);
        let t = ArrayD::from_shape_vec(IxDyn(&shape), out).map_err(|e| bad(e.to_string()))?;
        Ok(self.finish(name, t))
    }

    fn gather(
        &mut self,
        name: &str,
        data: &Self::T,
        indices: &Self::I,
        axis: usize,
    ) -> Result<Self::T, UnrolledError> {
        let bad = |what: String| shape_error("Gather", name, what);
        let len = data.shape().get(axis).copied().unwrap_or(0);
        let flat: Vec<usize> = indices
            .iter()
            .map(|&i| usize::try_from(i).ok().filter(|&i| i < len))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                bad(format!(
                    "an index outside axis {axis} of {}",
                    dims(data.shape())
                ))
            })?;
        let picked = data.select(Axis(axis), &flat);
        let mut shape = data.shape()[..axis].to_vec();
        shape.extend_from_slice(indices.shape());
        shape.extend_from_slice(&data.shape()[axis + 1..]);
        let t = picked
            .as_standard_layout()
            .to_owned()
            .into_shape_with_order(IxDyn(&shape))
            .map_err(|e| bad(e.to_string()))?;
        Ok(self.finish(name, t))
    }

    fn elementwise(
        &mut self,
        op: Elementwise,
        name: &str,
        a: &Self::T,
        b: &Self::T,
    ) -> Result<Self::T, UnrolledError> {
        let (mut a, b) = Self::broadcast2(op.onnx(), name, a, b)?;
        let f: fn(f32, f32) -> f32 = match op {
            Elementwise::Add => |x, y| x + y,
            Elementwise::Mul => |x, y| x * y,
            Elementwise::Min => f32::min,
        };
        a.zip_mut_with(&b, |x, y| *x = f(*x, *y));
        Ok(self.finish(name, a))
    }

    fn reduce_sum(
        &mut self,
        name: &str,
        a: &Self::T,
        axis: usize,
    ) -> Result<Self::T, UnrolledError> {
        if axis >= a.ndim() {
            return Err(shape_error(
                "ReduceSum",
                name,
                format!("axis {axis} of {}", dims(a.shape())),
            ));
        }
        let t = a.sum_axis(Axis(axis)).insert_axis(Axis(axis));
        Ok(self.finish(name, t))
    }

    fn concat(
        &mut self,
        name: &str,
        parts: &[&Self::T],
        axis: usize,
    ) -> Result<Self::T, UnrolledError> {
        let views: Vec<_> = parts.iter().map(|p| p.view()).collect();
        let t = ndarray::concatenate(Axis(axis), &views)
            .map_err(|e| shape_error("Concat", name, e.to_string()))?;
        Ok(self.finish(name, t))
    }

    fn reshape(
        &mut self,
        name: &str,
        a: &Self::T,
        shape: &[usize],
    ) -> Result<Self::T, UnrolledError> {
        let t = a
            .as_standard_layout()
            .to_owned()
            .into_shape_with_order(IxDyn(shape))
            .map_err(|e| {
                shape_error(
                    "Reshape",
                    name,
                    format!("{} to {}: {e}", dims(a.shape()), dims(shape)),
                )
            })?;
        Ok(self.finish(name, t))
    }
}

/// Writes the operators as ONNX nodes (opset 13); a tensor is its name.
#[derive(Debug)]
pub struct Emit {
    /// The graph being built.
    pub graph: GraphBuilder,
}

/// The ONNX operator set version the graph declares.
pub const OPSET: i64 = 13;

impl Emit {
    /// An empty graph named `name`.
    pub fn new(name: &str) -> Self {
        Self {
            graph: GraphBuilder::new(name, OPSET),
        }
    }

    /// Declares a float input.
    pub fn input(&mut self, name: &str, shape: &[usize]) -> String {
        let dims: Vec<Dim> = shape.iter().map(|&d| Dim::Fixed(d)).collect();
        self.graph.input(name, &dims)
    }

    fn op(&mut self, op: &str, name: &str, inputs: &[&String], attrs: &[(&str, Attr)]) -> String {
        let inputs: Vec<&str> = inputs.iter().map(|s| s.as_str()).collect();
        self.graph.node_to(op, &inputs, attrs, name);
        name.to_owned()
    }
}

impl Ops for Emit {
    type T = String;
    type I = String;

    fn constant(&mut self, name: &str, value: ArrayD<f32>) -> Result<Self::T, UnrolledError> {
        let v = value.as_standard_layout();
        Ok(self
            .graph
            .floats(name, value.shape(), v.as_slice().unwrap_or_default()))
    }

    fn indices(&mut self, name: &str, shape: &[usize], values: Vec<i64>) -> Self::I {
        self.graph.ints_shaped(name, shape, &values)
    }

    fn matmul(&mut self, name: &str, a: &Self::T, b: &Self::T) -> Result<Self::T, UnrolledError> {
        Ok(self.op("MatMul", name, &[a, b], &[]))
    }

    fn gather(
        &mut self,
        name: &str,
        data: &Self::T,
        indices: &Self::I,
        axis: usize,
    ) -> Result<Self::T, UnrolledError> {
        Ok(self.op(
            "Gather",
            name,
            &[data, indices],
            &[("axis", Attr::Int(axis as i64))],
        ))
    }

    fn elementwise(
        &mut self,
        op: Elementwise,
        name: &str,
        a: &Self::T,
        b: &Self::T,
    ) -> Result<Self::T, UnrolledError> {
        Ok(self.op(op.onnx(), name, &[a, b], &[]))
    }

    fn reduce_sum(
        &mut self,
        name: &str,
        a: &Self::T,
        axis: usize,
    ) -> Result<Self::T, UnrolledError> {
        let axes = self.graph.ints(&format!("{name}/axes"), &[axis as i64]);
        Ok(self.op(
            "ReduceSum",
            name,
            &[a, &axes],
            &[("keepdims", Attr::Int(1))],
        ))
    }

    fn concat(
        &mut self,
        name: &str,
        parts: &[&Self::T],
        axis: usize,
    ) -> Result<Self::T, UnrolledError> {
        Ok(self.op("Concat", name, parts, &[("axis", Attr::Int(axis as i64))]))
    }

    fn reshape(
        &mut self,
        name: &str,
        a: &Self::T,
        shape: &[usize],
    ) -> Result<Self::T, UnrolledError> {
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let s = self.graph.ints(&format!("{name}/shape"), &dims);
        Ok(self.op("Reshape", name, &[a, &s], &[]))
    }
}
