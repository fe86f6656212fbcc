#!/usr/bin/python3
"""Checks that dpc runs reported the same losses.

    same_losses.py METRICS.jsonl METRICS.jsonl... [--rtol 1e-6]

Reads the {"step": k, "loss": x} lines of each `dpc run --metrics` file and
compares every run's losses with the first's, step by step. Prints "same
losses: ..." and exits 0 when all agree within rtol, or the first step that
differs and exits 1; exits 2 on unreadable input or when the runs cover
different steps.
"""
import argparse
import json
import sys


def losses(path):
    found = {}
    try:
        with open(path) as f:
            for line in f:
                row = json.loads(line)
                if "step" in row and "loss" in row:
                    found[row["step"]] = row["loss"]
    except (OSError, json.JSONDecodeError) as e:
        print(f"same_losses: {path}: {e}", file=sys.stderr)
        sys.exit(2)
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics", nargs="+")
    parser.add_argument("--rtol", type=float, default=1e-6)
    args = parser.parse_args()
    runs = [losses(path) for path in args.metrics]
    first = runs[0]
    if not first:
        print(f"same_losses: {args.metrics[0]} has no losses", file=sys.stderr)
        sys.exit(2)
    for path, run in zip(args.metrics[1:], runs[1:]):
        if sorted(run) != sorted(first):
            print(f"same_losses: {path} covers other steps", file=sys.stderr)
            sys.exit(2)
        for step in sorted(first):
            a, b = first[step], run[step]
            if abs(a - b) > args.rtol * abs(a):
                print(f"{path}: step {step}: loss {b} and {a} differ")
                sys.exit(1)
    print(f"same losses: {len(first)} steps in {len(runs)} runs within "
          f"{args.rtol:g} relative")


if __name__ == "__main__":
    main()
