//! The decoder rows: every node of the prepared graph timed, grouped by kernel.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::format_err;
use tract_onnx::tract_hir::tract_core::plan::eval;

use super::{median_ms, work, Kernel, KernelBenchError, Row, Work};
use crate::decode::engine::tract::{prepare, read, TractKernels};
use crate::geom::time::ThreadCpu;

/// Deterministic inputs of the graph's input shapes, values in [-1, 1).
///
/// # Errors
/// When an input has a symbolic shape.
pub fn probe_inputs(model: &TypedModel) -> TractResult<TVec<TValue>> {
    (0..model.inputs.len())
        .map(|i| {
            let fact = model.input_fact(i)?;
            let shape = fact
                .shape
                .as_concrete()
                .ok_or_else(|| format_err!("input {i} has a symbolic shape"))?;
            let n: usize = shape.iter().product();
            let data: Vec<f32> = (0..n)
                .map(|k| ((k * 7919 % 1000) as f32 / 500.0) - 1.0)
                .collect();
            Ok(Tensor::from_shape(shape, &data)?.into_tvalue())
        })
        .collect()
}

/// The decoder at `path` (fast kernels), one row per kernel with its counted work and the
/// median over `runs` of its nodes' summed thread CPU time.
///
/// # Errors
/// [`KernelBenchError::Decoder`] when tract cannot load, prepare or run the graph.
pub fn rows(path: &Path, side: usize, runs: usize) -> Result<Vec<Row>, KernelBenchError> {
    let fail = |e: TractError| KernelBenchError::Decoder {
        path: path.display().to_string(),
        message: format!("{e:#}"),
    };
    let kernel = TractKernels::Fast;
    let (model, _) = prepare(read(path, kernel).map_err(fail)?, kernel).map_err(fail)?;
    let mut class: BTreeMap<usize, Kernel> = BTreeMap::new();
    let mut totals: BTreeMap<Kernel, (usize, Work)> = BTreeMap::new();
    for node in model.nodes() {
        let (k, w) = work::of_node(&model, node).map_err(fail)?;
        class.insert(node.id, k);
        let entry = totals.entry(k).or_default();
        entry.0 += 1;
        entry.1 += w;
    }
    let plan = model.into_runnable().map_err(fail)?;
    let inputs = probe_inputs(plan.model()).map_err(fail)?;
    let mut state = plan.spawn().map_err(fail)?;
    state.run(inputs.clone()).map_err(fail)?;
    let mut times: BTreeMap<Kernel, Vec<Duration>> = BTreeMap::new();
    for _ in 0..runs.max(1) {
        let mut run: BTreeMap<Kernel, Duration> = BTreeMap::new();
        state
            .run_plan_with_eval(inputs.clone(), |ctx, op_state, node, input| {
                // Thread CPU time: on a shared machine it leaves out waits for a core.
                let t = ThreadCpu::start();
                let r = eval(ctx, op_state, node, input);
                let k = class.get(&node.id).copied().unwrap_or(Kernel::Other);
                *run.entry(k).or_default() += t.elapsed().unwrap_or_default();
                r
            })
            .map_err(fail)?;
        for (k, d) in run {
            times.entry(k).or_default().push(d);
        }
    }
    let case = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let core = super::CORTEX_A76_PI5;
    Ok(Kernel::ALL
        .iter()
        .filter_map(|k| totals.get(k).map(|t| (*k, *t)))
        .map(|(k, (nodes, work))| Row {
            side,
            kernel: k,
            case: case.clone(),
            nodes,
            path: k.path(),
            work,
            measured_ms: median_ms(times.remove(&k).unwrap_or_default()),
            model_ms: core.predict_ms(&work),
        })
        .collect())
}
