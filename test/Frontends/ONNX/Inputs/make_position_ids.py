"""Writes position-ids.test's ONNX models: NAME OUT.onnx [DATA.npy].

"positions": RoBERTa's position ids computed inside the graph from one int64
id input [2, 8] with padding id 1 (Equal, Not, Cast to int32, CumSum along
the sequence, Mul by the mask, Cast to int64, Add of the padding id), an
embedding table gathered by them, and a bias table [17, 1] gathered by the
relative positions (Unsqueeze both ways, Sub, Add 8): two gathers of
parameters by indices computed at run time. The output is the bias
[2, 8, 8] times the embedded positions [2, 8, 3].
"divide": the same positions divided by 2 (refused: dpc adds, subtracts
and multiplies integer tensors computed at run time only).
With DATA.npy, also writes ids for the model, the output numpy computes
for them (DATA.expected.npy) and unused labels (DATA.labels.npy).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PAD, LENGTH = 1, 8


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(value, name))


def tables():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((LENGTH + 2, 3)).astype(np.float32),
            rng.standard_normal((2 * LENGTH + 1, 1)).astype(np.float32))


def position_nodes():
    n = helper.make_node
    return [
        const("pad", np.array(PAD, dtype=np.int64)),
        n("Equal", ["ids", "pad"], ["is_pad"], name="is_pad"),
        n("Not", ["is_pad"], ["real"], name="real"),
        n("Cast", ["real"], ["mask"], name="mask", to=TensorProto.INT32),
        const("axis", np.array(1, dtype=np.int64)),
        n("CumSum", ["mask", "axis"], ["count"], name="count"),
        n("Mul", ["count", "mask"], ["kept"], name="kept"),
        n("Cast", ["kept"], ["kept64"], name="kept64", to=TensorProto.INT64),
        n("Add", ["kept64", "pad"], ["positions"], name="positions"),
    ]


def model(nodes, output, output_shape):
    embedding, bias = tables()
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64,
                                       [2, LENGTH])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT,
                                       output_shape)],
        [numpy_helper.from_array(embedding, "position_table"),
         numpy_helper.from_array(bias, "bias_table")])
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 14)])


def positions():
    n = helper.make_node
    return model(position_nodes() + [
        n("Gather", ["position_table", "positions"], ["embedded"],
          name="embed"),
        const("last", np.array([2], dtype=np.int64)),
        const("middle", np.array([1], dtype=np.int64)),
        n("Unsqueeze", ["positions", "last"], ["rows"], name="rows"),
        n("Unsqueeze", ["positions", "middle"], ["columns"], name="columns"),
        n("Sub", ["rows", "columns"], ["offsets"], name="offsets"),
        const("shift", np.array(LENGTH, dtype=np.int64)),
        n("Add", ["offsets", "shift"], ["relative"], name="relative"),
        n("Gather", ["bias_table", "relative"], ["bias4"], name="bias"),
        const("square", np.array([2, LENGTH, LENGTH], dtype=np.int64)),
        n("Reshape", ["bias4", "square"], ["bias3"], name="square"),
        n("MatMul", ["bias3", "embedded"], ["y"], name="y"),
    ], "y", [2, LENGTH, 3])


def divide():
    n = helper.make_node
    return model(position_nodes() + [
        const("two", np.array(2, dtype=np.int64)),
        n("Div", ["positions", "two"], ["halves"], name="halves"),
        n("Gather", ["position_table", "halves"], ["y"], name="embed"),
    ], "y", [2, LENGTH, 3])


def reference(ids):
    """numpy's output of "positions" for ids [2, LENGTH]."""
    embedding, bias = tables()
    mask = (ids != PAD).astype(np.int64)
    positions = np.cumsum(mask, axis=1) * mask + PAD
    relative = positions[:, :, None] - positions[:, None, :] + LENGTH
    return (bias[relative][..., 0] @ embedding[positions]).astype(np.float32)


if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    onnx.save({"positions": positions, "divide": divide}[name](), out)
    if len(sys.argv) > 3:
        # Two sequences, the second padded after 5 tokens.
        ids = np.array([[5, 9, 3, 7, 2, 8, 4, 6],
                        [4, 2, 8, 6, 3, PAD, PAD, PAD]], dtype=np.int64)
        np.save(sys.argv[3], ids)
        np.save(sys.argv[3].replace(".npy", ".expected.npy"), reference(ids))
        # The npy: source reads integer inputs with labels, which a
        # prediction does not use.
        np.save(sys.argv[3].replace(".npy", ".labels.npy"),
                np.zeros(2, dtype=np.int64))
