#!/usr/bin/python3
"""Writes a GPT-style decoder with random weights as ONNX, without PyTorch.

    gen_random_gpt.py OUT.onnx --params small|tiny|0.1B|0.5B|1.5B|4B|8B
        [--batch B] [--seed S] [--fill random|constant]
        [--dtype float32|float16|bfloat16|float64] [--inline] [--align N]

The graph is the one torch.onnx exports (opset 17, training mode) for
test/e2e/oracle's TinyGPT, with the same initializer names: token embedding
`tok.weight` (tied: the output layer is MatMul by its Transpose), learned
positions `pos`, pre-norm blocks `blocks.I.{ln1,qkv,proj,ln2,up,down}`
(Linear weights [out, in] behind a Transpose, as torch writes them; causal
attention with an additive mask Constant; GELU as Div, Erf, Add, Mul, Mul)
and `ln_f`; input `input` int64 [B, T], output `logits` [B, T, vocab]. So a
TinyGPT of the same shape loads these weights by name, and dpc sees the
graph it sees from PyTorch.

The weights go straight to OUT.onnx.data tensor by tensor (external_onnx.py),
a 16 MiB chunk at a time, so the generator's memory stays small at any size
(the 8B preset is 31 GB of float32). --inline stores them in the protobuf
instead (small models only: the 2 GiB protobuf limit), for tests comparing
the two storages. Weights: N(0, 0.02^2) from numpy's PCG64 seeded with
(seed, tensor index); LayerNorm scales 1, biases 0; --fill constant writes
0.02 everywhere (fast, for compile-only runs); --fill sparse writes nothing:
the data file is a sparse file of zeros that takes no disk (a compile-only
model larger than the disk could hold twice). --dtype stores them as that
type (dpc converts to its training dtype).
"""

import argparse
import math
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import external_onnx  # noqa: E402

OPSET = 17

# name: (vocab, sequence length, width, heads, layers). small is for CI
# tests; the others are the bench's sizes (run.py).
PRESETS = {
    "small": (512, 32, 64, 2, 2),
    "tiny": (8192, 128, 128, 4, 2),
    "0.1B": (50304, 128, 768, 12, 12),
    "0.5B": (50304, 128, 1280, 20, 25),
    "1.5B": (50304, 128, 1600, 25, 48),
    "4B": (50304, 128, 3072, 24, 36),
    "8B": (50304, 128, 4096, 32, 38),
}


def config(preset):
    vocab, length, width, heads, layers = PRESETS[preset]
    return {"vocab": vocab, "length": length, "width": width,
            "heads": heads, "layers": layers}


def parameter_shapes(cfg):
    """[(name, shape, kind)] in TinyGPT's order; kind is 'normal', 'ones'
    or 'zeros' (the initial values)."""
    v, t, d = cfg["vocab"], cfg["length"], cfg["width"]
    shapes = [("pos", (t, d), "normal"), ("tok.weight", (v, d), "normal")]
    for i in range(cfg["layers"]):
        p = f"blocks.{i}."
        shapes += [(p + "ln1.weight", (d,), "ones"),
                   (p + "ln1.bias", (d,), "zeros"),
                   (p + "qkv.weight", (3 * d, d), "normal"),
                   (p + "qkv.bias", (3 * d,), "zeros"),
                   (p + "proj.weight", (d, d), "normal"),
                   (p + "proj.bias", (d,), "zeros"),
                   (p + "ln2.weight", (d,), "ones"),
                   (p + "ln2.bias", (d,), "zeros"),
                   (p + "up.weight", (4 * d, d), "normal"),
                   (p + "up.bias", (4 * d,), "zeros"),
                   (p + "down.weight", (d, 4 * d), "normal"),
                   (p + "down.bias", (d,), "zeros")]
    shapes += [("ln_f.weight", (d,), "ones"), ("ln_f.bias", (d,), "zeros")]
    return shapes


def parameter_count(cfg):
    return sum(int(np.prod(shape)) for _, shape, _ in parameter_shapes(cfg))


def training_flops_per_token(cfg):
    """Model FLOPs of training on one token (a multiply-add is two, the
    backward twice the forward): the blocks' and the tied output layer's
    matmuls, and attention's two [T, T] products over the full T x T (dpc
    and PyTorch both compute the masked half)."""
    v, t, d, layers = cfg["vocab"], cfg["length"], cfg["width"], cfg["layers"]
    forward = 2 * (12 * layers * d * d + d * v) + 2 * 2 * layers * t * d
    return 3 * forward


class _Graph:
    """Collects nodes with torch.onnx-like names."""

    def __init__(self):
        self.nodes = []
        self.count = 0

    def op(self, op_type, inputs, scope, outputs=1, **attrs):
        self.count += 1
        names = [f"{scope}/{op_type}_{self.count}_output_{k}"
                 for k in range(outputs)]
        self.nodes.append(helper.make_node(
            op_type, inputs, names, name=f"{scope}/{op_type}_{self.count}",
            **attrs))
        return names if outputs > 1 else names[0]

    def const(self, array, scope):
        tensor = onnx.numpy_helper.from_array(np.asarray(array))
        return self.op("Constant", [], scope, value=tensor)


def _linear(g, x, prefix, scope):
    wt = g.op("Transpose", [prefix + ".weight"], scope, perm=[1, 0])
    y = g.op("MatMul", [x, wt], scope)
    return g.op("Add", [prefix + ".bias", y], scope)


def _block(g, x, i, cfg, batch, mask):
    t, d, heads = cfg["length"], cfg["width"], cfg["heads"]
    head = d // heads
    s = f"/blocks.{i}"
    p = f"blocks.{i}."
    h = g.op("LayerNormalization", [x, p + "ln1.weight", p + "ln1.bias"], s,
             axis=-1, epsilon=1e-5)
    qkv = _linear(g, h, p + "qkv", s)
    q, k, v = g.op("Split", [qkv, g.const(np.array([d] * 3, np.int64), s)],
                   s, outputs=3, axis=-1)
    split_shape = g.const(np.array([batch, t, heads, head], np.int64), s)
    q = g.op("Transpose", [g.op("Reshape", [q, split_shape], s)], s,
             perm=[0, 2, 1, 3])
    k = g.op("Transpose", [g.op("Reshape", [k, split_shape], s)], s,
             perm=[0, 2, 3, 1])
    v = g.op("Transpose", [g.op("Reshape", [v, split_shape], s)], s,
             perm=[0, 2, 1, 3])
    scores = g.op("Div", [g.op("MatMul", [q, k], s),
                          g.const(np.float32(math.sqrt(head)), s)], s)
    probs = g.op("Softmax", [g.op("Add", [scores, mask], s)], s, axis=-1)
    y = g.op("Transpose", [g.op("MatMul", [probs, v], s)], s,
             perm=[0, 2, 1, 3])
    y = g.op("Reshape", [y, g.const(np.array([batch, t, d], np.int64), s)],
             s)
    x = g.op("Add", [x, _linear(g, y, p + "proj", s)], s)
    h = g.op("LayerNormalization", [x, p + "ln2.weight", p + "ln2.bias"], s,
             axis=-1, epsilon=1e-5)
    u = _linear(g, h, p + "up", s)
    erf = g.op("Erf", [g.op("Div", [u, g.const(np.float32(math.sqrt(2.0)),
                                                s)], s)], s)
    gelu = g.op("Mul", [g.op("Mul", [u, g.op("Add", [
        erf, g.const(np.float32(1.0), s)], s)], s),
        g.const(np.float32(0.5), s)], s)
    return g.op("Add", [x, _linear(g, gelu, p + "down", s)], s)


def build_graph(cfg, batch, initializers):
    """The decoder's ModelProto over the given initializer TensorProtos."""
    g = _Graph()
    t = cfg["length"]
    x = g.op("Gather", ["tok.weight", "input"], "/tok")
    x = g.op("Add", [x, "pos"], "")
    mask = np.triu(np.full((t, t), -np.inf, np.float32), k=1)
    for i in range(cfg["layers"]):
        x = _block(g, x, i, cfg, batch, g.const(mask, f"/blocks.{i}"))
    x = g.op("LayerNormalization", [x, "ln_f.weight", "ln_f.bias"], "/ln_f",
             axis=-1, epsilon=1e-5)
    wt = g.op("Transpose", ["tok.weight"], "", perm=[1, 0])
    g.nodes.append(helper.make_node("MatMul", [x, wt], ["logits"],
                                    name="/MatMul_logits"))
    inputs = [helper.make_tensor_value_info("input", TensorProto.INT64,
                                            [batch, t])]
    outputs = [helper.make_tensor_value_info(
        "logits", TensorProto.FLOAT, [batch, t, cfg["vocab"]])]
    graph = helper.make_graph(g.nodes, "random_gpt", inputs, outputs,
                              initializers)
    model = helper.make_model(
        graph, producer_name="dpc bench/large-models/gen_random_gpt.py",
        opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def values(kind, shape, seed, index, fill):
    if kind == "ones":
        return [np.ones(int(np.prod(shape)), np.float32)]
    if kind == "zeros":
        return [np.zeros(int(np.prod(shape)), np.float32)]
    return external_onnx.random_chunks(shape, [seed, index], fill=fill)


def write(path, cfg, batch=1, seed=0, fill="random", dtype="float32",
          inline=False, align=4096):
    """Writes the model to `path` (weights in PATH.data unless `inline`)
    and returns its parameter count."""
    initializers = []
    writer = None if inline else external_onnx.ExternalDataWriter(
        path, align=align)
    try:
        for index, (name, shape, kind) in enumerate(parameter_shapes(cfg)):
            if fill == "sparse" and not inline:
                initializers.append(writer.add_hole(name, shape, dtype))
                continue
            chunks = values(kind, shape, seed, index, fill)
            if inline:
                array = np.concatenate(list(chunks)).reshape(shape)
                if dtype == "bfloat16":
                    tensor = helper.make_tensor(
                        name, TensorProto.BFLOAT16, shape,
                        external_onnx.to_bfloat16_bits(array).tobytes(),
                        raw=True)
                else:
                    tensor = onnx.numpy_helper.from_array(
                        array.astype(external_onnx.DTYPES[dtype][1]), name)
                initializers.append(tensor)
            else:
                initializers.append(writer.add_chunks(name, shape, dtype,
                                                      chunks))
    finally:
        if writer:
            writer.close()
    model = build_graph(cfg, batch, initializers)
    external_onnx.save_model(model, path)
    # By path, so that external files are looked for beside the model (the
    # checker reads their names, not their data).
    onnx.checker.check_model(path)
    return parameter_count(cfg)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("out", help="the ONNX file to write")
    parser.add_argument("--params", default="small", choices=list(PRESETS),
                        help="size preset (default small)")
    parser.add_argument("--batch", type=int, default=1,
                        help="the microbatch size the graph is for")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fill", default="random",
                        choices=["random", "constant", "sparse"])
    parser.add_argument("--dtype", default="float32",
                        choices=["float32", "float16", "bfloat16",
                                 "float64"])
    parser.add_argument("--inline", action="store_true",
                        help="weights in the protobuf, not external data")
    parser.add_argument("--align", type=int, default=4096,
                        help="each external tensor starts at a multiple of "
                             "this many bytes (1: packed as onnx does)")
    args = parser.parse_args()
    cfg = config(args.params)
    count = write(args.out, cfg, args.batch, args.seed, args.fill,
                  args.dtype, args.inline, args.align)
    size = external_onnx.model_bytes(args.out)
    print(f"{args.out}: GPT decoder {args.params}, {cfg['layers']} layers of "
          f"width {cfg['width']}, {cfg['heads']} heads, {cfg['length']} "
          f"tokens, vocab {cfg['vocab']}, {count} parameters, batch "
          f"{args.batch}, {args.dtype} weights "
          f"{'inline' if args.inline else 'in external data'}, {size} bytes")


if __name__ == "__main__":
    main()
