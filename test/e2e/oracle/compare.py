#!/usr/bin/python3
"""Compares dpc's per-step losses with the PyTorch oracle's.

    compare.py METRICS.jsonl ORACLE.json|REFERENCE.jsonl [--rtol 1e-4]

METRICS.jsonl is what a dpc rank writes with --metrics: one JSON object a
line; lines with "step" and "loss" are training steps (step counts from 1),
other lines (eval_accuracy, ...) are ignored, but for dpc run --elastic's
recovery records, after which the steps past "resumed_from_step" are the
ones trained again. ORACLE.json is oracle.py's
output. Every oracle step must be present in the metrics and agree within
the relative tolerance |dpc - torch| <= rtol * |torch|. When the oracle
also trained in float64 ("losses64"), a step that misses rtol is judged
against that reference instead, as compare_weights.py judges weights: it
agrees when dpc is no farther from the float64 loss than NOISE_FACTOR times
PyTorch's float32 run has been by then (and at least rtol): |dpc - l64| <=
NOISE_FACTOR * max(max over steps j <= k of |torch_j - l64_j| / |l64_j|,
rtol) * |l64|. Rounding noise, once there, stays (training is chaotic), so
a step where PyTorch happens to cross the float64 curve does not shrink the
allowance. Runs in "losses_perturbed" (oracle.py --perturbed-runs: the same
float32 training from weights moved by one ulp) are further samples of that
noise, taken into the maximum the same way. Batch normalization on small
microbatches makes float32 training that noisy (test/e2e/README.md).
A second metrics file (REFERENCE.jsonl, another dpc run's --metrics) may
stand in for the oracle: its steps are then the ones compared.
Prints a table; exits 0 when all steps agree, 1 when some step differs or
is missing, 2 on unreadable input.
"""

import argparse
import json
import math
import sys

from compare_weights import NOISE_FACTOR


def fail_input(message):
    print(f"compare: {message}", file=sys.stderr)
    sys.exit(2)


def read_metrics(path):
    losses = {}
    try:
        with open(path) as f:
            lines = f.readlines()
    except OSError as e:
        fail_input(f"{path}: {e.strerror}")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            fail_input(f"{path}:{number}: not JSON: {e.msg}")
        if not isinstance(record, dict):
            fail_input(f"{path}:{number}: expected a JSON object")
        if "elastic" in record:
            # dpc run --elastic resumed from this step after losing a rank:
            # the steps after it are trained again, and those records count.
            resumed = record.get("resumed_from_step")
            if not isinstance(resumed, int) or isinstance(resumed, bool):
                fail_input(f"{path}:{number}: an elastic record without "
                           "resumed_from_step")
            for step in [s for s in losses if s > resumed]:
                del losses[step]
            continue
        if "step" not in record:
            continue
        if "loss" not in record:
            fail_input(f"{path}:{number}: step record without a loss")
        step = record["step"]
        if not isinstance(step, int) or isinstance(step, bool):
            fail_input(f"{path}:{number}: step must be an integer")
        if step in losses:
            fail_input(f"{path}:{number}: step {step} appears twice")
        loss = record["loss"]
        if not isinstance(loss, (int, float)) or isinstance(loss, bool):
            fail_input(f"{path}:{number}: loss must be a number")
        losses[step] = float(loss)
    return losses


def read_oracle(path):
    try:
        with open(path) as f:
            oracle = json.load(f)
    except OSError as e:
        fail_input(f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail_input(f"{path}: not JSON: {e.msg}")
    if not isinstance(oracle, dict) or not isinstance(oracle.get("losses"), list):
        fail_input(f"{path}: expected an object with a \"losses\" list")
    first = oracle.get("first_step", 1)
    as_steps = lambda losses: {first + i: float(loss)
                               for i, loss in enumerate(losses)}
    return (as_steps(oracle["losses"]), as_steps(oracle.get("losses64", [])),
            [as_steps(run) for run in oracle.get("losses_perturbed", [])])


def main():
    parser = argparse.ArgumentParser(
        description="compare dpc's metrics with the PyTorch oracle")
    parser.add_argument("metrics")
    parser.add_argument("oracle")
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args()

    dpc = read_metrics(args.metrics)
    if args.oracle.endswith(".jsonl"):
        torch, reference, perturbed = read_metrics(args.oracle), {}, []
    else:
        torch, reference, perturbed = read_oracle(args.oracle)
    if not torch:
        fail_input(f"{args.oracle}: no losses")

    print(f"{'step':>5}  {'torch':>12}  {'dpc':>12}  {'rel err':>9}")
    bad = judged = 0
    noise = args.rtol  # PyTorch's relative distance from float64 so far
    for step in sorted(torch):
        if step in reference and reference[step]:
            for run in [torch, *perturbed]:
                if step in run:
                    noise = max(noise, abs(run[step] - reference[step]) /
                                abs(reference[step]))
        expected = torch[step]
        if step not in dpc:
            print(f"{step:>5}  {expected:>12.7f}  {'missing':>12}  {'':>9}  FAIL")
            bad += 1
            continue
        got = dpc[step]
        error = abs(got - expected) / abs(expected) if expected else abs(got)
        ok = math.isfinite(got) and error <= args.rtol
        note = ""
        if not ok and math.isfinite(got) and step in reference:
            exact = reference[step]
            ok = abs(got - exact) <= NOISE_FACTOR * noise * abs(exact)
            judged += ok
            note = (f"  float64 {exact:.7f}: dpc {abs(got - exact):.2e} "
                    f"from it, torch {abs(expected - exact):.2e}")
        bad += not ok
        print(f"{step:>5}  {expected:>12.7f}  {got:>12.7f}  {error:>9.2e}"
              f"{note}{'' if ok else '  FAIL'}")
    extra = sorted(set(dpc) - set(torch))
    if extra:
        print(f"(ignored {len(extra)} dpc steps the oracle does not have)")
    if bad:
        print(f"compare: {bad} of {len(torch)} steps differ by more than "
              f"{args.rtol:g} relative", file=sys.stderr)
        return 1
    print(f"compare: all {len(torch)} steps within {args.rtol:g} relative"
          + (f" ({judged} by the float64 reference)" if judged else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
