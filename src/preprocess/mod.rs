//! Camera frames into HEF input tensors.
//!
//! One pass per frame: crop or letterbox, resize (SIMD, `fast_image_resize`)
//! and colour conversion are fused so only the pixels the tensor needs are
//! read. For YUYV the resizer reads the packed frame directly twice, once as
//! two-byte pixels (luma) and once as four-byte macropixels (chroma); the
//! YUV to RGB conversion then runs at the tensor's resolution, not the
//! camera's. When the HEF takes NV12 or YUY2 the frame stays in YUV (half the
//! link bytes of RGB). The [`Transform`] travels with the tensor so keypoints
//! map back to camera pixels.

mod convert;
mod jpeg;
mod quantize;
mod sample;
mod spec;
mod transform;
mod yuv_rows;

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use serde::{Deserialize, Serialize};

pub use convert::{rgb_to_yuv, yuv_to_rgb, yuv_to_rgb_reference};
pub use jpeg::{decoder_name as mjpeg_decoder, Decoded, MjpegDecoder};
pub use quantize::Normalize;
pub use spec::{InputLayout, InputSpec};
pub use transform::{Fit, Layout, ScaledWindow, Transform};

use crate::camera::frame::{CameraId, Frame, FrameError, PixelFormat};
use crate::camera::pool::{BufferPool, PooledBuffer};
use convert::{row_yuv_to_rgb, ChannelLut};

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

/// How frames are fitted and normalised (one per camera in the rig file).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreprocessConfig {
    #[serde(default)]
    pub fit: Fit,
    #[serde(default)]
    pub filter: Filter,
    /// Set when the HEF expects normalised, quantised values rather than raw pixels.
    #[serde(default)]
    pub normalize: Option<Normalize>,
}

/// A preprocessed frame, ready to be bound to a HEF input.
#[derive(Debug)]
pub struct Tensor {
    pub camera: CameraId,
    pub capture_ns: u64,
    pub sequence: u64,
    pub layout: InputLayout,
    pub width: u32,
    pub height: u32,
    pub data: PooledBuffer,
    /// Camera pixels to tensor pixels.
    pub transform: Transform,
}

/// Why a frame could not be preprocessed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreprocessError {
    #[error(transparent)]
    Frame(#[from] FrameError),
    #[error("{camera}: corrupt MJPEG frame: {reason}")]
    CorruptJpeg { camera: CameraId, reason: String },
    #[error("{camera}: cannot turn {from} into a {to:?} input")]
    Unsupported {
        camera: CameraId,
        from: PixelFormat,
        to: InputLayout,
    },
    #[error("HEF input {stream}: {reason}")]
    Spec { stream: String, reason: String },
    #[error("resize: {0}")]
    Resize(String),
    #[error("HEF input {stream}: output buffer has {actual} bytes, the tensor needs {expected}")]
    OutputSize {
        stream: String,
        expected: usize,
        actual: usize,
    },
}

/// Turns frames of one camera into tensors for one HEF input.
///
/// Holds its scratch buffers, so after the first frame nothing allocates
/// (output tensors come from a [`BufferPool`]).
pub struct Preprocessor {
    spec: InputSpec,
    config: PreprocessConfig,
    lut: ChannelLut,
    resizer: Resizer,
    luma: Vec<u8>,
    chroma: Vec<u8>,
    mjpeg: jpeg::MjpegDecoder,
    small: Vec<u8>,
    sampler: sample::Sampler,
    pool: BufferPool,
}

impl Preprocessor {
    /// A preprocessor for `spec`.
    ///
    /// # Errors
    /// [`PreprocessError::Spec`] when normalisation is asked for a YUV input
    /// or the input's quantisation cannot express it.
    pub fn new(spec: InputSpec, config: PreprocessConfig) -> Result<Self, PreprocessError> {
        if config.normalize.is_some() && spec.layout != InputLayout::Rgb {
            return Err(PreprocessError::Spec {
                stream: spec.name,
                reason: "normalisation needs an RGB input".into(),
            });
        }
        let lut = quantize::tables(config.normalize, &spec.quant).map_err(|reason| {
            PreprocessError::Spec {
                stream: spec.name.clone(),
                reason,
            }
        })?;
        Ok(Self {
            spec,
            config,
            lut,
            resizer: Resizer::new(),
            luma: Vec::new(),
            chroma: Vec::new(),
            mjpeg: jpeg::MjpegDecoder::default(),
            small: Vec::new(),
            sampler: sample::Sampler::default(),
            pool: BufferPool::new(8),
        })
    }

    /// The input this preprocessor fills.
    pub fn spec(&self) -> &InputSpec {
        &self.spec
    }

    /// The tensor for one frame, in a pooled buffer.
    ///
    /// # Errors
    /// See [`Preprocessor::run_into`].
    pub fn run(&mut self, frame: &Frame) -> Result<Tensor, PreprocessError> {
        let mut data = self
            .pool
            .zeroed(self.spec.layout.len(self.spec.width, self.spec.height));
        let transform = self.run_into(frame, &mut data)?;
        Ok(Tensor {
            camera: frame.camera,
            capture_ns: frame.capture_ns,
            sequence: frame.sequence,
            layout: self.spec.layout,
            width: self.spec.width,
            height: self.spec.height,
            data,
            transform,
        })
    }

    /// Writes the tensor for `frame` into `out` and returns its transform.
    ///
    /// # Errors
    /// [`PreprocessError::Frame`] for a frame of the wrong size,
    /// [`PreprocessError::CorruptJpeg`] for an undecodable MJPEG frame,
    /// [`PreprocessError::Unsupported`] for a YUV output from MJPEG/RGB.
    pub fn run_into(
        &mut self,
        frame: &Frame,
        out: &mut [u8],
    ) -> Result<Transform, PreprocessError> {
        frame.check_size()?;
        let (w, h) = (frame.width, frame.height);
        if frame.format.needs_even_size() && (w % 2 != 0 || h % 2 != 0) {
            return Err(PreprocessError::Frame(FrameError::WrongSize {
                camera: frame.camera,
                format: frame.format,
                width: w,
                height: h,
                expected: 0,
                actual: frame.data.len(),
            }));
        }
        let (tw, th, layout) = (self.spec.width, self.spec.height, self.spec.layout);
        if out.len() != layout.len(tw, th) {
            return Err(PreprocessError::OutputSize {
                stream: self.spec.name.clone(),
                expected: layout.len(tw, th),
                actual: out.len(),
            });
        }
        let align = if layout == InputLayout::Rgb { 1 } else { 2 };
        let plan = Layout::plan(w, h, tw, th, self.config.fit, align);
        let alg = self.config.filter.alg();
        let data: &[u8] = &frame.data;
        let [x0, y0, cw, ch] = plan.src;
        let [_, _, dw, dh] = plan.dst;
        let unsupported = || PreprocessError::Unsupported {
            camera: frame.camera,
            from: frame.format,
            to: layout,
        };
        let tw_us = tw as usize;
        let fused = self.config.filter == Filter::Linear;
        match (frame.format, layout) {
            (PixelFormat::Yuyv | PixelFormat::Nv12, InputLayout::Rgb) if fused => {
                self.fill_rgb_border(out, &plan);
                let yuv = if frame.format == PixelFormat::Yuyv {
                    sample::YuvLayout::Yuyv
                } else {
                    sample::YuvLayout::Nv12
                };
                self.sampler.yuv_to_rgb(
                    data,
                    (w, h),
                    yuv,
                    plan.src,
                    out,
                    tw_us,
                    plan.dst,
                    &self.lut,
                );
            }
            (PixelFormat::Grey | PixelFormat::Rgb24, InputLayout::Rgb) if fused => {
                self.fill_rgb_border(out, &plan);
                let channels = if frame.format == PixelFormat::Grey {
                    1
                } else {
                    3
                };
                self.sampler.packed_to_rgb(
                    data,
                    (w, h),
                    channels,
                    plan.src,
                    out,
                    tw_us,
                    plan.dst,
                    &self.lut,
                );
            }
            (PixelFormat::Mjpeg, InputLayout::Rgb) if fused => {
                let decoded = self.mjpeg.decode(frame.camera, data, (w, h), &plan)?;
                self.fill_rgb_border(out, &plan);
                self.sampler.packed_to_rgb(
                    self.mjpeg.pixels(),
                    decoded.size,
                    3,
                    decoded.src,
                    out,
                    tw_us,
                    plan.dst,
                    &self.lut,
                );
                return Ok(decoded.transform);
            }
            (PixelFormat::Yuyv, InputLayout::Rgb) => {
                resize(
                    &mut self.resizer,
                    alg,
                    data,
                    (w, h, PixelType::U8x2),
                    plan.src,
                    &mut self.luma,
                    (dw, dh),
                )?;
                let chroma_crop = [x0 / 2.0, y0, cw / 2.0, ch];
                resize(
                    &mut self.resizer,
                    alg,
                    data,
                    (w / 2, h, PixelType::U8x4),
                    chroma_crop,
                    &mut self.chroma,
                    (dw, dh),
                )?;
                self.write_rgb(out, &plan, 2, 4, (1, 3));
            }
            (PixelFormat::Nv12, InputLayout::Rgb) => {
                let (y_plane, uv_plane) = data.split_at(w as usize * h as usize);
                resize(
                    &mut self.resizer,
                    alg,
                    y_plane,
                    (w, h, PixelType::U8),
                    plan.src,
                    &mut self.luma,
                    (dw, dh),
                )?;
                let chroma_crop = [x0 / 2.0, y0 / 2.0, cw / 2.0, ch / 2.0];
                resize(
                    &mut self.resizer,
                    alg,
                    uv_plane,
                    (w / 2, h / 2, PixelType::U8x2),
                    chroma_crop,
                    &mut self.chroma,
                    (dw, dh),
                )?;
                self.write_rgb(out, &plan, 1, 2, (0, 1));
            }
            (PixelFormat::Grey, InputLayout::Rgb) => {
                resize(
                    &mut self.resizer,
                    alg,
                    data,
                    (w, h, PixelType::U8),
                    plan.src,
                    &mut self.luma,
                    (dw, dh),
                )?;
                self.write_grey(out, &plan);
            }
            (PixelFormat::Mjpeg, InputLayout::Rgb) => {
                let decoded = self.mjpeg.decode(frame.camera, data, (w, h), &plan)?;
                let (sw, sh) = decoded.size;
                resize(
                    &mut self.resizer,
                    alg,
                    self.mjpeg.pixels(),
                    (sw, sh, PixelType::U8x3),
                    decoded.src,
                    &mut self.small,
                    (dw, dh),
                )?;
                self.write_rgb_copy(out, &plan);
                return Ok(decoded.transform);
            }
            (PixelFormat::Rgb24, InputLayout::Rgb) => {
                resize(
                    &mut self.resizer,
                    alg,
                    data,
                    (w, h, PixelType::U8x3),
                    plan.src,
                    &mut self.small,
                    (dw, dh),
                )?;
                self.write_rgb_copy(out, &plan);
            }
            (PixelFormat::Yuyv | PixelFormat::Nv12, InputLayout::Nv12 | InputLayout::Yuy2) => {
                let (cdw, cdh) = if layout == InputLayout::Nv12 {
                    (dw / 2, dh / 2)
                } else {
                    (dw / 2, dh)
                };
                let chroma_channels = if frame.format == PixelFormat::Yuyv {
                    resize(
                        &mut self.resizer,
                        alg,
                        data,
                        (w, h, PixelType::U8x2),
                        plan.src,
                        &mut self.luma,
                        (dw, dh),
                    )?;
                    let crop = [x0 / 2.0, y0, cw / 2.0, ch];
                    resize(
                        &mut self.resizer,
                        alg,
                        data,
                        (w / 2, h, PixelType::U8x4),
                        crop,
                        &mut self.chroma,
                        (cdw, cdh),
                    )?;
                    (2, 4, (1, 3))
                } else {
                    let (y_plane, uv_plane) = data.split_at(w as usize * h as usize);
                    resize(
                        &mut self.resizer,
                        alg,
                        y_plane,
                        (w, h, PixelType::U8),
                        plan.src,
                        &mut self.luma,
                        (dw, dh),
                    )?;
                    let crop = [x0 / 2.0, y0 / 2.0, cw / 2.0, ch / 2.0];
                    resize(
                        &mut self.resizer,
                        alg,
                        uv_plane,
                        (w / 2, h / 2, PixelType::U8x2),
                        crop,
                        &mut self.chroma,
                        (cdw, cdh),
                    )?;
                    (1, 2, (0, 1))
                };
                self.write_yuv(out, &plan, chroma_channels, layout);
            }
            _ => return Err(unsupported()),
        }
        Ok(plan.transform)
    }

    fn pad_rgb(&self) -> [u8; 3] {
        let pad = match self.config.fit {
            Fit::Letterbox { pad } => pad,
            Fit::Crop => [0; 3],
        };
        match &self.lut {
            None => pad,
            Some(t) => [
                t[0][pad[0] as usize],
                t[1][pad[1] as usize],
                t[2][pad[2] as usize],
            ],
        }
    }

    /// Fills the letterbox border of an RGB tensor (nothing to do when cropping).
    fn fill_rgb_border(&self, out: &mut [u8], plan: &Layout) {
        let [dx, dy, dw, dh] = plan.dst.map(|v| v as usize);
        let (tw, th) = (self.spec.width as usize, self.spec.height as usize);
        if (dx, dy, dw, dh) == (0, 0, tw, th) {
            return;
        }
        let pad = self.pad_rgb();
        for (y, row) in out.chunks_exact_mut(tw * 3).enumerate() {
            let (left, right) = if y >= dy && y < dy + dh {
                (dx, dx + dw)
            } else {
                (tw, tw)
            };
            for (x, px) in row.chunks_exact_mut(3).enumerate() {
                if x < left || x >= right {
                    px.copy_from_slice(&pad);
                }
            }
        }
    }

    fn write_rgb(&self, out: &mut [u8], plan: &Layout, ls: usize, cs: usize, uv: (usize, usize)) {
        self.fill_rgb_border(out, plan);
        let [dx, dy, dw, dh] = plan.dst.map(|v| v as usize);
        let tw = self.spec.width as usize;
        for y in 0..dh {
            let o = (dy + y) * tw * 3 + dx * 3;
            row_yuv_to_rgb(
                &mut out[o..o + dw * 3],
                &self.luma[y * dw * ls..(y + 1) * dw * ls],
                ls,
                &self.chroma[y * dw * cs..(y + 1) * dw * cs],
                cs,
                uv,
                &self.lut,
            );
        }
    }

    fn write_grey(&self, out: &mut [u8], plan: &Layout) {
        self.fill_rgb_border(out, plan);
        let [dx, dy, dw, dh] = plan.dst.map(|v| v as usize);
        let tw = self.spec.width as usize;
        for y in 0..dh {
            let o = (dy + y) * tw * 3 + dx * 3;
            for (px, &g) in out[o..o + dw * 3]
                .chunks_exact_mut(3)
                .zip(&self.luma[y * dw..(y + 1) * dw])
            {
                match &self.lut {
                    None => px.copy_from_slice(&[g; 3]),
                    Some(t) => {
                        px.copy_from_slice(&[t[0][g as usize], t[1][g as usize], t[2][g as usize]])
                    }
                }
            }
        }
    }

    fn write_rgb_copy(&self, out: &mut [u8], plan: &Layout) {
        self.fill_rgb_border(out, plan);
        let [dx, dy, dw, dh] = plan.dst.map(|v| v as usize);
        let tw = self.spec.width as usize;
        for y in 0..dh {
            let o = (dy + y) * tw * 3 + dx * 3;
            let src = &self.small[y * dw * 3..(y + 1) * dw * 3];
            match &self.lut {
                None => out[o..o + dw * 3].copy_from_slice(src),
                Some(t) => {
                    for (d, s) in out[o..o + dw * 3]
                        .chunks_exact_mut(3)
                        .zip(src.chunks_exact(3))
                    {
                        d.copy_from_slice(&[
                            t[0][s[0] as usize],
                            t[1][s[1] as usize],
                            t[2][s[2] as usize],
                        ]);
                    }
                }
            }
        }
    }

    /// Packs resized luma and chroma into an NV12 or YUY2 tensor, padding with the pad colour.
    fn write_yuv(
        &self,
        out: &mut [u8],
        plan: &Layout,
        (ls, cs, (cu, cv)): (usize, usize, (usize, usize)),
        layout: InputLayout,
    ) {
        let [dx, dy, dw, dh] = plan.dst.map(|v| v as usize);
        let (tw, th) = (self.spec.width as usize, self.spec.height as usize);
        let [py, pu, pv] = rgb_to_yuv(self.pad_rgb());
        let luma_at = |x: usize, y: usize| -> u8 {
            if y >= dy && y < dy + dh && x >= dx && x < dx + dw {
                self.luma[((y - dy) * dw + (x - dx)) * ls]
            } else {
                py
            }
        };
        // Chroma sample (cx, cy) in the tensor's chroma grid.
        let chroma_w = dw / 2;
        let chroma_at = |cx: usize, cy: usize, sub_y: usize| -> (u8, u8) {
            let (x0, y0, h) = (dx / 2, dy / sub_y, dh / sub_y);
            if cy >= y0 && cy < y0 + h && cx >= x0 && cx < x0 + chroma_w {
                let i = ((cy - y0) * chroma_w + (cx - x0)) * cs;
                (self.chroma[i + cu], self.chroma[i + cv])
            } else {
                (pu, pv)
            }
        };
        match layout {
            InputLayout::Nv12 => {
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
            }
            _ => {
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
}

/// Resizes the `crop` region of a packed image into `dst` (resized to fit).
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

#[cfg(test)]
mod tests;
