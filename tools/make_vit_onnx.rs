//! Writes the RF-DETR keypoint backbone (ViT-S/12 at num_windows = 1, plus its two P4
//! projectors) as an ONNX file with deterministic random weights, for `hailo-edge ops`.
//!
//! ```sh
//! cargo run --example make_vit_onnx -- --side 288 -o vit_288.onnx
//! cargo run -- ops vit_288.onnx
//! ```

use std::path::PathBuf;

use clap::Parser;
use hailo_edge::metrics::ops::builder::encode;
use hailo_edge::metrics::ops::vit::VitSpec;

#[derive(Debug, Parser)]
struct Args {
    /// Input side in pixels (a multiple of the patch).
    #[arg(long, default_value_t = 288)]
    side: usize,
    /// Patch size.
    #[arg(long, default_value_t = 12)]
    patch: usize,
    /// Number of P4 projectors after the ViT (0 = the ViT alone).
    #[arg(long, default_value_t = 2)]
    projectors: usize,
    /// Windows per side (1: the graph the Hailo compiler accepts; 2: as trained).
    #[arg(long, default_value_t = 1)]
    num_windows: usize,
    /// Output file.
    #[arg(short, long)]
    output: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let spec = VitSpec {
        side: args.side,
        patch: args.patch,
        projectors: args.projectors,
        num_windows: args.num_windows,
        ..VitSpec::rfdetr_keypoint(args.side)
    };
    let model = spec
        .build()
        .map_err(|e| anyhow::anyhow!("--side/--patch/--projectors: {e}"))?;
    std::fs::write(&args.output, encode(&model))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", args.output.display()))?;
    let (patch, layers, proj) = spec.analytic_parts();
    println!(
        "wrote {} ({} tokens): closed form {:.3} GMAC = patch {:.3} + layers {:.3} + projectors {:.3}",
        args.output.display(),
        spec.tokens(),
        spec.analytic_macs() as f64 / 1e9,
        patch as f64 / 1e9,
        layers as f64 / 1e9,
        proj as f64 / 1e9
    );
    Ok(())
}
