//! A fast 2-D bilinear `GridSample` for tract.
//!
//! RF-DETR's deformable attention samples each value map with ONNX `GridSample`
//! (bilinear, zero padding, `align_corners = 0`). tract 0.23's generic N-d kernel
//! allocates per output element and indexes through dynamic-rank views, which costs
//! about 380 ns per sample: 78% of the whole decoder. This op computes the same thing
//! in two passes per batch item:
//!
//! 1. for every output point, the four neighbour offsets and bilinear weights, once
//!    (a point shared by all channels);
//! 2. for every channel plane (a few KiB, in L1), a tight gather of the four taps.
//!
//! Out-of-bounds taps (zero padding) point at element 0 with weight 0, so the inner
//! loop has no branch. This is exact for finite inputs; a non-finite value at a
//! plane's first element would leak into out-of-bounds taps as `0 * inf = NaN`.
//!
//! Only 4-D f32 inputs with bilinear mode and zeros/border padding take the fast path;
//! every other combination is wired to tract's own op, so behaviour never changes,
//! only speed.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::tract_core::ops::nn::grid_sample::{
    GridSample, InterpolationMode, PaddingMode,
};

use crate::output::printable;
use crate::text::dims;

/// Padding modes the fast kernel handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FastPadding {
    /// Taps outside the map read as 0.
    Zeros,
    /// Coordinates are clamped to the map before interpolation.
    Border,
}

/// Bilinear 2-D grid sampling over an NCHW f32 map (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastGridSample {
    /// ONNX `align_corners`: whether -1 and 1 name the centres of the corner pixels
    /// (true) or their outer edges (false).
    pub align_corners: bool,
    /// ONNX `padding_mode`.
    pub padding: FastPadding,
}

impl FastGridSample {
    /// Pixel coordinate of a normalised grid coordinate along an axis of `size` pixels.
    #[inline]
    fn denormalize(&self, g: f32, size: usize) -> f32 {
        if self.align_corners {
            (g + 1.0) * 0.5 * (size as f32 - 1.0)
        } else {
            ((g + 1.0) * size as f32 - 1.0) * 0.5
        }
    }

    /// Offsets (into one H×W plane) and weights of the four bilinear taps of one point.
    #[inline(always)]
    pub(crate) fn taps(&self, gx: f32, gy: f32, h: usize, w: usize) -> ([u32; 4], [f32; 4]) {
        let mut x = self.denormalize(gx, w);
        let mut y = self.denormalize(gy, h);
        if self.padding == FastPadding::Border {
            x = x.clamp(0.0, w as f32 - 1.0);
            y = y.clamp(0.0, h as f32 - 1.0);
        }
        let x0f = x.floor();
        let y0f = y.floor();
        let fx = x - x0f;
        let fy = y - y0f;
        let (x0, y0) = (x0f as i64, y0f as i64);
        let wts = [
            (1.0 - fx) * (1.0 - fy),
            fx * (1.0 - fy),
            (1.0 - fx) * fy,
            fx * fy,
        ];
        let corners = [(x0, y0), (x0 + 1, y0), (x0, y0 + 1), (x0 + 1, y0 + 1)];
        let mut idx = [0u32; 4];
        let mut weights = [0f32; 4];
        for k in 0..4 {
            let (cx, cy) = corners[k];
            match self.padding {
                FastPadding::Zeros => {
                    if cx >= 0 && cy >= 0 && (cx as usize) < w && (cy as usize) < h {
                        idx[k] = (cy as usize * w + cx as usize) as u32;
                        weights[k] = wts[k];
                    }
                }
                FastPadding::Border => {
                    let cx = cx.clamp(0, w as i64 - 1) as usize;
                    let cy = cy.clamp(0, h as i64 - 1) as usize;
                    idx[k] = (cy * w + cx) as u32;
                    weights[k] = wts[k];
                }
            }
        }
        (idx, weights)
    }

    /// Samples `x` (N, C, H, W) at `grid` (N, Ho, Wo, 2) into `out` (N, C, Ho, Wo).
    ///
    /// All three slices are dense row-major; the caller has checked the lengths.
    pub fn sample(&self, x: &[f32], xs: [usize; 4], grid: &[f32], gs: [usize; 3], out: &mut [f32]) {
        let [n, c, h, w] = xs;
        let [_, ho, wo] = gs;
        let points = ho * wo;
        let plane = h * w;
        let mut idx = vec![[0u32; 4]; points];
        let mut wts = vec![[0f32; 4]; points];
        for b in 0..n {
            let g = &grid[b * points * 2..(b + 1) * points * 2];
            for p in 0..points {
                let (i, wt) = self.taps(g[2 * p], g[2 * p + 1], h, w);
                idx[p] = i;
                wts[p] = wt;
            }
            // Blocks of points keep their taps in L1 while every channel reads them.
            const BLOCK: usize = 512;
            let mut p0 = 0;
            while p0 < points {
                let p1 = (p0 + BLOCK).min(points);
                for ch in 0..c {
                    let src = &x[(b * c + ch) * plane..(b * c + ch + 1) * plane];
                    let dst = &mut out[(b * c + ch) * points + p0..(b * c + ch) * points + p1];
                    for ((o, i), wt) in dst.iter_mut().zip(&idx[p0..p1]).zip(&wts[p0..p1]) {
                        // Offsets come from in-range (clamped or zero-weighted) corners.
                        *o = wt[0] * src[i[0] as usize]
                            + wt[1] * src[i[1] as usize]
                            + wt[2] * src[i[2] as usize]
                            + wt[3] * src[i[3] as usize];
                    }
                }
                p0 = p1;
            }
        }
    }
}

impl super::Kernel for FastGridSample {
    fn kernel_name(&self) -> StaticName {
        "FastGridSample".into()
    }

    fn details(&self) -> Vec<String> {
        vec![format!(
            "bilinear, padding {}, align_corners {}",
            match self.padding {
                FastPadding::Zeros => "zeros",
                FastPadding::Border => "border",
            },
            self.align_corners
        )]
    }

    fn run(&self, inputs: TVec<TValue>) -> TractResult<Tensor> {
        let (x, grid) = args_2!(inputs);
        let xs: [usize; 4] = x.shape().try_into().map_err(|_| {
            format_err!("FastGridSample: input must be 4-D, got {}", dims(x.shape()))
        })?;
        let gshape = grid.shape();
        ensure!(
            gshape.len() == 4 && gshape[0] == xs[0] && gshape[3] == 2,
            "FastGridSample: grid must be (N={}, Ho, Wo, 2), got {}",
            xs[0],
            dims(gshape)
        );
        let gs = [gshape[0], gshape[1], gshape[2]];
        let xv = super::f32s(&x)?;
        let gv = super::f32s(&grid)?;
        let mut out = Tensor::zero::<f32>(&[xs[0], xs[1], gs[1], gs[2]])?;
        self.sample(xv, xs, gv, gs, super::f32s_mut(&mut out)?);
        Ok(out)
    }

    fn output_fact(&self, inputs: &[&TypedFact]) -> TractResult<TypedFact> {
        let x = &inputs[0].shape;
        let g = &inputs[1].shape;
        ensure!(
            x.rank() == 4 && g.rank() == 4,
            "FastGridSample needs 4-D input and grid"
        );
        let shape: TVec<TDim> = tvec![x[0].clone(), x[1].clone(), g[1].clone(), g[2].clone()];
        Ok(f32::fact(&shape))
    }
}

super::tract_op!(FastGridSample);

/// Parsed ONNX `GridSample` node: picks the fast kernel or tract's own at wiring time.
#[derive(Clone, Debug)]
struct GridSampleExpansion {
    mode: InterpolationMode,
    padding: PaddingMode,
    align_corners: bool,
}

impl GridSampleExpansion {
    fn fast(&self) -> Option<FastGridSample> {
        let padding = match self.padding {
            PaddingMode::Zeros => FastPadding::Zeros,
            PaddingMode::Border => FastPadding::Border,
            PaddingMode::Reflection => return None,
        };
        (self.mode == InterpolationMode::Bilinear).then_some(FastGridSample {
            align_corners: self.align_corners,
            padding,
        })
    }
}

impl Expansion for GridSampleExpansion {
    fn name(&self) -> StaticName {
        "GridSample".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 2)?;
        check_output_arity(outputs, 1)?;
        s.equals(&inputs[0].datum_type, &outputs[0].datum_type)?;
        s.equals(&inputs[0].rank, &inputs[1].rank)?;
        s.equals(&inputs[0].rank, &outputs[0].rank)?;
        s.equals(&inputs[0].shape[0], &inputs[1].shape[0])?;
        s.equals(&inputs[0].shape[0], &outputs[0].shape[0])?;
        s.equals(&inputs[0].shape[1], &outputs[0].shape[1])?;
        s.given(&inputs[0].rank, move |s, rank| {
            let rank = rank as usize;
            for d in 0..rank - 2 {
                s.equals(&outputs[0].shape[2 + d], &inputs[1].shape[1 + d])?;
            }
            s.equals(&inputs[1].shape[rank - 1], ((rank - 2) as i64).to_dim())
        })
    }

    fn wire(
        &self,
        name: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let x = model.outlet_fact(inputs[0])?;
        let g = model.outlet_fact(inputs[1])?;
        let plain =
            x.rank() == 4 && x.datum_type == f32::datum_type() && g.datum_type == f32::datum_type();
        match self.fast().filter(|_| plain) {
            Some(op) => model.wire_node(name, op, inputs),
            None => model.wire_node(
                name,
                GridSample {
                    mode: self.mode.clone(),
                    padding_mode: self.padding.clone(),
                    align_corners: self.align_corners,
                },
                inputs,
            ),
        }
    }
}

/// Builds the ONNX `GridSample` node (opset 16+) with the fast kernel where it applies.
fn build(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let mode = match node.get_attr_opt("mode")?.unwrap_or("linear") {
        "bilinear" | "linear" => InterpolationMode::Bilinear,
        "nearest" => InterpolationMode::Nearest,
        "bicubic" | "cubic" => InterpolationMode::Bicubic,
        s => bail!(
            "GridSample node {}: unsupported mode '{}'",
            node.name,
            printable(s)
        ),
    };
    let padding = match node.get_attr_opt("padding_mode")?.unwrap_or("zeros") {
        "zeros" => PaddingMode::Zeros,
        "border" => PaddingMode::Border,
        "reflection" => PaddingMode::Reflection,
        s => bail!(
            "GridSample node {}: unsupported padding_mode '{}'",
            node.name,
            printable(s)
        ),
    };
    let align_corners = node.get_attr_opt::<i64>("align_corners")?.unwrap_or(0) != 0;
    ensure!(
        ctx.onnx_operator_set_version >= 16,
        "GridSample node {}: needs opset 16 or later, the model has {}",
        node.name,
        ctx.onnx_operator_set_version
    );
    Ok((
        expand(GridSampleExpansion {
            mode,
            padding,
            align_corners,
        }),
        vec![],
    ))
}

/// The ONNX framework of tract with the fast `GridSample` registered.
pub fn onnx_fast() -> tract_onnx::Onnx {
    let mut onnx = tract_onnx::onnx();
    onnx.op_register.insert("GridSample", build);
    onnx
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{max_diff, random};
    use super::*;

    fn run(op: &dyn TypedOp, x: &Tensor, grid: &Tensor) -> Tensor {
        let out = op
            .eval_out_of_plan(tvec!(x.clone().into_tvalue(), grid.clone().into_tvalue()))
            .unwrap()
            .unwrap();
        out[0].clone().into_tensor()
    }

    #[test]
    fn matches_tracts_own_grid_sample() {
        // The deformable-attention shape class: (heads, head_dim, g, g) sampled at
        // (heads, queries, points, 2), grid partly outside [-1, 1].
        let (n, c, h, w, ho, wo) = (3, 5, 7, 9, 11, 2);
        let x = Tensor::from_shape(&[n, c, h, w], &random(n * c * h * w, 1, -2.0, 2.0)).unwrap();
        let g = random(n * ho * wo * 2, 2, -1.3, 1.3);
        let grid = Tensor::from_shape(&[n, ho, wo, 2], &g).unwrap();
        for (padding, stock_padding) in [
            (FastPadding::Zeros, PaddingMode::Zeros),
            (FastPadding::Border, PaddingMode::Border),
        ] {
            for align_corners in [false, true] {
                let fast = FastGridSample {
                    align_corners,
                    padding,
                };
                let stock = GridSample {
                    mode: InterpolationMode::Bilinear,
                    padding_mode: stock_padding.clone(),
                    align_corners,
                };
                let a = run(&fast, &x, &grid);
                let b = run(&stock, &x, &grid);
                assert_eq!(a.shape(), &[n, c, ho, wo]);
                let d = max_diff(&a, &b);
                assert!(d < 1e-5, "{padding:?} align {align_corners}: {d}");
                // Negative control: a perturbed grid gives a visibly different result.
                let mut g2 = g.clone();
                g2[6] += 0.3;
                let grid2 = Tensor::from_shape(&[n, ho, wo, 2], &g2).unwrap();
                let d2 = max_diff(&run(&fast, &x, &grid2), &b);
                assert!(d2 > 1e-3, "perturbed grid not detected: {d2}");
            }
        }
    }

    #[test]
    fn far_outside_is_zero_with_zero_padding_and_edge_with_border() {
        let x = Tensor::from_shape(&[1, 1, 2, 2], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
        let grid = Tensor::from_shape(&[1, 1, 2, 2], &[5.0f32, 5.0, -5.0, -5.0]).unwrap();
        for (padding, want) in [
            (FastPadding::Zeros, [0.0, 0.0]),
            (FastPadding::Border, [4.0, 1.0]),
        ] {
            let op = FastGridSample {
                align_corners: false,
                padding,
            };
            assert_eq!(super::super::f32s(&run(&op, &x, &grid)).unwrap(), &want);
        }
    }
}
