"""Checks dpc's validation loss during training (dpc run --eval-every, with
--keep-best) against PyTorch: the weights --keep-best kept, loaded into
oracle.py's model, must give the eval_loss dpc reported after that step,
and that step's loss must be the lowest dpc reported.

The loss is PyTorch's cross-entropy (with the oracle's label smoothing)
over the evaluation samples in microbatches of the oracle's size, averaged
over the microbatches, in train mode as dpc's forward evaluates.

Usage: eval_check.py ORACLE_DIR MODEL BEST_DIR METRICS INPUTS.npy LABELS.npy
       [--rtol 1e-4]
Prints one line; exits 1 on a mismatch, 2 on unreadable input.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import oracle  # noqa: E402
from compare_weights import read_safetensors  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    for name in ("oracle_dir", "model", "best_dir", "metrics", "inputs",
                 "labels"):
        parser.add_argument(name)
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = json.load(open(os.path.join(args.oracle_dir,
                                           args.model + ".oracle.json")))
    evals = [json.loads(line) for line in open(args.metrics)
             if '"eval_step"' in line]
    if not evals:
        print("eval_check: no eval_step records in the metrics")
        return 2
    state = {}
    for name in sorted(os.listdir(args.best_dir)):
        if name.endswith(".safetensors"):
            state.update(read_safetensors(os.path.join(args.best_dir, name)))
    model = oracle.build(args.model)
    with torch.no_grad():
        for name, tensor in oracle.trained_state(model).items():
            tensor.copy_(torch.from_numpy(state[name].copy()))
    inputs = torch.from_numpy(np.load(args.inputs))
    labels = torch.from_numpy(np.load(args.labels))
    size = settings["microbatch_size"]
    smoothing = settings["optimizer"].get("label_smoothing", 0.0)
    losses = []
    model.train()
    with torch.no_grad():
        for begin in range(0, inputs.shape[0] - size + 1, size):
            logits = model(inputs[begin:begin + size])
            losses.append(oracle.cross_entropy(
                logits, labels[begin:begin + size],
                label_smoothing=smoothing).item())
    torch_loss = float(np.mean(losses))
    best = min(evals, key=lambda r: r["eval_loss"])
    kept = [r for r in evals if abs(r["eval_loss"] - torch_loss) <=
            args.rtol * abs(torch_loss)]
    if not kept or kept[0]["eval_step"] != best["eval_step"]:
        print(f"eval_check: PyTorch's loss of the kept weights is "
              f"{torch_loss:.7f}; dpc's lowest eval_loss is "
              f"{best['eval_loss']:.7f} after step {best['eval_step']}")
        return 1
    print(f"eval_check: the kept weights are step {best['eval_step']}'s, the "
          f"lowest of {len(evals)} evaluations; PyTorch's loss "
          f"{torch_loss:.6f} matches within {args.rtol:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
