//! V4L2 capture: mmap streaming, format and rate negotiation, driver
//! timestamps (CLOCK_MONOTONIC only) and sequence-gap drop counting.
//!
//! Pure ioctl over `libc` with the few `videodev2.h` structures written out in
//! [`sys`]; see there for why no existing crate is used.

mod controls;
mod device;
mod mmap;
mod stamp;
mod stream;
pub mod suggest;
pub mod sys;

use std::path::{Path, PathBuf};

pub use device::{
    device_nodes, fps_to_fract, fract_to_fps, negotiated, Caps, Device, FormatInfo, Negotiated,
    Sizes,
};
pub use mmap::Mapping;
pub use stamp::{capture_time, SequenceTracker, StampError};
pub use stream::{V4l2Config, V4l2Source};

use super::source::SourceError;

/// A V4L2 call or negotiation that failed, naming the device.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum V4l2Error {
    #[error("{}: {context}: {source}", device.display())]
    Io {
        device: PathBuf,
        context: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {what}", device.display())]
    Negotiation { device: PathBuf, what: String },
}

impl V4l2Error {
    fn io(device: &Path, context: &'static str, source: std::io::Error) -> Self {
        Self::Io {
            device: device.to_path_buf(),
            context,
            source,
        }
    }

    /// EINVAL from an ENUM ioctl marks the end of the list.
    fn is_end_of_list(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.raw_os_error() == Some(libc::EINVAL))
    }
}

impl From<V4l2Error> for SourceError {
    fn from(e: V4l2Error) -> Self {
        match e {
            V4l2Error::Io {
                device,
                context,
                source,
            } => SourceError::Io {
                device: device.display().to_string(),
                context,
                source,
            },
            V4l2Error::Negotiation { device, what } => SourceError::Unsupported {
                device: device.display().to_string(),
                what,
            },
        }
    }
}

/// One capture device as `hailo-edge cameras` lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceSummary {
    pub path: PathBuf,
    pub caps: Caps,
    pub formats: Vec<FormatInfo>,
}

/// Every V4L2 video capture device on this machine; nodes that are not
/// capture devices (metadata nodes of UVC cameras, codecs) are skipped, and
/// nodes that cannot be opened are returned as errors.
pub fn list_devices() -> Vec<Result<DeviceSummary, V4l2Error>> {
    device_nodes()
        .into_iter()
        .filter_map(|path| {
            let summarize = || -> Result<Option<DeviceSummary>, V4l2Error> {
                let dev = Device::open(&path)?;
                let caps = dev.caps()?;
                if !caps.capture {
                    return Ok(None);
                }
                let formats = dev.formats()?;
                Ok(Some(DeviceSummary {
                    path: path.clone(),
                    caps,
                    formats,
                }))
            };
            summarize().transpose()
        })
        .collect()
}
