#!/usr/bin/env python3
"""Tests of tools/compare_decoder_graphs.py on small synthetic graphs.

    tools/.venv/bin/python tools/test_compare_decoder_graphs.py
"""

import io
import os
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_decoder_graphs as compare  # noqa: E402

F32 = TensorProto.FLOAT
D, T = 16, 12


def init(rng, name, shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def model(graph):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def known_macs_graph():
    """One node of each MAC op with hand-counted MACs, and one MatMul on constants only."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"]),  # (1,5,6) x (6,4): 5*4 outputs x 6
        helper.make_node("Reshape", ["x", "s"], ["x2"]),
        helper.make_node("Gemm", ["x2", "g"], ["gemm"], transB=1),  # (5,6) x (4,6)^T: 5*4*6
        helper.make_node("Conv", ["img", "k"], ["conv"], pads=[1, 1, 1, 1]),  # (1,4,8,8) x 3*3*3
        helper.make_node("GridSample", ["img", "grid"], ["gs"], align_corners=0),  # (1,3,5,3) x 4
        helper.make_node("MatMul", ["w", "v"], ["folded"]),  # constants only: (6,4) x (4,2)
        helper.make_node("ReduceSum", ["folded"], ["fsum"], keepdims=0),
        helper.make_node("Add", ["mm", "fsum"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "known",
        [
            helper.make_tensor_value_info("x", F32, [1, 5, 6]),
            helper.make_tensor_value_info("img", F32, [1, 3, 8, 8]),
            helper.make_tensor_value_info("grid", F32, [1, 5, 3, 2]),
        ],
        [
            helper.make_tensor_value_info("y", F32, [1, 5, 4]),
            helper.make_tensor_value_info("gemm", F32, [5, 4]),
            helper.make_tensor_value_info("conv", F32, [1, 4, 8, 8]),
            helper.make_tensor_value_info("gs", F32, [1, 3, 5, 3]),
        ],
        [
            init(rng, "w", (6, 4)),
            init(rng, "g", (4, 6)),
            init(rng, "k", (4, 3, 3, 3)),
            init(rng, "v", (4, 2)),
            numpy_helper.from_array(np.array([5, 6], np.int64), "s"),
        ],
    )
    return model(graph)


def layer_stack(layers, seed=0, name="features"):
    """`layers` blocks of attention-like compute: MatMul, Softmax, MatMul, LayerNorm, Gemm."""
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], name
    for i in range(layers):
        inits += [init(rng, f"wq{i}", (D, D)), init(rng, f"g{i}", (D,)), init(rng, f"b{i}", (D,))]
        inits += [init(rng, f"wo{i}", (D, D))]
        nodes += [
            helper.make_node("MatMul", [x, f"wq{i}"], [f"q{i}"]),
            helper.make_node("Softmax", [f"q{i}"], [f"a{i}"], axis=-1),
            helper.make_node("Mul", [f"a{i}", x], [f"c{i}"]),
            helper.make_node("LayerNormalization", [f"c{i}", f"g{i}", f"b{i}"], [f"n{i}"], axis=-1),
            helper.make_node("Gemm", [f"n{i}", f"wo{i}"], [f"x{i}"]),
        ]
        x = f"x{i}"
    nodes.append(helper.make_node("Identity", [x], ["dets"]))
    graph = helper.make_graph(
        nodes,
        "stack",
        [helper.make_tensor_value_info(name, F32, [T, D])],
        [helper.make_tensor_value_info("dets", F32, [T, D])],
        inits,
    )
    return model(graph)


def compare_files(a, b, tolerance=0.01):
    with tempfile.TemporaryDirectory() as d:
        pa, pb = os.path.join(d, "a.onnx"), os.path.join(d, "b.onnx")
        onnx.save(a, pa)
        onnx.save(b, pb)
        out = io.StringIO()
        stdout, sys.stdout = sys.stdout, out
        try:
            code = compare.main([pa, pb, "--tolerance", str(tolerance)])
        finally:
            sys.stdout = stdout
        return code, out.getvalue()


class CompareTest(unittest.TestCase):
    def test_macs_are_counted_per_op_from_run_shapes(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "known.onnx")
            onnx.save(known_macs_graph(), path)
            p = compare.Profile(path)
        self.assertEqual(p.macs["MatMul"], 5 * 4 * 6)
        self.assertEqual(p.macs["Gemm"], 5 * 4 * 6)
        self.assertEqual(p.macs["Conv"], 4 * 8 * 8 * 3 * 3 * 3)
        self.assertEqual(p.macs["GridSample"], 4 * (3 * 5 * 3))
        self.assertEqual(p.folded["MatMul"], 6 * 2 * 4)
        self.assertEqual(p.params, 6 * 4 + 4 * 6 + 4 * 27 + 4 * 2 + 2)

    def test_same_structure_other_weights_matches(self):
        code, out = compare_files(layer_stack(4, seed=1), layer_stack(4, seed=2))
        self.assertEqual(code, 0, out)
        self.assertIn("match: same interface", out)

    def test_one_layer_fewer_fails(self):
        code, out = compare_files(layer_stack(4), layer_stack(3))
        self.assertEqual(code, 1, out)
        self.assertIn("per-frame MACs differ by 25.00%", out)

    def test_a_wider_tolerance_accepts_the_difference(self):
        code, out = compare_files(layer_stack(4), layer_stack(3), tolerance=0.3)
        self.assertEqual(code, 0, out)

    def test_other_input_names_fail(self):
        code, out = compare_files(layer_stack(2), layer_stack(2, name="tap0"))
        self.assertEqual(code, 1, out)
        self.assertIn("MISMATCH: inputs differ", out)

    def test_outputs_in_another_order_match_by_name(self):
        a, b = layer_stack(2), layer_stack(2)
        b.graph.node.append(helper.make_node("Identity", ["features"], ["echo"]))
        a.graph.node.append(helper.make_node("Identity", ["features"], ["echo"]))
        a.graph.output.append(helper.make_tensor_value_info("echo", F32, [T, D]))
        b.graph.output.insert(0, helper.make_tensor_value_info("echo", F32, [T, D]))
        code, out = compare_files(a, b)
        self.assertEqual(code, 0, out)
        self.assertIn("note: the outputs are declared in another order", out)

    def test_an_output_of_another_shape_fails(self):
        a, b = layer_stack(2), layer_stack(2)
        b.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 1
        code, out = compare_files(a, b)
        self.assertEqual(code, 1, out)
        self.assertIn("MISMATCH: outputs differ", out)

    def test_an_unreadable_file_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.onnx")
            with open(bad, "wb") as f:
                f.write(b"not a model")
            good = os.path.join(d, "good.onnx")
            onnx.save(layer_stack(1), good)
            err = io.StringIO()
            stderr, sys.stderr = sys.stderr, err
            try:
                code = compare.main([good, bad])
            finally:
                sys.stderr = stderr
        self.assertEqual(code, 2)
        self.assertIn(bad, err.getvalue())


if __name__ == "__main__":
    unittest.main()
