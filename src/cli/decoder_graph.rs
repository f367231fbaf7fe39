//! `hailo-edge decoder-graph`: write a generated RF-DETR keypoint host graph to a file.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use hailo_edge::decode::graph::{HostGraph, Width, DEFAULT_SEED};
use hailo_edge::decode::{KeypointSlots, Split};
use hailo_edge::text::dims;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SplitArg {
    /// Inputs `features`, `cross_attn_features` (the projectors run on the device).
    Design,
    /// Inputs `tap0` .. `tap3` (the projectors run on the host).
    Taps,
}

#[derive(Debug, Args)]
pub struct DecoderGraphArgs {
    /// Model input side in pixels (a multiple of 24).
    #[arg(long)]
    side: usize,
    /// Which maps the graph reads.
    #[arg(long, value_enum, default_value = "design")]
    split: SplitArg,
    /// Query slots that run the keypoint branch: a count, or `all` (upstream).
    #[arg(long, default_value = "1")]
    keypoint_slots: KeypointSlots,
    /// Reduced widths (small test fixtures; their cost says nothing about the real model).
    #[arg(long)]
    reduced: bool,
    /// Seed of the random weights.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Output ONNX file.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
}

pub fn run(args: DecoderGraphArgs) -> anyhow::Result<ExitCode> {
    let graph = HostGraph {
        side: args.side,
        width: if args.reduced {
            Width::Reduced
        } else {
            Width::Real
        },
        split: match args.split {
            SplitArg::Design => Split::Design,
            SplitArg::Taps => Split::Taps,
        },
        keypoint_slots: args.keypoint_slots,
        seed: args.seed,
    };
    let encoded = graph.generate()?;
    std::fs::write(&args.output, &encoded.bytes)
        .with_context(|| format!("writing {}", args.output.display()))?;
    println!("{}: {}", args.output.display(), graph.file_name());
    println!(
        "  {} width, {}, keypoint slots {}, seed {}",
        graph.width,
        graph.split.describe(),
        graph.keypoint_slots,
        graph.seed
    );
    for (name, shape) in graph.inputs() {
        println!("  input  {name} {}", dims(&shape));
    }
    for (name, shape) in graph.outputs() {
        println!("  output {name} {}", dims(&shape));
    }
    println!(
        "  {:.2} M parameters, {:.2} MB",
        encoded.parameters as f64 / 1e6,
        encoded.bytes.len() as f64 / 1e6
    );
    Ok(ExitCode::SUCCESS)
}
