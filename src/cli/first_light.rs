//! `hailo-edge first-light`: doctor, gate, bench, switch cost and plan in order, stopping at
//! the first failure with its fix; one report and the plots.

use std::path::PathBuf;
use std::process::ExitCode;

use super::backend::BackendArg;
use anyhow::Context;
use clap::Args;
use hailo_edge::doctor::budget::{backbone_camera, Rig};
use hailo_edge::first_light::{self, FirstLightConfig};
use hailo_edge::metrics::plan::CameraMode;
use hailo_edge::metrics::utilisation_source::UtilisationSource;
use hailo_edge::npu::sim::{DeviceProfile, SimProfile};

#[derive(Debug, Args)]
pub struct FirstLightArgs {
    /// A HEF of the rig (repeat: body then face); the first two run as the pair.
    #[arg(long = "hef", value_name = "FILE", required = true)]
    hefs: Vec<PathBuf>,
    /// The reference ONNX of a HEF, for the gate (repeatable).
    #[arg(long = "onnx", value_name = "FILE")]
    onnx: Vec<PathBuf>,
    /// A camera of the rig for the link budget and the plan, SIDE@FPS (repeatable). Default:
    /// 3x288@120 + 1x432@120.
    #[arg(long = "camera", value_name = "SIDE@FPS[:GRAPH]", value_parser = backbone_camera)]
    cameras: Vec<CameraMode>,
    /// Which device.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendArg,
    /// HailoRT device id (PCIe BDF or the USB part's IP address).
    #[arg(long, value_name = "ID")]
    device: Option<String>,
    /// Run time of each bench point, seconds (device time on the simulator's virtual clock).
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    bench_seconds: f64,
    /// Cycles of each phase of the switch-cost inference.
    #[arg(long, default_value_t = 200, value_name = "N")]
    switch_cycles: u32,
    /// Read /sys, /dev and /etc under DIR in the doctor step.
    #[arg(long, value_name = "DIR")]
    doctor_root: Option<PathBuf>,
    /// The simulator's utilisation (`--backend sim`): `assumed` (0.30), a fraction,
    /// `published` (the model zoo's figures by batch) or a report file.
    #[arg(
        long,
        default_value = "assumed",
        value_name = "assumed|FRACTION|published|FILE"
    )]
    utilisation: UtilisationSource,
    /// Output directory (created): first-light.json, first-light.md, bench/ and the plots.
    #[arg(long, default_value = "first-light-out", value_name = "DIR")]
    out: PathBuf,
}

pub fn run(args: FirstLightArgs) -> anyhow::Result<ExitCode> {
    let curve = args
        .utilisation
        .simulator_curve()
        .with_context(|| format!("--utilisation {}", args.utilisation))?;
    let backend = args.backend.backend(args.device.clone(), || {
        SimProfile::new(DeviceProfile::hailo10h().with_utilisation(curve))
    });
    let config = FirstLightConfig {
        hefs: args.hefs,
        onnx: args.onnx,
        out: args.out.clone(),
        backend,
        cameras: if args.cameras.is_empty() {
            Rig::demo_cameras()
        } else {
            args.cameras
        },
        bench_seconds: args.bench_seconds,
        switch_cycles: args.switch_cycles,
        doctor_root: args.doctor_root,
    };
    let report = first_light::run(config, &mut first_light::default_steps())?;
    println!("device: {}", report.device);
    for s in &report.steps {
        println!("{:<12} {}", s.name, s.outcome.status.summary(false));
    }
    let (measured, modelled): (Vec<_>, Vec<_>) = report
        .figures()
        .partition(|f| f.label == first_light::Label::Measured);
    println!(
        "figures: {} measured on the part, {} modelled or assumed",
        measured.len(),
        modelled.len()
    );
    println!(
        "report: {} and {}",
        args.out.join("first-light.json").display(),
        args.out.join("first-light.md").display()
    );
    if let Some(fix) = report.fix() {
        eprintln!(
            "error: first-light stopped at {}; fix: {fix}",
            report.stopped_at.unwrap_or("a step")
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
