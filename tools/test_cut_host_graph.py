#!/usr/bin/env python3
"""Tests of tools/cut_host_graph.py on small graphs, without the shared upstream model.

    tools/.venv/bin/python tools/test_cut_host_graph.py

A synthetic upstream-like graph (four taps, two projectors ending in a channel LayerNorm, a
TopK on the detection memory, the second memory feeding the keypoints only) is built in three
end layouts; the committed reduced fixture fixtures/decoder_reduced_taps_288.onnx is cut too while it
still reads the taps.
"""

import io
import os
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cut_host_graph as cut  # noqa: E402
import onnx_graph  # noqa: E402

TAP_C, C, G, K = 8, 6, 4, 3
FIXTURE = os.path.join(HERE, "..", "fixtures", "decoder_reduced_taps_288.onnx")


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.n = [], [], 0

    def const(self, value):
        self.n += 1
        name = f"c{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type, inputs, n_out=1, **attrs):
        self.n += 1
        outs = [f"{op_type.lower()}{self.n}_{k}" for k in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=f"{op_type}{self.n}", **attrs))
        return outs[0] if n_out == 1 else outs

    def weight(self, *shape):
        return self.const(self.rng.standard_normal(shape).astype(np.float32))

    def projector(self, end):
        """Concat of the taps -> 1x1 conv -> channel LayerNorm, ending in the given layout."""
        x = self.op("Concat", [f"tap{i}" for i in range(4)], axis=1)
        x = self.op("Conv", [x, self.weight(C, 4 * TAP_C, 1, 1)], kernel_shape=[1, 1])
        x = self.op("Transpose", [x], perm=[0, 2, 3, 1])
        if end == "tokens":
            x = self.op("Reshape", [x, self.const(np.array([1, G * G, C], np.int64))])
        x = self.op("LayerNormalization", [x, self.weight(C), self.weight(C)], axis=-1, epsilon=1e-5)
        if end == "nchw":
            x = self.op("Transpose", [x], perm=[0, 3, 1, 2])
            x = self.op("Reshape", [x, self.const(np.array([1, C, G * G], np.int64))])
            x = self.op("Transpose", [x], perm=[0, 2, 1])
        elif end == "nhwc":
            x = self.op("Reshape", [x, self.const(np.array([1, G * G, C], np.int64))])
        return x  # (1, S, C) tokens for the host part


def upstream_like(end="nchw", same_projectors=False):
    """Taps -> two projectors -> a TopK on the first memory -> dets, labels, keypoints."""
    b = Builder(3)
    mem = b.projector(end)
    if same_projectors:
        b.rng = np.random.default_rng(3)
    kp_mem = b.projector(end)
    score = b.op("ReduceMax", [b.op("MatMul", [mem, b.weight(C, 5)])], axes=[-1], keepdims=0)
    _, idx = b.op("TopK", [score, b.const(np.array([K], np.int64))], n_out=2, axis=-1)
    idx = b.op("Expand", [b.op("Unsqueeze", [idx, b.const(np.array([-1], np.int64))]), b.const(np.array([1, K, C], np.int64))])
    rows = b.op("GatherElements", [mem, idx], axis=1)
    b.nodes.append(helper.make_node("MatMul", [rows, b.weight(C, 4)], ["dets"], name="dets"))
    pooled = b.op("ReduceMean", [kp_mem], axes=[1], keepdims=1)  # (1, 1, C)
    kp = b.op("Add", [rows, pooled])
    b.nodes.append(helper.make_node("MatMul", [kp, b.weight(C, 2)], ["keypoints"], name="keypoints"))
    b.nodes.append(helper.make_node("MatMul", [b.op("Mul", [rows, kp]), b.weight(C, 7)], ["labels"], name="labels"))
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        b.nodes,
        "upstream_like",
        [helper.make_tensor_value_info(f"tap{i}", f32, [1, TAP_C, G, G]) for i in range(4)],
        [
            helper.make_tensor_value_info("dets", f32, [1, K, 4]),
            helper.make_tensor_value_info("labels", f32, [1, K, 7]),
            helper.make_tensor_value_info("keypoints", f32, [1, K, 2]),
        ],
        b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def cut_all(model, path="synthetic.onnx"):
    cuts = cut.find_cuts(model, path, onnx_graph.random_feeds(model, 0))
    return cuts, cut.cut_host(model, path, cuts), cut.cut_projectors(model, cuts)


def producer_op(model, tensor):
    return next(n.op_type for n in model.graph.node if tensor in n.output)


class CutTest(unittest.TestCase):
    def check_layout(self, end, layout, op):
        model = upstream_like(end)
        cuts, host, projectors = cut_all(model)
        self.assertEqual([c.role for c in cuts], ["features", "cross_attn_features"])
        self.assertEqual([c.layout for c in cuts], [layout, layout])
        self.assertEqual([producer_op(model, c.tensor) for c in cuts], [op, op])
        shapes = onnx_graph.value_info_shapes(host.graph.input)
        self.assertEqual(shapes, [("features", [1, C, G, G]), ("cross_attn_features", [1, C, G, G])])
        self.assertEqual([o.name for o in host.graph.output], ["dets", "labels", "keypoints"])
        self.assertFalse({"tap0", "tap1", "tap2", "tap3"} & {t for n in host.graph.node for t in n.input})
        self.assertEqual(
            onnx_graph.value_info_shapes(projectors.graph.output),
            [("features", [1, C, G, G]), ("cross_attn_features", [1, C, G, G])],
        )
        log = io.StringIO()
        self.assertTrue(cut.prove(model, host, projectors, 2, 0, log), log.getvalue())
        self.assertIn("fails the gate, as it should", log.getvalue())

    def test_nchw_end_is_cut_after_the_layout_transpose(self):
        self.check_layout("nchw", "nchw", "Transpose")

    def test_nhwc_end_gets_a_layout_adapter(self):
        self.check_layout("nhwc", "nhwc", "LayerNormalization")

    def test_token_end_gets_a_layout_adapter(self):
        self.check_layout("tokens", "tokens", "LayerNormalization")

    def test_the_detection_memory_is_the_one_feeding_topk(self):
        model = upstream_like()
        cuts, _, _ = cut_all(model)
        topk = {i for i, n in enumerate(model.graph.node) if n.op_type == "TopK"}
        self.assertTrue(onnx_graph.descendants(model.graph, cuts[0].tensor) & topk)
        self.assertFalse(onnx_graph.descendants(model.graph, cuts[1].tensor) & topk)

    def test_a_wrong_host_graph_fails_the_proof(self):
        model = upstream_like()
        _, host, projectors = cut_all(model)
        w = next(i for i in host.graph.initializer if numpy_helper.to_array(i).shape == (C, 4))
        w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * np.float32(1.001), w.name))
        log = io.StringIO()
        self.assertFalse(cut.prove(model, host, projectors, 1, 0, log))
        self.assertIn("OVER the 1e-06 gate", log.getvalue())

    def test_a_control_that_cannot_tell_the_maps_apart_fails_the_proof(self):
        model = upstream_like(same_projectors=True)
        _, host, projectors = cut_all(model)
        log = io.StringIO()
        self.assertFalse(cut.prove(model, host, projectors, 1, 0, log))
        self.assertIn("PASSES THE GATE", log.getvalue())

    def test_a_graph_without_two_tap_concats_is_refused_by_name(self):
        model = upstream_like()
        concat = next(n for n in model.graph.node if n.op_type == "Concat")
        concat.input[3] = "tap2"
        with self.assertRaises(onnx_graph.GraphError) as e:
            cut_all(model, "odd.onnx")
        self.assertIn("odd.onnx", str(e.exception))
        self.assertIn("expected two Concat nodes", str(e.exception))

    def test_the_cli_writes_both_halves_and_proves(self):
        with tempfile.TemporaryDirectory() as d:
            up, host, proj = (os.path.join(d, f) for f in ("up.onnx", "host.onnx", "proj.onnx"))
            onnx.save(upstream_like(), up)
            out = io.StringIO()
            stdout, sys.stdout = sys.stdout, out
            try:
                code = cut.main([up, "--out", host, "--projectors-out", proj, "--prove", "--trials", "1"])
            finally:
                sys.stdout = stdout
            self.assertEqual(code, 0, out.getvalue())
            self.assertEqual([i.name for i in onnx.load(host).graph.input], ["features", "cross_attn_features"])
            self.assertEqual([i.name for i in onnx.load(proj).graph.input], [f"tap{i}" for i in range(4)])

    def test_the_cli_names_the_file_it_cannot_cut(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "no_taps.onnx")
            onnx.save(upstream_like(), path)
            model = onnx.load(path)
            for n in model.graph.node:
                if n.op_type == "Concat":
                    n.op_type = "Sum"
            onnx.save(model, path)
            err = io.StringIO()
            stderr, sys.stderr = sys.stderr, err
            try:
                code = cut.main([path, "--prove"])
            finally:
                sys.stderr = stderr
            self.assertEqual(code, 2)
            self.assertIn(path, err.getvalue())

    def test_the_reduced_fixture_is_cut_exactly(self):
        model = onnx.load(FIXTURE)
        if sorted(onnx_graph.input_shapes(model)) != [f"tap{i}" for i in range(4)]:
            self.skipTest(f"{FIXTURE} does not read the taps")
        cuts, host, projectors = cut_all(model, FIXTURE)
        self.assertEqual({c.channels for c in cuts}, {64})
        self.assertEqual(len([n for n in host.graph.node if n.op_type == "GridSample"]), 4)
        self.assertEqual(len([n for n in host.graph.node if n.op_type == "Conv"]), 0)
        log = io.StringIO()
        self.assertTrue(cut.prove(model, host, projectors, 1, 0, log), log.getvalue())


if __name__ == "__main__":
    unittest.main()
