#!/usr/bin/env python3
"""ONNX Runtime runs the unrolled fit's graph and agrees with the Rust evaluator at f32.

    hailo-edge body unrolled -o fit.onnx --iterations 4 --case case.json
    tools/.venv/bin/python tools/check_unrolled_onnx.py fit.onnx case.json

case.json holds the graph's inputs for one demo frame and the Rust evaluator's outputs
(docs/unrolled-fit.md#checks). The graph must use only the operators the backbone compiled,
and every output must agree within TOLERANCE. Two negative controls must fail the same
comparison: the most confident keypoint's target moved by 5 cm, and the damping weight (c/ne/lambda) times 30.
"""

import json
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ALLOWED = {"MatMul", "Gather", "Mul", "Add", "ReduceSum", "Min", "Where", "Concat", "Reshape"}
# Largest absolute difference allowed, in the outputs' units (rotation entries, metres).
TOLERANCE = 1e-4


def arrays(section):
    return {n: np.asarray(v["data"], np.float32).reshape(v["shape"]) for n, v in section.items()}


def run(model, inputs):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, inputs)))


def worst(got, expected):
    return max(float(np.max(np.abs(got[n] - e))) for n, e in expected.items())


def main(onnx_path, case_path):
    model = onnx.load(onnx_path)
    onnx.checker.check_model(model)
    outside = sorted({n.op_type for n in model.graph.node} - ALLOWED)
    if outside:
        sys.exit(f"FAIL: operators outside the compiled set: {', '.join(outside)}")
    with open(case_path) as f:
        case = json.load(f)
    inputs, expected = arrays(case["inputs"]), arrays(case["outputs"])

    diff = worst(run(model, inputs), expected)
    print(f"onnxruntime {ort.__version__}: largest difference from the Rust evaluator {diff:.2e}"
          f" (tolerance {TOLERANCE:g})")
    if not diff <= TOLERANCE:
        sys.exit("FAIL: onnxruntime and the Rust evaluator disagree")

    moved = {n: a.copy() for n, a in inputs.items()}
    moved["targets"][int(np.argmax(inputs["confidence"]))] += np.float32(0.05)
    lam = next(t for t in model.graph.initializer if t.name == "c/ne/lambda")
    lam.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(lam) * np.float32(30), lam.name))
    for what, m, i in [("a target moved by 5 cm", onnx.load(onnx_path), moved),
                       ("the damping weight times 30", model, inputs)]:
        d = worst(run(m, i), expected)
        print(f"negative control, {what}: largest difference {d:.2e}")
        if d <= TOLERANCE:
            sys.exit(f"FAIL: the comparison does not see {what}")
    print("ok")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
