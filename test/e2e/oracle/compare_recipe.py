"""Compares the learning rates and gradient norms of dpc's metrics ("lr",
"grad_norm" per step) with the oracle's ("lrs", "grad_norms"), each within
--rtol relative. With --expect-clip X, at least one step's norm must exceed
X: the clip engaged. When the oracle also trained in float64
("grad_norms64", pipedream.py), a norm that misses rtol is judged against
that reference as compare.py judges losses: it agrees when dpc is no
farther from the float64 norm than NOISE_FACTOR times PyTorch's float32
runs (the oracle's and those from weights one ulp away,
"grad_norms_perturbed") have been by then (and at least rtol).

Usage: compare_recipe.py METRICS ORACLE_JSON [--rtol 1e-4] [--expect-clip X]
Exits 1 on a difference, 2 on unreadable input.
"""
import argparse
import json
import sys

from compare_weights import NOISE_FACTOR


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
    bad, checked, judged = [], 0, 0
    for key, field in (("lrs", "lr"), ("grad_norms", "grad_norm")):
        reference = oracle.get(key + "64", [])
        runs = [oracle.get(key, []), *oracle.get(key + "_perturbed", [])]
        noise = args.rtol  # PyTorch's relative distance from float64 so far
        for step, expected in enumerate(oracle.get(key, []), 1):
            got = dpc.get(step, {}).get(field)
            checked += 1
            exact = reference[step - 1] if step <= len(reference) else None
            if exact:
                noise = max([noise] + [abs(run[step - 1] - exact) / abs(exact)
                                       for run in runs if step <= len(run)])
            if got is None:
                bad.append(f"step {step}: no {field} in the metrics")
            elif abs(got - expected) <= args.rtol * abs(expected):
                continue
            elif exact and abs(got - exact) <= NOISE_FACTOR * noise * abs(exact):
                judged += 1
            else:
                bad.append(f"step {step}: {field} {got:.9g}, torch "
                           f"{expected:.9g}" + (f", float64 {exact:.9g}"
                                                if exact else ""))
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
          f"{args.rtol:g}"
          + (f" ({judged} by the float64 reference)" if judged else "")
          + clipped)
    return 0


if __name__ == "__main__":
    sys.exit(main())
