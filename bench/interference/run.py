#!/usr/bin/python3
"""A co-located job on one stage's cores: what it costs, who notices, and
what dpc run --adapt wins back.

    run.py [--model deep-mlp|lenet5|...] [--microbatch-size 64]
           [--steps 600] [--from-step 40] [--adapt-interval 50]
           [--compile-options OPTIONS] [--work DIR]

Compiles a model into 2 stages and trains it
four times on synthetic data, one thread a rank: alone, alone with
`--adapt`, with `dpc run --interfere 1:FROM:600` (rank 1 starts a
CPU-bound process on its own core at step FROM, for the rest of the run),
and the same with `--adapt`. Prints, per run, the median step time and each
rank's median compute per step before and after FROM, the throughput over
the steps after FROM (re-partitions' downtime included), the wall time of
the whole `dpc run`, and the monitor's and the re-partitions' lines. Run it
on an otherwise idle machine; the load average is printed with it.

The default model, deep-mlp (784-512, eight 512-512 ReLU layers, 512-10,
written here with torch.onnx), has layers of equal cost, so that a cut can
move by a small share of the work; the other names are test/e2e/oracle's
models. LeNet-5 cannot gain: its cheapest move (conv2 to stage 0) already
makes stage 0 the bottleneck at rank 1's slowdown.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench", "common"))
from baseline import find_dpc  # noqa: E402  (the build's dpc)


def sh(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def export_deep_mlp(path, width=512, layers=8):
    import torch
    from torch import nn
    torch.manual_seed(0)
    body = [nn.Flatten(), nn.Linear(28 * 28, width), nn.ReLU()]
    for _ in range(layers):
        body += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*body, nn.Linear(width, 10))
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), path,
                      opset_version=13, input_names=["input"],
                      output_names=["logits"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)


def steps_of(metrics):
    """Each step's record and its duration in seconds. A job that continues
    a re-partition counts time from its own start, and its "adapt" record
    follows its first step's: that step takes its own time plus the
    downtime before it (from the old layout's stop)."""
    steps, last = [], None
    for line in open(metrics):
        r = json.loads(line)
        if "adapt" in r and steps:
            first = steps[-1][0]
            steps[-1] = (first, first["time_s"] + r["downtime_s"])
            last = first["time_s"]
        if "compute_ms" not in r:
            continue
        if last is None:
            last = r["time_s"]  # the first step pays for warm-up
            continue
        steps.append((r, r["time_s"] - last))
        last = r["time_s"]
    return steps


def summary(metrics, start):
    steps = steps_of(metrics)
    def span(rows):
        return (1000 * statistics.median(t for _, t in rows),
                [statistics.median(r["compute_ms"][k] for r, _ in rows)
                 for k in range(len(rows[0][0]["compute_ms"]))])
    before = [(r, t) for r, t in steps if r["step"] < start]
    # After FROM, less the monitor's window to settle.
    after = [(r, t) for r, t in steps if r["step"] >= start + 4]
    from_start = [(r, t) for r, t in steps if r["step"] >= start]
    samples = from_start[-1][0]["samples"] - from_start[0][0]["samples"] + (
        from_start[0][0]["samples"] // from_start[0][0]["step"])
    throughput = samples / sum(t for _, t in from_start)
    return span(before), span(after), throughput


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="deep-mlp")
    parser.add_argument("--microbatch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--from-step", type=int, default=40)
    parser.add_argument("--adapt-interval", type=int, default=50)
    parser.add_argument("--compile-options", default="",
                        help="more dpc compile options, e.g. '--fusion off'")
    parser.add_argument("--work", default=None)
    parser.add_argument("--dpc",
                        help="the dpc driver (default: build/bin/dpc, else "
                             "the one on PATH)")
    args = parser.parse_args()
    args.dpc = find_dpc(
        args.dpc, lambda message: sys.exit(f"run.py: {message}"))
    work = args.work or tempfile.mkdtemp(prefix="dpc-interference-")
    os.makedirs(work, exist_ok=True)
    if args.model == "deep-mlp":
        export_deep_mlp(os.path.join(work, "deep-mlp.onnx"))
    else:
        sh([sys.executable, os.path.join(REPO, "test", "e2e", "oracle",
                                         "oracle.py"),
            "--model", args.model, "--out", work, "--steps", "1"])
    out = os.path.join(work, "out")
    sh([args.dpc, "compile", os.path.join(work, args.model + ".onnx"), "-o", out,
        "--stages", "2", "--microbatches", "4",
        "--microbatch-size", str(args.microbatch_size)]
       + args.compile_options.split())
    env = dict(os.environ, OMP_NUM_THREADS="1")
    print(f"{args.model}, 2 stages, 4 x {args.microbatch_size} samples a "
          f"step, {args.steps} steps; load average "
          f"{os.getloadavg()[0]:.2f}")
    interfere = ["--interfere", f"1:{args.from_step}:600"]
    adapt = ["--adapt", "--adapt-interval", str(args.adapt_interval)]
    results = {}
    for label, extra in (("alone", []), ("alone+adapt", adapt),
                         ("interfered", interfere),
                         ("interfered+adapt", interfere + adapt)):
        metrics = os.path.join(work, f"metrics-{label}.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        started = time.monotonic()
        log = sh([args.dpc, "run", out, "--data", "synthetic:65536", "--steps",
                  str(args.steps), "--no-eval", "--metrics", metrics] + extra,
                 env=env)
        wall = time.monotonic() - started
        (step0, compute0), (step1, compute1), throughput = summary(
            metrics, args.from_step)
        results[label] = throughput
        print(f"{label:16}: step {step0:6.2f} -> {step1:6.2f} ms "
              f"({step1 / step0:.2f}x); compute per rank "
              + ", ".join(f"{a:.2f} -> {b:.2f} ms ({b / a:.2f}x)"
                          for a, b in zip(compute0, compute1))
              + f"; from step {args.from_step}: {throughput:.0f} samples/s; "
              f"dpc run {wall:.1f} s; load average {os.getloadavg()[0]:.2f}")
        for line in log.splitlines():
            if line.startswith(("slow:", "interference:", "adapt:")):
                print("    " + line)
    print(f"--adapt under interference: "
          f"{results['interfered+adapt'] / results['interfered']:.2f}x the "
          f"static plan's throughput; without interference "
          f"{results['alone+adapt'] / results['alone']:.3f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
