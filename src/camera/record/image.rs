//! Frames and calibrations as Foxglove's well-known messages: `foxglove.RawImage` (or
//! `foxglove.CompressedImage` for MJPEG) and `foxglove.CameraCalibration`. Stamps are
//! wall-clock time; the capture clock travels in the MCAP message header (see
//! [`super`]).

use foxglove::messages::{CameraCalibration, CompressedImage, RawImage, Timestamp};

use crate::camera::{Frame, PixelFormat};
use crate::geom::Camera;

/// A Foxglove time from wall-clock ns; a time past 2106 (u32 seconds) saturates.
pub fn timestamp(wall_ns: u64) -> Timestamp {
    let sec = u32::try_from(wall_ns / 1_000_000_000).unwrap_or(u32::MAX);
    Timestamp::new(sec, (wall_ns % 1_000_000_000) as u32)
}

/// Foxglove's name for a raw pixel layout.
pub fn raw_encoding(f: PixelFormat) -> &'static str {
    match f {
        PixelFormat::Yuyv => "yuyv",
        PixelFormat::Grey => "mono8",
        PixelFormat::Rgb24 => "rgb8",
        PixelFormat::Nv12 => "nv12",
        PixelFormat::Mjpeg => "jpeg",
    }
}

/// The pixel layout Foxglove calls `encoding`, the inverse of [`raw_encoding`].
pub fn pixel_format(encoding: &str) -> Option<PixelFormat> {
    [
        PixelFormat::Yuyv,
        PixelFormat::Grey,
        PixelFormat::Rgb24,
        PixelFormat::Nv12,
    ]
    .into_iter()
    .find(|&f| raw_encoding(f) == encoding)
}

/// Bytes per row of a raw frame.
fn step(f: PixelFormat, width: u32) -> u32 {
    match f {
        PixelFormat::Yuyv => width * 2,
        PixelFormat::Rgb24 => width * 3,
        PixelFormat::Grey | PixelFormat::Nv12 | PixelFormat::Mjpeg => width,
    }
}

/// A frame as Foxglove shows it: compressed for MJPEG, raw otherwise. The bytes are the
/// frame exactly as captured.
pub enum Image {
    Raw(RawImage),
    Compressed(CompressedImage),
}

impl Image {
    /// `frame` stamped `wall_ns`, in the camera frame `frame_id`.
    pub fn of(frame: &Frame, frame_id: &str, wall_ns: u64) -> Self {
        let data = foxglove::bytes::Bytes::copy_from_slice(&frame.data);
        if frame.format == PixelFormat::Mjpeg {
            return Self::Compressed(CompressedImage {
                timestamp: Some(timestamp(wall_ns)),
                frame_id: frame_id.to_owned(),
                data,
                format: "jpeg".into(),
            });
        }
        Self::Raw(RawImage {
            timestamp: Some(timestamp(wall_ns)),
            frame_id: frame_id.to_owned(),
            width: frame.width,
            height: frame.height,
            encoding: raw_encoding(frame.format).into(),
            step: step(frame.format, frame.width),
            data,
        })
    }
}

/// `foxglove.CameraCalibration` (`plumb_bob`) of a calibration.
pub fn calibration(c: &Camera, frame_id: &str, wall_ns: u64) -> CameraCalibration {
    // ROS and Foxglove put pixel centres on integers; ours are at +0.5.
    let (cx, cy) = (c.cx - 0.5, c.cy - 0.5);
    let d = c.distortion;
    CameraCalibration {
        timestamp: Some(timestamp(wall_ns)),
        frame_id: frame_id.to_owned(),
        width: c.width,
        height: c.height,
        distortion_model: "plumb_bob".into(),
        d: vec![d.k1, d.k2, d.p1, d.p2, d.k3],
        k: vec![c.fx, 0.0, cx, 0.0, c.fy, cy, 0.0, 0.0, 1.0],
        r: vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p: vec![c.fx, 0.0, cx, 0.0, 0.0, c.fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_wall_clock_seconds() {
        let t = timestamp(1_764_000_000_123_456_789);
        assert_eq!((t.sec(), t.nsec()), (1_764_000_000, 123_456_789));
        assert_eq!(timestamp(u64::MAX).sec(), u32::MAX);
        assert_eq!(pixel_format("yuyv"), Some(PixelFormat::Yuyv));
        assert_eq!(pixel_format("jpeg"), None);
    }
}
