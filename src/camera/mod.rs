//! Camera sources (V4L2, synthetic, replay), frames and their pool, calibration files and the
//! MCAP recording format. Everything after capture is a stage of the rig ([`crate::rig::stage`]).
//!
//! | module | what it does |
//! |---|---|
//! | [`source`] | the [`Source`] trait every camera implements |
//! | [`stop`] | the stop request every source wait ends on |
//! | [`frame`], [`pool`] | [`Frame`] and the buffer pool it lives in |
//! | [`calib`] | OpenCV calibration files |
//! | [`controls`] | camera controls from the rig file: set, read back, reported |
//! | [`record`], [`replay`] | the MCAP recording format: writing and playing back |
//! | `v4l2` | V4L2 mmap capture (64-bit Linux) |

pub mod calib;
pub mod controls;
pub mod fault;
pub mod frame;
pub mod pool;
pub mod record;
pub mod replay;
pub mod source;
pub mod stop;
pub mod synthetic;
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub mod v4l2;

pub use frame::{CameraId, Frame, FrameError, PixelFormat, TimestampSource};
pub use pool::{BufferPool, PoolStats, PooledBuffer};
pub use source::{take, Hooked, Source, SourceError, SourceInfo};
pub use stop::Stop;
