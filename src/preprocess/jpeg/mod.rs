//! MJPEG frames to RGB pixels for the resampler.
//!
//! The default build decodes the whole frame with `zune-jpeg` (pure Rust).
//! With the `libjpeg-turbo` feature the system libjpeg-turbo decodes only
//! what the tensor needs: a DCT-domain reduced image (1/2, 1/4 or 1/8 when
//! the crop still has the tensor's resolution at that scale), and of it only
//! the window around the crop. Either way the result says where the layout's
//! source region lies in the decoded pixels and how camera pixels map to the
//! tensor through this decode.

#[cfg(feature = "libjpeg-turbo")]
mod turbo;
mod zune;

use crate::camera::frame::CameraId;

use super::plan::{Layout, Transform};
use super::PreprocessError;

/// The decoder MJPEG frames go through in this build.
#[cfg(not(feature = "libjpeg-turbo"))]
pub fn decoder_name() -> String {
    "zune-jpeg (full-size decode)".into()
}

/// The decoder MJPEG frames go through in this build.
#[cfg(feature = "libjpeg-turbo")]
pub fn decoder_name() -> String {
    format!(
        "libjpeg-turbo {} (DCT scaling + window)",
        turbo::library_version()
    )
}

/// Decoded pixels and where the layout's source region lies in them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decoded {
    /// Size of the decoded RGB image in the buffer (rows are `width * 3` bytes).
    pub size: (u32, u32),
    /// The layout's source region in decoded pixels: left, top, width, height.
    pub src: [f64; 4],
    /// Camera pixels to tensor pixels through this decode.
    pub transform: Transform,
}

/// Decodes MJPEG frames, keeping its buffers across frames.
#[derive(Debug, Default)]
pub struct MjpegDecoder {
    rgb: Vec<u8>,
    /// A frame with the MJPEG tag added (see [`MjpegDecoder::decode_full`]).
    #[cfg_attr(all(feature = "libjpeg-turbo", not(test)), allow(dead_code))]
    patched: Vec<u8>,
}

impl MjpegDecoder {
    /// Decodes the part of MJPEG frame `data` (declared `width` x `height`)
    /// that `plan` reads; [`MjpegDecoder::pixels`] holds the result.
    ///
    /// # Errors
    /// [`PreprocessError::CorruptJpeg`] for undecodable, truncated or
    /// wrongly sized data.
    pub fn decode(
        &mut self,
        camera: CameraId,
        data: &[u8],
        size: (u32, u32),
        plan: &Layout,
    ) -> Result<Decoded, PreprocessError> {
        #[cfg(feature = "libjpeg-turbo")]
        {
            turbo::decode(camera, data, size, plan, &mut self.rgb)
        }
        #[cfg(not(feature = "libjpeg-turbo"))]
        {
            self.decode_full(camera, data, size, plan)
        }
    }

    /// The whole frame at full size through `zune-jpeg`, tagged as MJPEG where it lacks
    /// Huffman tables (`tagged_mjpeg`).
    #[cfg_attr(all(feature = "libjpeg-turbo", not(test)), allow(dead_code))]
    pub fn decode_full(
        &mut self,
        camera: CameraId,
        data: &[u8],
        (width, height): (u32, u32),
        plan: &Layout,
    ) -> Result<Decoded, PreprocessError> {
        let data = tagged_mjpeg(data, &mut self.patched);
        zune::decode_rgb(camera, data, width, height, &mut self.rgb)?;
        Ok(Decoded {
            size: (width, height),
            src: plan.src,
            transform: plan.transform,
        })
    }

    /// The decoded RGB pixels (`Decoded::size`, rows `width * 3` bytes apart).
    pub fn pixels(&self) -> &[u8] {
        &self.rgb
    }
}

/// `data` as zune-jpeg decodes it: zune-jpeg substitutes the standard Huffman tables for
/// missing ones only in frames tagged as MJPEG (an `AVI1` APP0 segment), so a frame without
/// tables and without the tag (common from UVC cameras) gets the tag added in `scratch`.
pub fn tagged_mjpeg<'a>(data: &'a [u8], scratch: &'a mut Vec<u8>) -> &'a [u8] {
    if !lacks_huffman_tables(data) {
        return data;
    }
    const AVI1: [u8; 9] = [0xff, 0xe0, 0, 7, b'A', b'V', b'I', b'1', 0];
    scratch.clear();
    scratch.extend_from_slice(&data[..2]);
    scratch.extend_from_slice(&AVI1);
    scratch.extend_from_slice(&data[2..]);
    scratch
}

/// Whether the header segments (SOI up to the first SOS) of a baseline JPEG
/// carry no DHT segment. Unparseable headers answer `false`: the decoder
/// reports them.
pub fn lacks_huffman_tables(data: &[u8]) -> bool {
    if !data.starts_with(&[0xff, 0xd8]) {
        return false;
    }
    let mut i = 2;
    while i + 4 <= data.len() && data[i] == 0xff {
        match data[i + 1] {
            0xc4 => return false,
            0xda => return true,
            // Fill bytes before a marker.
            0xff => i += 1,
            _ => i += 2 + usize::from(u16::from_be_bytes([data[i + 2], data[i + 3]])),
        }
    }
    false
}

#[cfg_attr(not(feature = "libjpeg-turbo"), allow(dead_code))]
/// Whether `data` holds an end-of-image marker: a frame cut short loses it.
///
/// `FF D9` cannot occur inside entropy-coded data (a data `FF` is followed
/// by `00` or a restart marker), and some cameras pad after it.
pub fn has_end_marker(data: &[u8]) -> bool {
    data.windows(2).rev().any(|w| w == [0xff, 0xd9])
}

#[cfg(test)]
pub(crate) mod tests;
