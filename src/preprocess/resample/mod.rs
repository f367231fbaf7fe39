//! Resampling: the plan's source region of a frame into the tensor's
//! content region, converted to the tensor's colours on the way.
//!
//! Two engines. The fused sampler ([`fused`]) serves
//! [`Filter::Linear`] into RGB, the default and the fastest: crop, 2x2
//! bilinear taps, YUV conversion and quantisation in one pass over only the
//! pixels each output needs. It cannot serve the antialiasing filters, whose
//! kernel widens with the shrink factor beyond its two taps, nor the NV12
//! and YUY2 tensors, whose chroma is resampled as its own plane; those go
//! through the convolution engine ([`convolve`], `fast_image_resize`).

pub(super) mod convolve;
pub(super) mod fused;
#[cfg(target_arch = "aarch64")]
mod neon;

use serde::{Deserialize, Serialize};

use super::InputLayout;
pub(super) use fused::YuvLayout;

/// Resampling filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Filter {
    /// 2x2 bilinear taps, fused with crop and colour conversion in one pass
    /// over only the pixels needed (OpenCV `INTER_LINEAR`); the fastest, but
    /// it aliases fine detail when shrinking more than 2x.
    #[default]
    Linear,
    Nearest,
    /// Area average.
    Box,
    /// Antialiased bilinear (the kernel widens when shrinking; SIMD convolution).
    Bilinear,
    CatmullRom,
    Lanczos3,
}

/// How a source's bytes hold its pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pixels {
    /// Luma and chroma at their camera positions.
    Yuv(YuvLayout),
    /// Packed 8-bit pixels of 1 (grey) or 3 (RGB) channels.
    Packed(usize),
}

/// The pixels a frame offers the resampler and the region of them to read.
#[derive(Debug, Clone, Copy)]
pub(super) struct Source<'a> {
    pub data: &'a [u8],
    pub size: (u32, u32),
    pub pixels: Pixels,
    /// Region read, in continuous pixels: left, top, width, height.
    pub crop: [f64; 4],
}

/// Where an RGB tensor's content goes: region `dst` (left, top, width,
/// height) of `data`, an RGB image `width` pixels wide.
#[derive(Debug)]
pub(super) struct RgbOut<'o> {
    pub data: &'o mut [u8],
    pub width: usize,
    pub dst: [u32; 4],
}

impl RgbOut<'_> {
    /// Row `y` of the content region.
    pub fn content_row(&mut self, y: usize) -> &mut [u8] {
        let [dx, dy, dw, _] = self.dst.map(|v| v as usize);
        let o = ((dy + y) * self.width + dx) * 3;
        &mut self.data[o..o + dw * 3]
    }
}

/// An NV12 or YUY2 tensor to fill: `layout`, `size`, the content region
/// `dst` (left, top, width, height) and the `pad` (Y, U, V) around it.
#[derive(Debug)]
pub(super) struct YuvOut<'o> {
    pub data: &'o mut [u8],
    pub layout: InputLayout,
    pub size: (usize, usize),
    pub dst: [u32; 4],
    pub pad: [u8; 3],
}
