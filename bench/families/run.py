#!/usr/bin/python3
"""The model families of issue #43, one row each: compile seconds, samples/s
of dpc against PyTorch eager on the same threads, and the loss difference.

Every family is the model its e2e test trains (test/e2e/*.test and
test/e2e/vision/swin_mini.test, built by test/e2e/oracle), except the
GroupNorm U-Net, which is oracle.UNet's widths
with nn.GroupNorm after each convolution (bench/training/models.py). Each
row is bench/training/run.py's measurement of one model (same export, same
weights, same data in the same order, SGD lr 0.05 momentum 0.9, PyTorch on
OpenBLAS with its and OpenBLAS's pools at T threads, dpc's rank at
OMP_NUM_THREADS=T, M microbatches of B accumulated before each step): the
images of Fashion-MNIST for the convolutional families, windows of
oracle/text.py's tokens for the sequence ones; the BERT masked-LM trains on
bert_models.py's synthetic sentence pairs (ids, mask, token types), its loss
the mean over the minibatch's masked positions, as its oracle's.

Columns: compile s (`dpc compile --stages 1`), dpc/s and torch/s (samples/s
over the timed steps), ratio (dpc over PyTorch), loss diff (the largest
relative difference of a step's loss, dpc against PyTorch, over the first
20 steps, which are the e2e oracles' window) and the 1-minute load.

A family whose model is not registered prints a row of dashes. Benchmarks
are not tests: nothing here asserts a time.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench", "training"))

import run as training  # noqa: E402  (bench/training: measure, dpc side)

import numpy as np  # noqa: E402
import torch  # noqa: E402

oracle = training.oracle
baseline = training.baseline
import bert_models  # noqa: E402  (test/e2e/oracle, on training's path)

# (family, model name): the oracle's names, as the e2e tests train them.
FAMILIES = [
    ("U-Net, ConvTranspose", "unet-transposed"),
    ("U-Net, bilinear Resize", "unet"),
    ("U-Net, GroupNorm", "unet-groupnorm"),
    ("1-D conv net", "conv1d"),
    ("GRU LM", "gru-lm"),
    ("bi-RNN tagger", "birnn-tagger"),
    ("T5-style enc-dec", "t5-style"),
    ("GNMT-style seq2seq", "gnmt-style"),
    ("BERT MLM", "bert-mlm"),
    ("Swin", "tv-swin_mini"),
]


def fail(message):
    sys.exit(f"bench/families: {message}")


def bert_torch(model, arrays, labels, args, microbatches, size):
    """PyTorch's BERT steps, M microbatches accumulated: each microbatch's
    summed loss over the minibatch's masked count, so the gradients and the
    step's loss are those of the minibatch mean. Returns (samples/s,
    losses)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr,
                                momentum=args.momentum)
    minibatch = microbatches * size
    losses, started = [], None
    model.train()
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            started = time.perf_counter()
        base = step * minibatch
        count = (labels[base:base + minibatch] != bert_models.IGNORE_INDEX)
        count = count.sum().item()
        optimizer.zero_grad()
        total = 0.0
        for k in range(microbatches):
            part = slice(base + k * size, base + (k + 1) * size)
            logits = model(*(a[part] for a in arrays))
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), labels[part].reshape(-1),
                ignore_index=bert_models.IGNORE_INDEX,
                reduction="sum") / count
            loss.backward()
            total += loss.item()
        optimizer.step()
        losses.append(total)
    seconds = time.perf_counter() - started
    return args.steps * minibatch / seconds, losses


def measure_bert(name, microbatches, size, threads, work, args):
    """bench/training's measurement for the three-input BERT masked-LM."""
    directory = os.path.join(work, name)
    os.makedirs(directory, exist_ok=True)
    row = {"model": name, "batch": f"{microbatches}x{size}",
           "threads": threads, "load": training.load_avg1()}
    total = (args.warmup + args.steps) * microbatches * size
    arrays = bert_models.synthetic_data(total,
                                        torch.Generator().manual_seed(1))
    files = [os.path.join(directory, f"{name}.{part}.npy")
             for part in ("ids", "mask", "types", "labels")]
    for path, array in zip(files, arrays):
        np.save(path, array.numpy())

    def fresh():
        torch.manual_seed(0)
        model = bert_models.BertMLM()
        path, _ = bert_models.export_and_reload(oracle, model, name, size,
                                                directory)
        return model, path

    model, onnx_path = fresh()
    out = os.path.join(directory, "s1")
    shutil.rmtree(out, ignore_errors=True)
    options = types.SimpleNamespace(**vars(args), compile_options=[
        "--ignore-index", str(bert_models.IGNORE_INDEX)])
    row["compile_s"] = training.dpc_compile(args.dpc, onnx_path, out, 1,
                                            microbatches, options)
    row["dpc"], _, _, dpc_losses = training.dpc_train(
        args.dpc, out, "npy:" + ",".join(files), args.warmup + args.steps,
        args.warmup, threads, False, args)
    torch.set_num_threads(threads)
    if args.blas_threads:
        args.blas_threads(threads)
    model, _ = fresh()
    row["torch_mb"], torch_losses = bert_torch(model, arrays[:3], arrays[3],
                                               args, microbatches, size)
    row["loss_diff"] = training.max_relative_difference(dpc_losses,
                                                        torch_losses)
    row["load"] = max(row["load"], training.load_avg1())
    return row


def format_rows(rows):
    header = ["family", "model", "MxB", "T", "compile s", "dpc/s", "torch/s",
              "ratio", "loss diff", "load"]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    for family, row in rows:
        if row is None:
            cells = [family] + ["-"] * (len(header) - 1)
        else:
            cells = [family, row["model"], row["batch"], str(row["threads"]),
                     f"{row['compile_s']:.2f}", f"{row['dpc']:,.0f}",
                     f"{row['torch_mb']:,.0f}",
                     f"{row['dpc'] / row['torch_mb']:.2f}",
                     f"{row['loss_diff']:.1e}", f"{row['load']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--dpc", help="the dpc driver (default: build/bin/dpc)")
    parser.add_argument("--models",
                        help="comma-separated model names of FAMILIES "
                             "(default: all)")
    parser.add_argument("--batch", default="4x16",
                        help="MxB: M microbatches of B samples (default "
                             "4x16, the e2e tests' minibatch)")
    parser.add_argument("--threads", default="1",
                        help="comma-separated thread counts (default 1)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--data", default=oracle.DEFAULT_DATA,
                        help="directory with the Fashion-MNIST IDX files")
    parser.add_argument("--keep", metavar="DIR",
                        help="work in DIR and keep it")
    args = parser.parse_args()
    # bench/training's settings for both sides.
    args.lr, args.momentum, args.schedule = 0.05, 0.9, "auto"
    args.target, args.device, args.precision = "cpu", "cpu", "fp32"
    args.fusion, args.trace, args.no_full, args.no_two_stage = (None, False,
                                                                True, True)
    baseline.use_blas("openblas", fail)
    blas_path, blas_name, args.blas_threads = baseline.loaded_blas(torch)
    args.peak = None
    args.dpc = baseline.find_dpc(args.dpc, fail)
    (m, b), = training.parse_batches(args.batch)
    chosen = args.models.split(",") if args.models else None
    known = {**oracle.MODELS, **oracle.EXTRA_MODELS}
    work = args.keep or tempfile.mkdtemp(prefix="dpc-bench-families-")
    print(f"dpc {args.dpc}; torch {torch.__version__} on {blas_name}; "
          f"{os.cpu_count()} cores; {m}x{b}; {args.warmup} warm-up + "
          f"{args.steps} timed steps; load {training.load_avg1():.2f}",
          flush=True)
    rows = []
    try:
        for family, name in FAMILIES:
            if chosen and name not in chosen:
                continue
            for t in (int(v) for v in args.threads.split(",")):
                if name == "bert-mlm":
                    row = measure_bert(name, m, b, t, work, args)
                elif name in known:
                    row = training.measure(name, m, b, t, work, args.dpc,
                                           args, args.warmup + args.steps)
                else:
                    row = None
                rows.append((family, row))
                if row:
                    print(f"  {family} T={t}: compile {row['compile_s']:.2f}"
                          f" s, dpc {row['dpc']:.0f}/s, torch "
                          f"{row['torch_mb']:.0f}/s", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(format_rows(rows))


if __name__ == "__main__":
    main()
