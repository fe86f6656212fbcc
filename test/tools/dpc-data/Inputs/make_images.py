#!/usr/bin/python3
"""make_images.py DIR: a small image folder of generated pictures, three
classes (a_cars, b_dogs, c_ships) of JPEGs and PNGs, RGB and gray, of
several sizes and aspect ratios, deterministic (seeded numpy). Smooth
gradients with noise, so that crops and resizes change real values.

--split: DIR/train and DIR/val, each such a folder.
"""

import argparse
import os

import numpy as np
from PIL import Image

SIZES = [(37, 23), (64, 48), (20, 31), (50, 50), (17, 90), (120, 75)]


def picture(rng, width, height, mode):
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    channels = []
    for c in range(3):
        fx, fy, phase = rng.uniform(0.05, 0.4, 2).tolist() + [rng.uniform(0, 6)]
        wave = 127 + 100 * np.sin(fx * x + fy * y + phase)
        channels.append(wave + rng.normal(0, 12, size=wave.shape))
    rgb = np.clip(np.stack(channels, axis=-1), 0, 255).astype(np.uint8)
    image = Image.fromarray(rgb, "RGB")
    return image.convert("L") if mode == "L" else image


def write_folder(root, seed):
    rng = np.random.RandomState(seed)
    for k, name in enumerate(["a_cars", "b_dogs", "c_ships"]):
        folder = os.path.join(root, name)
        os.makedirs(folder, exist_ok=True)
        for i in range(4):
            width, height = SIZES[(k * 4 + i) % len(SIZES)]
            mode = "L" if (k + i) % 3 == 0 else "RGB"
            image = picture(rng, width, height, mode)
            if (k + i) % 2 == 0:
                image.save(os.path.join(folder, f"img{i}.jpg"), quality=90)
            else:
                image.save(os.path.join(folder, f"img{i}.png"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--split", action="store_true")
    args = parser.parse_args()
    if args.split:
        write_folder(os.path.join(args.dir, "train"), 1)
        write_folder(os.path.join(args.dir, "val"), 2)
    else:
        write_folder(args.dir, 1)


if __name__ == "__main__":
    main()
