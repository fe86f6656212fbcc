"""Writes small ONNX GRU and LSTM models for gru.test.

Usage: make_rnn_model.py NAME OUT.onnx. Built with onnx.helper so that the
test controls each attribute the importer sees; the input is batch-major
(layout = 1), so its first dimension is the batch that dpc splits.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
T, I, H, C = 5, 3, 4, 6


def init(name, *shape):
    return numpy_helper.from_array(
        0.5 * rng.standard_normal(shape).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def gru(direction="bidirectional", layout=1, attrs=None, inputs=None,
        op="GRU"):
    """X [N, T, I] -> op (layout 1) -> Y [N, T, D, H] -> Reshape [N, T*D*H]
    -> Gemm -> logits [N, C]."""
    d = 2 if direction == "bidirectional" else 1
    gates = 3 if op == "GRU" else 4
    attributes = {"hidden_size": H, "direction": direction, "layout": layout}
    if op == "GRU":
        attributes["linear_before_reset"] = 1
    attributes.update(attrs or {})
    names = inputs or ["x", "W", "R", "B"]
    node = helper.make_node(op, names, ["y"], name="rnn", **attributes)
    inits = [init("W", d, gates * H, I), init("R", d, gates * H, H),
             init("B", d, 2 * gates * H), ints("shape", [0, T * d * H]),
             init("fc.w", T * d * H, C), init("fc.b", C)]
    if "lens" in names:
        inits.append(numpy_helper.from_array(np.full(2, T, np.int32), "lens"))
    nodes = [node,
             helper.make_node("Reshape", ["y", "shape"], ["flat"]),
             helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"])]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", T, I])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", C])],
        inits)
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 14)])


MODELS = {
    "gru-bidirectional": gru,
    "gru-reverse": lambda: gru(direction="reverse"),
    "lstm-bidirectional": lambda: gru(op="LSTM"),
    "gru-relu": lambda: gru(attrs={"activations": ["Relu", "Tanh"] * 2}),
    "gru-clip": lambda: gru(attrs={"clip": 3.0}),
    "gru-lbr2": lambda: gru(attrs={"linear_before_reset": 2}),
    "gru-sequence-lens": lambda: gru(inputs=["x", "W", "R", "B", "lens"]),
}

if __name__ == "__main__":
    name, path = sys.argv[1], sys.argv[2]
    onnx.save(MODELS[name](), path)
