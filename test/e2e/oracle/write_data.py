#!/usr/bin/python3
"""Writes the files the mapped data sources read, from data the other
sources read, so that a test can train on both and compare:

  write_data.py tokens TEXT OUT.bin [--dtype uint16|uint32] [--set I=V]
      TEXT's ascii64 token ids (text.py, as `text:` reads them) as a flat
      binary file of little-endian ids; --set overwrites id I with V.
  write_data.py images DIR OUTSTEM [--count N] [--shards K]
      the first N Fashion-MNIST training images of DIR as uint8
      [n, 1, 28, 28] and their labels as int16 [n], in K shards each:
      OUTSTEM-images-000.npy ..., OUTSTEM-labels-000.npy ...
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import oracle  # noqa: E402
import text  # noqa: E402


def write_tokens(args):
    with open(args.text, "rb") as f:
        ids = text.tokens_of(f.read()).astype(np.dtype(args.dtype).newbyteorder("<"))
    for item in args.set:
        index, value = (int(v) for v in item.split("="))
        ids[index] = value
    ids.tofile(args.out)


def write_images(args):
    images = oracle.read_idx(
        oracle.find_idx(args.dir, "train-images-idx3-ubyte"), 0x00000803)
    labels = oracle.read_idx(
        oracle.find_idx(args.dir, "train-labels-idx1-ubyte"), 0x00000801)
    images = images[:args.count].reshape(-1, 1, 28, 28)
    labels = labels[:args.count].astype("<i2")
    bounds = np.linspace(0, len(images), args.shards + 1).astype(int)
    for k in range(args.shards):
        part = slice(bounds[k], bounds[k + 1])
        np.save(f"{args.outstem}-images-{k:03d}.npy", images[part])
        np.save(f"{args.outstem}-labels-{k:03d}.npy", labels[part])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tokens = commands.add_parser("tokens")
    tokens.add_argument("text")
    tokens.add_argument("out")
    tokens.add_argument("--dtype", default="uint16",
                        choices=["uint16", "uint32"])
    tokens.add_argument("--set", action="append", default=[])
    images = commands.add_parser("images")
    images.add_argument("dir")
    images.add_argument("outstem")
    images.add_argument("--count", type=int, default=4096)
    images.add_argument("--shards", type=int, default=1)
    args = parser.parse_args()
    if args.command == "tokens":
        write_tokens(args)
    else:
        write_images(args)


if __name__ == "__main__":
    main()
