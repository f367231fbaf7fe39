#!/usr/bin/env python3
"""Generate the decoder and reference-backbone ONNX fixtures.

    tools/.venv/bin/python tools/make_decoder_fixtures.py [--out fixtures]

Needs `onnx` and `numpy` (`pip install onnx numpy`). Deterministic: fixed seeds, no
timestamps, so re-running gives byte-identical files.

decoder_{288,432}.onnx: the host part of the RF-DETR keypoint model, with the
architecture of the real graph (rf-detr 1.8+ keypoint preview) at reduced width:

- inputs tap0..tap3 float32 (1, 384, g, g), g = side / 12;
- two projectors (detection memory, keypoint cross-attention memory): concat of the 4
  taps -> 1x1 conv -> a 3x3 bottleneck with SiLU -> 1x1 conv -> channel LayerNorm;
- two-stage query selection: per-token class head, ReduceMax, TopK (k = Q),
  GatherElements of the selected tokens and of their fixed cell-centre proposals, box
  delta MLP with the bbox reparameterisation, learned reference offsets;
- sine embedding of the reference boxes -> query_pos MLP;
- L decoder layers, post-norm, each with: self-attention over Q queries; deformable
  cross-attention (1 level, H heads, P points, box-relative offsets, softmax weights,
  ONNX GridSample bilinear / zeros / align_corners=0); FFN; then the keypoint stage:
  instance self-attention over [query + K keypoint tokens], keypoint deformable
  cross-attention with Q*K queries on the second memory (parent box as reference),
  keypoint FFN;
- heads: class logits (+ the keypoint class term summed over keypoints), box MLP
  decoded against the references, keypoint MLP (8 fields, x/y reparameterised against
  the parent box).

Outputs dets (1, Q, 4), labels (1, Q, 91), keypoints (1, Q, 17, 8), as the real export.
Reduced sizes of the committed files (stated in the README): hidden width D = 64 (real
256), 2 decoder layers (real 4), 8 attention heads (real 8 self / 16 cross), FFN 256 /
keypoint FFN 128 (real 2048 / 1024), C2f with 1 bottleneck at 32 channels (real 3 at
128); Q = 100 queries and K = 17 keypoints as the real model. `--full` writes
decoder_full_{288,432}.onnx with the real sizes (about 55 MB each) for benchmarks.

backbone_{288,432}.onnx: a tiny stand-in for the NPU backbone with the fixture HEFs'
shapes, for the simulator: input `image` float32 (1, side, side, 3) NHWC, outputs
tap0..tap3 float32 (1, g, g, 384) NHWC (the device layout). A 12x12 stride-12 patch
conv to 32 channels, tanh, then one 32->384 linear per tap.
"""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
QUERIES = 100
KEYPOINTS = 17
CLASSES = 91
TAP_CH = 384
PATCH = 12

# Committed fixtures: reduced width. `--full` gives the real keypoint-preview widths
# (about 55 MB per file, for benchmarks only, never committed).
SMALL = dict(D=64, LAYERS=2, SA_HEADS=8, CA_HEADS=8, FFN=256, KP_FFN=128, PROJ_C=32, BOTTLENECKS=1)
FULL = dict(D=256, LAYERS=4, SA_HEADS=8, CA_HEADS=16, FFN=2048, KP_FFN=1024, PROJ_C=128, BOTTLENECKS=3)
CFG = dict(SMALL)
POINTS = 2


class Graph:
    """A small ONNX graph builder: unique names, initializers, helpers for common blocks."""

    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)
        self.nodes = []
        self.inits = []
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, value, base="c"):
        n = self.name(base)
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        self.inits.append(numpy_helper.from_array(arr, n))
        return n

    def ints(self, values):
        return self.const(np.asarray(values, dtype=np.int64), "i")

    def weight(self, shape, fan_in=None, scale=1.0):
        fan_in = fan_in or shape[0]
        w = self.rng.standard_normal(shape) * (scale / np.sqrt(fan_in))
        return self.const(w.astype(np.float32), "w")

    def op(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name(op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    # blocks
    def linear(self, x, fin, fout, bias=True, scale=1.0):
        y = self.op("MatMul", [x, self.weight((fin, fout), scale=scale)])
        if bias:
            y = self.op("Add", [y, self.const(self.rng.standard_normal(fout) * 0.02)])
        return y

    def layer_norm(self, x, width):
        g = self.const(1.0 + 0.1 * self.rng.standard_normal(width))
        b = self.const(0.05 * self.rng.standard_normal(width))
        return self.op("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-5)

    def mlp(self, x, dims, relu=True):
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            x = self.linear(x, a, b)
            if relu and i < len(dims) - 2:
                x = self.op("Relu", [x])
        return x

    def silu(self, x):
        return self.op("Mul", [x, self.op("Sigmoid", [x])])

    def conv(self, x, cin, cout, k, stride=1, pad=0):
        w = self.weight((cout, cin, k, k), fan_in=cin * k * k)
        b = self.const(self.rng.standard_normal(cout) * 0.02)
        return self.op("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)

    def reshape(self, x, shape):
        return self.op("Reshape", [x, self.ints(shape)])

    def transpose(self, x, perm):
        return self.op("Transpose", [x], perm=perm)

    def slice(self, x, start, end, axis):
        return self.op("Slice", [x, self.ints([start]), self.ints([end]), self.ints([axis])])


def projector(g, taps, grid):
    """LW-DETR MultiScaleProjector at P4: a C2f block (1x1 conv to 2c, split, n 3x3
    bottlenecks with SiLU and residual, concat of all, 1x1 conv to D), then channel
    LayerNorm."""
    D, c, n = CFG["D"], CFG["PROJ_C"], CFG["BOTTLENECKS"]
    x = g.op("Concat", taps, axis=1)
    y0, y1 = g.op("Split", [g.silu(g.conv(x, 4 * TAP_CH, 2 * c, 1)), g.ints([c, c])], n_out=2, axis=1)
    parts = [y0, y1]
    for _ in range(n):
        b = g.silu(g.conv(parts[-1], c, c, 3, pad=1))
        b = g.silu(g.conv(b, c, c, 3, pad=1))
        parts.append(g.op("Add", [parts[-1], b]))
    y = g.silu(g.conv(g.op("Concat", parts, axis=1), (2 + n) * c, D, 1))
    y = g.transpose(y, [0, 2, 3, 1])
    y = g.reshape(y, [1, grid * grid, D])
    return g.layer_norm(y, D)


def reparam(g, delta, ref):
    """bbox reparameterisation: cxcy = d_xy * ref_wh + ref_cxcy, wh = exp(d_wh) * ref_wh."""
    d_xy = g.slice(delta, 0, 2, -1)
    d_wh = g.slice(delta, 2, 4, -1)
    r_xy = g.slice(ref, 0, 2, -1)
    r_wh = g.slice(ref, 2, 4, -1)
    xy = g.op("Add", [g.op("Mul", [d_xy, r_wh]), r_xy])
    wh = g.op("Mul", [g.op("Exp", [d_wh]), r_wh])
    return g.op("Concat", [xy, wh], axis=-1)


def attention(g, q_in, k_in, v_in, batch, tokens):
    """Multi-head attention over `tokens` tokens in `batch` independent groups."""
    D, HEADS = CFG["D"], CFG["SA_HEADS"]
    dh = D // HEADS

    def heads(x):
        x = g.reshape(x, [batch, tokens, HEADS, dh])
        return g.transpose(x, [0, 2, 1, 3])

    q = heads(g.linear(q_in, D, D))
    k = heads(g.linear(k_in, D, D))
    v = heads(g.linear(v_in, D, D))
    s = g.op("MatMul", [q, g.transpose(k, [0, 1, 3, 2])])
    s = g.op("Mul", [s, g.const(np.float32(1.0 / np.sqrt(dh)))])
    a = g.op("MatMul", [g.op("Softmax", [s], axis=-1), v])
    a = g.reshape(g.transpose(a, [0, 2, 1, 3]), [batch, tokens, D])
    return g.linear(a, D, D)


def deformable(g, query, ref, memory, lq, grid):
    """MSDeformAttn with one level: value_proj, box-relative offsets, GridSample, weighted sum.

    query (1, lq, D), ref (1, lq, 4) cxcywh, memory (1, S, D) -> (1, lq, D).
    """
    D, HEADS = CFG["D"], CFG["CA_HEADS"]
    dh = D // HEADS
    value = g.linear(memory, D, D)
    value = g.transpose(g.reshape(value, [1, grid * grid, HEADS, dh]), [0, 2, 3, 1])
    value = g.reshape(value, [HEADS, dh, grid, grid])
    off = g.linear(query, D, HEADS * POINTS * 2, scale=0.5)
    off = g.reshape(off, [1, lq, HEADS, POINTS, 2])
    w = g.linear(query, D, HEADS * POINTS)
    w = g.op("Softmax", [g.reshape(w, [1, lq, HEADS, POINTS])], axis=-1)
    r_xy = g.reshape(g.slice(ref, 0, 2, -1), [1, lq, 1, 1, 2])
    r_wh = g.reshape(g.slice(ref, 2, 4, -1), [1, lq, 1, 1, 2])
    scale = g.const(np.float32(0.5 / POINTS))
    loc = g.op("Add", [r_xy, g.op("Mul", [g.op("Mul", [off, r_wh]), scale])])
    grid_xy = g.op("Sub", [g.op("Mul", [loc, g.const(np.float32(2.0))]), g.const(np.float32(1.0))])
    grid_xy = g.reshape(g.transpose(grid_xy, [0, 2, 1, 3, 4]), [HEADS, lq, POINTS, 2])
    sampled = g.op(
        "GridSample", [value, grid_xy], mode="bilinear", padding_mode="zeros", align_corners=0
    )  # (H, dh, lq, P)
    w = g.reshape(g.transpose(w, [0, 2, 1, 3]), [HEADS, 1, lq, POINTS])
    out = g.op("ReduceSum", [g.op("Mul", [sampled, w]), g.ints([-1])], keepdims=0)  # (H, dh, lq)
    out = g.transpose(g.reshape(out, [1, D, lq]), [0, 2, 1])
    return g.linear(out, D, D)


def sine_embed(g, ref, feats=16):
    """Sine embedding of the 4 box coordinates: (1, Q, 4) -> (1, Q, 4 * 2 * feats)."""
    dim_t = 10000 ** (2 * (np.arange(feats) // 2) / feats)
    x = g.op("Unsqueeze", [ref, g.ints([-1])])
    x = g.op("Mul", [x, g.const((2 * np.pi / dim_t).astype(np.float32))])
    s = g.op("Concat", [g.op("Sin", [x]), g.op("Cos", [x])], axis=-1)
    return g.reshape(s, [1, QUERIES, 4 * 2 * feats])


def decoder(side, seed=7):
    D, LAYERS, FFN, KP_FFN = CFG["D"], CFG["LAYERS"], CFG["FFN"], CFG["KP_FFN"]
    grid = side // PATCH
    tokens = grid * grid
    g = Graph(seed)
    taps = [f"tap{i}" for i in range(4)]
    memory = projector(g, taps, grid)
    kp_memory = projector(g, taps, grid)

    # Two-stage selection.
    ys, xs = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")
    props = np.stack(
        [(xs + 0.5) / grid, (ys + 0.5) / grid, np.full_like(xs, 0.05, float), np.full_like(xs, 0.05, float)],
        axis=-1,
    ).reshape(1, tokens, 4)
    out_mem = g.layer_norm(g.linear(memory, D, D), D)
    enc_cls = g.linear(out_mem, D, CLASSES)
    best = g.op("ReduceMax", [enc_cls], axes=[-1], keepdims=0)  # (1, S)
    _, idx = g.op("TopK", [best, g.ints([QUERIES])], n_out=2, axis=-1, largest=1, sorted=1)
    idx = g.op("Unsqueeze", [idx, g.ints([-1])])  # (1, Q, 1)
    sel_mem = g.op("GatherElements", [out_mem, g.op("Expand", [idx, g.ints([1, QUERIES, D])])], axis=1)
    sel_prop = g.op("GatherElements", [g.const(props), g.op("Expand", [idx, g.ints([1, QUERIES, 4])])], axis=1)
    ts_ref = reparam(g, g.mlp(sel_mem, [D, D, 4]), sel_prop)
    refpoint = g.const(0.1 * g.rng.standard_normal((1, QUERIES, 4)))
    ref = reparam(g, refpoint, ts_ref)  # (1, Q, 4), fixed for all layers (lite refine)
    query_pos = g.mlp(sine_embed(g, ref), [4 * 2 * 16, D, D])
    tgt = g.const(g.rng.standard_normal((1, QUERIES, D)) * 0.5)

    # Keypoint tokens: the initialiser is constant at inference (folded here).
    kp = g.const(g.rng.standard_normal((1, QUERIES, KEYPOINTS, D)) * 0.5)
    kp_pos = g.const(np.concatenate([np.zeros((1, D)), g.rng.standard_normal((KEYPOINTS, D)) * 0.5]))
    kp_ref = g.reshape(
        g.op("Expand", [g.op("Unsqueeze", [ref, g.ints([2])]), g.ints([1, QUERIES, KEYPOINTS, 4])]),
        [1, QUERIES * KEYPOINTS, 4],
    )
    kp_query_pos = g.op("Expand", [g.op("Unsqueeze", [query_pos, g.ints([2])]), g.ints([1, QUERIES, KEYPOINTS, D])])

    for _ in range(LAYERS):
        q = g.op("Add", [tgt, query_pos])
        tgt = g.layer_norm(g.op("Add", [tgt, attention(g, q, q, tgt, 1, QUERIES)]), D)
        q = g.op("Add", [tgt, query_pos])
        tgt = g.layer_norm(g.op("Add", [tgt, deformable(g, q, ref, memory, QUERIES, grid)]), D)
        tgt = g.layer_norm(g.op("Add", [tgt, g.mlp(tgt, [D, FFN, D])]), D)

        # Instance self-attention over [query token + K keypoint tokens] per query.
        inst = g.op("Concat", [g.op("Unsqueeze", [tgt, g.ints([2])]), kp], axis=2)  # (1,Q,K+1,D)
        inst = g.reshape(inst, [QUERIES, KEYPOINTS + 1, D])
        qk = g.op("Add", [inst, kp_pos])
        upd = attention(g, qk, qk, inst, QUERIES, KEYPOINTS + 1)
        upd = g.reshape(upd, [1, QUERIES, KEYPOINTS + 1, D])
        tgt_upd = g.reshape(g.slice(upd, 0, 1, 2), [1, QUERIES, D])
        tgt = g.layer_norm(g.op("Add", [tgt, g.op("Mul", [tgt_upd, g.const(np.float32(1e-3))])]), D)
        kp = g.layer_norm(g.op("Add", [kp, g.slice(upd, 1, KEYPOINTS + 1, 2)]), D)

        # Keypoint deformable cross-attention: Q*K queries on the second memory.
        kq = g.reshape(g.op("Add", [kp, kp_query_pos]), [1, QUERIES * KEYPOINTS, D])
        katt = deformable(g, kq, kp_ref, kp_memory, QUERIES * KEYPOINTS, grid)
        kp = g.layer_norm(g.op("Add", [kp, g.reshape(katt, [1, QUERIES, KEYPOINTS, D])]), D)
        kp = g.layer_norm(g.op("Add", [kp, g.mlp(kp, [D, KP_FFN, D])]), D)

    # Heads.
    raw_kp = g.mlp(kp, [D, D, D, 8])  # (1, Q, K, 8)
    kp_ref4 = g.reshape(kp_ref, [1, QUERIES, KEYPOINTS, 4])
    kp_xy = g.op(
        "Add",
        [g.op("Mul", [g.slice(raw_kp, 0, 2, -1), g.slice(kp_ref4, 2, 4, -1)]), g.slice(kp_ref4, 0, 2, -1)],
    )
    g.nodes.append(
        helper.make_node("Concat", [kp_xy, g.slice(raw_kp, 2, 8, -1)], ["keypoints"], name="keypoints", axis=-1)
    )
    kp_cls = g.op("ReduceSum", [g.slice(raw_kp, 7, 8, -1), g.ints([2])], keepdims=0)  # (1, Q, 1)
    g.nodes.append(helper.make_node("Add", [g.linear(tgt, D, CLASSES), kp_cls], ["labels"], name="labels"))
    box = reparam(g, g.mlp(tgt, [D, D, D, 4]), ref)
    g.nodes.append(helper.make_node("Identity", [box], ["dets"], name="dets"))

    f32 = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info(t, f32, [1, TAP_CH, grid, grid]) for t in taps]
    outputs = [
        helper.make_tensor_value_info("dets", f32, [1, QUERIES, 4]),
        helper.make_tensor_value_info("labels", f32, [1, QUERIES, CLASSES]),
        helper.make_tensor_value_info("keypoints", f32, [1, QUERIES, KEYPOINTS, 8]),
    ]
    graph = helper.make_graph(g.nodes, f"rfdetr_kp_decoder_{side}", inputs, outputs, g.inits)
    return finish(graph)


def backbone(side, seed=11):
    grid = side // PATCH
    g = Graph(seed)
    x = g.transpose("image", [0, 3, 1, 2])
    x = g.op("Mul", [x, g.const(np.float32(1.0 / 255.0))])
    h = g.op("Tanh", [g.conv(x, 3, 32, PATCH, stride=PATCH)])  # (1, 32, g, g)
    h = g.transpose(h, [0, 2, 3, 1])  # (1, g, g, 32)
    for i in range(4):
        y = g.linear(h, 32, TAP_CH, scale=2.0)
        g.nodes.append(helper.make_node("Identity", [y], [f"tap{i}"], name=f"tap{i}"))
    f32 = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("image", f32, [1, side, side, 3])]
    outputs = [helper.make_tensor_value_info(f"tap{i}", f32, [1, grid, grid, TAP_CH]) for i in range(4)]
    graph = helper.make_graph(g.nodes, f"reference_backbone_{side}", inputs, outputs, g.inits)
    return finish(graph)


def finish(graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="hailo-edge")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "fixtures"))
    ap.add_argument(
        "--full", action="store_true", help="real widths (decoder_full_*.onnx, ~55 MB each; benchmarks only)"
    )
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    kinds = (("decoder", decoder), ("backbone", backbone))
    if args.full:
        CFG.update(FULL)
        kinds = (("decoder_full", decoder),)
    for side in (288, 432):
        for kind, build in kinds:
            path = os.path.join(args.out, f"{kind}_{side}.onnx")
            onnx.save(build(side), path)
            print(f"{path}: {os.path.getsize(path) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
