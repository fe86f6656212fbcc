#!/usr/bin/python3
"""Variable-length sequences: dpc's per-step microbatching against padding.

    run.py [--text FILE] [--docs fortune] [--stages 2,4] [--steps 30]
           [--length 128] [--buckets 16,32,64,128] [--microbatches 4]
           [--microbatch-size 8] [--width 64] [--layers 4] [--heads 4]
           [--threads 1] [--costs analytic,measured] [--work DIR]

One GPT-like decoder (test/e2e/oracle's var-gpt: position table and causal
mask sliced to the microbatch's length), exported once with a dynamic batch
and length, compiled once per stage count with --seq-buckets, then trained
on the same documents (one a sample, --no-shuffle, the same steps) three
ways in the same run:

  padded  every microbatch of the sampler padded to the step's longest
          document (what a pipeline with one static shape does),
  sorted  the step's documents sorted by length and cut into the same
          number of microbatches, each padded to its own longest,
  dp      dpc's per-step dynamic program over the buckets' costs.

Each stage count is compiled twice (--costs): on the analytic cost model,
and on a profile `dpc profile --seq-buckets` measured at every bucket's
shape on this machine (same threads), which prices the buckets the step
planner chooses from and the schedule it simulates.

Prints tokens/s (real tokens: padding does not count) and its ratio to
padded, the padding, the largest stash bytes of any rank, the planning time
per step and the median error of the predicted step time against the
measured one. The first step (warm-up) is left out of every figure.
Run it on an idle machine; print `uptime` with it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench", "common"))
from baseline import find_dpc  # noqa: E402  (the build's dpc)
sys.path.insert(0, os.path.join(REPO, "test", "e2e", "oracle"))

MODES = ("padded", "sorted", "dp")


def sh(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"run.py: {' '.join(cmd)} failed:\n{result.stdout}"
                 f"{result.stderr}")
    return result.stdout


def export(args, path):
    import torch  # noqa: E402  (only the export needs it)

    import oracle  # noqa: E402

    torch.manual_seed(0)
    model = oracle.VarGPT(length=args.length, width=args.width,
                          heads=args.heads, layers=args.layers)
    with tempfile.TemporaryDirectory() as work:
        onnx_path, _ = oracle.export_and_reload(model, "var-gpt",
                                                args.microbatch_size, work,
                                                dynamic=True)
        os.replace(onnx_path, path)


def summarise(metrics_path):
    steps, peak = [], 0
    for line in open(metrics_path):
        record = json.loads(line)
        if "step" in record:
            steps.append(record)
        if "peak_stash_bytes" in record:
            peak = max(peak, record["peak_stash_bytes"])
    timed = steps[1:]
    seconds = timed[-1]["time_s"] - steps[0]["time_s"]
    tokens = sum(r["tokens"] for r in timed)
    padded = sum(r["padded_tokens"] for r in timed)
    errors = [abs(r["predicted_ms"] - r["step_ms"]) / r["step_ms"]
              for r in timed if r["step_ms"] > 0]
    ratios = [r["step_ms"] / r["predicted_ms"] for r in timed
              if r["predicted_ms"] > 0]
    return {
        "tokens_per_s": tokens / seconds,
        "padding": (padded - tokens) / padded,
        "microbatches": statistics.mean(len(r["microbatches"])
                                        for r in timed),
        "peak_stash_bytes": peak,
        "plan_ms": statistics.median(r["plan_ms"] for r in timed),
        "prediction_error": statistics.median(errors),
        "measured_over_predicted": statistics.median(ratios),
        "losses": [r["loss"] for r in steps],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", default="/usr/share/games/fortunes/cookie")
    parser.add_argument("--docs", default="fortune",
                        help="docs= mode of the text: data spec")
    parser.add_argument("--stages", default="2,4")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--buckets", default="16,32,64,128")
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--microbatch-size", type=int, default=8)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1,
                        help="OMP_NUM_THREADS of every rank")
    parser.add_argument("--costs", default="analytic,measured",
                        help="cost models to compile with: analytic, "
                             "measured (dpc profile --seq-buckets)")
    parser.add_argument("--work", default=None)
    parser.add_argument("--dpc",
                        help="the dpc driver (default: build/bin/dpc, else "
                             "the one on PATH)")
    args = parser.parse_args()
    args.dpc = find_dpc(
        args.dpc, lambda message: sys.exit(f"run.py: {message}"))
    if not os.path.exists(args.text):
        sys.exit(f"run.py: no {args.text} (apt-get install fortunes, or "
                 "give --text)")
    work = args.work or tempfile.mkdtemp(prefix="dpc-varlen-")
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "var-gpt.onnx")
    export(args, model)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    data = f"text:{args.text},docs={args.docs}"
    print(f"model: var-gpt length {args.length}, width {args.width}, "
          f"{args.layers} layers; buckets {args.buckets}; "
          f"{args.microbatches} x {args.microbatch_size} documents a step; "
          f"{args.steps} steps; {args.threads} thread(s) a rank")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    rows = []
    shape = ["--microbatch-size", str(args.microbatch_size),
             "--ignore-index", "-100", "--seq-buckets", args.buckets]
    profile = os.path.join(work, "profile.json")
    if "measured" in args.costs.split(","):
        sh([args.dpc, "profile", model, "-o", profile, "--steps", "10"] + shape,
           env=env)
    for stages, costs in ((s, c) for s in args.stages.split(",")
                          for c in args.costs.split(",")):
        out = os.path.join(work, f"out{stages}-{costs}")
        sh([args.dpc, "compile", model, "-o", out, "--stages", stages,
            "--microbatches", str(args.microbatches)] + shape +
           (["--profile", profile] if costs == "measured" else []))
        for mode in MODES:
            metrics = os.path.join(work,
                                   f"metrics-{stages}-{costs}-{mode}.jsonl")
            if os.path.exists(metrics):
                os.remove(metrics)
            log = sh([args.dpc, "run", out, "--data", data, "--steps",
                      str(args.steps), "--no-shuffle", "--no-eval",
                      "--metrics", metrics, "--microbatching", mode], env=env)
            if (stages, costs) == (args.stages.split(",")[0],
                                   args.costs.split(",")[0]) and mode == "dp":
                for line in log.splitlines():
                    if line.startswith("lengths"):
                        print(line)
            rows.append((stages, costs, mode, summarise(metrics)))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print()
    print("| stages | costs | microbatching | tokens/s | vs padded | padding "
          "| microbatches/step | peak stash MB | plan ms | step: measured / "
          "predicted | median prediction error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    # Against the padded run of the same build.
    def baseline(stages, costs):
        return next(x for s, c, m, x in rows
                    if (s, c, m) == (stages, costs, "padded"))
    for stages, costs, mode, r in rows:
        base = baseline(stages, costs)
        print(f"| {stages} | {costs} | {mode} | {r['tokens_per_s']:.0f} | "
              f"{r['tokens_per_s'] / base['tokens_per_s']:.2f}x | "
              f"{100 * r['padding']:.1f}% | {r['microbatches']:.1f} | "
              f"{r['peak_stash_bytes'] / 2**20:.2f} | {r['plan_ms']:.3f} | "
              f"{r['measured_over_predicted']:.2f} | "
              f"{100 * r['prediction_error']:.0f}% |")
    # The groupings change only how samples share microbatches: with the
    # loss a mean over the step's real tokens, the losses agree.
    worst = 0.0
    for stages, costs, mode, r in rows:
        base = baseline(stages, costs)
        for a, b in zip(r["losses"], base["losses"]):
            worst = max(worst, abs(a - b) / abs(b))
    print(f"\nlargest relative loss difference against padded: {worst:.2e}")


if __name__ == "__main__":
    main()
