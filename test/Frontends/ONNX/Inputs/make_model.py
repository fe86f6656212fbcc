"""Writes small ONNX models for the frontend's lit tests.

Usage: make_model.py NAME OUT.onnx. The models are built with onnx.helper,
not exported from PyTorch, so that each test controls exactly which nodes,
attributes and opsets the importer sees.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)


def init(name, *shape):
    return numpy_helper.from_array(
        rng.standard_normal(shape).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)])


def tensor(name, *shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(shape))


def lenet(batch="N"):
    """LeNet-5 as torch.onnx exports it, with x.view(x.size(0), -1)."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "conv1.weight", "conv1.bias"], ["c1"], name="conv1",
          kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
        n("Relu", ["c1"], ["r1"], name="relu1"),
        n("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
          strides=[2, 2]),
        n("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2",
          kernel_shape=[5, 5]),
        n("Relu", ["c2"], ["r2"], name="relu2"),
        n("MaxPool", ["r2"], ["p2"], name="pool2", kernel_shape=[2, 2],
          strides=[2, 2]),
        # The shape subgraph of x.view(x.size(0), -1).
        n("Shape", ["p2"], ["s"], name="shape"),
        n("Constant", [], ["zero"], name="zero",
          value=helper.make_tensor("zero", TensorProto.INT64, [], [0])),
        n("Gather", ["s", "zero"], ["batch"], name="gather", axis=0),
        n("Constant", [], ["axes"], name="axes",
          value=helper.make_tensor("axes", TensorProto.INT64, [1], [0])),
        n("Unsqueeze", ["batch", "axes"], ["batch1"], name="unsqueeze"),
        n("Concat", ["batch1", "minus_one"], ["target"], name="concat",
          axis=0),
        n("Reshape", ["p2", "target"], ["f"], name="flatten"),
        n("Gemm", ["f", "fc1.weight", "fc1.bias"], ["g1"], name="fc1",
          transB=1),
        n("Relu", ["g1"], ["r3"], name="relu3"),
        n("Gemm", ["r3", "fc2.weight", "fc2.bias"], ["g2"], name="fc2",
          transB=1),
        n("Relu", ["g2"], ["r4"], name="relu4"),
        n("Gemm", ["r4", "fc3.weight", "fc3.bias"], ["logits"], name="fc3",
          transB=1),
    ]
    inits = [
        init("conv1.weight", 6, 1, 5, 5), init("conv1.bias", 6),
        init("conv2.weight", 16, 6, 5, 5), init("conv2.bias", 16),
        init("fc1.weight", 120, 400), init("fc1.bias", 120),
        init("fc2.weight", 84, 120), init("fc2.bias", 84),
        init("fc3.weight", 10, 84), init("fc3.bias", 10),
        ints("minus_one", [-1]),
    ]
    return model(nodes, [tensor("x", batch, 1, 28, 28)],
                 [tensor("logits", batch, 10)], inits)


def mlp(opset=13):
    n = helper.make_node
    nodes = [
        n("Flatten", ["x"], ["f"], name="flatten", axis=1),
        n("MatMul", ["f", "w1"], ["m1"], name="fc1.matmul"),
        n("Add", ["m1", "b1"], ["a1"], name="fc1.add"),
        n("Relu", ["a1"], ["r1"], name="relu"),
        n("Identity", ["r1"], ["i1"], name="identity"),
        n("MatMul", ["i1", "w2"], ["m2"], name="fc2.matmul"),
        n("Add", ["m2", "b2"], ["y"], name="fc2.add"),
    ]
    inits = [init("w1", 784, 32), init("b1", 32), init("w2", 32, 10),
             init("b2", 10)]
    return model(nodes, [tensor("x", 8, 1, 28, 28)], [tensor("y", 8, 10)],
                 inits, opset=opset)


def unsupported():
    n = helper.make_node
    return model([n("Hardmax", ["x"], ["y"], name="probabilities", axis=1)],
                 [tensor("x", 4, 10)], [tensor("y", 4, 10)])


def dangling_output(opset):
    """A second graph output that no node produces; the onnx version
    converter crashes on it, the checker lets it through."""
    n = helper.make_node
    return model([n("Relu", ["x"], ["y"], name="relu")],
                 [tensor("x", 4, 10)], [tensor("y", 4, 10), tensor("z", 4, 10)],
                 opset=opset)


def conv_zero_stride():
    """A Conv with a stride of 0, which the onnx library's shape inference
    divides by (SIGFPE); found by fuzz-onnx."""
    n = helper.make_node
    return model([n("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3],
                    pads=[1, 1, 1, 1], strides=[2, 0])],
                 [tensor("x", 1, 1, 7, 5)], [tensor("y", 1, 1, 4, 3)],
                 [init("w", 1, 1, 3, 3)])


def conv_rank1_filter():
    """A Conv whose filter is a bias-shaped vector (its inputs shifted by
    one, as a mutated torch export had them); the importer took the kernel
    size from the filter's missing dimensions (std::length_error); found by
    fuzz-onnx."""
    n = helper.make_node
    return model([n("Conv", ["x", "b"], ["c"], name="conv"),
                  n("Flatten", ["c"], ["y"], name="flatten", axis=1)],
                 [tensor("x", 2, 1, 6, 6)], [tensor("y", "N", "M")],
                 [init("b", 2)])


def reshape_overflow():
    """A Reshape target whose entries' product overflows int64 (undefined
    behaviour counting it before); found by fuzz-onnx."""
    n = helper.make_node
    return model([n("Reshape", ["x", "shape"], ["y"], name="reshape")],
                 [tensor("x", 8, 6, 4)], [tensor("y", 8, "M", 4)],
                 [ints("shape", [8, 4602678819176841216, 4])])


def branches(clip_min=0.0, slice_step=1):
    """Clip (ReLU6) with constant bounds, Split into two channel halves, a
    Concat of activations with one half and a Slice of the result, as
    PyTorch exports relu6, torch.split, torch.cat and x[:, 2:, ::step]."""
    n = helper.make_node
    consts = [numpy_helper.from_array(np.array(clip_min, np.float32), "lo"),
              numpy_helper.from_array(np.array(6.0, np.float32), "hi"),
              ints("halves", [4, 4]),
              ints("starts", [2, 0 if slice_step > 0 else -1]),
              ints("ends", [2**62, 5 if slice_step > 0 else -2**62]),
              ints("axes", [1, 3]),
              ints("steps", [1, slice_step])]
    nodes = [n("Clip", ["x", "lo", "hi"], ["r"], name="relu6"),
             n("Split", ["r", "halves"], ["a", "b"], name="split", axis=1),
             n("Relu", ["b"], ["rb"], name="relu_b"),
             n("Concat", ["r", "rb"], ["c"], name="concat", axis=-3),
             n("Slice", ["c", "starts", "ends", "axes", "steps"], ["y"],
               name="crop")]
    return model(nodes, [tensor("x", 2, 8, 5, 5)], [tensor("y", 2, 10, 5, 5)],
                 consts)


def pad(mode="constant"):
    """A constant Pad of activations with a non-zero value."""
    n = helper.make_node
    consts = [ints("pads", [0, 0, 1, 2, 0, 0, 3, 0]),
              numpy_helper.from_array(np.array(0.5, np.float32), "value")]
    return model([n("Pad", ["x", "pads", "value"], ["y"], name="pad",
                    mode=mode)],
                 [tensor("x", 2, 3, 4, 4)], [tensor("y", 2, 3, 8, 6)], consts)


def same_pad():
    n = helper.make_node
    return model([n("Conv", ["x", "w"], ["y"], name="conv_same",
                    auto_pad="SAME_UPPER", strides=[2, 2]),
                  n("MaxPool", ["y"], ["z"], name="pool_ceil",
                    kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
                  n("Flatten", ["z"], ["logits"], name="flatten")],
                 [tensor("x", 2, 3, 9, 9)], [tensor("logits", 2, 16)],
                 [init("w", 4, 3, 3, 3)])


def pool_indices():
    n = helper.make_node
    return model([n("MaxPool", ["x"], ["y", "idx"], name="pool_with_indices",
                    kernel_shape=[2, 2])],
                 [tensor("x", 1, 1, 4, 4)],
                 [tensor("y", 1, 1, 3, 3),
                  tensor("idx", 1, 1, 3, 3, elem=TensorProto.INT64)])


def gemm_alpha():
    n = helper.make_node
    return model([n("Gemm", ["x", "w"], ["y"], name="scaled_gemm", alpha=2.0)],
                 [tensor("x", 4, 3)], [tensor("y", 4, 5)], [init("w", 3, 5)])


def param_free_head():
    """Four relus on the input before the only layer with weights: a stage
    holding just the relus gets no gradient back."""
    n = helper.make_node
    nodes = [n("Flatten", ["x"], ["f"], name="flatten", axis=1)]
    prev = "f"
    for i in range(4):
        nodes.append(n("Relu", [prev], [f"r{i}"], name=f"relu{i}"))
        prev = f"r{i}"
    nodes += [n("Gemm", [prev, "w", "b"], ["logits"], name="fc", transB=1)]
    return model(nodes, [tensor("x", 16, 1, 28, 28)], [tensor("logits", 16, 10)],
                 [init("w", 10, 784), init("b", 10)])


def batchnorm(stats_as_input=False, read_saved=False, opset=13):
    """Conv, BatchNormalization with all five outputs named (as a
    training-mode torch export writes them), Relu, AveragePool with padding,
    GlobalAveragePool and a linear head."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3],
          pads=[1, 1, 1, 1]),
        # Since version 14 a training-mode node has three outputs.
        n("BatchNormalization", ["c", "bn.weight", "bn.bias", "bn.running_mean",
                                 "bn.running_var"],
          ["y", "rm", "rv", "sm", "sv"] if opset < 14 else ["y", "rm", "rv"],
          name="bn", epsilon=1e-3, momentum=0.8,
          **({"training_mode": 1} if opset >= 14 else {})),
        n("Relu", ["y"], ["r"], name="relu"),
        n("AveragePool", ["r"], ["a"], name="avg", kernel_shape=[3, 3],
          strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1),
        n("GlobalAveragePool", ["sm" if read_saved else "a"], ["g"],
          name="gap"),
        n("Flatten", ["g"], ["f"], name="flatten"),
        n("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc",
          transB=1),
    ]
    inits = [init("w", 4, 1, 3, 3), init("bn.weight", 4), init("bn.bias", 4),
             init("bn.running_mean", 4), init("fc.weight", 10, 4),
             init("fc.bias", 10)]
    inputs = [tensor("x", 2, 1, 8, 8)]
    if stats_as_input:
        inputs.append(tensor("bn.running_var", 4))
    else:
        inits.append(numpy_helper.from_array(
            np.ones(4, dtype=np.float32), "bn.running_var"))
    return model(nodes, inputs, [tensor("logits", 2, 10)], inits, opset=opset)


def layernorm(axis=1, scale_shape=(4, 8), read_mean=False, no_scale=False):
    """Two LayerNormalization nodes (opset 17) as torch.onnx writes
    nn.LayerNorm: one over the last two dimensions (axis 1 of x's three)
    with scale and bias and Mean and InvStdDev named but unread, and one over
    the last dimension with a negative axis, an epsilon and no bias; then a
    linear head."""
    n = helper.make_node
    nodes = [
        n("LayerNormalization",
          ["x", "" if no_scale else "ln1.weight", "ln1.bias"],
          ["h", "mean", "inv_std"], name="ln1", axis=axis),
        n("LayerNormalization", ["h", "ln2.weight"], ["y"], name="ln2",
          axis=-1, epsilon=0.1, stash_type=1),
        n("Flatten", ["mean" if read_mean else "y"], ["f"], name="flatten"),
        n("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc",
          transB=1),
    ]
    inits = [init("ln1.weight", *scale_shape), init("ln1.bias", *scale_shape),
             init("ln2.weight", 8), init("fc.weight", 10, 32),
             init("fc.bias", 10)]
    return model(nodes, [tensor("x", 2, 4, 8)], [tensor("logits", 2, 10)],
                 inits, opset=17)


def arithmetic(divisor=2):
    """Sub, Mul and Div folded on the host for a Reshape's target shape
    (8 x 6 x 4 -> 8 x 2 x 12), then a float Constant times the tensor, and
    Neg. `divisor` 0 divides by zero at import time."""
    n = helper.make_node
    scale = helper.make_tensor("v", TensorProto.FLOAT, [], [0.5])
    nodes = [
        n("Shape", ["x"], ["s"], name="shape"),
        n("Gather", ["s", "i0"], ["n"], name="batch", axis=0),
        n("Gather", ["s", "i1"], ["d1"], name="d1", axis=0),
        n("Gather", ["s", "i2"], ["d2"], name="d2", axis=0),
        n("Mul", ["d1", "d2"], ["p"], name="features"),
        n("Div", ["p", "divisor"], ["h"], name="half"),
        n("Sub", ["fourteen", "h"], ["two"], name="two"),
        n("Concat", ["n", "two", "h"], ["target"], name="target", axis=0),
        n("Reshape", ["x", "target"], ["r"], name="reshape"),
        n("Constant", [], ["c"], name="scale", value=scale),
        n("Mul", ["r", "c"], ["m"], name="scaled"),
        n("Neg", ["m"], ["g"], name="negated"),
        n("Flatten", ["g"], ["y"], name="flatten", axis=1),
    ]
    inits = [ints("i0", [0]), ints("i1", [1]), ints("i2", [2]),
             ints("divisor", [divisor]), ints("fourteen", [14])]
    return model(nodes, [tensor("x", 8, 6, 4)], [tensor("y", 8, 24)], inits)


def reductions(exponent=0.5, mean_axes=(1,)):
    """ReduceSum with its axes as an input and without keepdims, Pow by a
    Constant exponent, ReduceMean with keepdims, Transpose by its default
    (reversing) permutation, Softmax on axis 0 and LogSoftmax on the last."""
    n = helper.make_node
    power = helper.make_tensor("e", TensorProto.FLOAT, [], [exponent])
    nodes = [
        n("ReduceSum", ["x", "sum_axes"], ["s"], name="sum", keepdims=0),
        n("Constant", [], ["p"], name="exponent", value=power),
        n("Pow", ["s", "p"], ["r"], name="root"),
        n("ReduceMean", ["r"], ["m"], name="mean", axes=list(mean_axes)),
        n("Sub", ["r", "m"], ["c"], name="centred"),
        n("Transpose", ["c"], ["t"], name="swap"),
        n("Softmax", ["t"], ["q"], name="columns", axis=0),
        n("LogSoftmax", ["q"], ["y"], name="rows"),
    ]
    return model(nodes, [tensor("x", 4, 3, 6)], [tensor("y", 6, 4)],
                 [ints("sum_axes", [1])])



def gathers(axis=0, indices=(2, 0, 2, 1)):
    """Gather of a float table by constant indices, as an embedding table
    read through a constant map: `indices` in any order, along `axis`."""
    n = helper.make_node
    nodes = [
        n("Gather", ["table", "rows"], ["g"], name="lookup", axis=axis),
        n("Mul", ["g", "g"], ["y"], name="square"),
    ]
    shape = [3, 5]
    out = list(shape)
    out[axis] = len(indices)
    return model(nodes, [tensor("x", 1)], [tensor("y", *out)],
                 [init("table", *shape), ints("rows", list(indices))])


def resize(computed_scales=False, cubic=False, channel_scale=False):
    """Resize as torch.onnx writes F.interpolate at opset 13 (no roi, the
    scales a Constant): bilinear x2 with half_pixel (align_corners=False),
    nearest x2 with asymmetric and floor, and bilinear to sizes with
    align_corners, after a Conv so that autodiff needs the gradients. The
    variants compute the scales from the data (refused), ask for cubic
    (refused) or scale the channels (refused)."""
    n = helper.make_node
    scales = helper.make_tensor("s", TensorProto.FLOAT, [4],
                                [1, 2 if channel_scale else 1, 2, 2])
    nodes = [
        n("Conv", ["x", "conv.weight"], ["c"], name="conv"),
        n("Constant", [], ["scales"], name="scales", value=scales),
        n("Resize", ["c", "", "scales"], ["up"], name="up",
          mode="cubic" if cubic else "linear",
          coordinate_transformation_mode="half_pixel", nearest_mode="floor"),
        n("Resize", ["up", "", "scales"], ["near"], name="near",
          mode="nearest", coordinate_transformation_mode="asymmetric",
          nearest_mode="floor"),
        n("Resize", ["near", "", "", "sizes"], ["y"], name="fit",
          mode="linear", coordinate_transformation_mode="align_corners"),
    ]
    if computed_scales:
        nodes[1:2] = [n("Flatten", ["x"], ["flat"], name="flat"),
                      n("Slice", ["flat", "starts", "ends", "axes"],
                        ["first"], name="first"),
                      n("Reshape", ["first", "four"], ["scales"],
                        name="scales")]
    inits = [init("conv.weight", 2, 1, 1, 1), ints("sizes", [1, 2, 11, 13]),
             ints("starts", [0]), ints("ends", [4]), ints("axes", [1]),
             ints("four", [4])]
    return model(nodes, [tensor("x", 1, 1, 3, 3)],
                 [tensor("y", 1, 2, 11, 13)], inits)


def upsample():
    """Upsample (opset 9), nearest, by 3 x 2, its scales an initializer: the
    version converter writes it as Resize."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "conv.weight"], ["c"], name="conv"),
        n("Upsample", ["c", "scales"], ["y"], name="up", mode="nearest"),
    ]
    scales = numpy_helper.from_array(np.array([1, 1, 3, 2], dtype=np.float32),
                                     "scales")
    return model(nodes, [tensor("x", 2, 1, 3, 4)], [tensor("y", 2, 2, 9, 8)],
                 [init("conv.weight", 2, 1, 1, 1), scales], opset=9)

def lrn(size=5, opset=13):
    """Conv, then LRN as Caffe's AlexNet writes it (size 5; alpha, beta
    and bias of its own; no size when `size` is None), then a linear head."""
    n = helper.make_node
    attrs = {} if size is None else {"size": size}
    nodes = [
        n("Conv", ["x", "conv.weight"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        n("LRN", ["c"], ["l"], name="norm", alpha=2e-3, beta=0.5, bias=2.0,
          **attrs),
        n("Flatten", ["l"], ["f"], name="flatten"),
        n("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="fc",
          transB=1),
    ]
    inits = [init("conv.weight", 6, 1, 3, 3), init("fc.weight", 10, 96),
             init("fc.bias", 10)]
    return model(nodes, [tensor("x", 2, 1, 4, 4)], [tensor("logits", 2, 10)],
                 inits, opset=opset)


MODELS = {
    "lenet": lambda: lenet(),
    "lenet-fixed-batch": lambda: lenet(batch=16),
    "mlp": lambda: mlp(),
    "mlp-opset11": lambda: mlp(opset=11),
    "mlp-opset17": lambda: mlp(opset=17),
    "mlp-opset18": lambda: mlp(opset=18),
    "mlp-opset19": lambda: mlp(opset=19),
    "unsupported": unsupported,
    "branches": branches,
    "pad": pad,
    "pad-reflect": lambda: pad(mode="reflect"),
    "branches-bad-clip": lambda: branches(clip_min=7.0),
    "branches-negative-step": lambda: branches(slice_step=-1),
    "dangling-output-opset11": lambda: dangling_output(11),
    "conv-zero-stride": conv_zero_stride,
    "conv-rank1-filter": conv_rank1_filter,
    "reshape-overflow": reshape_overflow,
    "same-pad": same_pad,
    "pool-indices": pool_indices,
    "gemm-alpha": gemm_alpha,
    "param-free-head": param_free_head,
    "batchnorm": batchnorm,
    "batchnorm-stats-input": lambda: batchnorm(stats_as_input=True),
    "batchnorm-reads-saved": lambda: batchnorm(read_saved=True),
    "batchnorm-opset15": lambda: batchnorm(opset=15),
    "layernorm": layernorm,
    "layernorm-axis-out-of-range": lambda: layernorm(axis=3),
    "layernorm-scale-shape": lambda: layernorm(scale_shape=(1, 8)),
    "layernorm-reads-mean": lambda: layernorm(read_mean=True),
    "layernorm-no-scale": lambda: layernorm(no_scale=True),
    "arithmetic": arithmetic,
    "arithmetic-divide-by-zero": lambda: arithmetic(divisor=0),
    "reductions": reductions,
    "reductions-cube": lambda: reductions(exponent=3.0),
    "reductions-twice": lambda: reductions(mean_axes=(1, -1)),
    "gathers": gathers,
    "gathers-arithmetic": lambda: gathers(indices=(0, 1, 2)),
    "gathers-axis1": lambda: gathers(axis=1, indices=(4, 0, 3)),
    "resize": resize,
    "resize-computed-scales": lambda: resize(computed_scales=True),
    "resize-cubic": lambda: resize(cubic=True),
    "resize-channel-scale": lambda: resize(channel_scale=True),
    "upsample": upsample,
    "lrn": lrn,
    "lrn-opset9": lambda: lrn(opset=9),
    "lrn-no-size": lambda: lrn(size=None),
    "lrn-size-0": lambda: lrn(size=0),
}

if __name__ == "__main__":
    name, path = sys.argv[1], sys.argv[2]
    onnx.save(MODELS[name](), path)
