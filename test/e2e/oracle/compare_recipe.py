"""Compares the learning rates and gradient norms of dpc's metrics ("lr",
"grad_norm" per step) with the oracle's ("lrs", "grad_norms"), each within
--rtol relative. With --expect-clip X, at least one step's norm must exceed
X: the clip engaged.

Usage: compare_recipe.py METRICS ORACLE_JSON [--rtol 1e-4] [--expect-clip X]
Exits 1 on a difference, 2 on unreadable input.
"""
import argparse
import json
import sys


def read_steps(path):
    steps = {}
    with open(path) as f:
        for line in f:
            record = json.loads(line) if line.strip() else {}
            if "step" in record:
                steps[record["step"]] = record
    return steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("oracle")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--expect-clip", type=float, default=None)
    args = parser.parse_args()
    try:
        dpc = read_steps(args.metrics)
        oracle = json.load(open(args.oracle))
    except (OSError, json.JSONDecodeError) as e:
        print(f"compare_recipe: {e}", file=sys.stderr)
        return 2
    bad, checked = [], 0
    for key, field in (("lrs", "lr"), ("grad_norms", "grad_norm")):
        for step, expected in enumerate(oracle.get(key, []), 1):
            got = dpc.get(step, {}).get(field)
            checked += 1
            if got is None:
                bad.append(f"step {step}: no {field} in the metrics")
            elif abs(got - expected) > args.rtol * abs(expected):
                bad.append(f"step {step}: {field} {got:.9g}, torch "
                           f"{expected:.9g}")
    if args.expect_clip is not None:
        norms = oracle.get("grad_norms", [])
        above = sum(n > args.expect_clip for n in norms)
        if not above:
            bad.append(f"the clip at {args.expect_clip:g} engaged in none of "
                       f"{len(norms)} steps")
    if not checked:
        bad.append(f"{args.oracle}: no lrs or grad_norms")
    for line in bad:
        print(line)
    if bad:
        print(f"compare_recipe: {len(bad)} problems", file=sys.stderr)
        return 1
    clipped = ""
    if args.expect_clip is not None:
        norms = oracle["grad_norms"]
        clipped = (f"; clipped in {sum(n > args.expect_clip for n in norms)}"
                   f" of {len(norms)} steps")
    print(f"compare_recipe: {checked} learning rates and norms within "
          f"{args.rtol:g}{clipped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
