"""Graph helpers shared by the decoder-graph tools (cut, proof, structural comparison).

Needs `onnx`, `onnxruntime` and `numpy` (tools/.venv).
"""

import collections

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

# ONNX element types the tools feed or read, as numpy dtypes.
_DTYPES = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.BOOL: np.bool_,
}


class GraphError(Exception):
    """A graph lacks the structure a tool needs; the message names the file and what was expected."""


def input_shapes(model):
    """{input name: static shape} of the graph inputs that are not initializers."""
    inits = {i.name for i in model.graph.initializer}
    shapes = {}
    for i in model.graph.input:
        if i.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in i.type.tensor_type.shape.dim]
        shapes[i.name] = dims
    return shapes


def value_info_shapes(values):
    """[(name, shape)] of graph inputs or outputs, symbolic dims as their names."""
    out = []
    for v in values:
        dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in v.type.tensor_type.shape.dim]
        out.append((v.name, dims))
    return out


def random_feeds(model, seed=0):
    """Seeded standard-normal float32 inputs with each input's static shape."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, dims in input_shapes(model).items():
        if any(d is None or d <= 0 for d in dims):
            raise GraphError(f"input `{name}` has a dynamic shape {dims}; the tools need static shapes")
        feeds[name] = rng.standard_normal(dims).astype(np.float32)
    return feeds


def session_options(threads=1, optimize=True):
    """`threads` intra-op threads, one inter-op thread, sequential execution; all optimisations or none."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    opts.log_severity_level = 3
    return opts


def session(model, optimize=True, threads=1):
    """A CPU session on an in-memory model (see `session_options`)."""
    opts = session_options(threads, optimize)
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def run(model, feeds, optimize=True):
    """{output name: array} of one run."""
    sess = session(model, optimize)
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def tensor_shapes(model, feeds, names=None):
    """{tensor name: shape} of every node output (or of `names`), from one ORT run with them exposed.

    ONNX shape inference leaves Shape-derived dims unknown in exported graphs, so the shapes
    are read from an actual run with optimisations off (every node runs as written).
    """
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    have = {o.name for o in exposed.graph.output}
    wanted = names if names is not None else [t for n in exposed.graph.node for t in n.output if t]
    del exposed.graph.value_info[:]
    for t in wanted:
        if t not in have:
            exposed.graph.output.append(onnx.ValueInfoProto(name=t))
            have.add(t)
    sess = session(exposed, optimize=False)
    outs = [o.name for o in sess.get_outputs()]
    shapes = {}
    for name, value in zip(outs, sess.run(outs, feeds)):
        shapes[name] = tuple(np.shape(value))
    return shapes


def consumers(graph):
    """{tensor name: [node index]} of the nodes that read each tensor."""
    out = collections.defaultdict(list)
    for i, n in enumerate(graph.node):
        for t in n.input:
            if t:
                out[t].append(i)
    return out


def producers(graph):
    """{tensor name: node index} of the node that writes each tensor."""
    return {t: i for i, n in enumerate(graph.node) for t in n.output if t}


def ancestors(graph, tensors, stop=()):
    """Indices of the nodes needed to compute `tensors`, not looking past the tensors in `stop`."""
    prod = producers(graph)
    seen, todo = set(), [t for t in tensors if t not in stop]
    while todo:
        t = todo.pop()
        i = prod.get(t)
        if i is None or i in seen:
            continue
        seen.add(i)
        todo.extend(x for x in graph.node[i].input if x and x not in stop)
    return seen


def descendants(graph, tensor):
    """Indices of the nodes that read `tensor` directly or through other nodes."""
    cons = consumers(graph)
    seen, todo = set(), [tensor]
    while todo:
        for i in cons.get(todo.pop(), []):
            if i not in seen:
                seen.add(i)
                todo.extend(t for t in graph.node[i].output if t)
    return seen


def initializer_params(model):
    """Number of elements over all initializers (each stored tensor once)."""
    return sum(int(np.prod(i.dims)) for i in model.graph.initializer)


def constant_value(graph, name):
    """The value of an initializer or Constant-node output, else None."""
    for i in graph.initializer:
        if i.name == name:
            return numpy_helper.to_array(i)
    for n in graph.node:
        if n.op_type == "Constant" and n.output[0] == name:
            for a in n.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
    return None
