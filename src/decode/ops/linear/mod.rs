//! Constant-weight matrix products, `x · W (+ b) (then ReLU)`, on the `gemm` crate's kernels.
//!
//! Every linear layer of the decoder is an ONNX `MatMul` with a constant weight, most with
//! a bias `Add` after it and the FFNs' first layer with a `Relu`; together they are most of
//! the decoder's time; tract's `OptMatMul` runs them slower than `gemm`, with the bias and
//! ReLU as separate passes (docs/performance.md#decoder).
//! [`fuse_linear`] puts [`FastLinear`] in their place: `gemm`'s packed kernels (AVX-512,
//! AVX2 or NEON, chosen at run time) on one thread, with the bias written into the output
//! before the product accumulates onto it and the ReLU applied in the same pass over the
//! output. The weight is kept as `K` rows of `N`; on a CPU with AVX-512 a product of many
//! contiguous rows takes it packed once, when the graph loads, into column panels for
//! `panels`' kernel instead, which saves `gemm`'s packing pass over the cold weight on
//! every run.

#[cfg(target_arch = "x86_64")]
mod panels;
mod rewrite;
#[cfg(test)]
mod tests;

pub use rewrite::fuse_linear;

use std::sync::Arc;

use tract_onnx::tract_hir::internal::*;

use crate::text::dims;

use super::{f32s, f32s_mut};

/// How a tensor of a fixed shape is read as a matrix: `rows` rows, with `row_stride` and
/// `col_stride` elements between neighbours. The rewrite admits only layouts where the
/// matrix axis that is not the product's inner or outer one has all its tensor axes on
/// one side, so two strides describe it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MatrixLayout {
    /// The tensor's shape.
    pub shape: TVec<usize>,
    /// Elements between two rows.
    pub row_stride: usize,
    /// Elements between two columns.
    pub col_stride: usize,
}

impl MatrixLayout {
    /// The matrix view of `shape` whose columns run along `axis` (the contracted axis of
    /// an input, the weight's output axis of the output): rows are the other axes in
    /// their order. `None` when axes of more than one element lie on both sides of it.
    pub fn along(shape: &[usize], axis: usize) -> Option<Self> {
        Self::along_axes(shape, axis..axis + 1)
    }

    /// [`MatrixLayout::along`] with the columns running along several adjacent axes,
    /// flattened in their order (a contraction over a head axis and the head's width).
    pub fn along_axes(shape: &[usize], axes: std::ops::Range<usize>) -> Option<Self> {
        let outer: usize = shape[..axes.start].iter().product();
        let inner: usize = shape[axes.end..].iter().product();
        let cols: usize = shape[axes].iter().product();
        let (row_stride, col_stride) = if inner == 1 {
            (cols, 1)
        } else if outer == 1 {
            (1, inner)
        } else {
            return None;
        };
        Some(Self {
            shape: shape.into(),
            row_stride,
            col_stride,
        })
    }

    /// Elements in the tensor.
    fn len(&self) -> usize {
        self.shape.iter().product()
    }
}

/// `x · W + b`, then `max(·, 0)` when `relu`, for a constant `W` of `K` rows and `N`
/// columns; `x` is read as `M` rows of `K` and the output written as `M` rows of `N`
/// ([`MatrixLayout`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastLinear {
    /// `W`, `(K, N)`, row-major; or, after [`FastLinear::packed`], its column panels
    /// `(P, K, 32)` (the last panel padded with zeros).
    pub weight: Arc<Tensor>,
    /// `b`, `(N)`.
    pub bias: Option<Arc<Tensor>>,
    /// Whether a ReLU follows.
    pub relu: bool,
    /// The input as `M` rows of `K`.
    pub input: MatrixLayout,
    /// The output as `M` rows of `N`.
    pub output: MatrixLayout,
}

impl FastLinear {
    /// `K`, `N` and `M`.
    fn dims(&self) -> (usize, usize, usize) {
        let ws = self.weight.shape();
        if self.is_packed() {
            // Panels pad N: take it from the output, M rows of N.
            let k = ws[1];
            let m = self.input.len() / k.max(1);
            (k, self.output.len() / m.max(1), m)
        } else {
            (ws[0], ws[1], self.input.len() / ws[0].max(1))
        }
    }

    /// Whether the weight is in column panels.
    fn is_packed(&self) -> bool {
        self.weight.rank() == 3
    }

    /// This product with its weight in column panels when the CPU has AVX-512 and the
    /// product reads and writes at least 32 contiguous rows; otherwise unchanged.
    ///
    /// # Errors
    /// When the weight is not dense f32.
    pub fn packed(self) -> TractResult<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            let (k, n, m) = self.dims();
            if !self.is_packed()
                && m >= panels::MIN_ROWS
                && self.input.col_stride == 1
                && self.output.col_stride == 1
                && panels::available()
            {
                let data = panels::pack(f32s(&self.weight)?, k, n);
                let shape = [n.div_ceil(panels::WIDTH), k, panels::WIDTH];
                return Ok(Self {
                    weight: Arc::new(Tensor::from_shape(&shape, &data)?),
                    ..self
                });
            }
        }
        Ok(self)
    }

    /// Multiply-adds per run: `M·K·N`.
    pub fn macs(&self) -> u64 {
        let (k, n, m) = self.dims();
        (m * k * n) as u64
    }

    /// Checks that the weight, bias and layouts agree on `M`, `K` and `N`. (The strides
    /// are checked against the data on every product, in `matmul`.)
    pub fn check(&self) -> TractResult<()> {
        let ws = self.weight.shape();
        ensure!(
            (ws.len() == 2 || ws.len() == 3 && ws[2] == 32) && ws.iter().all(|&d| d > 0),
            "FastLinear: weight {} is neither a non-empty matrix nor its column panels",
            dims(ws)
        );
        let (k, n, m) = self.dims();
        ensure!(
            !self.is_packed() || ws[0] == n.div_ceil(32),
            "FastLinear: {} panels for {n} columns",
            ws[0]
        );
        ensure!(
            m * k == self.input.len(),
            "FastLinear: input {} is not rows of {k}",
            dims(&self.input.shape)
        );
        ensure!(
            m * n == self.output.len(),
            "FastLinear: output {} is not {m} rows of {n}",
            dims(&self.output.shape)
        );
        if let Some(b) = &self.bias {
            ensure!(
                b.len() == n,
                "FastLinear: bias of {} for {n} columns",
                b.len()
            );
        }
        Ok(())
    }

    /// The product on flat slices, the input as [`FastLinear::input`] lays it out; `out`
    /// must hold [`FastLinear::output`]'s elements.
    pub fn apply(&self, x: &[f32], out: &mut [f32]) -> TractResult<()> {
        let (k, n, m) = self.dims();
        ensure!(
            x.len() == self.input.len() && out.len() == self.output.len(),
            "FastLinear: {} and {} elements for input {} and output {}",
            x.len(),
            out.len(),
            dims(&self.input.shape),
            dims(&self.output.shape)
        );
        let w = f32s(&self.weight)?;
        let (ors, ocs) = (self.output.row_stride, self.output.col_stride);
        let read_dst = match &self.bias {
            Some(b) => {
                let b = f32s(b)?;
                for i in 0..m {
                    for (j, &bj) in b.iter().enumerate() {
                        out[i * ors + j * ocs] = bj;
                    }
                }
                true
            }
            None => false,
        };
        if self.is_packed() {
            #[cfg(target_arch = "x86_64")]
            return panels::product(
                x,
                w,
                out,
                panels::Shape {
                    m,
                    k,
                    n,
                    x_stride: self.input.row_stride,
                    out_stride: ors,
                    accumulate: read_dst,
                    relu: self.relu,
                },
            );
            #[cfg(not(target_arch = "x86_64"))]
            bail!("FastLinear: column panels need x86-64");
        }
        matmul(
            Operand::new(out, ors, ocs),
            Operand::new(x, self.input.row_stride, self.input.col_stride),
            Operand::new(w, n, 1),
            [m, k, n],
            read_dst,
        )?;
        if self.relu {
            for v in out.iter_mut() {
                *v = v.max(0.0);
            }
        }
        Ok(())
    }
}

impl super::Kernel for FastLinear {
    fn kernel_name(&self) -> StaticName {
        "FastLinear".into()
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        let x = args_1!(inputs);
        ensure!(
            x.shape() == &*self.input.shape,
            "FastLinear: input {}, built for {}",
            dims(x.shape()),
            dims(&self.input.shape)
        );
        // Zeroed, not uninitialised: gemm copies the output's edge tiles in before it
        // overwrites them, even when it does not accumulate.
        let mut out = Tensor::zero::<f32>(&self.output.shape)?;
        self.apply(f32s(&x)?, f32s_mut(&mut out)?)?;
        Ok(out)
    }

    fn output_fact(&self, _inputs: &[&TypedFact]) -> TractResult<TypedFact> {
        Ok(f32::fact(&*self.output.shape))
    }

    fn details(&self) -> Vec<String> {
        let (k, n, m) = self.dims();
        vec![format!(
            "{m}x{k} · {k}x{n}{}{}",
            if self.bias.is_some() { " + b" } else { "" },
            if self.relu { ", relu" } else { "" }
        )]
    }
}

super::tract_op!(FastLinear);

/// A flat f32 matrix operand: its elements and the strides of its rows and columns.
#[derive(Debug)]
pub(crate) struct Operand<S> {
    data: S,
    row_stride: usize,
    col_stride: usize,
}

impl<S: AsRef<[f32]>> Operand<S> {
    /// `data` read with `row_stride` elements between rows and `col_stride` between
    /// columns.
    pub(crate) fn new(data: S, row_stride: usize, col_stride: usize) -> Self {
        Self {
            data,
            row_stride,
            col_stride,
        }
    }

    /// Whether a `rows` x `cols` matrix at these strides lies inside the data.
    fn holds(&self, rows: usize, cols: usize) -> bool {
        rows == 0
            || cols == 0
            || (rows - 1) * self.row_stride + (cols - 1) * self.col_stride
                < self.data.as_ref().len()
    }
}

/// `dst (M, N) = lhs (M, K) · rhs (K, N)`, or `dst += …` when `accumulate`, on `gemm`'s
/// kernels, one thread.
///
/// # Errors
/// When an operand's strides reach past its data.
pub(crate) fn matmul(
    dst: Operand<&mut [f32]>,
    lhs: Operand<&[f32]>,
    rhs: Operand<&[f32]>,
    [m, k, n]: [usize; 3],
    accumulate: bool,
) -> TractResult<()> {
    ensure!(
        dst.holds(m, n) && lhs.holds(m, k) && rhs.holds(k, n),
        "matrix product {m}x{k} · {k}x{n}: an operand's strides reach past its data"
    );
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                for j in 0..n {
                    dst.data[i * dst.row_stride + j * dst.col_stride] = 0.0;
                }
            }
        }
        return Ok(());
    }
    // SAFETY: `holds` above keeps every index gemm forms, `i·rs + j·cs` for rows and
    // columns inside the stated sizes, inside each operand's slice; the slices are live
    // for the call and `dst` is borrowed mutably, so nothing else reads or writes it. T
    // is f32, which gemm supports, so it does not panic on the type.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.data.as_mut_ptr(),
            dst.col_stride as isize,
            dst.row_stride as isize,
            accumulate,
            lhs.data.as_ptr(),
            lhs.col_stride as isize,
            lhs.row_stride as isize,
            rhs.data.as_ptr(),
            rhs.col_stride as isize,
            rhs.row_stride as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
    Ok(())
}
