"""Writes the small ONNX models of int-ids.test: NAME OUT.onnx.

"ids": one int64 id input [2, 8] split inside the graph (Slice, Split, a
Gather of one position by a constant index, Unsqueeze, Concat, Transpose,
all of int64 ids) and the joined ids embedded by one table.
"ids-permuted": a Gather of the ids by constant indices that are not an
increasing arithmetic sequence (refused).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(value, name))


def i64(*values):
    return np.array(values, dtype=np.int64)


def model(nodes, output_shape):
    table = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((64, 3)).astype(np.float32),
        "table")
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
        [table])
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 17)])


def ids():
    n = helper.make_node
    return model([
        const("starts", i64(0)), const("ends", i64(4)), const("axes", i64(1)),
        n("Slice", ["ids", "starts", "ends", "axes"], ["src"], name="src"),
        const("halves", i64(4, 4)),
        n("Split", ["ids", "halves"], ["first", "tgt"], name="split", axis=1),
        const("last", np.array(7, dtype=np.int64)),
        n("Gather", ["ids", "last"], ["final"], name="final", axis=1),
        n("Unsqueeze", ["final", "axes"], ["column"], name="column"),
        const("three", i64(3)),
        n("Slice", ["tgt", "starts", "three", "axes"], ["head"], name="head"),
        n("Concat", ["column", "head"], ["row"], name="row", axis=1),
        n("Concat", ["row", "src"], ["both"], name="both", axis=0),
        n("Transpose", ["both"], ["swapped"], name="swapped", perm=[1, 0]),
        n("Gather", ["table", "swapped"], ["y"], name="embed"),
    ], [4, 4, 3])


def ids_permuted():
    n = helper.make_node
    return model([
        const("order", i64(3, 1)),
        n("Gather", ["ids", "order"], ["picked"], name="picked", axis=1),
        n("Gather", ["table", "picked"], ["y"], name="embed"),
    ], [2, 2, 3])


if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    onnx.save({"ids": ids, "ids-permuted": ids_permuted}[name](), out)
