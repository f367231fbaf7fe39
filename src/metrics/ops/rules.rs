//! The cost rule of each ONNX op type, as a pure function of the node's attributes and shapes.
//!
//! Convention: a MAC is one multiply-accumulate of a contraction (MatMul, Gemm, Conv,
//! ConvTranspose, Einsum and their quantised forms) or one interpolation tap of GridSample
//! (4 per output element for bilinear, 8 for trilinear, 16 for bicubic, 0 for nearest).
//! Elementwise, normalisation, pooling, resize and data-movement ops are not MACs: they are
//! counted separately as "other ops" by output elements. An op type with no rule is never
//! assumed free: its nodes are reported as unresolved.

use tract_onnx::pb;

/// A tensor shape with every dimension known.
pub type Shape = Vec<usize>;

/// What a node costs under the convention above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// A contraction or interpolation op: this many multiply-accumulates.
    Macs(u64),
    /// Not a MAC op (elementwise, normalisation, data movement): counted as other work.
    Other,
}

/// Op types that are not MAC ops by the convention (elementwise, normalisation, reductions,
/// pooling, resizing, data movement, shape arithmetic and quantisation).
const OTHER_OPS: &[&str] = &[
    "Abs",
    "Acos",
    "Add",
    "And",
    "ArgMax",
    "ArgMin",
    "Asin",
    "Atan",
    "AveragePool",
    "BatchNormalization",
    "BitShift",
    "Cast",
    "CastLike",
    "Ceil",
    "Celu",
    "Clip",
    "Compress",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Cos",
    "Cosh",
    "CumSum",
    "DepthToSpace",
    "DequantizeLinear",
    "Div",
    "Dropout",
    "DynamicQuantizeLinear",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Expand",
    "EyeLike",
    "Flatten",
    "Floor",
    "Gather",
    "GatherElements",
    "GatherND",
    "Gelu",
    "GlobalAveragePool",
    "GlobalLpPool",
    "GlobalMaxPool",
    "Greater",
    "GreaterOrEqual",
    "GroupNormalization",
    "HardSigmoid",
    "HardSwish",
    "Hardmax",
    "Identity",
    "InstanceNormalization",
    "IsInf",
    "IsNaN",
    "LRN",
    "LayerNormalization",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "Log",
    "LogSoftmax",
    "LpNormalization",
    "LpPool",
    "Max",
    "MaxPool",
    "Mean",
    "Min",
    "Mish",
    "Mod",
    "Mul",
    "Neg",
    "NonZero",
    "Not",
    "OneHot",
    "Or",
    "PRelu",
    "Pad",
    "Pow",
    "QuantizeLinear",
    "Range",
    "Reciprocal",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "Relu",
    "Reshape",
    "Resize",
    "Round",
    "ScatterElements",
    "ScatterND",
    "Selu",
    "Shape",
    "Shrink",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Size",
    "Slice",
    "Softmax",
    "Softplus",
    "Softsign",
    "SpaceToDepth",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Sum",
    "Tan",
    "Tanh",
    "ThresholdedRelu",
    "Tile",
    "TopK",
    "Transpose",
    "Trilu",
    "Unsqueeze",
    "Upsample",
    "Where",
    "Xor",
];

/// Op types with a MAC rule.
const MAC_OPS: &[&str] = &[
    "MatMul",
    "MatMulInteger",
    "QLinearMatMul",
    "Gemm",
    "Conv",
    "ConvInteger",
    "QLinearConv",
    "ConvTranspose",
    "Einsum",
    "GridSample",
];

/// Whether `op_type` has a cost rule at all.
pub fn has_rule(op_type: &str) -> bool {
    MAC_OPS.contains(&op_type) || OTHER_OPS.contains(&op_type)
}

/// Whether `op_type` is a MAC op (its input shapes matter, not only its outputs).
pub fn is_mac_op(op_type: &str) -> bool {
    MAC_OPS.contains(&op_type)
}

/// Why a node's cost could not be resolved; the message names the op, operand or equation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// A required input has no known shape.
    #[error("input {0} is missing")]
    MissingInput(usize),
    /// The node has no output.
    #[error("node has no output")]
    NoOutput,
    /// A count does not fit a `u64` (`MAC` or `element`).
    #[error("{0} count overflows u64")]
    Overflow(&'static str),
    /// An operand has the wrong rank.
    #[error("{what} has rank {rank}, expected {expected}")]
    Rank {
        /// The operand.
        what: &'static str,
        /// Its rank.
        rank: usize,
        /// The rank the rule needs.
        expected: &'static str,
    },
    /// A MatMul whose input A is a scalar.
    #[error("MatMul input A is a scalar")]
    ScalarMatMul,
    /// A GridSample mode and rank no rule covers.
    #[error("GridSample mode `{mode}` on rank {rank} has no rule")]
    GridSample {
        /// The interpolation mode.
        mode: String,
        /// The rank of the input.
        rank: usize,
    },
    /// An op type without a cost rule.
    #[error("no cost rule for op type `{0}`")]
    NoRule(String),
    /// An Einsum without an equation.
    #[error("Einsum has no equation")]
    NoEquation,
    /// An Einsum equation with an ellipsis.
    #[error("Einsum `{0}` uses an ellipsis, which has no rule")]
    Ellipsis(String),
    /// An Einsum equation naming another number of operands than the node has.
    #[error("Einsum `{equation}` names {named} operands, node has {given}")]
    Operands {
        /// The equation.
        equation: String,
        /// Operands the equation names.
        named: usize,
        /// Operands the node has.
        given: usize,
    },
    /// An Einsum of three or more operands.
    #[error("Einsum with {0} operands has no rule")]
    ManyOperands(usize),
    /// An Einsum term whose letters do not match its operand's rank.
    #[error("Einsum term `{term}` does not match operand rank {rank}")]
    Term {
        /// The term.
        term: String,
        /// The operand's rank.
        rank: usize,
    },
}

/// The cost of one node, given the shapes of its inputs (by position; `None` for an absent
/// optional input) and outputs. Errors say why the cost could not be resolved.
pub fn cost(
    node: &pb::NodeProto,
    inputs: &[Option<Shape>],
    outputs: &[Shape],
) -> Result<Cost, RuleError> {
    let op = node.op_type.as_str();
    if OTHER_OPS.contains(&op) {
        return Ok(Cost::Other);
    }
    let input = |ix: usize| -> Result<&Shape, RuleError> {
        inputs
            .get(ix)
            .and_then(|s| s.as_ref())
            .ok_or(RuleError::MissingInput(ix))
    };
    let out = outputs.first().ok_or(RuleError::NoOutput)?;
    let out_elems = elements(out)?;
    let macs = match op {
        "MatMul" | "MatMulInteger" => out_elems.checked_mul(matmul_k(input(0)?)?),
        "QLinearMatMul" => out_elems.checked_mul(matmul_k(input(0)?)?),
        "Gemm" => {
            let a = input(0)?;
            if a.len() != 2 {
                return Err(RuleError::Rank {
                    what: "Gemm input A",
                    rank: a.len(),
                    expected: "2",
                });
            }
            let k = if int_attr(node, "transA").unwrap_or(0) != 0 {
                a[0]
            } else {
                a[1]
            };
            out_elems.checked_mul(k as u64)
        }
        "Conv" | "ConvInteger" => out_elems.checked_mul(weight_fan(input(1)?)?),
        "QLinearConv" => out_elems.checked_mul(weight_fan(input(3)?)?),
        "ConvTranspose" => elements(input(0)?)?.checked_mul(weight_fan(input(1)?)?),
        "Einsum" => {
            let shapes = inputs
                .iter()
                .enumerate()
                .map(|(ix, s)| s.clone().ok_or(RuleError::MissingInput(ix)))
                .collect::<Result<Vec<_>, _>>()?;
            return einsum(&str_attr(node, "equation").unwrap_or_default(), &shapes);
        }
        "GridSample" => {
            let rank = input(0)?.len();
            let mode = str_attr(node, "mode").unwrap_or_else(|| "linear".to_owned());
            let taps: u64 = match (mode.as_str(), rank) {
                ("nearest", _) => 0,
                ("bilinear" | "linear", 4) => 4,
                ("bilinear" | "linear", 5) => 8,
                ("bicubic" | "cubic", 4) => 16,
                _ => return Err(RuleError::GridSample { mode, rank }),
            };
            out_elems.checked_mul(taps)
        }
        _ => return Err(RuleError::NoRule(op.to_owned())),
    };
    macs.map(Cost::Macs).ok_or(RuleError::Overflow("MAC"))
}

/// Number of elements of a shape.
///
/// # Errors
/// [`RuleError::Overflow`] when the count does not fit a `u64`.
pub fn elements(shape: &[usize]) -> Result<u64, RuleError> {
    shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
        .ok_or(RuleError::Overflow("element"))
}

/// The contracted size of a MatMul: the last dimension of A (numpy semantics, incl. 1-D A).
fn matmul_k(a: &Shape) -> Result<u64, RuleError> {
    a.last().map(|&k| k as u64).ok_or(RuleError::ScalarMatMul)
}

/// MACs per output element of a convolution: `W[1] * prod(kernel)`, which is `Cin/groups * k`
/// for Conv (`W = [Cout, Cin/g, k...]`) and `Cout/groups * k` per input element for
/// ConvTranspose (`W = [Cin, Cout/g, k...]`).
fn weight_fan(w: &Shape) -> Result<u64, RuleError> {
    if w.len() < 3 {
        return Err(RuleError::Rank {
            what: "convolution weight",
            rank: w.len(),
            expected: "at least 3",
        });
    }
    elements(&w[1..])
}

/// MACs of a two-operand Einsum: the product of the sizes of all distinct indices. A
/// one-operand Einsum is a transpose or reduction (other work). Three or more operands and
/// ellipses have no rule (the contraction order would decide the cost).
fn einsum(equation: &str, shapes: &[Shape]) -> Result<Cost, RuleError> {
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    if eq.is_empty() {
        return Err(RuleError::NoEquation);
    }
    if eq.contains("...") {
        return Err(RuleError::Ellipsis(eq));
    }
    let lhs = eq.split("->").next().unwrap_or_default();
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != shapes.len() {
        return Err(RuleError::Operands {
            named: terms.len(),
            given: shapes.len(),
            equation: eq,
        });
    }
    match terms.len() {
        1 => return Ok(Cost::Other),
        2 => {}
        n => return Err(RuleError::ManyOperands(n)),
    }
    let mut sizes = std::collections::BTreeMap::<char, usize>::new();
    for (term, shape) in terms.iter().zip(shapes) {
        if term.chars().count() != shape.len() {
            return Err(RuleError::Term {
                term: (*term).to_owned(),
                rank: shape.len(),
            });
        }
        for (c, &d) in term.chars().zip(shape) {
            let entry = sizes.entry(c).or_insert(d);
            // A size-1 operand dimension broadcasts.
            *entry = (*entry).max(d);
        }
    }
    let dims: Vec<usize> = sizes.into_values().collect();
    elements(&dims).map(Cost::Macs)
}

fn attr<'a>(node: &'a pb::NodeProto, name: &str) -> Option<&'a pb::AttributeProto> {
    node.attribute.iter().find(|a| a.name == name)
}

fn int_attr(node: &pb::NodeProto, name: &str) -> Option<i64> {
    attr(node, name).map(|a| a.i)
}

fn str_attr(node: &pb::NodeProto, name: &str) -> Option<String> {
    attr(node, name).map(|a| String::from_utf8_lossy(&a.s).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ops::builder::{Attr, GraphBuilder};

    fn node(op: &str, attrs: &[(&str, Attr)]) -> pb::NodeProto {
        let mut g = GraphBuilder::new("t", 17);
        g.node(op, "n", &["a", "b"], attrs);
        g.finish().graph.unwrap().node.remove(0)
    }

    #[test]
    fn batched_matmul_counts_out_elements_times_k() {
        let n = node("MatMul", &[]);
        let c = cost(
            &n,
            &[Some(vec![2, 6, 5, 7]), Some(vec![7, 3])],
            &[vec![2, 6, 5, 3]],
        )
        .unwrap();
        assert_eq!(c, Cost::Macs(2 * 6 * 5 * 3 * 7));
    }

    #[test]
    fn gemm_honours_trans_a() {
        let n = node("Gemm", &[("transA", Attr::Int(1))]);
        let c = cost(&n, &[Some(vec![9, 4]), Some(vec![9, 5])], &[vec![4, 5]]).unwrap();
        assert_eq!(c, Cost::Macs(4 * 5 * 9));
    }

    #[test]
    fn grouped_conv_uses_weight_fan_in() {
        let n = node("Conv", &[("group", Attr::Int(4))]);
        let c = cost(
            &n,
            &[Some(vec![1, 8, 10, 10]), Some(vec![16, 2, 3, 3])],
            &[vec![1, 16, 5, 5]],
        );
        assert_eq!(c.unwrap(), Cost::Macs(16 * 25 * 2 * 9));
    }

    #[test]
    fn einsum_two_operands_and_refusals() {
        let n = node("Einsum", &[("equation", Attr::Str("bij,bjk->bik".into()))]);
        let c = cost(
            &n,
            &[Some(vec![2, 3, 4]), Some(vec![2, 4, 5])],
            &[vec![2, 3, 5]],
        )
        .unwrap();
        assert_eq!(c, Cost::Macs(2 * 3 * 4 * 5));
        let n = node("Einsum", &[("equation", Attr::Str("...ij,...jk".into()))]);
        assert!(cost(&n, &[Some(vec![3, 4]), Some(vec![4, 5])], &[vec![3, 5]]).is_err());
    }

    #[test]
    fn unknown_op_is_an_error_not_zero() {
        let n = node("LSTM", &[]);
        let err = cost(&n, &[Some(vec![1])], &[vec![1]]).unwrap_err();
        assert!(err.to_string().contains("LSTM"), "{err}");
        assert!(!has_rule("LSTM"));
        assert!(has_rule("Relu") && !is_mac_op("Relu"));
    }
}
