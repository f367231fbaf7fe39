//! MJPEG frames to full-size RGB with `zune-jpeg` (pure Rust; it also fills
//! in the default Huffman tables that UVC cameras leave out of MJPEG frames).

use zune_jpeg::zune_core::colorspace::ColorSpace;
use zune_jpeg::zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use crate::camera::frame::CameraId;

use super::super::PreprocessError;

/// Decodes `data` into `rgb` (resized to fit), checking the size the camera claimed.
///
/// A corrupt stream is an error, never a panic: the decoder runs under
/// `catch_unwind` because a malformed header can trip an assertion inside it.
pub fn decode_rgb(
    camera: CameraId,
    data: &[u8],
    width: u32,
    height: u32,
    rgb: &mut Vec<u8>,
) -> Result<(), PreprocessError> {
    let corrupt = |reason: String| PreprocessError::CorruptJpeg { camera, reason };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let options = DecoderOptions::default()
            .jpeg_set_out_colorspace(ColorSpace::RGB)
            .set_max_width(8192)
            .set_max_height(8192);
        let mut decoder = JpegDecoder::new_with_options(data, options);
        decoder.decode_headers().map_err(|e| e.to_string())?;
        let info = decoder.info().ok_or("no image header")?;
        if (u32::from(info.width), u32::from(info.height)) != (width, height) {
            return Err(format!(
                "JPEG is {}x{}, the stream is {width}x{height}",
                info.width, info.height
            ));
        }
        rgb.resize(width as usize * height as usize * 3, 0);
        decoder.decode_into(rgb).map_err(|e| e.to_string())
    }));
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(reason)) => Err(corrupt(reason)),
        Err(_) => Err(corrupt("decoder panicked on malformed data".into())),
    }
}
