#!/usr/bin/python3
"""Exports the text example's GPT-like decoder to ONNX for `dpc compile`.

    export.py OUT.onnx [--length 64] [--width 64] [--heads 4] [--layers 4]
              [--batch 8] [--seed 0]

The model is test/e2e/oracle/oracle.py's TinyGPT (token and learned position
embeddings, pre-norm blocks of causal attention and a GELU MLP, the output
projection tied to the token embedding), here longer and wider than the
oracle's, on the oracle's 64-symbol character vocabulary (dpc's
`text:FILE`, vocab=ascii64). torch.onnx bakes the batch into the attention's
view targets: export at the microbatch size you compile for (--batch), or
let `dpc compile --microbatch-size` re-specialise it.
"""

import argparse
import os
import shutil
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "test", "e2e", "oracle"))

import torch  # noqa: E402

import oracle  # noqa: E402  (TinyGPT and the training-mode export)


def build(length, width, heads, layers):
    return oracle.TinyGPT(length=length, width=width, heads=heads,
                          layers=layers)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the ONNX file to write")
    parser.add_argument("--length", type=int, default=64,
                        help="tokens a sample (dpc's window length)")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8,
                        help="the microbatch size the export is for")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.width % args.heads:
        sys.exit(f"export.py: --width {args.width} is not a multiple of "
                 f"--heads {args.heads}")
    torch.manual_seed(args.seed)
    model = build(args.length, args.width, args.heads, args.layers)
    with tempfile.TemporaryDirectory() as work:
        path, _ = oracle.export_and_reload(model, "gpt", args.batch, work)
        shutil.copyfile(path, args.out)
    params = sum(p.numel() for p in model.parameters())
    print(f"{args.out}: GPT-like decoder, {args.layers} layers of width "
          f"{args.width}, {args.heads} heads, {args.length} tokens, "
          f"{params} parameters, batch {args.batch}")


if __name__ == "__main__":
    main()
