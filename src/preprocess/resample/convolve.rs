//! The convolution engine (`fast_image_resize`): antialiased filters, and
//! the NV12 and YUY2 tensors, whose chroma is resampled as its own plane.
//!
//! For YUV frames it resamples luma and chroma separately, straight from the
//! camera layout: YUYV read once as two-byte pixels (luma) and once as
//! four-byte macropixels (chroma), NV12 as its two planes. RGB tensors then
//! convert at the tensor's resolution, not the camera's.

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};

use super::fused::YuvLayout;
use super::{Filter, Pixels, RgbOut, Source, YuvOut};
use crate::preprocess::quantize::{self, ChannelLut};
use crate::preprocess::{yuv, InputLayout, PreprocessError};

impl Filter {
    fn alg(self) -> ResizeAlg {
        match self {
            Self::Linear => ResizeAlg::Interpolation(FilterType::Bilinear),
            Self::Nearest => ResizeAlg::Nearest,
            Self::Box => ResizeAlg::Convolution(FilterType::Box),
            Self::Bilinear => ResizeAlg::Convolution(FilterType::Bilinear),
            Self::CatmullRom => ResizeAlg::Convolution(FilterType::CatmullRom),
            Self::Lanczos3 => ResizeAlg::Convolution(FilterType::Lanczos3),
        }
    }
}

/// Where resampled samples sit in the luma and chroma buffers: bytes per
/// luma sample, bytes per chroma sample, and the offsets of U and V in one.
#[derive(Debug, Clone, Copy)]
struct Planes {
    luma_step: usize,
    chroma_step: usize,
    u: usize,
    v: usize,
}

/// Scratch for the convolution engine (reused across frames).
#[derive(Default)]
pub struct Convolver {
    resizer: Resizer,
    /// Resampled luma, or the resampled packed pixels of a grey or RGB frame.
    luma: Vec<u8>,
    chroma: Vec<u8>,
}

impl Convolver {
    /// Writes an RGB tensor's content from the source's crop.
    ///
    /// # Errors
    /// [`PreprocessError::Resize`] when `fast_image_resize` refuses the sizes.
    pub fn fill_rgb(
        &mut self,
        filter: Filter,
        src: &Source,
        out: RgbOut,
        lut: &ChannelLut,
    ) -> Result<(), PreprocessError> {
        let size = (out.dst[2], out.dst[3]);
        match src.pixels {
            Pixels::Yuv(layout) => {
                let planes = self.yuv_planes(filter.alg(), src, layout, size, size)?;
                self.write_rgb(out, planes, lut);
            }
            Pixels::Packed(channels) => {
                let pixel = if channels == 1 {
                    PixelType::U8
                } else {
                    PixelType::U8x3
                };
                let (w, h) = src.size;
                resize(
                    &mut self.resizer,
                    filter.alg(),
                    src.data,
                    (w, h, pixel),
                    src.crop,
                    &mut self.luma,
                    size,
                )?;
                self.write_packed(out, channels, lut);
            }
        }
        Ok(())
    }

    /// Writes an NV12 or YUY2 tensor from the source's crop.
    ///
    /// # Errors
    /// As [`Convolver::fill_rgb`].
    pub fn fill_yuv(
        &mut self,
        filter: Filter,
        src: &Source,
        layout: YuvLayout,
        out: YuvOut,
    ) -> Result<(), PreprocessError> {
        let (dw, dh) = (out.dst[2], out.dst[3]);
        let chroma = if out.layout == InputLayout::Nv12 {
            (dw / 2, dh / 2)
        } else {
            (dw / 2, dh)
        };
        let planes = self.yuv_planes(filter.alg(), src, layout, (dw, dh), chroma)?;
        self.write_yuv(out, planes);
        Ok(())
    }

    /// Resamples the crop's luma to `luma` and its chroma to `chroma`
    /// samples, reading the frame's layout directly.
    fn yuv_planes(
        &mut self,
        alg: ResizeAlg,
        src: &Source,
        layout: YuvLayout,
        luma: (u32, u32),
        chroma: (u32, u32),
    ) -> Result<Planes, PreprocessError> {
        let (w, h) = src.size;
        let [x0, y0, cw, ch] = src.crop;
        let (luma_src, chroma_src, planes) = match layout {
            YuvLayout::Yuyv => (
                (src.data, (w, h, PixelType::U8x2)),
                (
                    src.data,
                    (w / 2, h, PixelType::U8x4),
                    [x0 / 2.0, y0, cw / 2.0, ch],
                ),
                Planes {
                    luma_step: 2,
                    chroma_step: 4,
                    u: 1,
                    v: 3,
                },
            ),
            YuvLayout::Nv12 => {
                let (y_plane, uv_plane) = src.data.split_at(w as usize * h as usize);
                (
                    (y_plane, (w, h, PixelType::U8)),
                    (
                        uv_plane,
                        (w / 2, h / 2, PixelType::U8x2),
                        [x0 / 2.0, y0 / 2.0, cw / 2.0, ch / 2.0],
                    ),
                    Planes {
                        luma_step: 1,
                        chroma_step: 2,
                        u: 0,
                        v: 1,
                    },
                )
            }
        };
        let r = &mut self.resizer;
        resize(
            r,
            alg,
            luma_src.0,
            luma_src.1,
            src.crop,
            &mut self.luma,
            luma,
        )?;
        let (data, size, crop) = chroma_src;
        resize(r, alg, data, size, crop, &mut self.chroma, chroma)?;
        Ok(planes)
    }

    /// RGB rows from resampled luma and chroma of the region's size.
    fn write_rgb(&self, mut out: RgbOut, p: Planes, lut: &ChannelLut) {
        let [_, _, dw, dh] = out.dst.map(|v| v as usize);
        for y in 0..dh {
            strided_row_to_rgb(
                out.content_row(y),
                &self.luma[y * dw * p.luma_step..(y + 1) * dw * p.luma_step],
                &self.chroma[y * dw * p.chroma_step..(y + 1) * dw * p.chroma_step],
                p,
                lut,
            );
        }
    }

    /// RGB rows from resampled grey (replicated) or RGB pixels.
    fn write_packed(&self, mut out: RgbOut, channels: usize, lut: &ChannelLut) {
        let [_, _, dw, dh] = out.dst.map(|v| v as usize);
        for y in 0..dh {
            let row = out.content_row(y);
            let src = &self.luma[y * dw * channels..(y + 1) * dw * channels];
            if channels == 1 {
                for (px, &g) in row.chunks_exact_mut(3).zip(src) {
                    px.copy_from_slice(&quantize::pixel(lut, [g; 3]));
                }
            } else {
                row.copy_from_slice(src);
                quantize::apply(lut, row);
            }
        }
    }

    /// Packs resampled luma and chroma into an NV12 or YUY2 tensor, padding
    /// with `pad` outside region `dst`.
    fn write_yuv(&self, out: YuvOut, p: Planes) {
        let (layout, (tw, th), [py, pu, pv]) = (out.layout, out.size, out.pad);
        let [dx, dy, dw, dh] = out.dst.map(|v| v as usize);
        let out = out.data;
        let luma_at = |x: usize, y: usize| -> u8 {
            if y >= dy && y < dy + dh && x >= dx && x < dx + dw {
                self.luma[((y - dy) * dw + (x - dx)) * p.luma_step]
            } else {
                py
            }
        };
        // Chroma sample (cx, cy) in the tensor's chroma grid.
        let chroma_w = dw / 2;
        let chroma_at = |cx: usize, cy: usize, sub_y: usize| -> (u8, u8) {
            let (x0, y0, h) = (dx / 2, dy / sub_y, dh / sub_y);
            if cy >= y0 && cy < y0 + h && cx >= x0 && cx < x0 + chroma_w {
                let i = ((cy - y0) * chroma_w + (cx - x0)) * p.chroma_step;
                (self.chroma[i + p.u], self.chroma[i + p.v])
            } else {
                (pu, pv)
            }
        };
        if layout == InputLayout::Nv12 {
            let (y_plane, uv_plane) = out.split_at_mut(tw * th);
            for y in 0..th {
                for x in 0..tw {
                    y_plane[y * tw + x] = luma_at(x, y);
                }
            }
            for cy in 0..th / 2 {
                for cx in 0..tw / 2 {
                    let (u, v) = chroma_at(cx, cy, 2);
                    uv_plane[(cy * tw / 2 + cx) * 2] = u;
                    uv_plane[(cy * tw / 2 + cx) * 2 + 1] = v;
                }
            }
        } else {
            for y in 0..th {
                for cx in 0..tw / 2 {
                    let (u, v) = chroma_at(cx, y, 1);
                    let o = (y * tw + cx * 2) * 2;
                    out[o..o + 4].copy_from_slice(&[
                        luma_at(cx * 2, y),
                        u,
                        luma_at(cx * 2 + 1, y),
                        v,
                    ]);
                }
            }
        }
    }
}

/// One RGB row from a luma row and a chroma row of the same width whose
/// samples sit as `p` says; gathered in blocks of 64 pixels on the stack so
/// the row converter runs on contiguous Y, U and V.
fn strided_row_to_rgb(out: &mut [u8], luma: &[u8], chroma: &[u8], p: Planes, lut: &ChannelLut) {
    const B: usize = 64;
    let width = out.len() / 3;
    let (mut y, mut u, mut v) = ([0u8; B], [0u8; B], [0u8; B]);
    for start in (0..width).step_by(B) {
        let n = B.min(width - start);
        for i in 0..n {
            let x = start + i;
            y[i] = luma[x * p.luma_step];
            u[i] = chroma[x * p.chroma_step + p.u];
            v[i] = chroma[x * p.chroma_step + p.v];
        }
        let o = &mut out[start * 3..(start + n) * 3];
        yuv::planar_row_to_rgb(&y[..n], &u[..n], &v[..n], o);
        quantize::apply(lut, o);
    }
}

/// Resamples the `crop` region of a packed image into `dst`, resized to
/// `dw` x `dh`: the one call into `fast_image_resize`.
fn resize(
    resizer: &mut Resizer,
    alg: ResizeAlg,
    src: &[u8],
    (sw, sh, pixel): (u32, u32, PixelType),
    crop: [f64; 4],
    dst: &mut Vec<u8>,
    (dw, dh): (u32, u32),
) -> Result<(), PreprocessError> {
    let err = |e: &dyn std::fmt::Display| PreprocessError::Resize(e.to_string());
    let len = sw as usize * sh as usize * pixel.size();
    let src = ImageRef::new(sw, sh, &src[..len], pixel).map_err(|e| err(&e))?;
    dst.resize(dw as usize * dh as usize * pixel.size(), 0);
    let mut dst = Image::from_slice_u8(dw, dh, dst, pixel).map_err(|e| err(&e))?;
    let options = ResizeOptions::new()
        .resize_alg(alg)
        // The channels are Y/U/V, not colour plus alpha.
        .use_alpha(false)
        .crop(crop[0], crop[1], crop[2], crop[3]);
    resizer
        .resize(&src, &mut dst, &options)
        .map_err(|e| err(&e))
}
