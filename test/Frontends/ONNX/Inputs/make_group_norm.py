"""Writes group-norm.test's ONNX models, opset 18, by hand (onnx 1.12 writes
the proto, though its checker knows opset 17 at most): NAME OUT.onnx
[X.npy].

"group-norm": GroupNormalization of x [2, 6, 4, 4] in 3 groups (epsilon
1e-3), its scale and bias one value a group as opset 18 defines them, then
a Relu. With X.npy, also writes x and numpy's output for it beside it
(X.expected.npy).
"reduce-mean": an opset-18 ReduceMean (axes an input since opset 18),
which dpc refuses on its opset-17 onnx library.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE, GROUPS, EPSILON = (2, 6, 4, 4), 3, 1e-3


def parameters():
    rng = np.random.default_rng(0)
    return (rng.uniform(0.5, 1.5, GROUPS).astype(np.float32),
            rng.uniform(-0.5, 0.5, GROUPS).astype(np.float32))


def model(nodes, inits, output_shape):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
        inits)
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 18)])


def group_norm():
    scale, bias = parameters()
    return model([
        helper.make_node("GroupNormalization", ["x", "scale", "bias"],
                         ["normed"], name="gn", num_groups=GROUPS,
                         epsilon=EPSILON),
        helper.make_node("Relu", ["normed"], ["y"], name="relu"),
    ], [numpy_helper.from_array(scale, "scale"),
        numpy_helper.from_array(bias, "bias")], list(SHAPE))


def reduce_mean():
    return model([
        helper.make_node("Constant", [], ["axes"], name="axes",
                         value=numpy_helper.from_array(
                             np.array([2, 3], dtype=np.int64), "axes")),
        helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="mean",
                         keepdims=0),
    ], [], list(SHAPE[:2]))


def reference(x):
    """GroupNormalization-18 in float64: each sample's groups normalized
    over their channels and pixels (biased variance), then each group
    scaled and shifted by its own value; then the Relu."""
    scale, bias = parameters()
    n, c = x.shape[:2]
    g = x.astype(np.float64).reshape(n, GROUPS, -1)
    mean = g.mean(axis=2, keepdims=True)
    var = g.var(axis=2, keepdims=True)
    normed = (g - mean) / np.sqrt(var + EPSILON)
    normed = normed * scale[None, :, None] + bias[None, :, None]
    return np.maximum(normed.reshape(x.shape), 0).astype(np.float32)


if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    onnx.save({"group-norm": group_norm, "reduce-mean": reduce_mean}[name](),
              out)
    if len(sys.argv) > 3:
        x = np.random.default_rng(1).standard_normal(SHAPE).astype(
            np.float32) * 2 + 0.5
        np.save(sys.argv[3], x)
        np.save(sys.argv[3].replace(".npy", ".expected.npy"), reference(x))
