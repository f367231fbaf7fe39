//! MAC counts of ONNX graphs, with full shape inference and no silent gaps.
//!
//! [`count_file`] loads a model, pins the input shapes given with [`InputShape`], infers every
//! tensor's shape with tract, and applies the rule of [`rules`] to each node. A node whose
//! shapes or cost cannot be resolved is listed in [`OpsReport::unresolved`] by name and op type,
//! and the report is then [incomplete](OpsReport::is_complete): its total is a lower bound, not
//! a measurement.

pub mod builder;
pub mod device_half;
pub mod hef;
mod infer;
pub mod rules;
pub mod vit;

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use prost::Message;
use serde::Serialize;

pub use infer::count_proto;

/// The counting convention, printed with every report.
pub const CONVENTION: &str = "MACs of multiply-accumulate ops only (MatMul, Gemm, Conv, \
ConvTranspose, Einsum, their quantised forms) plus GridSample interpolation taps (4 per output \
element bilinear); elementwise, normalisation, pooling, resize and data movement are not MACs \
and are listed as other ops by output elements; ops = 2 x MACs";

/// Errors of op counting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpsError {
    /// The model file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The bytes are not an ONNX model proto.
    #[error("{source_name} is not an ONNX model: {reason}")]
    Decode {
        /// The file or buffer name.
        source_name: String,
        /// What the protobuf decoder said.
        reason: String,
    },
    /// tract could not build the graph.
    #[error("cannot load the graph of {source_name}: {reason}")]
    Parse {
        /// The file or buffer name.
        source_name: String,
        /// What went wrong.
        reason: String,
    },
    /// `--input` names a tensor that is not a graph input.
    #[error("--input {name}: the model has no input of that name (inputs: {})", available.join(", "))]
    UnknownInput {
        /// The name given.
        name: String,
        /// The model's declared inputs.
        available: Vec<String>,
    },
    /// `--input` is not `NAME=D1xD2x...`.
    #[error("--input `{spec}`: {reason} (expected NAME=D1xD2x..., e.g. image=1x3x288x288)")]
    BadInputSpec {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// A graph input pinned to a concrete shape: `NAME=1x3x288x288`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputShape {
    /// The graph input's name.
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
}

impl FromStr for InputShape {
    type Err = OpsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| OpsError::BadInputSpec {
            spec: s.to_owned(),
            reason: reason.to_owned(),
        };
        let (name, dims) = s.rsplit_once('=').ok_or_else(|| bad("no `=`"))?;
        if name.is_empty() {
            return Err(bad("empty input name"));
        }
        let shape = dims
            .split(['x', ','])
            .map(|d| {
                d.trim()
                    .parse::<usize>()
                    .map_err(|_| bad(&format!("`{d}` is not a dimension")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            name: name.to_owned(),
            shape,
        })
    }
}

/// The cost of one resolved node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeCost {
    /// Node name (or its first output's name when the node has none).
    pub name: String,
    /// ONNX op type.
    pub op_type: String,
    /// Multiply-accumulates (0 for other ops).
    pub macs: u64,
    /// Whether the op type is a MAC op.
    pub mac_op: bool,
    /// Elements of all outputs, the size measure of other ops.
    pub output_elements: u64,
}

/// A node whose shapes or cost could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unresolved {
    /// Node name.
    pub name: String,
    /// ONNX op type.
    pub op_type: String,
    /// Why it was not counted.
    pub reason: String,
}

/// Totals of one op type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpTypeTotal {
    /// ONNX op type.
    pub op_type: String,
    /// Number of resolved nodes.
    pub nodes: usize,
    /// Their MACs.
    pub macs: u64,
    /// Whether the op type is a MAC op.
    pub mac_op: bool,
    /// Their output elements.
    pub output_elements: u64,
}

/// MAC counts of one model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpsReport {
    /// File or buffer the model came from.
    pub source: String,
    /// Every resolved node, in graph order.
    pub nodes: Vec<NodeCost>,
    /// Every node that could not be resolved.
    pub unresolved: Vec<Unresolved>,
    /// The first error of tract's shape analysis, if it stopped short anywhere.
    pub analysis_error: Option<String>,
}

impl OpsReport {
    /// True when every node was resolved, so [`Self::total_macs`] is the whole graph's count.
    pub fn is_complete(&self) -> bool {
        self.unresolved.is_empty()
    }

    /// Sum of MACs over resolved nodes (a lower bound when the report is incomplete).
    pub fn total_macs(&self) -> u64 {
        self.nodes.iter().map(|n| n.macs).sum()
    }

    /// Totals per op type, MAC ops first, largest first.
    pub fn by_op_type(&self) -> Vec<OpTypeTotal> {
        let mut map = BTreeMap::<&str, OpTypeTotal>::new();
        for n in &self.nodes {
            let t = map.entry(&n.op_type).or_insert_with(|| OpTypeTotal {
                op_type: n.op_type.clone(),
                nodes: 0,
                macs: 0,
                mac_op: n.mac_op,
                output_elements: 0,
            });
            t.nodes += 1;
            t.macs += n.macs;
            t.output_elements += n.output_elements;
        }
        let mut v: Vec<_> = map.into_values().collect();
        v.sort_by(|a, b| {
            b.mac_op
                .cmp(&a.mac_op)
                .then(b.macs.cmp(&a.macs))
                .then(b.output_elements.cmp(&a.output_elements))
        });
        v
    }

    /// The `n` nodes with the most MACs.
    pub fn top(&self, n: usize) -> Vec<&NodeCost> {
        let mut v: Vec<_> = self.nodes.iter().filter(|n| n.macs > 0).collect();
        v.sort_by_key(|n| std::cmp::Reverse(n.macs));
        v.truncate(n);
        v
    }

    /// The report as JSON, with totals and the convention spelled out.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "source": self.source,
            "complete": self.is_complete(),
            "total_macs": self.total_macs(),
            "total_gmac": self.total_macs() as f64 / 1e9,
            "total_ops": 2 * self.total_macs(),
            "convention": CONVENTION,
            "by_op_type": self.by_op_type(),
            "unresolved": self.unresolved,
            "analysis_error": self.analysis_error,
            "nodes": self.nodes,
        })
    }
}

/// Counts the MACs of an ONNX file.
pub fn count_file(path: &Path, inputs: &[InputShape]) -> Result<OpsReport, OpsError> {
    let bytes = std::fs::read(path).map_err(|source| OpsError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let proto = decode(&path.display().to_string(), &bytes)?;
    let dir = path.parent().map(|d| d.to_string_lossy().into_owned());
    count_proto(&path.display().to_string(), dir.as_deref(), &proto, inputs)
}

/// Counts the MACs of ONNX model bytes; `source` names them in errors and the report.
pub fn count_bytes(
    source: &str,
    bytes: &[u8],
    inputs: &[InputShape],
) -> Result<OpsReport, OpsError> {
    count_proto(source, None, &decode(source, bytes)?, inputs)
}

fn decode(source: &str, bytes: &[u8]) -> Result<tract_onnx::pb::ModelProto, OpsError> {
    tract_onnx::pb::ModelProto::decode(bytes).map_err(|e| OpsError::Decode {
        source_name: source.to_owned(),
        reason: e.to_string(),
    })
}
