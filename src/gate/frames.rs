//! The gate's frames: image files, a recording, a camera or the synthetic subject, each
//! through the rig's own preprocessing into the HEF's input tensor.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::GateError;
use crate::camera::replay::{Pacing, Recording};
use crate::camera::synthetic::{mixed_rig, SyntheticSource};
use crate::camera::v4l2::{V4l2Config, V4l2Source};
use crate::camera::{CameraId, Frame, PixelFormat, PooledBuffer, Source};
use crate::preprocess::Preprocessor;
use crate::scene::MarkerScene;

/// Where the gate's frames come from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum FrameSource {
    /// Image files, one frame each: PNG (RGB, RGBA, grey) or baseline JPEG.
    Images(Vec<PathBuf>),
    /// An MCAP recording made by `run` (see `camera::record`): the first `frames` frames
    /// of camera `camera` (the recording's first camera when `None`).
    Recording {
        path: PathBuf,
        camera: Option<u32>,
        frames: usize,
    },
    /// A V4L2 camera: `frames` frames as it delivers them.
    Camera { config: V4l2Config, frames: usize },
    /// The synthetic marker subject seen by the first camera of the mixed rig
    /// ([`mixed_rig`]): rendered, not captured; for runs with no files or camera.
    Synthetic { frames: usize },
}

impl FrameSource {
    /// The kind of source, for reports: `images`, `recording`, `camera`, `synthetic`.
    pub fn kind(&self) -> &'static str {
        match self {
            FrameSource::Images(_) => "images",
            FrameSource::Recording { .. } => "recording",
            FrameSource::Camera { .. } => "camera",
            FrameSource::Synthetic { .. } => "synthetic",
        }
    }
}

/// One frame the gate ran, as its report names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameInfo {
    /// The file, recording or device and the frame's sequence number.
    pub source: String,
    /// Size and format of the frame before preprocessing.
    pub frame: String,
}

/// The frames of `source`, preprocessed into the input tensor, with what they are.
pub(crate) fn tensors(
    source: &FrameSource,
    pre: &mut Preprocessor,
) -> Result<Vec<(FrameInfo, PooledBuffer)>, GateError> {
    let mut out = Vec::new();
    let mut push = |name: String, frame: Frame| -> Result<(), GateError> {
        let tensor = pre.run(&frame).map_err(|source| GateError::Preprocess {
            frame: name.clone(),
            source,
        })?;
        let info = FrameInfo {
            source: name,
            frame: format!("{}x{} {}", frame.width, frame.height, frame.format),
        };
        out.push((info, tensor.data));
        Ok(())
    };
    match source {
        FrameSource::Images(paths) => {
            for (i, path) in paths.iter().enumerate() {
                push(path.display().to_string(), image_frame(path, i as u64)?)?;
            }
        }
        FrameSource::Recording {
            path,
            camera,
            frames,
        } => {
            let mut src = recorded(path, *camera)?;
            let name = src.info().name.clone();
            for frame in take(src.as_mut(), *frames, &name)? {
                push(format!("{name} #{}", frame.sequence), frame)?;
            }
        }
        FrameSource::Camera { config, frames } => {
            let name = config.path.display().to_string();
            let mut src = V4l2Source::open(config.clone()).map_err(|source| GateError::Source {
                what: name.clone(),
                source,
            })?;
            for frame in take(&mut src, *frames, &name)? {
                push(format!("{name} #{}", frame.sequence), frame)?;
            }
        }
        FrameSource::Synthetic { frames } => {
            let what = "synthetic camera 0".to_owned();
            let bad = |source| GateError::Source {
                what: what.clone(),
                source,
            };
            let cams = mixed_rig().map_err(bad)?;
            let mut src = SyntheticSource::rig(Arc::new(MarkerScene::default()), &cams[..1], false)
                .map_err(bad)?;
            let name = src[0].info().name.clone();
            for frame in take(&mut src[0], *frames, &name)? {
                push(format!("{name} #{}", frame.sequence), frame)?;
            }
        }
    }
    if out.is_empty() {
        return Err(GateError::NoFrames {
            kind: source.kind(),
        });
    }
    Ok(out)
}

/// The camera of a recording to replay.
fn recorded(path: &Path, camera: Option<u32>) -> Result<Box<dyn Source>, GateError> {
    let recording = Recording::open(path).map_err(|source| GateError::Recording {
        path: path.to_path_buf(),
        source,
    })?;
    let cameras: Vec<u32> = recording.cameras().map(|c| c.camera.0).collect();
    let index = match camera {
        None => Some(0).filter(|_| !cameras.is_empty()),
        Some(c) => cameras.iter().position(|&k| k == c),
    };
    let Some(index) = index else {
        return Err(GateError::NoCamera {
            path: path.to_path_buf(),
            camera,
            cameras: cameras.iter().map(|c| format!("cam{c}")).collect(),
        });
    };
    let source = recording
        .sources(Pacing::AsFastAsPossible)
        .into_iter()
        .nth(index);
    source
        .map(|s| Box::new(s) as Box<dyn Source>)
        .ok_or(GateError::NoFrames { kind: "recording" })
}

/// Up to `n` frames of `src`; the end of a finite source ends them early.
fn take(src: &mut dyn Source, n: usize, what: &str) -> Result<Vec<Frame>, GateError> {
    let mut frames = Vec::with_capacity(n);
    while frames.len() < n {
        match src.next_frame() {
            Ok(frame) => frames.push(frame),
            Err(crate::camera::SourceError::EndOfStream) => break,
            Err(source) => {
                return Err(GateError::Source {
                    what: what.to_owned(),
                    source,
                })
            }
        }
    }
    Ok(frames)
}

/// An image file as a frame: a JPEG stays compressed (the preprocessor decodes it, as it
/// does a camera's MJPEG); a PNG is decoded to RGB.
fn image_frame(path: &Path, sequence: u64) -> Result<Frame, GateError> {
    let bytes = std::fs::read(path).map_err(|source| GateError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |reason: &dyn std::fmt::Display| GateError::Image {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let (format, width, height, data) = if bytes.starts_with(&[0xFF, 0xD8]) {
        let (w, h) = jpeg_size(&bytes).map_err(|e| bad(&e))?;
        (PixelFormat::Mjpeg, w, h, bytes)
    } else {
        let rgb = image::load_from_memory(&bytes)
            .map_err(|e| bad(&e))?
            .to_rgb8();
        let (w, h) = rgb.dimensions();
        (PixelFormat::Rgb24, w, h, rgb.into_raw())
    };
    Ok(Frame {
        sequence,
        ..Frame::still(CameraId(0), format, width, height, data)
    })
}

/// The size a JPEG's header states, or why it cannot be read (the decoder runs under
/// `catch_unwind`: a malformed header can trip an assertion inside it).
fn jpeg_size(bytes: &[u8]) -> Result<(u32, u32), JpegHeader> {
    let outcome = std::panic::catch_unwind(|| {
        let mut decoder = zune_jpeg::JpegDecoder::new(bytes);
        decoder.decode_headers().map_err(JpegHeader::Decoder)?;
        decoder
            .info()
            .map(|i| (u32::from(i.width), u32::from(i.height)))
            .ok_or(JpegHeader::Missing)
    });
    outcome.unwrap_or(Err(JpegHeader::Malformed))
}

/// Why a JPEG's header cannot be read.
#[derive(Debug, thiserror::Error)]
enum JpegHeader {
    #[error("{0}")]
    Decoder(zune_jpeg::errors::DecodeErrors),
    #[error("no image header")]
    Missing,
    #[error("malformed JPEG header")]
    Malformed,
}
