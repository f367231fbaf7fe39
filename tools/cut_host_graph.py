#!/usr/bin/env python3
"""Cut an RF-DETR keypoint host graph at the projector outputs, and prove the cut exact.

    tools/.venv/bin/python tools/cut_host_graph.py UPSTREAM.onnx --out HOST.onnx \
        [--projectors-out PROJ.onnx] [--prove] [--trials 3] [--seed 0]

The upstream host graph reads the ViT taps (`tap0..tap3`, (1, 384, g, g)) and runs both C2f
projectors, the decoder and the heads. The design puts both projectors on the device, so the
host graph at the design split is the upstream graph with the two projector outputs as its
inputs, named `features` and `cross_attn_features`, (1, 256, g, g) NCHW, with the same outputs.
`--projectors-out` also writes the projector half: taps -> (features, cross_attn_features).

How the projector outputs are found, from the graph's structure only:
1. each projector starts at a Concat that reads all the graph's inputs (the taps); there must
   be exactly two;
2. the projector's body is the chain of tensors every path from that Concat to the graph
   outputs passes through (its post-dominators); the projector ends at the last
   LayerNormalization on that chain (the channel LayerNorm), followed by any pure layout ops
   (Transpose, Reshape, Identity) while the tensor is still a (1, C, g, g) map;
3. the map whose descendants include the two-stage TopK is `features` (detection memory);
   the other one is `cross_attn_features` (keypoint memory only).
A cut tensor in (1, g, g, C) or (1, g*g, C) token layout (row-major y, x) gets exact layout
adapters on both sides. Anything else is an error naming the file and what was expected.

`--prove` runs, in ONNX Runtime (1 thread, all optimisations), the upstream graph on seeded
random taps and the host graph on the projector half's outputs for the same taps, and requires
max |delta| <= 1e-6 on dets, labels and keypoints. Its negative control feeds the two maps
swapped, which must fail the same gate. Exit status: 0 proved, 1 proof failed, 2 bad graph.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_graph  # noqa: E402
from onnx_graph import GraphError  # noqa: E402

ROLES = ("features", "cross_attn_features")
LAYOUT_OPS = {"Transpose", "Reshape", "Identity"}
TOLERANCE = 1e-6


class Cut:
    """One projector output: the tensor, its layout and the (C, g) of the map it holds."""

    def __init__(self, role, tensor, layout, channels, grid):
        self.role, self.tensor, self.layout, self.channels, self.grid = role, tensor, layout, channels, grid

    def describe(self):
        return f"{self.role} = `{self.tensor}` ({self.layout}, {self.channels} channels, grid {self.grid})"


def tap_concats(model, path):
    """The Concat nodes that read every graph input: one per projector."""
    taps = set(onnx_graph.input_shapes(model))
    found = [n for n in model.graph.node if n.op_type == "Concat" and set(n.input) == taps]
    if len(found) != 2:
        raise GraphError(
            f"{path}: expected two Concat nodes reading all graph inputs {sorted(taps)} (one per C2f projector), "
            f"found {len(found)}; is this an upstream host graph with the taps as inputs?"
        )
    return found


def post_dominator_chain(graph, start):
    """Tensors every path from `start` to a graph output goes through, in order.

    In a topological order of the nodes between `start` and the outputs, a tensor is a
    post-dominator exactly when it is the only live tensor (produced, with consumers still to
    run) right after its producer runs.
    """
    outputs = {o.name for o in graph.output}
    region = onnx_graph.descendants(graph, start)
    useful = onnx_graph.ancestors(graph, outputs) & region
    pending = {}
    for i in useful:
        for t in graph.node[i].input:
            if t:
                pending[t] = pending.get(t, 0) + 1
    live, chain = {start}, []
    for i in sorted(useful):  # ONNX node lists are topologically sorted
        node = graph.node[i]
        for t in node.input:
            if t in live:
                pending[t] -= 1
                if pending[t] == 0 and t not in outputs:
                    live.discard(t)
        live.update(t for t in node.output if t and (pending.get(t, 0) > 0 or t in outputs))
        if len(live) == 1:
            (only,) = live
            if only in node.output:
                chain.append(only)
    return chain


def classify(shape, grid):
    """Layout of a projector-output candidate: 'nchw', 'nhwc', 'tokens' or None; and its channels."""
    if len(shape) == 4 and shape[0] == 1 and tuple(shape[2:]) == (grid, grid):
        return "nchw", shape[1]
    if len(shape) == 4 and shape[0] == 1 and tuple(shape[1:3]) == (grid, grid):
        return "nhwc", shape[3]
    if len(shape) == 3 and shape[0] == 1 and shape[1] == grid * grid:
        return "tokens", shape[2]
    return None, None


def projector_end(model, path, concat, grid, feeds):
    """The tensor that ends the projector starting at `concat` (see the module doc)."""
    graph = model.graph
    chain = post_dominator_chain(graph, concat.output[0])
    prod = onnx_graph.producers(graph)
    op = {t: graph.node[prod[t]].op_type for t in chain}
    norms = [k for k, t in enumerate(chain) if op[t] == "LayerNormalization"]
    if not norms:
        raise GraphError(
            f"{path}: no LayerNormalization on the single-path chain after the tap Concat `{concat.name}`; "
            "expected the projector to end with a channel LayerNorm"
        )
    tail = [chain[norms[-1]]]
    for t in chain[norms[-1] + 1 :]:
        if op[t] not in LAYOUT_OPS:
            break
        tail.append(t)
    shapes = onnx_graph.tensor_shapes(model, feeds, tail)
    maps = [t for t in tail if classify(shapes[t], grid)[0] == "nchw"]
    pick = maps[-1] if maps else tail[0]
    layout, channels = classify(shapes[pick], grid)
    if layout is None:
        raise GraphError(
            f"{path}: the projector after `{concat.name}` ends at `{pick}` with shape {list(shapes[pick])}; "
            f"expected (1, C, {grid}, {grid}), (1, {grid}, {grid}, C) or (1, {grid * grid}, C)"
        )
    return pick, layout, channels


def find_cuts(model, path, feeds):
    """The two projector outputs, as `features` and `cross_attn_features` Cuts."""
    shapes = list(onnx_graph.input_shapes(model).values())
    grids = {tuple(s[2:]) for s in shapes}
    if len(grids) != 1 or any(len(s) != 4 for s in shapes):
        raise GraphError(f"{path}: expected graph inputs of one shape (1, C, g, g), found {shapes}")
    (gh, gw), = grids
    if gh != gw:
        raise GraphError(f"{path}: expected a square tap grid, found {gh}x{gw}")
    ends = [projector_end(model, path, c, gh, feeds) for c in tap_concats(model, path)]
    topk = [i for i, n in enumerate(model.graph.node) if n.op_type == "TopK"]
    reaches = [bool(onnx_graph.descendants(model.graph, t) & set(topk)) for t, _, _ in ends]
    if sum(reaches) != 1:
        names = ", ".join(f"`{t}`" for t, _, _ in ends)
        raise GraphError(
            f"{path}: expected exactly one projector output ({names}) to feed the two-stage TopK; "
            f"{sum(reaches)} do"
        )
    det = reaches.index(True)
    order = [ends[det], ends[1 - det]]
    return [Cut(role, t, layout, c, gh) for role, (t, layout, c) in zip(ROLES, order)]


def host_adapter(cut):
    """Nodes turning the (1, C, g, g) input into the cut tensor's layout, and the tensor they give."""
    c, g = cut.channels, cut.grid
    if cut.layout == "nchw":
        return [], [], cut.role
    out = f"{cut.role}/to_{cut.layout}"
    if cut.layout == "nhwc":
        return [helper.make_node("Transpose", [cut.role], [out], name=out, perm=[0, 2, 3, 1])], [], out
    shape = numpy_helper.from_array(np.array([1, c, g * g], np.int64), f"{cut.role}/flat_shape")
    flat = f"{cut.role}/flat"
    nodes = [
        helper.make_node("Reshape", [cut.role, shape.name], [flat], name=flat),
        helper.make_node("Transpose", [flat], [out], name=out, perm=[0, 2, 1]),
    ]
    return nodes, [shape], out


def projector_adapter(cut):
    """Nodes turning the cut tensor into the (1, C, g, g) output named after the role."""
    c, g = cut.channels, cut.grid
    if cut.layout == "nchw":
        return [helper.make_node("Identity", [cut.tensor], [cut.role], name=cut.role)], []
    if cut.layout == "nhwc":
        return [helper.make_node("Transpose", [cut.tensor], [cut.role], name=cut.role, perm=[0, 3, 1, 2])], []
    shape = numpy_helper.from_array(np.array([1, c, g, g], np.int64), f"{cut.role}/map_shape")
    chw = f"{cut.role}/channels_first"
    nodes = [
        helper.make_node("Transpose", [cut.tensor], [chw], name=chw, perm=[0, 2, 1]),
        helper.make_node("Reshape", [chw, shape.name], [cut.role], name=cut.role),
    ]
    return nodes, [shape]


def map_info(cut):
    return helper.make_tensor_value_info(cut.role, TensorProto.FLOAT, [1, cut.channels, cut.grid, cut.grid])


def subgraph(model, name, nodes, inputs, outputs, extra_inits):
    """A model with `nodes` (in order), the initializers they read, and the given inputs/outputs."""
    used = {t for n in nodes for t in n.input}
    inits = [i for i in model.graph.initializer if i.name in used] + extra_inits
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    out = helper.make_model(graph, opset_imports=model.opset_import, producer_name="hailo-edge cut_host_graph")
    out.ir_version = model.ir_version
    onnx.checker.check_model(out)
    return out


def cut_host(model, path, cuts):
    """The host graph: the upstream graph from the two projector outputs to its outputs."""
    taps = set(onnx_graph.input_shapes(model))
    head, head_inits, rename = [], [], {}
    for cut in cuts:
        nodes, inits, tensor = host_adapter(cut)
        head += nodes
        head_inits += inits
        rename[cut.tensor] = tensor
    body = []
    for n in model.graph.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(n)
        for k, t in enumerate(copy.input):
            if t in rename:
                copy.input[k] = rename[t]
        body.append(copy)
    staged = helper.make_graph(head + body, "staged", [], list(model.graph.output))
    keep = onnx_graph.ancestors(staged, [o.name for o in model.graph.output], stop=set(ROLES))
    nodes = [n for i, n in enumerate(staged.node) if i in keep]
    leaks = sorted({t for n in nodes for t in n.input if t in taps})
    if leaks:
        raise GraphError(f"{path}: after the cut the host graph still reads {leaks}; the projectors are not a clean cut")
    inputs = [map_info(c) for c in cuts]
    return subgraph(model, f"{model.graph.name}_host", nodes, inputs, list(model.graph.output), head_inits)


def cut_projectors(model, cuts):
    """The projector half: taps -> (features, cross_attn_features), (1, C, g, g) each."""
    keep = onnx_graph.ancestors(model.graph, [c.tensor for c in cuts])
    nodes = [n for i, n in enumerate(model.graph.node) if i in keep]
    extra = []
    for cut in cuts:
        tail, inits = projector_adapter(cut)
        nodes += tail
        extra += inits
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    return subgraph(model, f"{model.graph.name}_projectors", nodes, inputs, [map_info(c) for c in cuts], extra)


def max_deltas(reference, other):
    """max |delta| per output; the outputs are the upstream graph's (dets, labels, keypoints)."""
    return {k: float(np.max(np.abs(reference[k].astype(np.float64) - other[k]))) for k in reference}


def prove(upstream, host, projectors, trials, seed, out=None):
    """Runs the proof and its negative control; True when the cut is exact and the control fails."""
    out = out or sys.stdout
    ok = True
    for trial in range(trials):
        taps = onnx_graph.random_feeds(upstream, seed + trial)
        reference = onnx_graph.run(upstream, taps)
        maps = onnx_graph.run(projectors, taps)
        got = onnx_graph.run(host, {r: maps[r] for r in ROLES})
        swapped = onnx_graph.run(host, {ROLES[0]: maps[ROLES[1]], ROLES[1]: maps[ROLES[0]]})
        d, s = max_deltas(reference, got), max_deltas(reference, swapped)
        passed = all(v <= TOLERANCE for v in d.values())
        control_failed = any(v > TOLERANCE for v in s.values())
        figures = "  ".join(f"{k} {v:.3g}" for k, v in d.items())
        control = "  ".join(f"{k} {v:.3g}" for k, v in s.items())
        print(f"seed {seed + trial}: host(projectors(taps)) vs upstream(taps), max |delta|: {figures}", file=out)
        print(f"  {'within' if passed else 'OVER'} the {TOLERANCE:g} gate", file=out)
        print(f"  negative control, maps swapped: {control}", file=out)
        print(f"  {'fails the gate, as it should' if control_failed else 'PASSES THE GATE: the proof cannot tell the maps apart'}", file=out)
        ok = ok and passed and control_failed
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("upstream", help="upstream host graph with tap0..tap3 inputs (read only)")
    ap.add_argument("--out", help="where to write the host graph (features, cross_attn_features inputs)")
    ap.add_argument("--projectors-out", help="where to write the projector half (taps -> the two maps)")
    ap.add_argument("--prove", action="store_true", help="prove host(projectors(taps)) == upstream(taps) in ORT")
    ap.add_argument("--trials", type=int, default=3, help="random tap sets in the proof")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not (args.out or args.projectors_out or args.prove):
        ap.error("nothing to do: give --out, --projectors-out or --prove")
    try:
        upstream = onnx.load(args.upstream)
        cuts = find_cuts(upstream, args.upstream, onnx_graph.random_feeds(upstream, args.seed))
        for cut in cuts:
            print(f"cut: {cut.describe()}")
        host = cut_host(upstream, args.upstream, cuts)
        projectors = cut_projectors(upstream, cuts)
    except GraphError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for path, model in ((args.out, host), (args.projectors_out, projectors)):
        if path:
            onnx.save(model, path)
            ins = ", ".join(f"{n} {s}" for n, s in onnx_graph.value_info_shapes(model.graph.input))
            print(f"wrote {path}: {len(model.graph.node)} nodes; inputs {ins}")
    if args.prove:
        if not prove(upstream, host, projectors, args.trials, args.seed):
            print("proof FAILED", file=sys.stderr)
            return 1
        names = ", ".join(o.name for o in upstream.graph.output)
        print(f"proved: host(projectors(taps)) equals upstream(taps) within {TOLERANCE:g} on {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
