#!/usr/bin/python3
"""PyTorch's eval-mode view of weights dpc trained.

    torch_eval.py MODEL CHECKPOINT_DIR [--data DIR] [--inputs X.npy
                  --predictions OUT.npy]

Loads every stageK.safetensors of CHECKPOINT_DIR (what `dpc run
--checkpoint-dir` wrote) into oracle.py's MODEL, by name, and prints
"accuracy A" over the Fashion-MNIST test split in eval mode (batch
normalization with the running statistics); with --inputs it also writes the
model's outputs for those inputs. Tests of dpc's evaluation and inference
paths compare with this, so they check those paths on the very weights dpc
holds: PyTorch's own float32 training rounds differently from dpc's, and
that difference grows over training steps.
"""
import argparse
import glob
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_weights  # noqa: E402
import oracle  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("checkpoint_dir")
    parser.add_argument("--data", default=oracle.DEFAULT_DATA)
    parser.add_argument("--inputs")
    parser.add_argument("--predictions")
    args = parser.parse_args()

    files = sorted(glob.glob(os.path.join(args.checkpoint_dir,
                                          "stage*.safetensors")))
    if not files:
        sys.exit(f"torch_eval: no stage*.safetensors in {args.checkpoint_dir}")
    trained = {}
    for path in files:
        trained.update(compare_weights.read_safetensors(path))
    torch.set_num_threads(1)
    model = oracle.build(args.model)
    state = oracle.trained_state(model)
    missing = sorted(set(state) - set(trained))
    if missing:
        sys.exit(f"torch_eval: the checkpoints lack {', '.join(missing)}")
    with torch.no_grad():
        for name, value in state.items():
            value.copy_(torch.from_numpy(trained[name].copy()))
    print(f"accuracy {oracle.evaluate(model, args.data):.4f}")
    if args.inputs:
        with torch.no_grad():
            outputs = model(torch.from_numpy(np.load(args.inputs)))
        np.save(args.predictions, outputs.numpy())


if __name__ == "__main__":
    main()
