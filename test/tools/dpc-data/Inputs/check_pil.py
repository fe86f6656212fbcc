#!/usr/bin/python3
"""check_pil.py LINES NPY C H W [--mean M/.. --std D/..] [--resize N]:
recomputes with PIL and torchvision 0.14 the pixels dpc-data gathered.

LINES is dpc-data's output: a line a sample, "PATH: sample N: train|test
WxH, crop top=T left=L height=CH width=CW flip=F: label K". A train sample
is torchvision's resized_crop(img, T, L, CH, CW, [H, W]) of the image
converted to RGB (C 3) or L (C 1), flipped when F; a test sample is
Resize(N) and CenterCrop([H, W]) (N default max(H, W)); then ToTensor and
Normalize. The crop parameters are dpc's own draws (not torch's), so the
check is of the pixels for the same parameters. Prints the largest
difference from dpc's floats and whether the crop box equals
torchvision's for the test transform.
"""

import argparse
import re
import sys

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image

LINE = re.compile(r"^(?P<path>.*): sample (?P<index>\d+): (?P<split>train|test) "
                  r"(?P<w>\d+)x(?P<h>\d+), crop top=(?P<top>-?\d+) "
                  r"left=(?P<left>-?\d+) height=(?P<ch>\d+) width=(?P<cw>\d+) "
                  r"flip=(?P<flip>[01]): label (?P<label>\d+)$")


def numbers(text):
    return [float(v) for v in text.split("/")] if text else []


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("lines")
    parser.add_argument("npy")
    parser.add_argument("shape", type=int, nargs=3)
    parser.add_argument("--mean", default="")
    parser.add_argument("--std", default="")
    parser.add_argument("--resize", type=int, default=0)
    args = parser.parse_args()
    c, h, w = args.shape
    got = np.load(args.npy)
    samples = [LINE.match(l.strip()) for l in open(args.lines)]
    samples = [m for m in samples if m]
    if len(samples) != got.shape[0]:
        sys.exit(f"check_pil: {len(samples)} sample lines for {got.shape[0]} "
                 "gathered samples")
    mean, std = numbers(args.mean), numbers(args.std)
    worst, flips, modes = 0.0, 0, set()
    for m, values in zip(samples, got):
        image = Image.open(m["path"])
        modes.add(image.format + "-" + image.mode)
        image = image.convert("RGB" if c == 3 else "L")
        if m["split"] == "train":
            top, left = int(m["top"]), int(m["left"])
            out = F.resized_crop(image, top, left, int(m["ch"]), int(m["cw"]),
                                 [h, w], T.InterpolationMode.BILINEAR)
            if m["flip"] == "1":
                out = F.hflip(out)
                flips += 1
        else:
            size = args.resize or max(h, w)
            out = T.CenterCrop([h, w])(T.Resize(size)(image))
        tensor = F.to_tensor(out)
        if mean:
            tensor = F.normalize(tensor, mean * (c // len(mean)),
                                 std * (c // len(std)))
        diff = float(np.max(np.abs(tensor.numpy() - values)))
        if diff > 0:
            print(f"check_pil: {m['path']}: differs by {diff:g}")
        worst = max(worst, diff)
    print(f"check_pil: {len(samples)} samples ({', '.join(sorted(modes))}; "
          f"{flips} flipped), largest difference {worst:g}")


if __name__ == "__main__":
    main()
