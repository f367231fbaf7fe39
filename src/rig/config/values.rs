//! The closed sets a rig file chooses from that have no type elsewhere: the
//! backend to open, the simulator profile, where the fit's keypoints come
//! from, how a frame is fitted to its graph and where a camera's frames come
//! from. Each parses from the spelling the rig file uses, so an unknown value
//! fails while the file is read, with the allowed values named.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::npu::sim::DeviceProfile;

/// The NPU backend a rig asks for (`device.backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// The real part when present, else the simulator.
    #[default]
    Auto,
    /// HailoRT, on the device `device.device_id` names (any when absent).
    HailoRt,
    /// The simulator, with `device.profile` and `device.clock`.
    Sim,
}

impl BackendChoice {
    /// The spelling in a rig file.
    pub fn key(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::HailoRt => "hailort",
            Self::Sim => "sim",
        }
    }
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// The simulated device's figures: one set of names for the rig file's `device.profile` and
/// every command's `--profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SimProfileName {
    /// A Hailo-10H on PCIe Gen3 x4 (also spelt `hailo10h`).
    #[default]
    #[serde(alias = "hailo10h")]
    #[value(alias = "hailo10h")]
    Hailo10hPcie,
    /// The USB part: the same chip reached over USB-Ethernet.
    Hailo10hUsb,
    /// A Hailo-10H with the link's transfer time left out (compute only).
    Hailo10hNoLink,
    /// A device that takes no time, for measuring the host's own costs.
    ZeroTime,
}

impl SimProfileName {
    /// The device figures this name stands for.
    pub fn device_profile(self) -> DeviceProfile {
        match self {
            Self::Hailo10hPcie => DeviceProfile::hailo10h(),
            Self::Hailo10hUsb => DeviceProfile::hailo10h_usb(),
            Self::Hailo10hNoLink => {
                let mut p = DeviceProfile::hailo10h().with_link(crate::npu::sim::Link::free());
                p.name = "hailo10h-no-link".into();
                p
            }
            Self::ZeroTime => DeviceProfile::zero_time(),
        }
    }
}

/// Where the fit's 2D keypoints come from (`body.keypoints`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeypointsFrom {
    /// The decoder's keypoints of each view.
    #[default]
    Decoder,
    /// The synthetic scene's own keypoints plus `body.noise_px` of noise
    /// (synthetic cameras only).
    GroundTruth,
}

/// How a frame is fitted to its square graph input (`camera[i].fit`); a
/// letterbox pads with the camera's `pad` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FitMode {
    /// Scale the whole frame in and pad the rest.
    #[default]
    Letterbox,
    /// Cut the centre square; nothing is padded.
    Crop,
}

/// Where a camera's frames come from (`camera[i].source`): `synthetic`,
/// `v4l2:/dev/videoN` or `replay:FILE.mcap`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum CameraSource {
    /// A camera rendering the synthetic scene.
    Synthetic,
    /// A V4L2 capture device.
    V4l2(PathBuf),
    /// A camera's track of an MCAP recording.
    Replay(PathBuf),
}

impl CameraSource {
    /// Whether this camera renders the synthetic scene (and so knows the
    /// ground truth).
    pub fn is_synthetic(&self) -> bool {
        match self {
            Self::Synthetic => true,
            Self::V4l2(_) | Self::Replay(_) => false,
        }
    }
}

/// A `camera[i].source` value that names no source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CameraSourceError {
    #[error("`{0}` is not one of: synthetic, v4l2:PATH, replay:PATH")]
    UnknownKind(String),
    #[error("`{0}` needs a path: `{0}:PATH`")]
    NoPath(String),
}

impl TryFrom<String> for CameraSource {
    type Error = CameraSourceError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        let (kind, rest) = match text.split_once(':') {
            Some((kind, rest)) => (kind, Some(rest)),
            None => (text.as_str(), None),
        };
        let path = || match rest {
            Some(p) if !p.is_empty() => Ok(PathBuf::from(p)),
            _ => Err(CameraSourceError::NoPath(kind.to_owned())),
        };
        match kind {
            "synthetic" if rest.is_none() => Ok(Self::Synthetic),
            "v4l2" => Ok(Self::V4l2(path()?)),
            "replay" => Ok(Self::Replay(path()?)),
            _ => Err(CameraSourceError::UnknownKind(text.clone())),
        }
    }
}

impl fmt::Display for CameraSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Synthetic => f.write_str("synthetic"),
            Self::V4l2(p) => write!(f, "v4l2:{}", p.display()),
            Self::Replay(p) => write!(f, "replay:{}", p.display()),
        }
    }
}

impl From<CameraSource> for String {
    fn from(source: CameraSource) -> Self {
        source.to_string()
    }
}

/// Where bodies and views are published (`output.publish`, `run --publish`):
/// `zenoh` or `zenoh:ENDPOINT` (an endpoint to listen on, e.g. `tcp/0.0.0.0:7447`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PublishTarget {
    Zenoh { endpoint: Option<String> },
}

/// An `output.publish` value that names no target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not `zenoh` or `zenoh:ENDPOINT`")]
pub struct PublishTargetError(pub String);

impl TryFrom<String> for PublishTarget {
    type Error = PublishTargetError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        match text.split_once(':') {
            None if text == "zenoh" => Ok(Self::Zenoh { endpoint: None }),
            Some(("zenoh", e)) if !e.is_empty() => Ok(Self::Zenoh {
                endpoint: Some(e.to_owned()),
            }),
            _ => Err(PublishTargetError(text)),
        }
    }
}

impl std::str::FromStr for PublishTarget {
    type Err = PublishTargetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::try_from(s.to_owned())
    }
}

impl fmt::Display for PublishTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Zenoh { endpoint: None } => f.write_str("zenoh"),
            Self::Zenoh { endpoint: Some(e) } => write!(f, "zenoh:{e}"),
        }
    }
}

impl From<PublishTarget> for String {
    fn from(target: PublishTarget) -> Self {
        target.to_string()
    }
}
