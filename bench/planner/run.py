#!/usr/bin/python3
"""Planner benchmark: dpc plan against PipeDream's bar and a Python peer.

For each shared profile x {2,4,8,16} devices x {hybrid, straight} it prints
dpc's bottleneck (re-evaluated here from plan.json with an independent
implementation of the cost model), the bar from issue 4 (PipeDream's own
optimizer's plans under that model), the bottleneck of the Python peer's plan
(pipedream_dp.py, PipeDream's published chain DP) under the same model, and
the planning times of dpc (best of several runs, as `dpc plan` reports it:
planning only, no parsing) and of the peer (its DP only), once as published
(every candidate evaluated) and once with pruning added.

Usage: bench/planner/run.py [--dpc build-planner/bin/dpc] [--repeat 5]
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import pipedream_dp  # noqa: E402

BAR = {
    "alexnet": ([0.066454, 0.034217, 0.018874, 0.018874],
                [0.066454, 0.066454, 0.066454, 0.095551]),
    "vgg16": ([0.411042, 0.205521, 0.103833, 0.056530],
              [0.411042, 0.411042, 0.411042, 0.411042]),
    "resnet18": ([0.176629, 0.100004, 0.050783, 0.025690],
                 [0.201601, 0.201601, 0.201601, 0.201601]),
    "resnet50": ([0.285058, 0.162881, 0.092012, 0.047801],
                 [0.285058, 0.258149, 0.258149, 0.258149]),
    "gnmt": ([0.045936, 0.025868, 0.019285, 0.019285],
             [0.045936, 0.025868, 0.019285, 0.024642]),
}
DEVICES = [2, 4, 8, 16]


def run_dpc(dpc, profile, devices, straight, repeat, out):
    args = [dpc, "plan", "--profile", profile, "--devices", str(devices),
            "-o", out]
    if straight:
        args.append("--straight")
    best = math.inf
    for _ in range(repeat):
        text = subprocess.run(args, check=True, capture_output=True,
                              text=True).stdout
        ms = float(re.search(r"planned in ([0-9.]+) ms", text).group(1))
        best = min(best, ms)
    with open(out) as f:
        return json.load(f), best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dpc", default=os.path.join(ROOT, "build-planner",
                                                      "bin", "dpc"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profiles", default=os.path.join(
        ROOT, "examples", "profiles", "pipedream"))
    parser.add_argument("--only", help="comma-separated profile names")
    args = parser.parse_args()

    names = args.only.split(",") if args.only else list(BAR)
    header = ("%-9s %3s %-8s %10s %10s %10s %4s %7s %9s %9s %8s %8s" %
              ("profile", "N", "mode", "dpc_s", "bar_s", "peer_s", "ok",
               "dpc_ms", "peer_ms", "pruned_ms", "speedup", "vs_prun"))
    print(header)
    print("-" * len(header))
    ratios, pruned_ratios, worst_ms, failures = [], [], 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "plan.json")
        for name in names:
            path = os.path.join(args.profiles, name + ".txt")
            nodes, edges = pipedream_dp.read_profile(path)
            order = pipedream_dp.topological_order(nodes, edges)
            for k, devices in enumerate(DEVICES):
                for straight in (False, True):
                    plan, dpc_ms = run_dpc(args.dpc, path, devices, straight,
                                           args.repeat, out)
                    stage_nodes = [s["nodes"] for s in plan["stages"]]
                    replicas = [s["replicas"] for s in plan["stages"]]
                    ours = pipedream_dp.evaluate(stage_nodes, replicas, nodes,
                                                 edges)
                    reported = plan["predicted"]["bottleneck_ms"] / 1e3
                    if abs(ours - reported) > 1e-9 * max(ours, 1e-12):
                        print("  evaluator mismatch: dpc reports %.9f, "
                              "recomputed %.9f" % (reported, ours))
                        failures += 1

                    start = time.perf_counter()
                    stages = pipedream_dp.pipedream_partition(
                        order, nodes, devices, straight=straight)
                    peer_ms = (time.perf_counter() - start) * 1e3
                    start = time.perf_counter()
                    pruned = pipedream_dp.pipedream_partition(
                        order, nodes, devices, straight=straight, prune=True)
                    pruned_ms = (time.perf_counter() - start) * 1e3
                    peer = pipedream_dp.evaluate(
                        [order[i:j] for i, j, _ in stages],
                        [r for _, _, r in stages], nodes, edges)

                    bar = BAR[name][1 if straight else 0][k]
                    # The bar is rounded to the microsecond.
                    ok = ours <= bar * (1 + 1e-6) + 5e-7
                    failures += not ok
                    ratio = peer_ms / max(dpc_ms, 1e-3)
                    ratios.append(ratio)
                    pruned_ratios.append(pruned_ms / max(dpc_ms, 1e-3))
                    worst_ms = max(worst_ms, dpc_ms)
                    print("%-9s %3d %-8s %10.6f %10.6f %10.6f %4s %7.2f "
                          "%9.1f %9.1f %7.0fx %7.0fx" %
                          (name, devices, "straight" if straight else "hybrid",
                           ours, bar, peer, "yes" if ok else "NO", dpc_ms,
                           peer_ms, pruned_ms, ratio, pruned_ratios[-1]))
                    sys.stdout.flush()
    def geo(values):
        return math.exp(sum(math.log(v) for v in values) / len(values))
    print("-" * len(header))
    print("dpc meets the bar in %d of %d cells; slowest dpc plan %.2f ms" %
          (len(ratios) - failures, len(ratios), worst_ms))
    print("speedup over the Python peer as published: geometric mean %.0fx, "
          "min %.0fx; over the pruned peer: geometric mean %.0fx, min %.0fx" %
          (geo(ratios), min(ratios), geo(pruned_ratios), min(pruned_ratios)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
