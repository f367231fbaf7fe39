//! Per-op time of the decoder graph in tract: where the time goes.
//!
//! ```sh
//! cargo run --release --example profile_decoder -- model.onnx [--runs N] [--stock] [--nodes N]
//! ```
//!
//! Runs the optimised plan with a timing wrapper around every node and prints the total
//! per op type (and the slowest nodes), averaged over the runs, in thread CPU time.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use hailo_edge::bench::kernels::probe_inputs;
use hailo_edge::decode::engine::tract::{prepare, read, TractKernels};
use hailo_edge::geom::time::ThreadCpu;
use hailo_edge::text::dims;
use tract_onnx::prelude::*;

/// Per-op CPU time of a decoder graph in tract.
#[derive(clap::Parser)]
struct Args {
    /// The decoder ONNX file.
    model: PathBuf,
    /// Timed runs after one warm-up run.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    runs: u32,
    /// Tract's stock kernels instead of this crate's fast ops.
    #[arg(long)]
    stock: bool,
    /// Slowest nodes to list.
    #[arg(long, default_value_t = 25)]
    nodes: usize,
}

fn main() -> TractResult<()> {
    let args = <Args as clap::Parser>::parse();
    let path = args.model.display();
    let runs = args.runs as usize;
    let kernel = if args.stock {
        TractKernels::Stock
    } else {
        TractKernels::Fast
    };
    let (model, _) = prepare(read(&args.model, kernel)?, kernel)?;
    let plan = model.into_runnable()?;
    let mut state = plan.spawn()?;
    let inputs = probe_inputs(plan.model())?;
    state.run(inputs.clone())?;
    let mut per_node: HashMap<usize, Duration> = HashMap::new();
    let t0 = ThreadCpu::start();
    for _ in 0..runs {
        state.run_plan_with_eval(inputs.clone(), |ctx, op_state, node, input| {
            let t = ThreadCpu::start();
            let r = tract_onnx::tract_hir::tract_core::plan::eval(ctx, op_state, node, input);
            *per_node.entry(node.id).or_default() += t.elapsed().unwrap_or_default();
            r
        })?;
    }
    let total = t0.elapsed().unwrap_or_default().as_secs_f64() * 1e3 / runs as f64;
    let model = plan.model();
    let mut per_op: HashMap<String, (f64, usize)> = HashMap::new();
    for (&id, d) in &per_node {
        let e = per_op
            .entry(model.node(id).op().name().to_string())
            .or_default();
        e.0 += d.as_secs_f64() * 1e3 / runs as f64;
        e.1 += 1;
    }
    let mut ops: Vec<_> = per_op.into_iter().collect();
    ops.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0));
    println!(
        "{path}: {total:.1} ms CPU per run ({} nodes)",
        model.nodes().len()
    );
    for (name, (ms, n)) in ops.iter().take(20) {
        println!("{ms:>9.2} ms {:>5.1}%  {n:>4} x {name}", 100.0 * ms / total);
    }
    let mut nodes: Vec<_> = per_node.into_iter().collect();
    nodes.sort_by_key(|n| std::cmp::Reverse(n.1));
    println!("slowest nodes:");
    for (id, d) in nodes.iter().take(args.nodes) {
        let n = model.node(*id);
        let facts: Vec<String> = n.outputs.iter().map(|o| dims(&o.fact.shape)).collect();
        let ins: Vec<String> = n
            .inputs
            .iter()
            .map(|i| dims(&model.outlet_fact(*i).unwrap().shape))
            .collect();
        println!(
            "{:>9.2} ms  {} ({}) {} -> {}",
            d.as_secs_f64() * 1e3 / runs as f64,
            n.name,
            n.op().name(),
            ins.join(" "),
            facts.join(" ")
        );
    }
    Ok(())
}
