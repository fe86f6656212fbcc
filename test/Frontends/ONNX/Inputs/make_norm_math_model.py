#!/usr/bin/python3
"""ONNX models of InstanceNormalization (alone and as torch.onnx writes
GroupNorm at opset 17), Max, Min, CumSum and Einsum for norm-math.test.

Usage: make_norm_math_model.py KIND OUT.onnx
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def const(name, value, dtype=np.float32):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(
                                np.asarray(value, dtype=dtype), name))


def save(path, nodes, inputs, output, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, [output], list(inits))
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def info(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main_model(path):
    """x [2, 4, 3, 3] through an InstanceNormalization with a trained scale
    and bias, the GroupNorm pattern (2 groups: Reshape, InstanceNormalization
    by constant ones and zeros, Reshape back), Max of three operands, Min,
    an exclusive reverse CumSum along axis 2 and the einsum
    'bchw,bdhw->bcd'."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(4).astype(np.float32),
                                     "s"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32),
                                     "b")]
    nodes = [
        helper.make_node("InstanceNormalization", ["x", "s", "b"], ["in"],
                         name="inorm", epsilon=1e-3),
        const("groups", [2, 2, 18], np.int64),
        helper.make_node("Reshape", ["in", "groups"], ["g"], name="r1"),
        const("ones", np.ones(2)), const("zeros", np.zeros(2)),
        helper.make_node("InstanceNormalization", ["g", "ones", "zeros"],
                         ["gn"], name="gnorm"),
        const("back", [2, 4, 3, 3], np.int64),
        helper.make_node("Reshape", ["gn", "back"], ["gr"], name="r2"),
        const("zero", 0.0),
        helper.make_node("Max", ["in", "gr", "zero"], ["mx"], name="max"),
        helper.make_node("Min", ["mx", "in"], ["mn"], name="min"),
        const("axis", 2, np.int64),
        helper.make_node("CumSum", ["mn", "axis"], ["cs"], name="cumsum",
                         exclusive=1, reverse=1),
        helper.make_node("Einsum", ["cs", "in"], ["y"], name="einsum",
                         equation="bchw,bdhw->bcd"),
    ]
    save(path, nodes, [info("x", [2, 4, 3, 3])], info("y", [2, 4, 4]), inits)


def einsum_model(path, equation, shapes, out_shape):
    inits = [numpy_helper.from_array(np.ones(shape, np.float32), f"w{i}")
             for i, shape in enumerate(shapes[1:])]
    nodes = [helper.make_node("Einsum", ["x"] + [t.name for t in inits], ["y"],
                              name="einsum", equation=equation)]
    save(path, nodes, [info("x", shapes[0])], info("y", out_shape), inits)


def main():
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "main":
        main_model(path)
    elif kind == "einsum-attention":
        einsum_model(path, "bhqd,bhkd->bhqk", [[2, 2, 5, 3], [2, 2, 4, 3]],
                     [2, 2, 5, 4])
    elif kind == "einsum-implicit":
        einsum_model(path, "ij, jk", [[2, 3], [3, 4]], [2, 4])
    elif kind == "einsum-transpose":
        einsum_model(path, "ij->ji", [[2, 3]], [3, 2])
    elif kind == "einsum-ellipsis":
        einsum_model(path, "...ij,...jk->...ik", [[2, 3, 4], [2, 4, 5]],
                     [2, 3, 5])
    elif kind == "einsum-diagonal":
        einsum_model(path, "bii->bi", [[2, 3, 3]], [2, 3])
    elif kind == "einsum-three":
        einsum_model(path, "ij,jk,kl->il", [[2, 3], [3, 4], [4, 5]], [2, 5])
    elif kind == "cumsum-two-axes":
        nodes = [const("axes", [0, 1], np.int64),
                 helper.make_node("CumSum", ["x", "axes"], ["y"],
                                  name="cumsum")]
        save(path, nodes, [info("x", [2, 3])], info("y", [2, 3]))
    elif kind == "cumsum-constant":
        nodes = [const("c", [[1, 2, 3], [4, 5, 6]]), const("axis", 1, np.int64),
                 helper.make_node("CumSum", ["c", "axis"], ["cs"],
                                  name="cumsum", reverse=1),
                 helper.make_node("Add", ["x", "cs"], ["y"], name="add")]
        save(path, nodes, [info("x", [2, 3])], info("y", [2, 3]))
    elif kind == "instancenorm-rank2":
        inits = [numpy_helper.from_array(np.ones(3, np.float32), "s"),
                 numpy_helper.from_array(np.zeros(3, np.float32), "b")]
        nodes = [helper.make_node("InstanceNormalization", ["x", "s", "b"],
                                  ["y"], name="inorm")]
        save(path, nodes, [info("x", [2, 3])], info("y", [2, 3]), inits)
    else:
        sys.exit(f"unknown kind {kind}")


if __name__ == "__main__":
    main()
