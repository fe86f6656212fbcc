#!/usr/bin/python3
"""Compares dpc's per-step losses with the PyTorch oracle's.

    compare.py METRICS.jsonl ORACLE.json [--rtol 1e-4]

METRICS.jsonl is what a dpc rank writes with --metrics: one JSON object a
line; lines with "step" and "loss" are training steps (step counts from 1),
other lines (eval_accuracy, ...) are ignored. ORACLE.json is oracle.py's
output. Every oracle step must be present in the metrics and agree within
the relative tolerance |dpc - torch| <= rtol * |torch|. Prints a table;
exits 0 when all steps agree, 1 when some step differs or is missing, 2 on
unreadable input.
"""

import argparse
import json
import math
import sys


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
    return {first + i: float(loss) for i, loss in enumerate(oracle["losses"])}


def main():
    parser = argparse.ArgumentParser(
        description="compare dpc's metrics with the PyTorch oracle")
    parser.add_argument("metrics")
    parser.add_argument("oracle")
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args()

    dpc = read_metrics(args.metrics)
    torch = read_oracle(args.oracle)
    if not torch:
        fail_input(f"{args.oracle}: no losses")

    print(f"{'step':>5}  {'torch':>12}  {'dpc':>12}  {'rel err':>9}")
    bad = 0
    for step in sorted(torch):
        expected = torch[step]
        if step not in dpc:
            print(f"{step:>5}  {expected:>12.7f}  {'missing':>12}  {'':>9}  FAIL")
            bad += 1
            continue
        got = dpc[step]
        error = abs(got - expected) / abs(expected) if expected else abs(got)
        ok = math.isfinite(got) and error <= args.rtol
        bad += not ok
        print(f"{step:>5}  {expected:>12.7f}  {got:>12.7f}  {error:>9.2e}"
              f"{'' if ok else '  FAIL'}")
    extra = sorted(set(dpc) - set(torch))
    if extra:
        print(f"(ignored {len(extra)} dpc steps the oracle does not have)")
    if bad:
        print(f"compare: {bad} of {len(torch)} steps differ by more than "
              f"{args.rtol:g} relative", file=sys.stderr)
        return 1
    print(f"compare: all {len(torch)} steps within {args.rtol:g} relative")
    return 0


if __name__ == "__main__":
    sys.exit(main())
