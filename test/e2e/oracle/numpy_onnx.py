"""A small ONNX evaluator in NumPy, float64, for the ops the sequence
models' exports use: a check of an exported file that involves neither dpc
nor PyTorch. Debian's python3-onnx (1.12) predates onnx.reference and
onnxruntime is not packaged, hence this. Unknown ops and attributes raise."""

import math

import numpy as np
import onnx
from onnx import numpy_helper


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _layer_norm(x, scale, bias=None, axis=-1, epsilon=1e-5, stash_type=1):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + epsilon) * scale
    return y if bias is None else y + bias


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _reshape(x, shape, allowzero=0):
    if allowzero:
        raise NotImplementedError("Reshape allowzero=1")
    target = [x.shape[i] if d == 0 else int(d) for i, d in enumerate(shape)]
    return x.reshape(target)


def _split(x, split=None, axis=0):
    if split is None:
        raise NotImplementedError("Split without its sizes")
    bounds = np.cumsum(split)[:-1]
    return tuple(np.split(x, bounds, axis=axis))


_erf = np.vectorize(math.erf, otypes=[np.float64])

OPS = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": lambda a, b: a / b,
    "MatMul": np.matmul,
    "Erf": _erf,
    "Sqrt": np.sqrt,
    "Identity": lambda x: x,
    "Gather": lambda data, index, axis=0: np.take(data, index, axis=axis),
    "LayerNormalization": _layer_norm,
    "Softmax": _softmax,
    "Reshape": _reshape,
    "Split": _split,
    "Transpose": lambda x, perm=None: np.transpose(x, perm),
    "Unsqueeze": lambda x, axes: np.expand_dims(x, tuple(int(a) for a in axes)),
    "Concat": lambda *xs, axis: np.concatenate(xs, axis=axis),
}


def _float64(array):
    return array.astype(np.float64) if array.dtype.kind == "f" else array


def run(model, feeds):
    """The graph's outputs (a list, float64) for `feeds`, a dict from input
    name to array."""
    values = {t.name: _float64(numpy_helper.to_array(t))
              for t in model.graph.initializer}
    values.update({k: _float64(np.asarray(v)) for k, v in feeds.items()})
    for node in model.graph.node:
        attrs = _attrs(node)
        if node.op_type == "Constant":
            if set(attrs) != {"value"}:
                raise NotImplementedError(f"{node.name}: Constant {attrs}")
            results = (_float64(numpy_helper.to_array(attrs["value"])),)
        elif node.op_type in OPS:
            args = [values[name] if name else None for name in node.input]
            result = OPS[node.op_type](*args, **attrs)
            results = result if isinstance(result, tuple) else (result,)
        else:
            raise NotImplementedError(f"{node.name}: op {node.op_type}")
        for name, value in zip(node.output, results):
            values[name] = value
    return [values[o.name] for o in model.graph.output]
