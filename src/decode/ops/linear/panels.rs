//! The linear layers' product on AVX-512 with the weight packed once into column panels.
//!
//! `gemm` packs the weight on every call: it reads `W` (K rows of N) row by row into its
//! own panels, then multiplies. A decoder run reads each weight once, from beyond the L3
//! (41.8 MB of weights against 32 MB), so that packing pass is a second trip over cold
//! memory. Here the weight is packed when the graph loads, into panels of [`WIDTH`]
//! columns (K x 32 contiguous floats each, the last one padded with zeros), and the
//! product streams each panel once: a block of [`ROWS`] input rows broadcast against the
//! panel's two registers per step, 24 accumulators that start from the output (the bias
//! already written there) and take the ReLU on the way out.
//!
//! Used for products of at least [`MIN_ROWS`] rows read and written along contiguous rows
//! (the detection layers' 100 queries, the selection's memory tokens); fewer rows are
//! bound by reading the weight and stay on `gemm`.

use std::arch::x86_64::*;

use tract_onnx::tract_hir::internal::*;

/// Columns per panel: two AVX-512 registers.
pub(super) const WIDTH: usize = 32;
/// Input rows per block: 12 x 2 accumulators, 2 panel registers and the broadcasts fit
/// the 32 registers.
const ROWS: usize = 12;
/// Fewest rows a product needs to take this path.
pub(super) const MIN_ROWS: usize = 32;

/// Whether the CPU runs the kernel.
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// `w` (K rows of N, row-major) as panels of [`WIDTH`] columns: panel `p` holds rows
/// `0..K` of columns `p·32 .. p·32 + 32`, zero past N.
pub(super) fn pack(w: &[f32], k: usize, n: usize) -> Vec<f32> {
    let panels = n.div_ceil(WIDTH);
    let mut out = vec![0f32; panels * k * WIDTH];
    for (p, panel) in out.chunks_exact_mut(k * WIDTH).enumerate() {
        let c0 = p * WIDTH;
        let cols = (n - c0).min(WIDTH);
        for (row, dst) in panel.chunks_exact_mut(WIDTH).enumerate() {
            dst[..cols].copy_from_slice(&w[row * n + c0..row * n + c0 + cols]);
        }
    }
    out
}

/// One product: `x` M rows of K at `x_stride` apart, the output M rows of N at
/// `out_stride` apart, added onto the output when `accumulate`, then `max(·, 0)` when
/// `relu`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub x_stride: usize,
    pub out_stride: usize,
    pub accumulate: bool,
    pub relu: bool,
}

/// `out = [out +] x · W`, then `max(·, 0)` when `relu`, with `W` as [`pack`] lays it out.
///
/// # Errors
/// When the CPU lacks AVX-512F or an operand is shorter than its shape.
pub(super) fn product(x: &[f32], panels: &[f32], out: &mut [f32], s: Shape) -> TractResult<()> {
    let Shape {
        m,
        k,
        n,
        x_stride,
        out_stride,
        ..
    } = s;
    ensure!(available(), "linear panels: the CPU lacks AVX-512F");
    ensure!(
        m > 0
            && k > 0
            && n > 0
            && x_stride >= k
            && out_stride >= n
            && (m - 1) * x_stride + k <= x.len()
            && (m - 1) * out_stride + n <= out.len()
            && panels.len() == n.div_ceil(WIDTH) * k * WIDTH,
        "linear panels: {m}x{k} · {k}x{n} with {} input, {} output and {} panel elements",
        x.len(),
        out.len(),
        panels.len()
    );
    // SAFETY: the CPU supports AVX-512F and every operand holds its shape, both checked
    // just above.
    unsafe { product_avx512(x, panels, out, s) };
    Ok(())
}

/// The mask of the first `cols` lanes of a register (all when `cols >= 16`).
#[inline(always)]
fn lanes(cols: usize) -> __mmask16 {
    if cols >= 16 {
        0xffff
    } else {
        ((1u32 << cols) - 1) as __mmask16
    }
}

/// # Safety
/// The CPU must support AVX-512F; the operands hold the shapes `s` states ([`product`]
/// checks both).
#[target_feature(enable = "avx512f")]
unsafe fn product_avx512(x: &[f32], panels: &[f32], out: &mut [f32], s: Shape) {
    let (k, x_stride, out_stride) = (s.k, s.x_stride, s.out_stride);
    for (p, panel) in panels.chunks_exact(k * WIDTH).enumerate() {
        let c0 = p * WIDTH;
        let cols = (s.n - c0).min(WIDTH);
        let masks = [lanes(cols), lanes(cols.saturating_sub(16))];
        let mut i = 0;
        while i < s.m {
            let left = s.m - i;
            // SAFETY: rows i .. i + rows of x and of the output, columns c0 .. c0 + cols,
            // lie inside the operands (the caller's contract); the block functions read
            // and write no more.
            unsafe {
                let xp = x.as_ptr().add(i * x_stride);
                let op = out.as_mut_ptr().add(i * out_stride + c0);
                let block = Block {
                    x: xp,
                    x_stride,
                    panel: panel.as_ptr(),
                    k,
                    out: op,
                    out_stride,
                    masks,
                    accumulate: s.accumulate,
                    relu: s.relu,
                };
                i += match left {
                    ROWS.. => block.rows::<ROWS>(),
                    8.. => block.rows::<8>(),
                    4.. => block.rows::<4>(),
                    2.. => block.rows::<2>(),
                    _ => block.rows::<1>(),
                };
            }
        }
    }
}

/// One block of rows against one panel.
struct Block {
    x: *const f32,
    x_stride: usize,
    panel: *const f32,
    k: usize,
    out: *mut f32,
    out_stride: usize,
    masks: [__mmask16; 2],
    accumulate: bool,
    relu: bool,
}

impl Block {
    /// `R` rows: returns `R`.
    ///
    /// # Safety
    /// AVX-512F; `R` rows of `x` (K each) and of the output (the panel's columns) lie
    /// inside the operands, the panel holds K x [`WIDTH`] floats.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn rows<const R: usize>(&self) -> usize {
        let [m0, m1] = self.masks;
        let mut acc = [[_mm512_setzero_ps(); 2]; R];
        if self.accumulate {
            for (r, a) in acc.iter_mut().enumerate() {
                // SAFETY: row r of the output, masked to the panel's columns.
                unsafe {
                    let o = self.out.add(r * self.out_stride);
                    a[0] = _mm512_maskz_loadu_ps(m0, o);
                    a[1] = _mm512_maskz_loadu_ps(m1, o.add(16));
                }
            }
        }
        for kk in 0..self.k {
            // SAFETY: row kk of the panel (WIDTH floats) and element kk of each row of x.
            unsafe {
                let b = self.panel.add(kk * WIDTH);
                let (b0, b1) = (_mm512_loadu_ps(b), _mm512_loadu_ps(b.add(16)));
                for (r, a) in acc.iter_mut().enumerate() {
                    let xv = _mm512_set1_ps(*self.x.add(r * self.x_stride + kk));
                    a[0] = _mm512_fmadd_ps(xv, b0, a[0]);
                    a[1] = _mm512_fmadd_ps(xv, b1, a[1]);
                }
            }
        }
        let zero = _mm512_setzero_ps();
        for (r, a) in acc.iter().enumerate() {
            let (mut v0, mut v1) = (a[0], a[1]);
            if self.relu {
                v0 = _mm512_max_ps(v0, zero);
                v1 = _mm512_max_ps(v1, zero);
            }
            // SAFETY: row r of the output, masked to the panel's columns.
            unsafe {
                let o = self.out.add(r * self.out_stride);
                _mm512_mask_storeu_ps(o, m0, v0);
                _mm512_mask_storeu_ps(o.add(16), m1, v1);
            }
        }
        R
    }
}
