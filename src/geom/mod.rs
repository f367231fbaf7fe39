//! Geometry and time shared by every stage: the one camera model and the clocks.
//!
//! | module | what it does |
//! |---|---|
//! | [`camera`] | the calibrated pinhole camera with OpenCV distortion, and its Jacobians |
//! | [`time`] | the monotonic clock stamps are taken on, CPU-time clocks, a mock clock |

pub mod camera;
pub mod time;

pub use camera::{Camera, CameraError, Distortion};
