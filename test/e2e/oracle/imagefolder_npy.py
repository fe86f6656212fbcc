#!/usr/bin/python3
"""imagefolder_npy.py DIR PREFIX: torchvision's ImageFolder(DIR), its
samples in its order, each image converted to gray ('L') as uint8 [N, 1, H,
W] in PREFIX-images.npy and the class ids as int64 in PREFIX-labels.npy.
For images of one size: the same pixels as dpc's imagefolder:DIR,
augment=none on a model of that size, in the order torchvision lists
them."""

import sys

import numpy as np
from PIL import Image
from torchvision.datasets import ImageFolder


def main():
    folder, prefix = sys.argv[1], sys.argv[2]
    dataset = ImageFolder(folder)
    images = np.stack([np.asarray(Image.open(path).convert("L"))
                       for path, _ in dataset.samples])[:, None]
    labels = np.array([label for _, label in dataset.samples], np.int64)
    np.save(prefix + "-images.npy", images)
    np.save(prefix + "-labels.npy", labels)
    print(f"imagefolder_npy: {len(labels)} images of "
          f"{len(dataset.classes)} classes")


if __name__ == "__main__":
    main()
