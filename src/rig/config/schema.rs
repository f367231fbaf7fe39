//! The tables of a rig file and their defaults.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::values::{BackendChoice, CameraSource, FitMode, KeypointsFrom, SimProfileName};
use crate::camera::controls::ControlValue;
use crate::camera::PixelFormat;
use crate::decode::Engine;
use crate::metrics::utilisation_source::UtilisationSource;
use crate::npu::sim::TimeBase;
use crate::npu::GroupId;

/// Which NPU to open and how the simulator keeps time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    /// `auto` (the real part when present, else the simulator), `hailort` or `sim`.
    #[serde(default)]
    pub backend: BackendChoice,
    /// HailoRT device id: a PCIe BDF, or the card's IP for the USB part.
    #[serde(default)]
    pub device_id: Option<String>,
    /// Simulator profile: `hailo10h-pcie` (or `hailo10h`), `hailo10h-usb`, `hailo10h-no-link`
    /// or `zero-time`.
    #[serde(default)]
    pub profile: SimProfileName,
    /// Simulator clock: `realtime` or `virtual`.
    #[serde(default = "default_clock")]
    pub clock: TimeBase,
    /// The simulator's utilisation: `assumed` (0.30, the default), a fraction, `published`
    /// (the model zoo's figures by batch) or a report file; the same spellings as
    /// `plan --utilisation`.
    #[serde(default)]
    pub utilisation: UtilisationSource,
    /// VDevice group id: HailoRT's default "UNIQUE" gives the device to one
    /// process; processes opening it with one other id (e.g. "SHARED") share it.
    #[serde(default)]
    pub group_id: Option<GroupId>,
    /// Map the pooled frame buffers for DMA once (default true).
    #[serde(default = "default_dma_map")]
    pub dma_map: bool,
}

fn default_dma_map() -> bool {
    true
}

/// A rig runs at the cameras' pace unless it says otherwise.
fn default_clock() -> TimeBase {
    TimeBase::RealTime
}

impl Default for DeviceConfig {
    fn default() -> Self {
        Self {
            backend: BackendChoice::default(),
            device_id: None,
            profile: SimProfileName::default(),
            clock: default_clock(),
            utilisation: UtilisationSource::default(),
            group_id: None,
            dma_map: default_dma_map(),
        }
    }
}

/// How the two graphs share the NPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "mode", rename_all = "snake_case")]
pub enum SwitchingConfig {
    /// HailoRT's model scheduler decides (priority, threshold, timeout per graph).
    #[default]
    Scheduler,
    /// The application activates and deactivates graphs itself (scheduler NONE),
    /// switching after `frames_per_switch` frames of the active graph.
    Manual { frames_per_switch: u32 },
}

/// One compiled graph (HEF) and its decoder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphConfig {
    pub name: String,
    pub hef: PathBuf,
    /// An ONNX of the same graph, run on the CPU by the simulator for real outputs.
    #[serde(default)]
    pub reference_onnx: Option<PathBuf>,
    /// The host part of the model for this graph's features. Without it the rig runs the
    /// generated real-width RF-DETR host graph for the HEF's side and split (random
    /// weights: real cost, meaningless keypoints).
    #[serde(default)]
    pub decoder_onnx: Option<PathBuf>,
    /// HEF outputs whose last name component is not the decoder input they feed:
    /// `"<HEF output>" = "<decoder input>"` (`[graph.inputs]`). Outputs and inputs of
    /// the same name pair without an entry.
    #[serde(default)]
    pub inputs: std::collections::BTreeMap<String, String>,
    /// Frames per NPU job; default: the number of cameras on this graph.
    #[serde(default)]
    pub batch: Option<u16>,
    /// Scheduler priority, 0..=31 (HailoRT's default 16).
    #[serde(default = "default_priority")]
    pub priority: u8,
    /// Scheduler threshold in frames; default: the graph's camera count.
    #[serde(default)]
    pub threshold: Option<u32>,
    /// Scheduler timeout in ms; default: half the shortest frame period.
    #[serde(default)]
    pub timeout_ms: Option<f64>,
}

/// HailoRT's own default scheduler priority.
pub(super) fn default_priority() -> u8 {
    16
}

/// One camera.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraConfig {
    pub name: String,
    /// `synthetic`, `v4l2:/dev/videoN` or `replay:FILE.mcap`.
    pub source: CameraSource,
    pub width: u32,
    pub height: u32,
    pub fps: f64,
    /// The graph this camera feeds.
    pub graph: String,
    /// Pixel format asked of a V4L2 device (`yuyv`, `mjpeg`, `nv12`, `grey`,
    /// `rgb24`), or synthesised (default `yuyv`; `mjpeg` cannot be synthesised).
    #[serde(default)]
    pub format: Option<PixelFormat>,
    /// How the frame is fitted to the square graph input: `letterbox` or `crop`.
    #[serde(default)]
    pub fit: FitMode,
    /// Pad value for letterboxing.
    #[serde(default)]
    pub pad: u8,
    /// An OpenCV FileStorage calibration (YAML or JSON) for this camera.
    #[serde(default)]
    pub calibration_file: Option<PathBuf>,
    /// V4L2 controls set before streaming: `exposure_us`, `gain`,
    /// `auto_exposure`, `power_line_hz`, or any control by the name
    /// `v4l2-ctl --list-ctrls` prints (see docs/cameras.md).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub controls: BTreeMap<String, ControlValue>,
    /// This camera defines the world: its calibration file may lack R and T (as
    /// `calibrateCamera` writes), and then the camera sits at the origin looking along +z.
    /// Without it, a file with no extrinsics is refused in a rig of several cameras.
    /// At most one camera has it, and it needs `calibration_file`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub world_origin: bool,
}

/// The CPU decoder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecoderConfig {
    /// `tract` or `ort`.
    #[serde(default)]
    pub engine: Engine,
    /// Decoder worker threads.
    #[serde(default = "default_threads")]
    pub threads: usize,
    /// Most frames past the camera queues and not yet decoded (batching, on the
    /// device, waiting for or in a decoder). Default: one batch per graph plus
    /// one frame per decoder thread, which keeps the device and every decoder
    /// busy while frames never age in a queue behind a slow stage: when a stage
    /// cannot keep up, the frames wait and drop at the camera queues, oldest
    /// first. Raise it when the device is the bottleneck and the decoder fast,
    /// so the device's next batch is ready while the last one is decoded.
    #[serde(default)]
    pub in_flight: Option<usize>,
    /// Niceness of the decoder threads (0-19; 0 leaves them as they are). A
    /// decoder that saturates the cores must not starve the capture threads,
    /// which have to dequeue driver buffers in time, or the NPU stage, which
    /// keeps the device fed: those run at normal priority.
    #[serde(default = "default_nice")]
    pub nice: i32,
    /// Keep freed memory in the process (default true). The `hailo-edge run`
    /// command then sets glibc's malloc, once and for the whole process, to
    /// keep the blocks a decoder frees between frames instead of returning
    /// them to the kernel, which saves a tract decoder thousands of page
    /// faults per frame; see [`crate::rig::alloc`].
    #[serde(default = "yes")]
    pub retain_memory: bool,
    /// Query slots that run the keypoint branch: a number (default 1, a one-subject
    /// rig) or `"all"`. A decoder file has its own count; when this key is set and
    /// the file's differs, the rig is refused.
    #[serde(default)]
    pub keypoint_slots: Option<crate::decode::KeypointSlots>,
}

fn default_threads() -> usize {
    1
}

/// Decoders yield to the capture threads and the NPU stage.
pub(super) fn default_nice() -> i32 {
    5
}

fn yes() -> bool {
    true
}

impl Default for DecoderConfig {
    fn default() -> Self {
        Self {
            engine: Engine::default(),
            threads: default_threads(),
            in_flight: None,
            nice: default_nice(),
            retain_memory: true,
            keypoint_slots: None,
        }
    }
}

/// The body fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyConfig {
    /// A converted ANNY model; the embedded one when absent.
    #[serde(default)]
    pub model: Option<PathBuf>,
    /// Apply the joint limits during the fit.
    #[serde(default = "yes")]
    pub limits: bool,
    /// Where the fit's 2D keypoints come from: `decoder`, or `ground_truth`
    /// (synthetic cameras only: their keypoints plus noise).
    #[serde(default)]
    pub keypoints: KeypointsFrom,
    /// Pixel noise added to ground-truth keypoints.
    #[serde(default = "default_noise")]
    pub noise_px: f64,
    /// A point of the vertical line the subject stands on, in the calibrations' world
    /// frame and `unit`, for the framing precision; default: the point nearest all
    /// cameras' optical axes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<[f64; 3]>,
}

fn default_noise() -> f64 {
    2.0
}

impl Default for BodyConfig {
    fn default() -> Self {
        Self {
            model: None,
            limits: true,
            keypoints: KeypointsFrom::default(),
            noise_px: default_noise(),
            subject: None,
        }
    }
}

/// Where results go.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// JSON lines of per-frame results.
    #[serde(default)]
    pub jsonl: Option<PathBuf>,
    /// The final report.
    #[serde(default)]
    pub report: Option<PathBuf>,
    /// Record frames and results into this MCAP file.
    #[serde(default)]
    pub record: Option<PathBuf>,
    /// Which frames the recording holds: `admitted` (the frames the NPU stage
    /// takes, losslessly) or `all` (every captured frame; one the recorder has no
    /// room for is counted as not recorded).
    #[serde(default)]
    pub record_frames: RecordFrames,
    /// Serve the recording's channels live over the Foxglove WebSocket protocol
    /// on this address (`127.0.0.1:8765`; `0.0.0.0:8765` for the LAN).
    #[serde(default)]
    pub foxglove: Option<std::net::SocketAddr>,
    /// Publish bodies and views: `zenoh` or `zenoh:ENDPOINT` (docs/zenoh.md).
    #[serde(default)]
    pub publish: Option<super::PublishTarget>,
    /// The rig's name in the published keys (`hailo-edge/NAME/...`); default the host name.
    #[serde(default)]
    pub publish_as: Option<String>,
}

/// Which frames a recording holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum RecordFrames {
    /// The frames the NPU stage takes from the camera queues.
    #[default]
    Admitted,
    /// Every frame a camera delivers.
    All,
}

impl RecordFrames {
    /// The name in rig files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Admitted => "admitted",
            Self::All => "all",
        }
    }
}
