#!/usr/bin/python3
"""Checks what --shard-optimizer saves on each rank against the plan.

    check_shard_memory.py PLAIN_DIR SHARDED_DIR [--rtol 0.01] [--atol 1024]

Each directory is a build (dpc compile -o) that trained with `dpc run
--metrics DIR/metrics.jsonl`: PLAIN_DIR without --shard-optimizer,
SHARDED_DIR with it, of the same model, stages and replicas. For every rank
the measured saving (PLAIN's peak_bytes - SHARDED's) must equal the planned
one (the difference of the rank's stage's schedule.json "param_bytes",
which counts 1/R of the optimizer state on a replicated stage) within rtol
of it or within atol bytes (the runtime starts every buffer at a multiple
of 64 bytes, which the plan leaves out). Prints "rank R: saves S of P planned bytes",
one line per rank; exits 1 when a rank is off, 2 on unreadable input.
"""
import argparse
import json
import os
import sys


def load(build):
    try:
        metrics = [json.loads(line)
                   for line in open(os.path.join(build, "metrics.jsonl"))]
        schedule = json.load(open(os.path.join(build, "schedule.json")))
    except (OSError, ValueError) as e:
        print(f"check_shard_memory: {e}", file=sys.stderr)
        sys.exit(2)
    peaks = {r["rank"]: r["peak_bytes"] for r in metrics if "peak_bytes" in r}
    # The stage of each rank: stages in order, replicas[s] ranks each.
    replicas = schedule.get("replicas") or [1] * len(schedule["stages"])
    stage_of = [s for s, r in enumerate(replicas) for _ in range(r)]
    params = [schedule["stages"][s]["param_bytes"] for s in stage_of]
    return peaks, params


parser = argparse.ArgumentParser()
parser.add_argument("plain")
parser.add_argument("sharded")
parser.add_argument("--rtol", type=float, default=0.01)
parser.add_argument("--atol", type=int, default=1024)
args = parser.parse_args()
plain_peaks, plain_params = load(args.plain)
sharded_peaks, sharded_params = load(args.sharded)
if sorted(plain_peaks) != sorted(sharded_peaks) or not plain_peaks:
    print("check_shard_memory: the builds have other ranks", file=sys.stderr)
    sys.exit(2)
off = 0
for rank in sorted(plain_peaks):
    saved = plain_peaks[rank] - sharded_peaks[rank]
    planned = plain_params[rank] - sharded_params[rank]
    ok = abs(saved - planned) <= max(args.rtol * planned, args.atol)
    off += not ok
    print(f"rank {rank}: saves {saved} of {planned} planned bytes"
          + ("" if ok else " (off)"))
sys.exit(1 if off else 0)
