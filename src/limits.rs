//! The upper bound of every size, count and duration a rig file, a flag, a
//! recording or a device hands the runtime, in one place. Each value is
//! checked against its bound before anything is allocated from it, with
//! checked arithmetic, and a refusal names the key, the value and the bound.
//! docs/limits.md lists them with the same reasons.
//!
//! The bounds of a HEF's streams belong to the HEF reader
//! ([`hef::limits`]): what one DMA descriptor list of a Hailo part carries.

use std::time::Duration;

pub use hef::limits::MAX_STREAM_FRAME_BYTES;

/// Widest and tallest camera frame, in pixels. The largest sensor modes a
/// V4L2 capture device delivers are 8K (7680 x 4320); 8192 leaves room for
/// every such mode and refuses sizes no camera has (100000 x 100000 would be
/// a 30 GB frame).
pub const MAX_CAMERA_SIDE: u32 = 8192;

// Error texts that must be `&'static str` (geom::CameraError) spell the side out.
const _: () = assert!(MAX_CAMERA_SIDE == 8192);

/// Bytes per pixel of the widest pixel format a camera or recording carries
/// (RGBA / XRGB32).
pub const MAX_BYTES_PER_PIXEL: u32 = 4;

/// Bytes of the largest camera frame: [`MAX_CAMERA_SIDE`] squared at
/// [`MAX_BYTES_PER_PIXEL`], 256 MiB.
pub const MAX_FRAME_BYTES: u64 =
    MAX_CAMERA_SIDE as u64 * MAX_CAMERA_SIDE as u64 * MAX_BYTES_PER_PIXEL as u64;

/// Cameras in one rig. Each has its own capture thread, queue and buffer
/// pool; a Hailo-10H running the 288 backbone at its published rate serves
/// about 16 cameras at 30 fps, so twice that is more than one device feeds.
pub const MAX_CAMERAS: usize = 32;

/// Graphs (network groups) in one rig: HailoRT configures at most 8 network
/// groups on one device.
pub const MAX_GRAPHS: usize = 8;

/// Frames per NPU job. HailoRT's batch is a `u16`, but a job's input and
/// output buffers are allocated for the whole batch; 64 frames of the
/// largest camera are the most a host sends a Hailo-10H in one transfer.
pub const MAX_BATCH: u16 = 64;

/// A graph's scheduler threshold, in frames: the scheduler waits for at most
/// this many frames before it runs the graph, so it never exceeds what the
/// rig can have in flight.
pub const MAX_THRESHOLD: u32 = MAX_IN_FLIGHT as u32;

/// A graph's scheduler timeout. HailoRT takes milliseconds; a graph held for
/// longer than a minute has frames older than any camera queue keeps.
pub const MAX_SCHEDULER_TIMEOUT: Duration = Duration::from_secs(60);

/// Decoder worker threads. Each thread loads its own decoder (about 2 MB of
/// graph and arena, more with the ONNX Runtime engine); past the host's cores
/// nothing is gained, and edge hosts have at most a few dozen.
pub const MAX_DECODER_THREADS: usize = 64;

/// Frames past the camera queues and not yet decoded. Each holds a job
/// buffer of its graph's input and its feature maps until decoded; 256 is
/// four largest batches, and more only ages frames in queues.
pub const MAX_IN_FLIGHT: usize = 256;

/// Frames of the active graph between manual switches: a switch costs
/// milliseconds, so more than this many frames per switch never switches in
/// a run of any length.
pub const MAX_FRAMES_PER_SWITCH: u32 = 1 << 20;

/// The longest run `--duration` asks for: one week. Longer runs are
/// unattended deployments, stopped by a signal rather than a timer.
pub const MAX_RUN: Duration = Duration::from_secs(7 * 24 * 3600);

/// Board views a corners file (`calibrate --corners`) may hold: a 60 s capture of four
/// cameras at 120 fps is 28,800, so a million is every frame of over half an hour.
pub const MAX_CALIBRATION_VIEWS: usize = 1_000_000;

/// Pixel noise added to ground-truth keypoints: more than a frame's side
/// moves every keypoint off the frame.
pub const MAX_NOISE_PX: f64 = MAX_CAMERA_SIDE as f64;

/// A duration given in seconds that is negative, NaN, or beyond its bound.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{what}: {} s is not a number of seconds from 0 to {} s (the bound)", number(*seconds), max.as_secs_f64())]
pub struct DurationError {
    /// The key or flag the value came from.
    pub what: String,
    /// The value given.
    pub seconds: f64,
    /// The bound.
    pub max: Duration,
}

/// `value` for a message: as written when short, in exponent form when
/// large (1e300 and not three hundred digits).
pub fn number(value: f64) -> String {
    if value.is_finite() && value.abs() >= 1e9 {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// `seconds` as a [`Duration`], refused when it is not finite, negative or
/// beyond `max` (`Duration::from_secs_f64` panics on 1e300, and 1e19 s never
/// ends); `what` names the key or flag in the error.
///
/// # Errors
/// [`DurationError`] naming `what`, the value and `max`.
pub fn duration(what: &str, seconds: f64, max: Duration) -> Result<Duration, DurationError> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| *d <= max)
        .ok_or_else(|| DurationError {
            what: what.to_owned(),
            seconds,
            max,
        })
}

/// Bytes of a `width` x `height` frame of `channels` bytes per pixel, or
/// `None` when a side exceeds [`MAX_CAMERA_SIDE`], the channels exceed
/// [`MAX_BYTES_PER_PIXEL`], or the product exceeds [`MAX_FRAME_BYTES`]. The
/// product is computed in checked 64-bit arithmetic, so no input wraps.
pub fn frame_bytes(width: u32, height: u32, channels: u32) -> Option<usize> {
    if width > MAX_CAMERA_SIDE || height > MAX_CAMERA_SIDE || channels > MAX_BYTES_PER_PIXEL {
        return None;
    }
    let bytes = u64::from(width)
        .checked_mul(u64::from(height))?
        .checked_mul(u64::from(channels))?;
    if bytes > MAX_FRAME_BYTES {
        return None;
    }
    usize::try_from(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_beyond_their_bound_are_refused_not_panicked() {
        let max = Duration::from_secs(10);
        assert_eq!(duration("d", 2.5, max), Ok(Duration::from_millis(2500)));
        assert_eq!(duration("d", 10.0, max), Ok(max));
        for bad in [1e300, 1e19, 10.001, -1.0, f64::NAN, f64::INFINITY] {
            let err = duration("--duration", bad, max).unwrap_err();
            assert!(err.to_string().starts_with("--duration: "), "{err}");
            assert!(err.to_string().contains("to 10 s"), "{err}");
        }
    }

    #[test]
    fn frame_bytes_are_checked_products() {
        assert_eq!(frame_bytes(640, 480, 3), Some(640 * 480 * 3));
        assert_eq!(
            frame_bytes(MAX_CAMERA_SIDE, MAX_CAMERA_SIDE, MAX_BYTES_PER_PIXEL),
            Some(MAX_FRAME_BYTES as usize)
        );
        // Products that wrap 32 and 64 bits, and sides past the bound.
        assert_eq!(frame_bytes(u32::MAX, u32::MAX, u32::MAX), None);
        assert_eq!(frame_bytes(65536, 65536, 1), None);
        assert_eq!(frame_bytes(MAX_CAMERA_SIDE + 1, 1, 1), None);
        assert_eq!(frame_bytes(1, 1, 5), None);
    }
}
