//! `hailo-edge doctor`: check that this box can drive a Hailo part, and say
//! what fixes it when it cannot.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use super::backend::BackendArg;
use anyhow::Context;
use clap::Args;
use hailo_edge::doctor::budget::{backbone_camera, graphs_from_hefs, GraphIo, Rig, ShapeSource};
use hailo_edge::doctor::{run_checks, DoctorConfig, SysRoot};
use hailo_edge::metrics::plan::CameraMode;
use hailo_edge::npu::probe::USB_CARD_ADDR;
use hailo_edge::npu::sim::SimProfile;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// A camera of the rig for the link budget, SIDE@FPS or SIDE@FPS:GRAPH
    /// (repeat the flag for each camera). Default: the demo rig,
    /// 3x288@120 + 1x432@120.
    #[arg(long = "camera", value_name = "SIDE@FPS[:GRAPH]", value_parser = backbone_camera)]
    cameras: Vec<CameraMode>,
    /// A HEF of the rig's graphs (repeat for each): smoke-tested (open,
    /// configure, one frame) on --backend, and each camera feeds the graph
    /// whose input side equals its own in the link budget. Without --hef the
    /// budget uses the RF-DETR backbone's shapes.
    #[arg(long = "hef", value_name = "FILE")]
    hefs: Vec<PathBuf>,
    /// A rig file (as for `hailo-edge run`): its cameras' rates and its graphs'
    /// HEFs give the link budget, instead of --camera and --hef.
    #[arg(long, value_name = "RIG.toml", conflicts_with_all = ["cameras", "hefs"])]
    config: Option<PathBuf>,
    /// What `device.identify` and the --hef smoke tests open.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// The HailoRT device id the runtime is configured with (PCIe BDF, or
    /// the USB part's IP address); a rig file's `device.device_id` otherwise.
    #[arg(long, value_name = "ID")]
    device: Option<String>,
    /// The USB part's hRPC address.
    #[arg(long, default_value_t = USB_CARD_ADDR)]
    card: SocketAddr,
    /// How long to wait for the card's TCP handshake, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    timeout_ms: u64,
    /// Read /sys, /dev, /etc and the library directories under DIR instead
    /// of / (USB devices then come from DIR/sys/bus/usb/devices).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
}

pub fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let cameras = if args.cameras.is_empty() {
        Rig::demo_cameras()
    } else {
        args.cameras
    };
    let mut device_id = args.device.clone();
    let mut smoke_hefs = args.hefs.clone();
    let rig = if let Some(path) = &args.config {
        let config = hailo_edge::rig::RigConfig::load(path)?;
        device_id = device_id.or(config.device.device_id.clone());
        smoke_hefs = config.graphs.iter().map(|g| g.hef.clone()).collect();
        rig_from_config(path, &config)?
    } else if args.hefs.is_empty() {
        Rig::with_backbone(cameras).context("--camera")?
    } else {
        let graphs = graphs_from_hefs(&args.hefs).context("--hef")?;
        Rig::with_graphs(cameras, graphs, ShapeSource::Hef).context("--camera/--hef")?
    };

    let root = match &args.root {
        Some(dir) => {
            anyhow::ensure!(dir.is_dir(), "--root {}: not a directory", dir.display());
            SysRoot::new(dir)
        }
        None => SysRoot::host(),
    };
    let config = DoctorConfig {
        root,
        card: args.card,
        connect_timeout: Duration::from_millis(args.timeout_ms),
        backend: args.backend.backend(device_id.clone(), SimProfile::default),
        device_id,
        hefs: smoke_hefs,
        rig,
    };
    let report = run_checks(&config);

    let text = if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        match &report.budget {
            Some(budget) => format!("{report}\n\n{budget}\n"),
            None => format!("{report}\n"),
        }
    };
    // A closed pipe (`| head`) ends the output, not the run.
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            return Err(e).context("writing the report")
        }
        _ => {}
    }
    Ok(if report.failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Each graph of a rig file with the side of its HEF's input and the HEF's streams.
pub(super) fn graph_sides<'a>(
    path: &Path,
    config: &'a hailo_edge::rig::RigConfig,
) -> anyhow::Result<Vec<(&'a hailo_edge::rig::config::GraphConfig, u32, Vec<GraphIo>)>> {
    config
        .graphs
        .iter()
        .map(|graph| {
            let io = graphs_from_hefs(std::slice::from_ref(&graph.hef))
                .with_context(|| format!("{}: graph `{}`", path.display(), graph.name))?;
            let side = io.first().map(|g| g.input_side).with_context(|| {
                format!(
                    "{}: {} has no network group",
                    path.display(),
                    graph.hef.display()
                )
            })?;
            Ok((graph, side, io))
        })
        .collect()
}

/// The budget's rig from a rig file: each camera at its rate into the input
/// side of its graph's HEF.
fn rig_from_config(path: &Path, config: &hailo_edge::rig::RigConfig) -> anyhow::Result<Rig> {
    let mut graphs = Vec::new();
    let mut sides = Vec::new();
    for (graph, side, io) in graph_sides(path, config)? {
        sides.push((graph.name.as_str(), side));
        graphs.extend(io);
    }
    let cameras = config
        .cameras
        .iter()
        .map(|c| {
            let side = sides
                .iter()
                .find(|(name, _)| *name == c.graph)
                .map(|&(_, side)| side)
                .expect("the rig file's validation ties every camera to a graph");
            CameraMode {
                side,
                fps: c.fps,
                graph: Some(c.graph.clone()),
            }
        })
        .collect();
    Rig::with_graphs(cameras, graphs, ShapeSource::Hef)
        .with_context(|| format!("{}: cameras and graphs", path.display()))
}
