//! MJPEG through the system libjpeg-turbo (feature `libjpeg-turbo`), via the
//! C shim `turbo_shim.c`: libjpeg reports errors by `longjmp`, which must not
//! cross Rust frames, so the shim owns the `setjmp` and hands back a status
//! and a message.

use std::ffi::{c_char, c_int, CStr};

use crate::camera::frame::CameraId;
use crate::preprocess::plan::{Layout, Transform};
use crate::preprocess::PreprocessError;

use super::Decoded;

/// Scaled pixels kept around the crop so the resampler's taps at its edges
/// read real neighbours, and libjpeg's edge handling of chroma upsampling
/// (the outermost column of a cropped window) stays outside what is read.
const MARGIN: u32 = 2;

/// `struct hx_jpeg_result` in `turbo_shim.c`.
#[repr(C)]
struct RawResult {
    x: u32,
    y: u32,
    width: u32,
    height: u32,
    image_width: u32,
    image_height: u32,
    warnings: u32,
    message: [c_char; 200],
}

// The C side asserts the same size.
const _: () = assert!(std::mem::size_of::<RawResult>() == 7 * 4 + 200);

extern "C" {
    fn hx_jpeg_turbo_version() -> u32;
    #[allow(clippy::too_many_arguments)]
    fn hx_jpeg_decode_window(
        data: *const u8,
        len: usize,
        expect_width: u32,
        expect_height: u32,
        scale_denom: u32,
        x: u32,
        y: u32,
        width: u32,
        height: u32,
        out: *mut u8,
        out_len: usize,
        result: *mut RawResult,
    ) -> c_int;
}

/// The linked library's version, `major.minor.patch`.
pub fn library_version() -> String {
    // SAFETY: takes nothing, returns a constant.
    let v = unsafe { hx_jpeg_turbo_version() };
    format!("{}.{}.{}", v / 1_000_000, v / 1000 % 1000, v % 1000)
}

/// A decoded window of the scaled image, as the shim reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Top-left in scaled pixels (the column may be left of the one asked for).
    pub origin: [u32; 2],
    /// Decoded size; rows are `size.0 * 3` bytes apart from the buffer's start.
    pub size: (u32, u32),
    /// Metadata warnings libjpeg raised (extraneous bytes, unknown JFIF revision).
    pub warnings: u32,
}

/// Why libjpeg-turbo did not decode a window.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TurboError {
    #[error("scale 1/{denom}: expected 1/1, 1/2, 1/4 or 1/8")]
    Scale { denom: u32 },
    /// The shim's message: undecodable, truncated or wrongly sized data,
    /// or a window outside the scaled image.
    #[error("{message}")]
    Decode { message: String },
    #[error("libjpeg-turbo failed without a message")]
    Silent,
}

/// Decodes window `rect` (scaled pixels) of `data` scaled by 1/`denom` into `rgb`.
///
/// # Errors
/// [`TurboError::Scale`] for a scale libjpeg-turbo lacks,
/// [`TurboError::Decode`] for undecodable, truncated (the entropy data runs
/// out inside the window) or wrongly sized frames.
pub fn decode_window(
    data: &[u8],
    (width, height): (u32, u32),
    denom: u32,
    rect: [u32; 4],
    rgb: &mut Vec<u8>,
) -> Result<Window, TurboError> {
    if ![1, 2, 4, 8].contains(&denom) {
        return Err(TurboError::Scale { denom });
    }
    // The shim may widen the window to the left, never beyond the scaled image.
    let need = width.div_ceil(denom) as usize * rect[3] as usize * 3;
    if rgb.len() < need {
        rgb.resize(need, 0);
    }
    let mut raw = RawResult {
        x: 0,
        y: 0,
        width: 0,
        height: 0,
        image_width: 0,
        image_height: 0,
        warnings: 0,
        message: [0; 200],
    };
    // SAFETY: `data` and `rgb` are live slices and their lengths are passed
    // with them; the shim writes at most `rgb.len()` bytes and only into
    // `raw`, which outlives the call. Every libjpeg error longjmps to the
    // shim's own setjmp, so no Rust frame is skipped.
    let status = unsafe {
        hx_jpeg_decode_window(
            data.as_ptr(),
            data.len(),
            width,
            height,
            denom,
            rect[0],
            rect[1],
            rect[2],
            rect[3],
            rgb.as_mut_ptr(),
            rgb.len(),
            &mut raw,
        )
    };
    if status != 0 {
        // SAFETY: the shim always NUL-terminates `message` (snprintf into it,
        // or left zeroed); the last byte is never written with anything else.
        let msg = unsafe { CStr::from_ptr(raw.message.as_ptr()) };
        let message = msg.to_string_lossy();
        return Err(if message.is_empty() {
            TurboError::Silent
        } else {
            TurboError::Decode {
                message: message.into_owned(),
            }
        });
    }
    Ok(Window {
        origin: [raw.x, raw.y],
        size: (raw.width, raw.height),
        warnings: raw.warnings,
    })
}

/// The part of the frame `plan` reads, through libjpeg-turbo.
pub fn decode(
    camera: CameraId,
    data: &[u8],
    (width, height): (u32, u32),
    plan: &Layout,
    rgb: &mut Vec<u8>,
) -> Result<Decoded, PreprocessError> {
    let corrupt = |reason: String| PreprocessError::CorruptJpeg { camera, reason };
    // Rows below the window are never decoded, so a frame cut short there
    // is caught by its missing end marker instead.
    if !super::has_end_marker(data) {
        return Err(corrupt(
            "no end-of-image marker (FF D9): the frame is truncated".into(),
        ));
    }
    let scaled = plan.scaled_window(width, height, MARGIN);
    let window = decode_window(data, (width, height), scaled.denom, scaled.rect, rgb)
        .map_err(|e| corrupt(e.to_string()))?;
    if window.warnings > 0 {
        log::debug!(
            "{camera}: MJPEG frame with {} metadata warning(s)",
            window.warnings
        );
    }
    let src = plan.src_in_window(&scaled, window.origin);
    let transform = scaled
        .camera_to_window(window.origin)
        .then(&Transform::between(src, plan.dst.map(f64::from)));
    Ok(Decoded {
        size: window.size,
        src,
        transform,
    })
}
