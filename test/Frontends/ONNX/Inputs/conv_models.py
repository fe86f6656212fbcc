"""Writes the small ONNX models of conv-transpose.test.

Usage: conv_models.py NAME OUT.onnx, as make_model.py (whose helpers it
uses): each model built with onnx.helper, so that the test controls the
nodes and attributes the importer sees.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

from make_model import init, model, tensor

n = helper.make_node


def conv1d(rank=3):
    """Two 1-D convolutions as torch.onnx writes nn.Conv1d: dilated and
    grouped with a bias, then strided with auto_pad SAME_UPPER. `rank` 5
    makes them 3-D convolutions, rank 6 4-D ones (refused)."""
    spatial = [20] if rank == 3 else [4] * (rank - 2)
    kernel = [3] * (rank - 2)
    nodes = [
        n("Conv", ["x", "c1.weight", "c1.bias"], ["h"], name="c1", group=2,
          dilations=[2] * (rank - 2), pads=[2] * (2 * (rank - 2))),
        n("Conv", ["h", "c2.weight"], ["y"], name="c2", strides=[2] * (rank - 2),
          auto_pad="SAME_UPPER"),
    ]
    out = [10] if rank == 3 else [2] * (rank - 2)
    return model(nodes, [tensor("x", 2, 4, *spatial)],
                 [tensor("y", 2, 5, *out)],
                 [init("c1.weight", 6, 2, *kernel), init("c1.bias", 6),
                  init("c2.weight", 5, 6, *kernel)])


def conv_transpose(output_padding=(1, 1), output_shape=None, pads=(1, 1, 1, 1)):
    """ConvTranspose as torch.onnx writes nn.ConvTranspose2d (stride 2,
    pads, output_padding, two groups, a bias) after a Conv, so that autodiff
    needs every gradient; then a 1-D ConvTranspose of the flattened rows by
    output_shape (past the natural size by one: an output padding of 1).
    The variants ask for an output padding as large as the stride, or an
    output_shape two past the natural size (a negative begin pad): both
    refused."""
    attrs = {"strides": [2, 2], "pads": list(pads), "group": 2,
             "output_padding": list(output_padding)}
    if output_shape:
        attrs = {"strides": [2, 2], "output_shape": output_shape}
    nodes = [
        n("Conv", ["x", "c.weight"], ["c"], name="c"),
        n("ConvTranspose", ["c", "up.weight", "up.bias"], ["u"], name="up",
          **attrs),
        n("Reshape", ["u", "rows"], ["r"], name="rows"),
        n("ConvTranspose", ["r", "t1.weight"], ["y"], name="t1", strides=[2],
          output_shape=[202]),
    ]
    rows = numpy_helper.from_array(np.array([1, 6, 100], dtype=np.int64),
                                   "rows")
    return model(nodes, [tensor("x", 1, 2, 5, 5)], [tensor("y", 1, 2, 202)],
                 [init("c.weight", 4, 2, 1, 1), init("up.weight", 4, 3, 3, 3),
                  init("up.bias", 6), init("t1.weight", 6, 2, 3), rows])


MODELS = {
    "conv1d": conv1d,
    "conv3d": lambda: conv1d(rank=5),
    "conv4d": lambda: conv1d(rank=6),
    "conv-transpose": conv_transpose,
    "conv-transpose-big-output-padding":
        lambda: conv_transpose(output_padding=(2, 2)),
    "conv-transpose-negative-pad":
        lambda: conv_transpose(output_shape=[13, 13]),
}

if __name__ == "__main__":
    name, path = sys.argv[1], sys.argv[2]
    onnx.save(MODELS[name](), path)
