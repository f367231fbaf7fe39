//! `hailo-edge gate`: a HEF on the device against its reference ONNX on the same frames;
//! exit 1 when an output breaks the bound.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::backend::BackendArg;
use clap::Args;
use hailo_edge::camera::v4l2::V4l2Config;
use hailo_edge::camera::{CameraId, PixelFormat};
use hailo_edge::gate::{self, Bound, FrameSource, GateConfig, GateFile};
use hailo_edge::npu::sim::{DeviceProfile, SimProfile, TimeBase};

#[derive(Debug, Args)]
pub struct GateArgs {
    /// The HEF to run on the device (its first network group).
    #[arg(long, value_name = "FILE")]
    hef: PathBuf,
    /// The reference ONNX: NHWC float input, outputs named like the HEF's.
    #[arg(long, value_name = "FILE")]
    onnx: PathBuf,
    /// An image file, PNG or JPEG (repeatable; one frame each).
    #[arg(long = "image", value_name = "FILE")]
    images: Vec<PathBuf>,
    /// An MCAP recording made by `run`.
    #[arg(long, value_name = "FILE", conflicts_with = "images")]
    recording: Option<PathBuf>,
    /// The recording's camera (default: its first).
    #[arg(long, value_name = "N", requires = "recording")]
    camera: Option<u32>,
    /// A V4L2 camera to capture from.
    #[arg(long, value_name = "DEVICE", conflicts_with_all = ["images", "recording"])]
    v4l2: Option<PathBuf>,
    /// The V4L2 camera's pixel format (yuyv, nv12, grey, mjpeg, rgb24).
    #[arg(long, default_value = "yuyv", requires = "v4l2")]
    pixel_format: String,
    /// The V4L2 camera's frame size.
    #[arg(long, default_value = "640x480", value_name = "WxH", requires = "v4l2")]
    size: String,
    /// The V4L2 camera's frame rate.
    #[arg(long, default_value_t = 30.0, requires = "v4l2")]
    fps: f64,
    /// Frames from a recording, camera or the synthetic subject.
    #[arg(long, default_value_t = 4)]
    frames: usize,
    /// Which device.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// HailoRT device id (PCIe BDF or the USB part's address).
    #[arg(long)]
    device_id: Option<String>,
    /// On the simulator, the ONNX its reference path runs (default: --onnx).
    #[arg(long, value_name = "FILE")]
    sim_onnx: Option<PathBuf>,
    /// A gate file (TOML: [bound] rel, max_steps; [preprocess]); flags override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Largest relative error ‖device − reference‖₂ / ‖reference‖₂ [default: 0.1].
    #[arg(long, value_name = "R")]
    rel_bound: Option<f64>,
    /// Largest |difference| of one element, in quantisation steps [default: 32].
    #[arg(long, value_name = "STEPS")]
    max_steps: Option<f64>,
    /// Seconds one frame may take on the device.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Where to write the JSON report.
    #[arg(long, default_value = "gate.json", value_name = "FILE")]
    report: PathBuf,
}

fn frames(args: &GateArgs) -> anyhow::Result<FrameSource> {
    if !args.images.is_empty() {
        return Ok(FrameSource::Images(args.images.clone()));
    }
    if let Some(path) = &args.recording {
        return Ok(FrameSource::Recording {
            path: path.clone(),
            camera: args.camera,
            frames: args.frames,
        });
    }
    if let Some(path) = &args.v4l2 {
        let format = PixelFormat::from_name(&args.pixel_format)
            .ok_or_else(|| anyhow::anyhow!("--pixel-format {}: unknown", args.pixel_format))?;
        let (w, h) = args
            .size
            .split_once('x')
            .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
            .ok_or_else(|| anyhow::anyhow!("--size {}: expected WxH, e.g. 640x480", args.size))?;
        let config = V4l2Config {
            path: path.clone(),
            camera: CameraId(0),
            format,
            width: w,
            height: h,
            fps: args.fps,
            buffers: 4,
            timeout: Duration::from_secs(2),
            controls: Default::default(),
        };
        return Ok(FrameSource::Camera {
            config,
            frames: args.frames,
        });
    }
    Ok(FrameSource::Synthetic {
        frames: args.frames,
    })
}

fn config(args: &GateArgs) -> anyhow::Result<GateConfig> {
    let mut config = GateConfig::new(&args.hef, &args.onnx, frames(args)?);
    if let Some(path) = &args.config {
        config = GateFile::load(path)?.apply(config);
    }
    let bound = Bound {
        rel: args.rel_bound.unwrap_or(config.bound.rel),
        max_steps: args.max_steps.unwrap_or(config.bound.max_steps),
    };
    config.bound = bound;
    config.backend = args.backend.backend(args.device_id.clone(), || {
        SimProfile::new(DeviceProfile::hailo10h()).with_clock(TimeBase::Virtual)
    });
    config.sim_onnx = args.sim_onnx.clone();
    config.timeout = Duration::try_from_secs_f64(args.timeout)
        .map_err(|_| anyhow::anyhow!("--timeout {}: not a duration in seconds", args.timeout))?;
    Ok(config)
}

pub fn run(args: GateArgs) -> anyhow::Result<ExitCode> {
    let report = gate::run(&config(&args)?)?;
    for line in report.lines() {
        println!("{line}");
    }
    report.write_json(&args.report)?;
    println!("report: {}", args.report.display());
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
