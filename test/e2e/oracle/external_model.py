#!/usr/bin/env python3
"""Variants of an ONNX model for the external-data tests (external-data.test).

  external_model.py save SRC DST [--dtype f32|f16|bf16|f64] [--threshold N]
      DST keeps every initializer of at least N bytes (default 0: all) in
      DST's external file DST.data. With --dtype, every float32 initializer
      that a node reads is stored in that type instead and widened back by a
      Cast node, the way a model with half-precision weights is exported.
  external_model.py rounded SRC DST --dtype f16|bf16
      DST is SRC with every float32 initializer rounded through that type
      (and stored as float32, inline): the model dpc must train identically
      to the --dtype variant.
  external_model.py break DST KIND
      Damages DST's external data: missing (the file removed), short (cut to
      half), offset (an offset past the end), length (a length its shape
      disagrees with).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ONNX_TYPES = {"f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16,
              "f64": TensorProto.DOUBLE}


def to_bf16_bits(values):
    """float32 -> bfloat16 bit patterns, rounded to nearest even."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def round_through(values, dtype):
    if dtype == "f16":
        return values.astype(np.float16).astype(np.float32)
    if dtype == "bf16":
        return (to_bf16_bits(values).astype(np.uint32) << 16).view(np.float32)
    return values.astype(np.float64).astype(np.float32)


def typed_tensor(name, values, dtype):
    """An initializer holding `values` in `dtype`, as raw little-endian data."""
    if dtype == "f16":
        raw = values.astype(np.float16).tobytes()
    elif dtype == "bf16":
        raw = to_bf16_bits(values).tobytes()
    else:
        raw = values.astype(np.float64).tobytes()
    return helper.make_tensor(name, ONNX_TYPES[dtype], values.shape, raw,
                              raw=True)


def store_typed(model, dtype):
    """Each float32 initializer in `dtype`, widened by a Cast before use."""
    graph = model.graph
    casts = []
    for index, init in enumerate(list(graph.initializer)):
        if init.data_type != TensorProto.FLOAT:
            continue
        values = numpy_helper.to_array(init)
        name = init.name
        stored = name + "." + dtype
        graph.initializer[index].CopyFrom(typed_tensor(stored, values, dtype))
        casts.append(helper.make_node("Cast", [stored], [name],
                                      to=TensorProto.FLOAT,
                                      name="widen." + name))
    nodes = casts + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    for value in list(graph.input):
        if any(c.output[0] == value.name for c in casts):
            graph.input.remove(value)


def save(args):
    model = onnx.load(args.src)
    if args.dtype != "f32":
        store_typed(model, args.dtype)
    onnx.checker.check_model(model)
    location = os.path.basename(args.dst) + ".data"
    onnx.save_model(model, args.dst, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=location,
                    size_threshold=args.threshold)


def rounded(args):
    model = onnx.load(args.src)
    for init in model.graph.initializer:
        if init.data_type == TensorProto.FLOAT:
            values = round_through(numpy_helper.to_array(init), args.dtype)
            init.CopyFrom(numpy_helper.from_array(values, init.name))
    onnx.save_model(model, args.dst)


def damage(args):
    model = onnx.load(args.dst, load_external_data=False)
    data = os.path.join(os.path.dirname(args.dst) or ".",
                        os.path.basename(args.dst) + ".data")
    if args.kind == "missing":
        os.remove(data)
        return
    if args.kind == "short":
        size = os.path.getsize(data)
        with open(data, "r+b") as f:
            f.truncate(size // 2)
        return
    # The largest external tensor gets the bad entry.
    external = [t for t in model.graph.initializer
                if t.data_location == TensorProto.EXTERNAL]
    tensor = max(external, key=lambda t: int(
        next(e.value for e in t.external_data if e.key == "length")))
    for entry in tensor.external_data:
        if args.kind == "offset" and entry.key == "offset":
            entry.value = str(os.path.getsize(data) + 4096)
        if args.kind == "length" and entry.key == "length":
            entry.value = str(int(entry.value) - 4)
    print(tensor.name)
    onnx.save_model(model, args.dst)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("save")
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--dtype", choices=["f32", "f16", "bf16", "f64"],
                   default="f32")
    p.add_argument("--threshold", type=int, default=0)
    p.set_defaults(run=save)
    p = sub.add_parser("rounded")
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--dtype", choices=["f16", "bf16", "f64"], required=True)
    p.set_defaults(run=rounded)
    p = sub.add_parser("break")
    p.add_argument("dst")
    p.add_argument("kind", choices=["missing", "short", "offset", "length"])
    p.set_defaults(run=damage)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
