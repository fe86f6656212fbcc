#!/usr/bin/python3
"""Checks a trained model that `dpc export` wrote against PyTorch.

    export_logits.py TRAINED.onnx ORACLE_DIR --model tiny-gpt [--rtol 1e-4]

ORACLE_DIR is oracle.py's output for the model (MODEL.oracle.json and
MODEL.final.safetensors, PyTorch's trained weights). On a microbatch of
windows from the end of the oracle's text (the test split of dpc's text:
source), the script computes the logits three ways:

  torch      the oracle's model with PyTorch's trained weights;
  onnx       TRAINED.onnx evaluated by oracle/numpy_onnx.py (float64), the
             exported graph and weights without dpc or PyTorch;
  torch+onnx the oracle's model with TRAINED.onnx's initializers loaded by
             name (every parameter must be there, with its shape).

Each pair must agree within rtol times the largest |logit| of torch. Prints
one line per pair; exits 1 when one differs.
"""

import argparse
import json
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "oracle"))

import compare_weights  # noqa: E402
import numpy_onnx  # noqa: E402
import oracle  # noqa: E402
import text  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trained")
    parser.add_argument("oracle_dir")
    parser.add_argument("--model", required=True)
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args()

    with open(os.path.join(args.oracle_dir,
                           f"{args.model}.oracle.json")) as f:
        settings = json.load(f)
    batch, length = settings["input_shape"]
    with open(text.DEFAULT_TEXT, "rb") as f:
        tokens = text.tokens_of(f.read())
    starts = tokens.size - 1 - length * np.arange(batch, 0, -1)
    ids = tokens[starts[:, None] + np.arange(length)[None, :]]

    torch.manual_seed(0)
    model = oracle.build(args.model).eval()
    trained = compare_weights.read_safetensors(
        os.path.join(args.oracle_dir, settings["final_weights"]))
    model.load_state_dict({k: torch.from_numpy(v.copy())
                           for k, v in trained.items()})
    with torch.no_grad():
        reference = model(torch.from_numpy(ids)).numpy()

    proto = onnx.load(args.trained)
    (onnx_logits,) = numpy_onnx.run(proto, {proto.graph.input[0].name: ids})

    exported = {t.name: numpy_helper.to_array(t)
                for t in proto.graph.initializer}
    state = {}
    for name, value in model.state_dict().items():
        if name not in exported or exported[name].shape != tuple(value.shape):
            print(f"export_logits: {args.trained} has no initializer {name} "
                  f"of shape {tuple(value.shape)}")
            return 1
        state[name] = torch.from_numpy(exported[name].copy())
    model.load_state_dict(state)
    with torch.no_grad():
        reloaded = model(torch.from_numpy(ids)).numpy()

    scale = float(np.abs(reference).max())
    failed = False
    for label, logits in (("onnx", onnx_logits), ("torch+onnx", reloaded)):
        diff = float(np.abs(logits - reference).max())
        ok = logits.shape == reference.shape and diff <= args.rtol * scale
        failed |= not ok
        print(f"export_logits: {label} vs torch: {'ok' if ok else 'DIFFERENT'}"
              f": logits {list(logits.shape)}, max |difference| {diff:.2e}"
              f" ({diff / scale:.1e} of the largest |logit| {scale:.2f}; "
              f"rtol {args.rtol:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
