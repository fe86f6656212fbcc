#!/usr/bin/python3
"""A co-located job on one stage's cores: what it costs and who notices.

    run.py [--model lenet5] [--microbatch-size 64] [--steps 100]
           [--from-step 40] [--work DIR]

Compiles one oracle model (test/e2e/oracle) into 2 stages and trains it
twice on synthetic data, one thread a rank: alone, and with `dpc run
--interfere 1:FROM:600` (rank 1 starts a CPU-bound process on its own core
at step FROM). Prints, per run, the median step time and each rank's
median compute per step before and after FROM, and the step monitor's
lines (`slow: stage 1 ...`). Run it on an otherwise idle machine; the load
average is printed with it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def sh(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def summary(metrics, start):
    rows = [json.loads(line) for line in open(metrics)
            if '"compute_ms"' in line]
    steps = [b["time_s"] - a["time_s"] for a, b in zip(rows, rows[1:])]
    def span(lo, hi):
        part = rows[lo:hi]
        return (1000 * statistics.median(steps[max(lo - 1, 0):hi - 1]),
                [statistics.median(r["compute_ms"][k] for r in part)
                 for k in range(len(part[0]["compute_ms"]))])
    # Warm-up, the steps before FROM (less the first), the steps after it
    # (less the monitor's window to settle).
    return span(2, start - 1), span(start + 4, len(rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="lenet5")
    parser.add_argument("--microbatch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--from-step", type=int, default=40)
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="dpc-interference-")
    sh([sys.executable, os.path.join(REPO, "test", "e2e", "oracle", "oracle.py"),
        "--model", args.model, "--out", work, "--steps", "1"])
    out = os.path.join(work, "out")
    sh(["dpc", "compile", os.path.join(work, args.model + ".onnx"), "-o", out,
        "--stages", "2", "--microbatches", "4",
        "--microbatch-size", str(args.microbatch_size)])
    env = dict(os.environ, OMP_NUM_THREADS="1")
    print(f"{args.model}, 2 stages, 4 x {args.microbatch_size} samples a "
          f"step, {args.steps} steps; load average "
          f"{os.getloadavg()[0]:.2f}")
    for label, extra in (("alone", []),
                         ("interfered", ["--interfere",
                                         f"1:{args.from_step}:600"])):
        metrics = os.path.join(work, f"metrics-{label}.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        log = sh(["dpc", "run", out, "--data", "synthetic:65536", "--steps",
                  str(args.steps), "--no-eval", "--metrics", metrics] + extra,
                 env=env)
        (step0, compute0), (step1, compute1) = summary(metrics, args.from_step)
        print(f"{label:10}: step {step0:6.2f} -> {step1:6.2f} ms "
              f"({step1 / step0:.2f}x); compute per rank "
              + ", ".join(f"{a:.2f} -> {b:.2f} ms ({b / a:.2f}x)"
                          for a, b in zip(compute0, compute1)))
        for line in log.splitlines():
            if line.startswith(("slow:", "interference:")):
                print("    " + line)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
