//! Camera sources (V4L2, synthetic, replay), frames, preprocessing into HEF
//! inputs, multi-camera sync and recording.
//!
//! | module | what it does |
//! |---|---|
//! | [`source`] | the [`Source`] trait every camera implements |
//! | [`frame`], [`pool`] | [`Frame`] and the buffer pool it lives in |
//! | [`preprocess`] | crop/letterbox, resize, colour conversion, quantisation |
//! | `v4l2` | V4L2 mmap capture (64-bit Linux) |

pub mod calib;
pub mod fault;
pub mod frame;
pub mod pool;
pub mod preprocess;
pub mod record;
pub mod replay;
pub mod runner;
pub mod source;
pub mod sync;
pub mod synthetic;
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub mod v4l2;

pub use frame::{CameraId, Frame, FrameError, GroundTruth, PixelFormat, TimestampSource};
pub use pool::{BufferPool, PoolStats, PooledBuffer};
pub use source::{Source, SourceError, SourceInfo};
