#!/usr/bin/env python3
"""Structural comparison of two decoder graphs: interface, compute ops, MACs, parameters.

    tools/.venv/bin/python tools/compare_decoder_graphs.py A.onnx B.onnx [--tolerance 0.01]

Validates a generated host graph (B) against the upstream cut (A, from cut_host_graph.py):
- input and output names and shapes must be equal (as name -> shape maps: the runtime pairs
  them by name, so the declaration order is only noted);
- counts of the compute ops (MatMul, Gemm, Conv, GridSample, TopK, GatherElements, Softmax,
  LayerNormalization) are listed side by side;
- MACs per op type, from shapes read off one ONNX Runtime run of each graph with every
  intermediate exposed and optimisations off: MatMul = output elements x K, Gemm = M N K,
  Conv = output elements x Cin/groups x kh x kw, GridSample = 4 per output element (bilinear
  taps). Nodes whose inputs do not depend on the graph inputs are constant-folded by the
  engines and listed apart ("folded"); the gate compares the MACs that run per frame;
- initializer and Constant-node element counts.
Exit status 0 when the interfaces match and the per-frame MAC totals differ by at most the
tolerance (relative to A), 1 otherwise, 2 when a graph cannot be read or run.
"""

import argparse
import collections
import os
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_graph  # noqa: E402
from onnx_graph import GraphError  # noqa: E402

COMPUTE_OPS = ("MatMul", "Gemm", "Conv", "GridSample", "TopK", "GatherElements", "Softmax", "LayerNormalization")
MAC_OPS = ("MatMul", "Gemm", "Conv", "GridSample")


def node_macs(node, shape):
    """Multiply-accumulates of one node, given a tensor-name -> shape lookup; 0 for other ops."""
    if node.op_type == "MatMul":
        a, y = shape(node.input[0]), shape(node.output[0])
        return int(np.prod(y)) * a[-1]
    if node.op_type == "Gemm":
        attrs = {a.name: a.i for a in node.attribute}
        a, b = shape(node.input[0]), shape(node.input[1])
        m, k = (a[1], a[0]) if attrs.get("transA", 0) else (a[0], a[1])
        n = b[0] if attrs.get("transB", 0) else b[1]
        return m * n * k
    if node.op_type == "Conv":
        # The weight is (Cout, Cin / groups, kh, kw).
        w, y = shape(node.input[1]), shape(node.output[0])
        return int(np.prod(y)) * int(np.prod(w[1:]))
    if node.op_type == "GridSample":
        return 4 * int(np.prod(shape(node.output[0])))
    return 0


def input_dependent(graph):
    """Indices of the nodes that read a graph input directly or through other nodes."""
    inits = {i.name for i in graph.initializer}
    out = set()
    for i in graph.input:
        if i.name not in inits:
            out |= onnx_graph.descendants(graph, i.name)
    return out


class Profile:
    """What the comparison reads off one graph."""

    def __init__(self, path):
        self.path = path
        try:
            model = onnx.load(path)
        except Exception as e:  # onnx raises several unrelated types for unreadable files
            raise GraphError(f"{path}: cannot be read as ONNX ({e})") from e
        graph = model.graph
        self.inputs = onnx_graph.value_info_shapes(
            [i for i in graph.input if i.name not in {t.name for t in graph.initializer}]
        )
        self.outputs = onnx_graph.value_info_shapes(graph.output)
        self.ops = collections.Counter(n.op_type for n in graph.node)
        self.params = onnx_graph.initializer_params(model)
        self.constants = sum(
            int(np.prod(a.t.dims)) for n in graph.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"
        )
        shapes = {i.name: tuple(i.dims) for i in graph.initializer}
        targets = [t for n in graph.node if n.op_type in MAC_OPS for t in list(n.input) + list(n.output) if t]
        try:
            shapes.update(onnx_graph.tensor_shapes(model, onnx_graph.random_feeds(model, 0), sorted(set(targets))))
        except Exception as e:  # onnxruntime reports load and run failures with its own exception types
            raise GraphError(f"{path}: ONNX Runtime cannot run it ({e})") from e
        runs = input_dependent(graph)
        self.macs = collections.Counter()
        self.folded = collections.Counter()
        for i, n in enumerate(graph.node):
            if n.op_type in MAC_OPS:
                (self.macs if i in runs else self.folded)[n.op_type] += node_macs(n, shapes.__getitem__)

    def total(self):
        return sum(self.macs.values())


def interface_differences(a, b):
    """Lines describing where the two graphs' inputs or outputs differ by name or shape.

    The runtime pairs inputs and outputs by name, so their order is not a difference.
    """
    lines = []
    for what, x, y in (("inputs", a.inputs, b.inputs), ("outputs", a.outputs, b.outputs)):
        if {n: list(s) for n, s in x} != {n: list(s) for n, s in y}:
            lines.append(f"{what} differ: A {fmt_values(x)}; B {fmt_values(y)}")
    return lines


def fmt_values(values):
    return ", ".join(f"{n} {list(s)}" for n, s in values) or "none"


def report(a, b, tolerance, out):
    """Prints the comparison; True when it passes."""
    print(f"A: {a.path}", file=out)
    print(f"B: {b.path}", file=out)
    print(f"inputs  A: {fmt_values(a.inputs)}", file=out)
    print(f"        B: {fmt_values(b.inputs)}", file=out)
    print(f"outputs A: {fmt_values(a.outputs)}", file=out)
    print(f"        B: {fmt_values(b.outputs)}", file=out)
    print(f"{'op':<20} {'count A':>8} {'count B':>8} {'GMAC A':>9} {'GMAC B':>9} {'B / A':>7}", file=out)
    for op in COMPUTE_OPS:
        ma, mb = a.macs[op] / 1e9, b.macs[op] / 1e9
        ratio = f"{mb / ma:7.3f}" if ma else f"{'-':>7}"
        macs = f"{ma:>9.4f} {mb:>9.4f} {ratio}" if op in MAC_OPS else ""
        print(f"{op:<20} {a.ops[op]:>8} {b.ops[op]:>8} {macs}", file=out)
    ta, tb = a.total(), b.total()
    delta = abs(tb - ta) / ta if ta else float(tb != 0)
    ratio = f"{tb / ta:7.3f}" if ta else f"{'-':>7}"
    print(f"{'all nodes, per frame':<20} {sum(a.ops.values()):>8} {sum(b.ops.values()):>8} {ta / 1e9:>9.4f}"
          f" {tb / 1e9:>9.4f} {ratio}", file=out)
    fa, fb = sum(a.folded.values()), sum(b.folded.values())
    print(f"{'folded (constant)':<20} {'':>8} {'':>8} {fa / 1e9:>9.4f} {fb / 1e9:>9.4f}", file=out)
    print(f"parameters: initializers A {a.params:,} B {b.params:,}; Constant nodes A {a.constants:,} B {b.constants:,}",
          file=out)
    problems = interface_differences(a, b)
    for what, x, y in (("inputs", a.inputs, b.inputs), ("outputs", a.outputs, b.outputs)):
        if not problems and x != y:
            print(f"note: the {what} are declared in another order (they are paired by name)", file=out)
    if delta > tolerance:
        problems.append(f"per-frame MACs differ by {delta:.2%}, over the {tolerance:.2%} tolerance")
    for p in problems:
        print(f"MISMATCH: {p}", file=out)
    if not problems:
        print(f"match: same interface, per-frame MACs within {delta:.3%} (tolerance {tolerance:.2%})", file=out)
    return not problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", help="reference graph (the upstream cut)")
    ap.add_argument("b", help="graph to validate")
    ap.add_argument("--tolerance", type=float, default=0.01, help="relative MAC difference allowed (default 0.01)")
    args = ap.parse_args(argv)
    try:
        a, b = Profile(args.a), Profile(args.b)
    except GraphError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0 if report(a, b, args.tolerance, sys.stdout) else 1


if __name__ == "__main__":
    sys.exit(main())
