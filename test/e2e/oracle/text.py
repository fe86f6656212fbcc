"""Token data for the sequence models of the oracle: a plain-text file read
as characters, each a token of a 64-symbol vocabulary (ASCII 32-95 after
upper-casing; any other byte, newlines included, is a space). Sample k is the
window of `length` tokens starting at k * length, and its labels are the
same window shifted by one token: next-token prediction."""

import os

import numpy as np
import torch

VOCAB = 64
# Installed on every Debian system (package base-files), so the tests need
# nothing beyond the OS.
DEFAULT_TEXT = "/usr/share/common-licenses/GPL-3"


def tokens_of(text_bytes):
    codes = np.frombuffer(text_bytes.upper(), dtype=np.uint8).astype(np.int64)
    codes = np.where((codes >= 32) & (codes < 96), codes - 32, 0)
    return codes


def windows(path, length, count):
    """`count` samples of `length` token ids and their next-token labels,
    int64 arrays [count, length]."""
    with open(path, "rb") as f:
        tokens = tokens_of(f.read())
    if (count * length + 1) > tokens.size:
        raise SystemExit(f"oracle: {path} holds {tokens.size} tokens, fewer "
                         f"than {count} windows of {length} need")
    starts = np.arange(count) * length
    index = starts[:, None] + np.arange(length)[None, :]
    return tokens[index], tokens[index + 1]


def pad(inputs, pad_id):
    """Sample k with its last k % 5 tokens replaced by `pad_id` (at most 4
    of a window, so every position still sees an unpadded first token)."""
    length = inputs.shape[1]
    for k in range(inputs.shape[0]):
        padded = k % 5
        inputs[k, length - padded:] = pad_id
    return inputs


def training_data(length, count, directory, stem, path=DEFAULT_TEXT,
                  pad_id=None, ignore_index=None):
    """The token windows as tensors and dpc's --data spec for the same bytes
    (DIRECTORY/STEM.train_inputs.npy and .train_labels.npy); with `pad_id`,
    padded as pad() says; with `ignore_index` too, the labels of padded
    positions and of the positions before them (whose next token is a pad)
    are `ignore_index`, as a loss that skips padding wants them."""
    inputs, labels = windows(path, length, count)
    if pad_id is not None:
        inputs = pad(inputs, pad_id)
        if ignore_index is not None:
            padded = inputs == pad_id
            labels[padded] = ignore_index
            labels[:, :-1][padded[:, 1:]] = ignore_index
    files = [os.path.abspath(os.path.join(directory, f"{stem}.{part}.npy"))
             for part in ("train_inputs", "train_labels")]
    np.save(files[0], inputs)
    np.save(files[1], labels)
    return (torch.from_numpy(inputs), torch.from_numpy(labels),
            "npy:" + ",".join(files))
