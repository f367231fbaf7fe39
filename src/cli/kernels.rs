//! `hailo-edge kernels`: per-frame work and time of the hot CPU kernels, next to the
//! Cortex-A76 model (docs/performance.md#aarch64-kernel-model).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;
use hailo_edge::bench::kernels::{render, table, CORTEX_A76_PI5};

#[derive(Debug, Args)]
pub struct KernelsArgs {
    /// Model input sides (multiples of 24); each runs the generated real-width decoder.
    #[arg(long = "side", default_values_t = [288usize, 432])]
    sides: Vec<usize>,
    /// Frames each kernel is timed over (the median is reported).
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// A decoder ONNX to time instead of the generated graph (with exactly one --side).
    #[arg(long)]
    decoder: Option<PathBuf>,
    /// Also write the rows as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

pub fn run(args: KernelsArgs) -> anyhow::Result<ExitCode> {
    if args.decoder.is_some() && args.sides.len() != 1 {
        bail!("--decoder times one graph: give exactly one --side (its input side)");
    }
    let sides: Vec<(usize, Option<PathBuf>)> = args
        .sides
        .iter()
        .map(|&s| (s, args.decoder.clone()))
        .collect();
    let rows = table(&sides, args.runs)?;
    print!("{}", render(&rows, &CORTEX_A76_PI5));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&rows)?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
