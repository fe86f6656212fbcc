"""Writes the small ONNX models of shape-folds.test: NAME OUT.onnx.

"folds": the shape computations torch.onnx emits for Swin-style windowed
attention, each folded at import into one frozen constant that scales the
input x [2, 12]: Range, Mod (Python's sign rule and fmod's), ConstantOfShape,
ScatterND (a later duplicate index wins; reduction add), a Concat of 2-D
integer tensors, an Add that broadcasts, and Pow of a host number (an
attention scale). `expected` prints the constant numpy computes.
"mod-activation": Mod of a tensor the model computes (refused).
"scatter-out-of-range": ScatterND with an index past the data (refused).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(value),
                                                          name))


def expected():
    python_mod = np.mod(np.arange(-6, 6), 4)       # divisor's sign
    c_mod = np.fmod(np.arange(-6, 6), 5)            # dividend's sign
    joined = np.concatenate([python_mod[None], c_mod[None]], axis=0)
    data = np.zeros((2, 12), np.int64)
    data[1, 3] = 5
    data[0, 11] = 9                                 # the later tuple wins
    data[0] += np.arange(12)                        # reduction add, row 0
    summed = joined + data + np.arange(12)          # broadcast over rows
    return summed.astype(np.float32) * np.float32(16.0 ** -0.5)


def folds():
    n = helper.make_node
    nodes = [
        const("start", np.int64(-6)), const("limit", np.int64(6)),
        const("delta", np.int64(1)),
        n("Range", ["start", "limit", "delta"], ["r"], name="range"),
        const("four", np.int64(4)), const("five", np.int64(5)),
        n("Mod", ["r", "four"], ["python_mod"], name="mod"),
        n("Mod", ["r", "five"], ["c_mod"], name="fmod", fmod=1),
        const("axis0", np.array([0], np.int64)),
        n("Unsqueeze", ["python_mod", "axis0"], ["row0"], name="row0"),
        n("Unsqueeze", ["c_mod", "axis0"], ["row1"], name="row1"),
        n("Concat", ["row0", "row1"], ["joined"], name="join", axis=0),
        const("shape", np.array([2, 12], np.int64)),
        n("ConstantOfShape", ["shape"], ["zeros"], name="zeros",
          value=numpy_helper.from_array(np.array([0], np.int64))),
        const("where", np.array([[1, 3], [0, 11], [0, 11]], np.int64)),
        const("what", np.array([5, 8, 9], np.int64)),
        n("ScatterND", ["zeros", "where", "what"], ["placed"], name="place"),
        const("row", np.array([[0]], np.int64)),
        const("first", np.arange(12, dtype=np.int64)[None]),
        n("ScatterND", ["placed", "row", "first"], ["added"], name="add_row",
          reduction="add"),
        n("Add", ["joined", "added"], ["sum0"], name="sum0"),
        n("Range", ["zero", "twelve", "one"], ["steps"], name="steps"),
        const("zero", np.int64(0)), const("twelve", np.int64(12)),
        const("one", np.int64(1)),
        n("Add", ["sum0", "steps"], ["summed"], name="broadcast"),
        const("head", np.float32(16.0)), const("power", np.float32(-0.5)),
        n("Pow", ["head", "power"], ["scale"], name="scale"),
        n("Cast", ["summed"], ["summed_f"], name="cast",
          to=TensorProto.FLOAT),
        n("Mul", ["summed_f", "scale"], ["folded"], name="folded"),
        n("Mul", ["x", "folded"], ["y"], name="y"),
    ]
    # Range "steps" reads constants defined after it in this list: move
    # them first, as a topologically sorted graph has them.
    nodes.sort(key=lambda node: node.op_type != "Constant")
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])])
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 17)])


def mod_activation():
    n = helper.make_node
    graph = helper.make_graph(
        [const("two", np.float32(2.0)),
         n("Mod", ["x", "two"], ["y"], name="mod", fmod=1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 17)])


def scatter_out_of_range():
    n = helper.make_node
    graph = helper.make_graph(
        [const("data", np.zeros((2, 3), np.float32)),
         const("where", np.array([[2, 0]], np.int64)),
         const("what", np.array([1.0], np.float32)),
         n("ScatterND", ["data", "where", "what"], ["s"], name="scatter"),
         n("Add", ["x", "s"], ["y"], name="y")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 17)])


if __name__ == "__main__":
    if sys.argv[1] == "expected":
        print(expected().tolist())
        sys.exit(0)
    make = {"folds": folds, "mod-activation": mod_activation,
            "scatter-out-of-range": scatter_out_of_range}[sys.argv[1]]
    onnx.save(make(), sys.argv[2])
