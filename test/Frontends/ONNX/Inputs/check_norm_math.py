#!/usr/bin/python3
"""Checks Einsum and CumSum as dpc imports them against numpy: each case a
one-node float32 model compiled with `dpc compile --inference` and
predicted by its rank, as the ONNX node tests run (whose Einsum and CumSum
tests start from float64 inputs, which they reject). Prints one line a case,
"ok" or what differs; exits 1 if any differs.

Usage: check_norm_math.py WORK_DIR
"""

import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def check(work, name, nodes, x, inits, expected):
    # The npy: spec is comma-separated: a folder name of letters, digits
    # and underscores.
    case = os.path.join(work, "".join(c if c.isalnum() else "_" for c in name))
    shutil.rmtree(case, ignore_errors=True)
    os.makedirs(case)
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                   x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       list(expected.shape))],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(case, "m.onnx"))
    np.save(os.path.join(case, "x.npy"), x)
    out = os.path.join(case, "out")
    for cmd in (["dpc", "compile", os.path.join(case, "m.onnx"), "-o", out,
                 "--inference", "--stages", "1", "--microbatches", "1"],
                [os.path.join(out, "rank0"), "--data",
                 "npy:" + os.path.join(case, "x.npy"), "--predictions",
                 os.path.join(case, "y.npy")]):
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{name}: {cmd[0]} failed: {(run.stderr + run.stdout)[-300:]}")
            return False
    y = np.load(os.path.join(case, "y.npy"))
    if y.shape != expected.shape or not np.allclose(y, expected, rtol=1e-4,
                                                    atol=1e-5):
        print(f"{name}: got {y.reshape(-1)[:4]} of shape {y.shape}, expected "
              f"{expected.reshape(-1)[:4]} of shape {expected.shape}")
        return False
    print(f"{name}: ok")
    return True


def main():
    work = sys.argv[1]
    rng = np.random.default_rng(0)
    good = True
    for equation, x_shape, w_shapes in [
            ("bhqd,bhkd->bhqk", (2, 3, 4, 5), [(2, 3, 6, 5)]),
            ("bhqk,bhkd->bhqd", (2, 3, 4, 6), [(2, 3, 6, 5)]),
            ("bi,bi->b", (3, 4), [(3, 4)]),
            ("bqd,bkd->qbk", (2, 3, 4), [(2, 5, 4)]),
            ("bid,jd->bij", (2, 3, 4), [(5, 4)]),
            ("ij->i", (3, 4), [])]:
        x = rng.standard_normal(x_shape).astype(np.float32)
        weights = {f"w{i}": rng.standard_normal(s).astype(np.float32)
                   for i, s in enumerate(w_shapes)}
        node = helper.make_node("Einsum", ["x", *weights], ["y"],
                                equation=equation)
        good &= check(work, f"einsum {equation}", [node], x, weights,
                      np.einsum(equation, x, *weights.values()))
    for axis, exclusive, reverse in [(1, 0, 0), (1, 1, 0), (1, 0, 1),
                                     (1, 1, 1), (0, 0, 0), (-1, 1, 1)]:
        x = rng.standard_normal((2, 3, 4)).astype(np.float32)
        ordered = np.flip(x, axis) if reverse else x
        expected = np.cumsum(ordered, axis=axis) - (ordered if exclusive
                                                    else 0)
        expected = np.flip(expected, axis) if reverse else expected
        nodes = [helper.make_node("Constant", [], ["axis"],
                                  value=numpy_helper.from_array(
                                      np.array(axis, np.int64), "axis")),
                 helper.make_node("CumSum", ["x", "axis"], ["y"],
                                  exclusive=exclusive, reverse=reverse)]
        good &= check(work, f"cumsum axis={axis} exclusive={exclusive} "
                      f"reverse={reverse}", nodes, x, {},
                      np.ascontiguousarray(expected))
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
