//! Camera frames into HEF input tensors, one module per step a frame takes:
//!
//! 1. `plan`: where the frame's crop or letterbox lands in the tensor
//!    ([`Layout`]), and the [`Transform`] that maps keypoints back to camera
//!    pixels, which travels with the tensor.
//! 2. `jpeg`: MJPEG frames decoded to RGB, only the part the plan reads when
//!    libjpeg-turbo is built in.
//! 3. `resample`: the plan's source region to the tensor's size, fused with
//!    the colour conversion so only the pixels the tensor needs are read.
//! 4. `yuv`: the YUV to RGB converters (one scalar reference, one AVX2 path).
//! 5. `quantize`: normalisation tables applied to every output byte.
//!
//! When the HEF takes NV12 or YUY2 the frame stays in YUV (half the link
//! bytes of RGB).

pub(crate) mod jpeg;
mod plan;
mod quantize;
mod resample;
mod spec;
pub(crate) mod yuv;

use serde::{Deserialize, Serialize};

pub use jpeg::{decoder_name as mjpeg_decoder, Decoded, MjpegDecoder};
pub use plan::{Fit, Layout, ScaledWindow, Transform};
pub use quantize::{Normalize, QuantizeError};
pub use resample::Filter;
pub use spec::{InputLayout, InputSpec};
pub use yuv::{rgb_to_yuv, yuv_to_rgb, yuv_to_rgb_reference};

use crate::camera::frame::{CameraId, Frame, FrameError, PixelFormat};
use crate::camera::pool::{BufferPool, PooledBuffer};
use quantize::ChannelLut;
use resample::convolve::Convolver;
use resample::fused::Sampler;
use resample::{Pixels, RgbOut, Source, YuvLayout, YuvOut};

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

/// Why a preprocessor could not be built or a frame could not be
/// preprocessed, in the order [`Preprocessor::new`] and
/// [`Preprocessor::run_into`] meet them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreprocessError {
    /// The HEF input cannot take what the rig asks (normalisation of a YUV input).
    #[error("HEF input {stream}: {reason}")]
    Spec { stream: String, reason: String },
    #[error("HEF input {stream}: cannot quantise the normalisation: {source}")]
    Quantize {
        stream: String,
        source: QuantizeError,
    },
    #[error("HEF input {stream}: output buffer has {actual} bytes, the tensor needs {expected}")]
    OutputSize {
        stream: String,
        expected: usize,
        actual: usize,
    },
    /// The frame's bytes do not match its declared format and size.
    #[error(transparent)]
    Frame(#[from] FrameError),
    #[error("{camera}: cannot turn {from} into a {to} input")]
    Unsupported {
        camera: CameraId,
        from: PixelFormat,
        to: InputLayout,
    },
    #[error("{camera}: corrupt MJPEG frame: {reason}")]
    CorruptJpeg { camera: CameraId, reason: String },
    /// The convolution engine refused the sizes.
    #[error("resize: {0}")]
    Resize(String),
}

/// Turns frames of one camera into tensors for one HEF input.
///
/// Holds its scratch buffers, so after the first frame nothing allocates
/// (output tensors come from a [`BufferPool`]).
pub struct Preprocessor {
    spec: InputSpec,
    config: PreprocessConfig,
    lut: ChannelLut,
    mjpeg: MjpegDecoder,
    /// The engine for [`Filter::Linear`] into RGB.
    sampler: Sampler,
    /// The engine for every other filter and for YUV tensors.
    convolver: Convolver,
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
        let lut = quantize::tables(config.normalize, &spec.quant).map_err(|source| {
            PreprocessError::Quantize {
                stream: spec.name.clone(),
                source,
            }
        })?;
        Ok(Self {
            spec,
            config,
            lut,
            mjpeg: MjpegDecoder::default(),
            sampler: Sampler::default(),
            convolver: Convolver::default(),
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
    /// [`PreprocessError::OutputSize`] for an `out` of the wrong size,
    /// [`PreprocessError::CorruptJpeg`] for an undecodable MJPEG frame,
    /// [`PreprocessError::Unsupported`] for a YUV output from MJPEG/RGB.
    pub fn run_into(
        &mut self,
        frame: &Frame,
        out: &mut [u8],
    ) -> Result<Transform, PreprocessError> {
        self.check(frame, out)?;
        let (tw, th, layout) = (self.spec.width, self.spec.height, self.spec.layout);
        let align = if layout == InputLayout::Rgb { 1 } else { 2 };
        let plan = Layout::plan(frame.width, frame.height, tw, th, self.config.fit, align);
        let decoded = match frame.format {
            PixelFormat::Mjpeg => {
                let size = (frame.width, frame.height);
                Some(self.mjpeg.decode(frame.camera, &frame.data, size, &plan)?)
            }
            _ => None,
        };
        let (source, transform) = source(frame, &self.mjpeg, decoded, &plan);
        let filter = self.config.filter;
        match (source.pixels, layout) {
            (_, InputLayout::Rgb) => {
                self.fill_rgb_border(out, &plan);
                let out = RgbOut {
                    data: out,
                    width: tw as usize,
                    dst: plan.dst,
                };
                if filter == Filter::Linear {
                    self.sampler.sample(&source, out, &self.lut);
                } else {
                    self.convolver.fill_rgb(filter, &source, out, &self.lut)?;
                }
            }
            (Pixels::Yuv(yuv), _) => {
                let out = YuvOut {
                    data: out,
                    layout,
                    size: (tw as usize, th as usize),
                    dst: plan.dst,
                    pad: rgb_to_yuv(self.pad_rgb()),
                };
                self.convolver.fill_yuv(filter, &source, yuv, out)?;
            }
            // Refused by `check` before any decoding.
            (Pixels::Packed(_), _) => return Err(self.unsupported(frame)),
        }
        Ok(transform)
    }

    fn unsupported(&self, frame: &Frame) -> PreprocessError {
        PreprocessError::Unsupported {
            camera: frame.camera,
            from: frame.format,
            to: self.spec.layout,
        }
    }

    /// Checks the frame's size against its format, that a YUV tensor gets a
    /// YUV frame, and `out`'s size against the tensor.
    fn check(&self, frame: &Frame, out: &[u8]) -> Result<(), PreprocessError> {
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
        let expected = self.spec.layout.len(self.spec.width, self.spec.height);
        if out.len() != expected {
            return Err(PreprocessError::OutputSize {
                stream: self.spec.name.clone(),
                expected,
                actual: out.len(),
            });
        }
        if self.spec.layout != InputLayout::Rgb && !frame.format.needs_even_size() {
            return Err(self.unsupported(frame));
        }
        Ok(())
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
}

/// The pixels `plan` reads from `frame` (for MJPEG, from what `mjpeg`
/// decoded of it as `decoded` says), and camera pixels to tensor pixels
/// through them.
fn source<'a>(
    frame: &'a Frame,
    mjpeg: &'a MjpegDecoder,
    decoded: Option<Decoded>,
    plan: &Layout,
) -> (Source<'a>, Transform) {
    let pixels = match frame.format {
        PixelFormat::Yuyv => Pixels::Yuv(YuvLayout::Yuyv),
        PixelFormat::Nv12 => Pixels::Yuv(YuvLayout::Nv12),
        PixelFormat::Grey => Pixels::Packed(1),
        PixelFormat::Rgb24 | PixelFormat::Mjpeg => Pixels::Packed(3),
    };
    let source = |data, size, crop| Source {
        data,
        size,
        pixels,
        crop,
    };
    match decoded {
        Some(d) => (source(mjpeg.pixels(), d.size, d.src), d.transform),
        None => (
            source(&frame.data[..], (frame.width, frame.height), plan.src),
            plan.transform,
        ),
    }
}

#[cfg(test)]
mod tests;
