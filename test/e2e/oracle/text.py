"""Token data for the sequence models of the oracle: a plain-text file read
as characters, each a token of a 64-symbol vocabulary (ASCII 32-95 after
upper-casing; any other byte, newlines included, is a space). Sample k is the
window of `length` tokens starting at k * length, and its labels are the
same window shifted by one token: next-token prediction."""

import math
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


# Variable-length data: one sample per document, as dpc's
# `text:FILE,docs=MODE` reads it (lib/runtime/DataText.cpp, textDocuments).

DOC_MODES = ("fortune", "line", "blank")


def _blank(line):
    return all(c in b" \t\r" for c in line)


def documents(data, mode):
    """The documents of `data` (bytes) in file order: fortune, the lines
    between lines "%" (or "%\\r"); line, every non-blank line; blank, runs
    of non-blank lines. A blank line holds only spaces, tabs and '\\r'.
    Lines of a document are joined by '\\n'; empty documents are left out."""
    if mode not in DOC_MODES:
        raise SystemExit(f"oracle: unknown docs= mode {mode!r}")
    lines = data.split(b"\n") if data else []
    if data.endswith(b"\n"):
        lines.pop()
    if mode == "line":
        return [line for line in lines if not _blank(line)]
    docs, current = [], None
    for line in lines:
        ends = (line in (b"%", b"%\r") if mode == "fortune" else _blank(line))
        if ends:
            if current:
                docs.append(current)
            current = None
        else:
            current = line if current is None else current + b"\n" + line
    if current:
        docs.append(current)
    return docs


def tokens_in(data, vocab="ascii64"):
    if vocab == "bytes":
        return np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    return tokens_of(data)


def document_samples(path, mode, length, ignore_index, split="train",
                     vocab="ascii64"):
    """One sample per document of at least 2 tokens: inputs its first
    min(n - 1, length) tokens, labels the tokens one later, padded to
    `length` with input 0 and label `ignore_index`; int64 arrays
    [N, length], [N, length] and the lengths [N]. The train split is the
    first 90% of the documents, the test split the last 10% (rounded
    down)."""
    with open(path, "rb") as f:
        docs = [d for d in documents(f.read(), mode) if len(d) >= 2]
    cut = len(docs) - len(docs) // 10
    docs = docs[:cut] if split == "train" else docs[cut:]
    inputs = np.zeros((len(docs), length), dtype=np.int64)
    labels = np.full((len(docs), length), ignore_index, dtype=np.int64)
    lengths = np.zeros(len(docs), dtype=np.int64)
    for k, doc in enumerate(docs):
        tokens = tokens_in(doc, vocab)
        n = min(tokens.size - 1, length)
        inputs[k, :n] = tokens[:n]
        labels[k, :n] = tokens[1:n + 1]
        lengths[k] = n
    return inputs, labels, lengths


WORDS = ("a", "an", "the", "of", "to", "in", "is", "it", "and", "that",
         "program", "license", "software", "freedom", "source", "code",
         "copy", "work", "you", "we", "modify", "distribute", "terms",
         "conditions", "version", "warranty", "public", "general")


def write_corpus(path, count=2000, seed=0):
    """A deterministic text of `count` lines (docs=line) whose lengths are
    as skewed as real text: a few words mostly, now and then a line longer
    than any model's window. Python's `random` with a fixed seed gives the
    same file on every machine."""
    import random
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        words = max(1, int(math.exp(rng.gauss(1.2, 1.0))))
        lines.append(" ".join(WORDS[int(rng.random() * len(WORDS))]
                              for _ in range(words)))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def corpus_main():
    import argparse
    parser = argparse.ArgumentParser(
        description="writes write_corpus's deterministic text")
    parser.add_argument("out")
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    write_corpus(args.out, args.documents, args.seed)


if __name__ == "__main__":
    corpus_main()
