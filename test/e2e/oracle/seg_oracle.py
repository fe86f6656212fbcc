#!/usr/bin/python3
"""PyTorch oracle for per-pixel losses (dpc compile --class-axis 1).

Trains a small segmentation net, SegNet, the way oracle.py trains its
classifiers (same export, same reload of the exported initializers, same
SGD steps on minibatches in file order, float64 and float32 runs), but on
synthetic images with a class per pixel: logits [N, C, H, W] and labels
[N, H, W] under torch.nn.CrossEntropyLoss(ignore_index=-100), which is
what oracle.py's loss (classes last) cannot express. Writes what
match_oracle.py reads: MODEL.onnx, MODEL.oracle.json (data: the npy spec of
the inputs and labels written beside it), MODEL.init/final/final64
.safetensors.

Usage: seg_oracle.py --out DIR [--steps 20]
"""

import argparse
import copy
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402
import oracle_result  # noqa: E402

CLASSES = 3
SIDE = 16
IGNORE_INDEX = -100


class SegNet(nn.Module):
    """A U-Net-shaped per-pixel classifier with the ops of #43's norm and
    math family: conv 2->8 with GroupNorm(2 groups) at 16x16, max pool to
    8x8, conv 8->16 with InstanceNorm2d (affine), a cumulative sum along
    the rows (an integral-image feature), self-attention over the 64
    positions written with torch.einsum ("bci,bcj->bij", "bij,bcj->bci"),
    nearest upsampling back to 16x16 (a broadcast multiply) and a 1x1 conv
    to 8 channels, torch.maximum of it times two equal per-channel gates
    (a tie at every element: each gate gets half the gradient), merged
    with the skip connection by torch.maximum, torch.minimum against a
    constant, and a 1x1 conv head to 3 classes: logits [N, 3, 16, 16]."""

    input_shape = (2, SIDE, SIDE)
    opset = 17
    export_training = True

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(2, 8, 3, padding=1)
        self.gn = nn.GroupNorm(2, 8)
        self.mid = nn.Conv2d(8, 16, 3, padding=1)
        self.inorm = nn.InstanceNorm2d(16, affine=True)
        self.up = nn.Conv2d(16, 8, 1)
        # Two equal gates: maximum(u * a, u * b) ties everywhere, and stays
        # tied only if each gate gets half the gradient (torch's rule).
        self.gate_a = nn.Parameter(torch.ones(8, 1, 1))
        self.gate_b = nn.Parameter(torch.ones(8, 1, 1))
        self.head = nn.Conv2d(8, CLASSES, 1)

    def forward(self, x):
        f = nn.functional
        e = torch.relu(self.gn(self.enc(x)))
        m = torch.relu(self.inorm(self.mid(f.max_pool2d(e, 2))))
        m = m + 0.1 * torch.cumsum(m, dim=3)
        t = m.flatten(2)
        scores = torch.einsum("bci,bcj->bij", t, t) * 0.25
        t = t + torch.einsum("bij,bcj->bci", torch.softmax(scores, -1), t)
        m = t.reshape(m.shape)
        # Nearest upsampling x2 as a broadcast: a training-mode export of
        # F.interpolate writes its scales as a Concat of float constants.
        n, c = m.shape[0], m.shape[1]
        m = (m.reshape(n, c, SIDE // 2, 1, SIDE // 2, 1) *
             torch.ones(1, 1, 1, 2, 1, 2)).reshape(n, c, SIDE, SIDE)
        u = self.up(m)
        u = torch.maximum(u * self.gate_a, u * self.gate_b)
        h = torch.minimum(torch.maximum(u, e), torch.tensor(2.0))
        return self.head(h)


def per_pixel_cross_entropy(logits, labels, ignore_index=-100,
                            label_smoothing=0.0):
    """torch.nn.CrossEntropyLoss on N-D logits, class axis 1."""
    return nn.functional.cross_entropy(logits, labels,
                                       ignore_index=ignore_index,
                                       label_smoothing=label_smoothing)


def synthetic_data(count, generator):
    """Images of two channels and the class of each pixel: the channel that
    is larger after a 3x3 blur, or 2 where both are small; about 5% of the
    pixels are labelled IGNORE_INDEX."""
    x = torch.rand(count, 2, SIDE, SIDE, generator=generator)
    blurred = nn.functional.avg_pool2d(x, 3, stride=1, padding=1)
    labels = (blurred[:, 0] > blurred[:, 1]).long()
    labels[blurred.max(dim=1).values < 0.45] = 2
    ignored = torch.rand(count, SIDE, SIDE, generator=generator) < 0.05
    labels[ignored] = IGNORE_INDEX
    return x, labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    microbatches, size, name = 4, 16, "segnet"
    settings = {"kind": "sgd", "lr": 0.05, "momentum": 0.9,
                "weight_decay": 0.0}
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    oracle.cross_entropy = per_pixel_cross_entropy
    torch.manual_seed(0)
    model = SegNet()
    onnx_path, ops = oracle.export_and_reload(model, name, size, args.out)
    x, y = synthetic_data(args.steps * microbatches * size,
                          torch.Generator().manual_seed(1))
    files = [os.path.abspath(os.path.join(args.out, f"{name}.{part}.npy"))
             for part in ("train_inputs", "train_labels")]
    np.save(files[0], x.numpy())
    np.save(files[1], y.numpy())
    reference = copy.deepcopy(model).double()
    losses = oracle.train(model, x, y, args.steps, microbatches, size,
                          settings)
    losses64 = oracle.train(reference, x.double(), y, args.steps,
                            microbatches, size, settings)
    oracle_result.write(oracle, args.out, name, model, reference, onnx_path,
                        ops, losses, losses64, {
        "opset": SegNet.opset, "input_shape": [size, *SegNet.input_shape],
        "data": "npy:" + ",".join(files),
        "steps": args.steps, "microbatches": microbatches,
        "microbatch_size": size,
        "loss": "softmax-cross-entropy over the class axis 1, mean over the "
                "minibatch's pixels not labelled ignore_index",
        "ignore_index": IGNORE_INDEX, "optimizer": settings})


if __name__ == "__main__":
    main()
