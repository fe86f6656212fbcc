#!/usr/bin/python3
"""Checks each rank's measured peak memory against plan.json's prediction.

    check_memory.py METRICS.jsonl [--rtol 0.1] [--atol BYTES]

Reads the per-rank records `dpc run --metrics` writes at the end of
training ({"rank": r, "peak_bytes": measured, "predicted_peak_bytes":
plan-memory's prediction, ...}) and prints one line per rank, "rank R:
within 10%" (the rtol) or "rank R: measured M, predicted P (+x%)", then exits 1 when
any rank is off by more than rtol and by more than atol bytes (default 0:
the runtime starts every buffer at a multiple of 64 bytes, which the
prediction leaves out, so a rank holding a few small tensors can be off by
a few hundred bytes and by more than 1%), 2 when there are no records.
"""
import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("metrics")
parser.add_argument("--rtol", type=float, default=0.1)
parser.add_argument("--atol", type=int, default=0)
args = parser.parse_args()
rows = [json.loads(l) for l in open(args.metrics)]
ranks = [r for r in rows if "peak_bytes" in r]
if not ranks:
    print("check_memory: no per-rank memory records", file=sys.stderr)
    sys.exit(2)
off = 0
for r in ranks:
    measured, predicted = r["peak_bytes"], r["predicted_peak_bytes"]
    ratio = measured / predicted - 1 if predicted > 0 else float("inf")
    if abs(ratio) <= args.rtol or abs(measured - predicted) <= args.atol:
        print(f"rank {r['rank']}: within {args.rtol:.0%}"
              + (f" or {args.atol} B" if args.atol else ""))
    else:
        off += 1
        print(f"rank {r['rank']}: measured {measured}, predicted {predicted} "
              f"({ratio:+.1%})")
sys.exit(1 if off else 0)
