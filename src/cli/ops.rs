//! `hailo-edge ops`: MACs per node of an ONNX model, with full shape inference; for a HEF, the
//! computational ops its network groups carry.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use hailo_edge::metrics::ops::{self, InputShape, OpsReport};

/// Exit status when the count is incomplete (some node could not be resolved).
pub const EXIT_INCOMPLETE: u8 = 2;

#[derive(Debug, Args)]
pub struct OpsArgs {
    /// The ONNX model, or a HEF (prints the computational ops of each network group).
    model: PathBuf,
    /// Pin a graph input's shape: NAME=D1xD2x... (repeatable), e.g. image=1x3x288x288.
    #[arg(long = "input", value_name = "NAME=SHAPE")]
    inputs: Vec<String>,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// How many of the largest nodes to list.
    #[arg(long, default_value_t = 10)]
    top: usize,
}

pub fn run(args: OpsArgs) -> anyhow::Result<ExitCode> {
    if args
        .model
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("hef"))
    {
        return run_hef(&args);
    }
    let inputs = args
        .inputs
        .iter()
        .map(|s| s.parse::<InputShape>())
        .collect::<Result<Vec<_>, _>>()?;
    let report = ops::count_file(&args.model, &inputs)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        print_text(&report, args.top);
    }
    Ok(if report.is_complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_INCOMPLETE)
    })
}

/// Ops of a HEF: exit 0 when every network group carries them, [`EXIT_INCOMPLETE`] otherwise.
fn run_hef(args: &OpsArgs) -> anyhow::Result<ExitCode> {
    let graphs = ops::hef::read_hef(&args.model)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&graphs)?);
    } else {
        println!("HEF: {}", args.model.display());
        println!("convention: ops = 2 x MAC (the HEF's computational_ops, as HailoRT's get_computational_ops returns it)");
        for g in &graphs {
            let side = g.side.map_or_else(|| "-".to_owned(), |s| s.to_string());
            match g.ops_per_frame {
                Some(ops) => println!(
                    "{}: side {side}, {:.3} GOPS = {:.3} GMAC per frame, precision {} ({})",
                    g.name,
                    ops as f64 / 1e9,
                    ops as f64 / 2e9,
                    g.precision,
                    g.precision_basis
                ),
                None => println!(
                    "{}: side {side}, the HEF carries no computational ops (count the ONNX with `hailo-edge ops MODEL.onnx`)",
                    g.name
                ),
            }
        }
    }
    Ok(if graphs.iter().all(|g| g.ops_per_frame.is_some()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_INCOMPLETE)
    })
}

fn print_text(report: &OpsReport, top: usize) {
    println!("model: {}", report.source);
    println!("convention: {}", ops::CONVENTION);
    println!();
    println!(
        "{:<24} {:>6} {:>12} {:>7} {:>14}",
        "op type", "nodes", "GMAC", "share", "out elems (M)"
    );
    let total = report.total_macs();
    for t in report.by_op_type() {
        let share = if total > 0 {
            100.0 * t.macs as f64 / total as f64
        } else {
            0.0
        };
        let gmac = if t.mac_op {
            format!("{:.4}", t.macs as f64 / 1e9)
        } else {
            "other".into()
        };
        println!(
            "{:<24} {:>6} {:>12} {:>6.1}% {:>14.3}",
            t.op_type,
            t.nodes,
            gmac,
            share,
            t.output_elements as f64 / 1e6
        );
    }
    let top_nodes = report.top(top);
    if !top_nodes.is_empty() {
        println!();
        println!("top {} nodes by MACs:", top_nodes.len());
        for n in top_nodes {
            println!(
                "  {:<40} {:<14} {:>10.4} GMAC",
                n.name,
                n.op_type,
                n.macs as f64 / 1e9
            );
        }
    }
    println!();
    if report.is_complete() {
        println!(
            "total: {:.4} GMAC ({:.4} GOPS) over {} nodes, complete",
            total as f64 / 1e9,
            2.0 * total as f64 / 1e9,
            report.nodes.len()
        );
    } else {
        println!(
            "total: INCOMPLETE, at least {:.4} GMAC; {} node(s) not resolved:",
            total as f64 / 1e9,
            report.unresolved.len()
        );
        for u in &report.unresolved {
            println!("  {} ({}): {}", u.name, u.op_type, u.reason);
        }
        if let Some(e) = &report.analysis_error {
            println!("shape analysis: {e}");
        }
    }
}
