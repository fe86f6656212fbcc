"""Writes the small ONNX models of masks.test: NAME OUT.onnx.

"masks": token ids [2, 4] (int64) -> an embedding, scores [2, 4, 4] with a
causal mask from Trilu of a constant (folded at import) and a padding mask
from `ids == 0`, Not, Or, Where and a Cast of the mask to an additive float.
"trilu-activation": Trilu of a tensor the model computes (refused).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(value, name))


def masks():
    n = helper.make_node
    nodes = [
        n("Gather", ["table", "ids"], ["x"], name="embed"),
        n("MatMul", ["x", "xt"], ["scores"], name="scores"),
        const("ones", np.ones((4, 4), dtype=np.bool_)),
        const("one", np.array(1, dtype=np.int64)),
        n("Trilu", ["ones", "one"], ["triu"], name="triu", upper=1),
        n("Cast", ["triu"], ["causal"], name="causal", to=TensorProto.BOOL),
        const("pad", np.array(0, dtype=np.int64)),
        n("Equal", ["ids", "pad"], ["is_pad"], name="is_pad"),
        const("axes", np.array([1], dtype=np.int64)),
        n("Unsqueeze", ["is_pad", "axes"], ["keys"], name="keys"),
        n("Or", ["causal", "keys"], ["either"], name="either"),
        n("Not", ["either"], ["keep"], name="keep"),
        const("ninf", np.array(-np.inf, dtype=np.float32)),
        n("Where", ["keep", "scores", "ninf"], ["masked"], name="masked"),
        n("Cast", ["keys"], ["keys_f"], name="additive", to=TensorProto.FLOAT),
        n("Add", ["masked", "keys_f"], ["logits"], name="logits"),
    ]
    table = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32),
        "table")
    xt = numpy_helper.from_array(
        np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32),
        "xt")
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       [2, 4, 4])],
        [table, xt])
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 17)])


def trilu_activation():
    n = helper.make_node
    graph = helper.make_graph(
        [n("Trilu", ["x"], ["y"], name="tril", upper=0)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 4])])
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 17)])


if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    onnx.save({"masks": masks, "trilu-activation": trilu_activation}[name](),
              out)
