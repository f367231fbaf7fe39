//! A small builder for ONNX graphs over `tract_onnx::pb` (the prost types of the ONNX schema).
//!
//! Tests and the fixture generators in `tools/` build their graphs with it, so no Python or
//! `protoc` is needed to make an ONNX file: the graph is assembled in Rust and encoded with prost.

use prost::Message;
use tract_onnx::pb;
use tract_onnx::pb::attribute_proto::AttributeType;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::pb::tensor_shape_proto::{dimension, Dimension};
use tract_onnx::pb::type_proto;

/// One dimension of a declared graph input: a fixed size or a named symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    /// A fixed size.
    Fixed(usize),
    /// A symbolic size, such as `batch`, to be fixed with `--input NAME=SHAPE`.
    Symbol(String),
}

impl From<usize> for Dim {
    fn from(n: usize) -> Self {
        Dim::Fixed(n)
    }
}

impl From<&str> for Dim {
    fn from(s: &str) -> Self {
        Dim::Symbol(s.to_owned())
    }
}

/// An attribute value of a node.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    /// A single integer.
    Int(i64),
    /// A list of integers.
    Ints(Vec<i64>),
    /// A single float.
    Float(f32),
    /// A string.
    Str(String),
}

/// Deterministic pseudo-random numbers (splitmix64), so generated weights are identical on every
/// machine without a dependency on a particular `rand` version.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator with the given seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A float uniformly drawn from `[-scale, scale)`.
    pub fn next_f32(&mut self, scale: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        (unit * 2.0 - 1.0) * scale
    }
}

/// Builds one ONNX graph node by node; [`GraphBuilder::finish`] returns the model proto.
#[derive(Debug)]
pub struct GraphBuilder {
    graph: pb::GraphProto,
    opset: i64,
    counter: usize,
    rng: SplitMix64,
}

impl GraphBuilder {
    /// An empty graph named `name`, using the default ONNX operator set `opset`.
    pub fn new(name: &str, opset: i64) -> Self {
        Self {
            graph: pb::GraphProto {
                name: name.to_owned(),
                ..Default::default()
            },
            opset,
            counter: 0,
            rng: SplitMix64::new(0x6861_696c_6f2d_6564),
        }
    }

    /// Declares a float graph input.
    pub fn input(&mut self, name: &str, shape: &[Dim]) -> String {
        self.graph.input.push(value_info(name, shape));
        name.to_owned()
    }

    /// Declares `tensor` as a graph output (its shape is left to inference).
    pub fn output(&mut self, tensor: &str) {
        self.graph.output.push(pb::ValueInfoProto {
            name: tensor.to_owned(),
            ..Default::default()
        });
    }

    /// Declares `tensor` as a float graph output of a known shape.
    pub fn output_typed(&mut self, tensor: &str, shape: &[usize]) {
        let dims: Vec<Dim> = shape.iter().map(|&d| Dim::Fixed(d)).collect();
        self.graph.output.push(value_info(tensor, &dims));
    }

    /// Adds a float initializer holding `values` (row-major, `shape.iter().product()` long).
    pub fn floats(&mut self, name: &str, shape: &[usize], values: &[f32]) -> String {
        debug_assert_eq!(shape.iter().product::<usize>(), values.len());
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.push_initializer(name, shape, DataType::Float, raw)
    }

    /// Adds a float initializer filled with deterministic random values in `[-scale, scale)`.
    pub fn random(&mut self, name: &str, shape: &[usize], scale: f32) -> String {
        let len: usize = shape.iter().product();
        let mut raw = Vec::with_capacity(len * 4);
        for _ in 0..len {
            raw.extend_from_slice(&self.rng.next_f32(scale).to_le_bytes());
        }
        self.push_initializer(name, shape, DataType::Float, raw)
    }

    /// Adds a float initializer with every element equal to `value`.
    pub fn filled(&mut self, name: &str, shape: &[usize], value: f32) -> String {
        let len: usize = shape.iter().product();
        let raw = value.to_le_bytes().repeat(len);
        self.push_initializer(name, shape, DataType::Float, raw)
    }

    /// Adds a 1-D int64 initializer (shapes, axes, indices).
    pub fn ints(&mut self, name: &str, values: &[i64]) -> String {
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.push_initializer(name, &[values.len()], DataType::Int64, raw)
    }

    /// Adds an int64 initializer of any shape (row-major `values`), such as the index tensor
    /// of a Gather that rearranges elements.
    pub fn ints_shaped(&mut self, name: &str, shape: &[usize], values: &[i64]) -> String {
        debug_assert_eq!(shape.iter().product::<usize>(), values.len());
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.push_initializer(name, shape, DataType::Int64, raw)
    }

    /// Adds a scalar int64 initializer.
    pub fn scalar_int(&mut self, name: &str, value: i64) -> String {
        self.push_initializer(name, &[], DataType::Int64, value.to_le_bytes().to_vec())
    }

    /// Adds a scalar float initializer.
    pub fn scalar(&mut self, name: &str, value: f32) -> String {
        self.push_initializer(name, &[], DataType::Float, value.to_le_bytes().to_vec())
    }

    fn push_initializer(
        &mut self,
        name: &str,
        shape: &[usize],
        dt: DataType,
        raw: Vec<u8>,
    ) -> String {
        self.graph.initializer.push(pb::TensorProto {
            name: name.to_owned(),
            dims: shape.iter().map(|&d| d as i64).collect(),
            data_type: dt as i32,
            raw_data: raw,
            ..Default::default()
        });
        name.to_owned()
    }

    /// Adds a node with one output and returns the output's tensor name.
    pub fn node(
        &mut self,
        op: &str,
        name: &str,
        inputs: &[&str],
        attrs: &[(&str, Attr)],
    ) -> String {
        self.node_n(op, name, inputs, attrs, 1).remove(0)
    }

    /// Adds a node with one output named `output` (a graph output keeps its own name).
    pub fn node_to(&mut self, op: &str, inputs: &[&str], attrs: &[(&str, Attr)], output: &str) {
        self.counter += 1;
        self.graph.node.push(pb::NodeProto {
            name: output.to_owned(),
            op_type: op.to_owned(),
            input: inputs.iter().map(|s| (*s).to_owned()).collect(),
            output: vec![output.to_owned()],
            attribute: attrs.iter().map(|(n, a)| attribute(n, a)).collect(),
            ..Default::default()
        });
    }

    /// Adds a node with `outputs` outputs and returns their tensor names.
    pub fn node_n(
        &mut self,
        op: &str,
        name: &str,
        inputs: &[&str],
        attrs: &[(&str, Attr)],
        outputs: usize,
    ) -> Vec<String> {
        self.counter += 1;
        let node_name = if name.is_empty() {
            format!("{op}_{}", self.counter)
        } else {
            name.to_owned()
        };
        let outs: Vec<String> = if outputs == 1 {
            vec![format!("{node_name}:0")]
        } else {
            (0..outputs).map(|i| format!("{node_name}:{i}")).collect()
        };
        self.graph.node.push(pb::NodeProto {
            name: node_name,
            op_type: op.to_owned(),
            input: inputs.iter().map(|s| (*s).to_owned()).collect(),
            output: outs.clone(),
            attribute: attrs.iter().map(|(n, a)| attribute(n, a)).collect(),
            ..Default::default()
        });
        outs
    }

    /// The finished model.
    pub fn finish(self) -> pb::ModelProto {
        pb::ModelProto {
            ir_version: 8,
            producer_name: "hailo-edge".to_owned(),
            opset_import: vec![pb::OperatorSetIdProto {
                domain: String::new(),
                version: self.opset,
            }],
            graph: Some(self.graph),
            ..Default::default()
        }
    }
}

/// Encodes a model proto into ONNX file bytes.
pub fn encode(model: &pb::ModelProto) -> Vec<u8> {
    model.encode_to_vec()
}

/// A float tensor's name and shape, as graph inputs and outputs declare them.
pub fn value_info(name: &str, shape: &[Dim]) -> pb::ValueInfoProto {
    let dim = shape
        .iter()
        .map(|d| Dimension {
            value: Some(match d {
                Dim::Fixed(n) => dimension::Value::DimValue(*n as i64),
                Dim::Symbol(s) => dimension::Value::DimParam(s.clone()),
            }),
            ..Default::default()
        })
        .collect();
    pb::ValueInfoProto {
        name: name.to_owned(),
        r#type: Some(pb::TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: DataType::Float as i32,
                shape: Some(pb::TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn attribute(name: &str, value: &Attr) -> pb::AttributeProto {
    let mut a = pb::AttributeProto {
        name: name.to_owned(),
        ..Default::default()
    };
    match value {
        Attr::Int(i) => {
            a.r#type = AttributeType::Int as i32;
            a.i = *i;
        }
        Attr::Ints(v) => {
            a.r#type = AttributeType::Ints as i32;
            a.ints = v.clone();
        }
        Attr::Float(f) => {
            a.r#type = AttributeType::Float as i32;
            a.f = *f;
        }
        Attr::Str(s) => {
            a.r#type = AttributeType::String as i32;
            a.s = s.as_bytes().to_vec();
        }
    }
    a
}
