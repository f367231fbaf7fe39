//! Shape inference through tract: parse the ONNX proto, pin the inputs, analyse, and read the
//! concrete shape of every tensor each ONNX node consumes and produces.

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use tract_onnx::model::ParseResult;
use tract_onnx::pb;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::InferenceModelExt;

use super::rules::{self, Cost, Shape};
use super::{InputShape, NodeCost, OpsError, OpsReport, Unresolved};

/// Counts the MACs of every node of `proto`, after pinning the inputs in `inputs`;
/// `model_dir` is where tensors stored as external data are found.
pub fn count_proto(
    source: &str,
    model_dir: Option<&str>,
    proto: &pb::ModelProto,
    inputs: &[InputShape],
) -> Result<OpsReport, OpsError> {
    let graph = proto.graph.as_ref().ok_or_else(|| OpsError::Parse {
        source_name: source.to_owned(),
        reason: "the model has no graph".into(),
    })?;
    let parsed = parse(source, model_dir, proto)?;
    let mut model = parsed.model;
    let outlets = parsed.outlets_by_name;
    pin_inputs(source, graph, &mut model, &outlets, inputs)?;
    let analysis_error = analyse(source, &mut model);
    let shapes = Shapes {
        model: &model,
        outlets: &outlets,
    };

    let mut report = OpsReport {
        source: source.to_owned(),
        nodes: Vec::with_capacity(graph.node.len()),
        unresolved: parsed
            .unresolved_inputs
            .iter()
            .map(|name| Unresolved {
                name: name.clone(),
                op_type: "(graph tensor)".into(),
                reason: "consumed but never produced nor declared".into(),
            })
            .collect(),
        analysis_error,
    };
    let mut seen_names = HashMap::<String, usize>::new();
    for (ix, node) in graph.node.iter().enumerate() {
        let name = display_name(node, ix, &mut seen_names);
        match node_cost(node, name, &shapes) {
            Ok(cost) => report.nodes.push(cost),
            Err(unresolved) => report.unresolved.push(unresolved),
        }
    }
    Ok(report)
}

/// Loads `proto` into a tract inference model. tract's tensor loader stops
/// (`unimplemented!`, an index out of range) on some malformed or exotic initializers; that
/// becomes an error naming the file, with tract's own words.
fn parse(
    source: &str,
    model_dir: Option<&str>,
    proto: &pb::ModelProto,
) -> Result<ParseResult, OpsError> {
    quietly(|| tract_onnx::onnx().parse(proto, model_dir))
        .map_err(|what| OpsError::Parse {
            source_name: source.to_owned(),
            reason: format!("tract cannot load this graph: {what}"),
        })?
        .map_err(|e| OpsError::Parse {
            source_name: source.to_owned(),
            reason: format!("{e:#}"),
        })
}

/// Gives each input of `inputs` its shape in `model`; an input the graph does not declare is
/// refused, naming the ones it does.
fn pin_inputs(
    source: &str,
    graph: &pb::GraphProto,
    model: &mut InferenceModel,
    outlets: &HashMap<String, OutletId>,
    inputs: &[InputShape],
) -> Result<(), OpsError> {
    for spec in inputs {
        let declared: Vec<&str> = graph.input.iter().map(|i| i.name.as_str()).collect();
        if !declared.contains(&spec.name.as_str()) {
            return Err(OpsError::UnknownInput {
                name: spec.name.clone(),
                available: declared.iter().map(|s| s.to_string()).collect(),
            });
        }
        let outlet = outlets[&spec.name];
        let fact = model
            .outlet_fact(outlet)
            .cloned()
            .unwrap_or_default()
            .with_shape(spec.shape.iter().copied().collect::<TVec<usize>>());
        model
            .set_outlet_fact(outlet, fact)
            .map_err(|e| OpsError::Parse {
                source_name: source.to_owned(),
                reason: format!("{e:#}"),
            })?;
    }
    Ok(())
}

/// Runs tract's shape analysis over `model`; returns why it stopped short, if it did. A rule
/// that panics on a malformed graph becomes such a reason too, and every node it left
/// without shapes is then listed as unresolved.
fn analyse(source: &str, model: &mut InferenceModel) -> Option<String> {
    let analysis_error = match quietly(|| model.analyse(true)) {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(format!("{e:#}")),
        Err(what) => Some(format!(
            "shape analysis stopped ({what}); nodes without shapes are listed"
        )),
    };
    if let Some(e) = &analysis_error {
        log::debug!("shape analysis of {source} stopped short: {e}");
    }
    analysis_error
}

/// The concrete shapes the analysis found, by ONNX tensor name.
struct Shapes<'a> {
    model: &'a InferenceModel,
    outlets: &'a HashMap<String, OutletId>,
}

impl Shapes<'_> {
    /// The shape of `tensor`, when the analysis made it concrete and finite.
    fn of(&self, tensor: &str) -> Option<Shape> {
        let outlet = self.outlets.get(tensor)?;
        let fact = self.model.outlet_fact(*outlet).ok()?;
        fact.shape
            .as_concrete_finite()
            .ok()
            .flatten()
            .map(|s| s.to_vec())
    }
}

/// The cost of the node `name`, or why it has none: an op outside the standard domain or
/// without a cost rule, a shape the analysis left unknown, or a rule refusing the shapes.
fn node_cost(node: &pb::NodeProto, name: String, shapes: &Shapes) -> Result<NodeCost, Unresolved> {
    let unresolved = |reason: String| Unresolved {
        name: name.clone(),
        op_type: node.op_type.clone(),
        reason,
    };
    if !node.domain.is_empty() && node.domain != "ai.onnx" {
        return Err(unresolved(format!(
            "op of domain `{}` has no cost rule",
            node.domain
        )));
    }
    if !rules::has_rule(&node.op_type) {
        return Err(unresolved(format!(
            "no cost rule for op type `{}`",
            node.op_type
        )));
    }
    let (inputs, outputs) = node_shapes(node, shapes).map_err(unresolved)?;
    let output_elements = outputs
        .iter()
        .map(|s| rules::elements(s).unwrap_or(u64::MAX))
        .sum();
    let (macs, mac_op) = match rules::cost(node, &inputs, &outputs) {
        Ok(Cost::Macs(macs)) => (macs, true),
        Ok(Cost::Other) => (0, false),
        Err(reason) => return Err(unresolved(reason.to_string())),
    };
    Ok(NodeCost {
        name,
        op_type: node.op_type.clone(),
        macs,
        mac_op,
        output_elements,
    })
}

/// The shapes of the node's inputs (`None` for an omitted optional input or an unknown
/// shape) and of its outputs; refused, naming them, when an output's shape is unknown, or an
/// input's for an op whose MACs depend on its inputs.
fn node_shapes(
    node: &pb::NodeProto,
    shapes: &Shapes,
) -> Result<(Vec<Option<Shape>>, Vec<Shape>), String> {
    let mut outputs = Vec::new();
    let mut missing = Vec::new();
    for out in node.output.iter().filter(|o| !o.is_empty()) {
        match shapes.of(out) {
            Some(s) => outputs.push(s),
            None => missing.push(format!("output `{out}`")),
        }
    }
    let inputs: Vec<Option<Shape>> = node
        .input
        .iter()
        .map(|i| if i.is_empty() { None } else { shapes.of(i) })
        .collect();
    if rules::is_mac_op(&node.op_type) {
        for (i, tensor) in node.input.iter().enumerate() {
            if !tensor.is_empty() && inputs[i].is_none() {
                missing.push(format!("input `{tensor}`"));
            }
        }
    }
    if missing.is_empty() {
        Ok((inputs, outputs))
    } else {
        Err(format!("shape unknown for {}", missing.join(", ")))
    }
}

/// The node's name, or its first output's name when it has none, made unique.
fn display_name(node: &pb::NodeProto, ix: usize, seen: &mut HashMap<String, usize>) -> String {
    let base = if !node.name.is_empty() {
        node.name.clone()
    } else if let Some(out) = node.output.first().filter(|o| !o.is_empty()) {
        out.clone()
    } else {
        format!("#{ix}:{}", node.op_type)
    };
    let count = seen.entry(base.clone()).or_insert(0);
    *count += 1;
    if *count == 1 {
        base
    } else {
        format!("{base}#{count}")
    }
}

thread_local! {
    /// While set, a panic on this thread is recorded here instead of printed.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f`, returning what it panicked with instead of unwinding, and without the default
/// hook's "thread panicked" text on stderr: tract's loader and analysis stop that way on
/// malformed graphs, and the command reports it as an error naming the file. Panics on
/// other threads, and outside `f`, are reported by the previous hook as before.
fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let quiet = CAUGHT.with(|c| {
                let mut c = c.borrow_mut();
                match c.as_mut() {
                    Some(slot) => {
                        let message = info
                            .payload()
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_owned())
                            .or_else(|| info.payload().downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "no message".to_owned());
                        *slot = message;
                        true
                    }
                    None => false,
                }
            });
            if !quiet {
                previous(info);
            }
        }));
    });
    CAUGHT.with(|c| *c.borrow_mut() = Some(String::new()));
    let result = catch_unwind(AssertUnwindSafe(f));
    let message = CAUGHT.with(|c| c.borrow_mut().take()).unwrap_or_default();
    result.map_err(|_| Panicked(message))
}

/// What a call run by [`quietly`] panicked with.
#[derive(Debug)]
struct Panicked(String);

impl std::fmt::Display for Panicked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
