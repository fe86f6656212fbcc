#!/usr/bin/python3
"""Checks that a bf16 run's losses track an fp32 run's.

    compare_precision.py FP32.jsonl BF16.jsonl --early-steps K --early-rtol A
        --late-from L --late-rtol B [--expect-different]

Both files are dpc run --metrics outputs of the same model, data and steps.
Early steps, while the two runs have not yet drifted apart, must agree step
by step: |bf16 - fp32| <= A * |fp32| for steps 1..K. Later single steps are
not comparable (rounding differences grow chaotically, as between any two
float32 builds), so the later run is judged by its mean loss from step L to
the last: the two means agree within B relative.
With --expect-different, identical losses fail: the bf16 build must not
have computed in f32. Prints the figures; exits 0 when all hold, 1 when one
does not, 2 on unreadable input.
"""
import argparse
import json
import sys


def losses(path):
    try:
        rows = [json.loads(line) for line in open(path) if line.strip()]
    except (OSError, ValueError) as e:
        print(f"compare_precision: {path}: {e}")
        sys.exit(2)
    return {r["step"]: r["loss"] for r in rows if "step" in r and "loss" in r}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("fp32")
    parser.add_argument("bf16")
    parser.add_argument("--early-steps", type=int, required=True)
    parser.add_argument("--early-rtol", type=float, required=True)
    parser.add_argument("--late-from", type=int, required=True)
    parser.add_argument("--late-rtol", type=float, required=True)
    parser.add_argument("--expect-different", action="store_true")
    args = parser.parse_args()
    a, b = losses(args.fp32), losses(args.bf16)
    steps = sorted(a)
    if not steps or sorted(b) != steps or steps != list(range(1, len(steps) + 1)):
        print(f"compare_precision: the runs have different steps "
              f"({len(a)} and {len(b)})")
        return 2
    if not args.early_steps <= len(steps) or not 1 <= args.late_from <= len(steps):
        print(f"compare_precision: {len(steps)} steps, fewer than "
              f"--early-steps or --late-from asks for")
        return 2
    ok = True
    early = max(abs(b[s] - a[s]) / abs(a[s]) for s in steps[:args.early_steps])
    verdict = "ok" if early <= args.early_rtol else "FAIL"
    ok &= early <= args.early_rtol
    print(f"steps 1-{args.early_steps}: largest relative difference "
          f"{early:.2e} (limit {args.early_rtol:g}): {verdict}")
    late = steps[args.late_from - 1:]
    ma = sum(a[s] for s in late) / len(late)
    mb = sum(b[s] for s in late) / len(late)
    diff = abs(mb - ma) / abs(ma)
    verdict = "ok" if diff <= args.late_rtol else "FAIL"
    ok &= diff <= args.late_rtol
    print(f"mean loss over steps {late[0]}-{late[-1]}: fp32 {ma:.4f}, bf16 "
          f"{mb:.4f}, relative difference {diff:.2e} (limit "
          f"{args.late_rtol:g}): {verdict}")
    if args.expect_different:
        same = all(a[s] == b[s] for s in steps)
        print("bf16 differs from fp32: " + ("FAIL (identical losses)"
                                            if same else "ok"))
        ok &= not same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
