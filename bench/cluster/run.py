#!/usr/bin/python3
"""The planner's two-level bandwidth against measurement (#38), on the
emulated cluster of scripts/cluster with shaped links between hosts.

For each layout (2 hosts x 2 ranks, 4 hosts x 1 rank) it brings up the
cluster with every host's link shaped to --rate, then compiles LeNet-5
three ways and runs each with `dpc run --hostfile ... --stage
/tmp/dpc-stage-bch38`:

  planned  `dpc compile --cluster FILE`: FILE describes the two levels
           (within a host unshaped, --intra B/s; between hosts --rate), so
           the planner places stage boundaries and replicas knowing which
           links are slow;
  flat     `--devices 4` on the default flat 1e9 B/s: a plan that does not
           know the hosts;
  naive    `--stages 4`: a stage a rank, every stage boundary a link, the
           boundaries between hosts on the slow ones.

Every variant gets `--cores 2`: the emulated hosts share this machine's
2 cores, and the prediction shares them among the ranks computing at a
moment. Columns: the plan (stages and replicas), dpc run's measured step
(the median of --repeat runs),
the step plan.json predicts on the 2 shared cores, their ratio, and dpc
run's own prediction line (which, under a host file, assumes a core per
rank: it cannot know the hosts share cores). The 1-minute load is printed
before and after. Benchmarks are not tests: nothing here asserts a time.
Needs root (namespaces, tc). Run it while nothing else runs.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CLUSTER = os.path.join(REPO, "scripts", "cluster")
DPC = os.path.join(REPO, "build", "bin", "dpc")
NAME = "bch38"

RATES = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def rate_bytes(rate):
    m = re.fullmatch(r"([0-9.]+)(kbit|mbit|gbit)", rate)
    if not m:
        sys.exit(f"--rate {rate}: expected N(kbit|mbit|gbit)")
    return float(m.group(1)) * RATES[m.group(2)] / 8


def sh(argv, env=None, check=True):
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    if check and r.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({r.returncode}):\n"
                 f"{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r


def cluster_env():
    env = dict(os.environ)
    text = sh([CLUSTER, "env", NAME]).stdout
    for line in text.splitlines():
        m = re.fullmatch(r"export (\w+)=(.*)", line)
        if m:
            env[m.group(1)] = m.group(2).strip("'")
    return env


def plan_shape(out):
    plan = json.load(open(os.path.join(out, "plan.json")))
    reps = [str(st.get("replicas", 1)) for st in plan["stages"]]
    idle = len(plan.get("idle_ranks", []))
    return plan, (f"{len(reps)} stages x ({','.join(reps)})" +
                  (f", {idle} idle" if idle else ""))


def predicted_ms(plan):
    """The simulated step on the shared cores (--cores), else the model's."""
    pred = plan.get("predicted", {})
    value = pred.get("simulated_step_ms", pred.get("step_ms"))
    return None if value is None else float(value)


def cluster_file(work, layout, hosts, slots, intra, between, used=None):
    """Two levels: `slots` devices a host at `intra`, hosts at `between`;
    only the first `used` devices when given (whole hosts, or part of the
    first)."""
    count = hosts * slots if used is None else used
    if count <= slots:
        levels = {"bandwidth": intra if slots > 1 else between}
    elif slots > 1:
        levels = {"levels": [{"size": slots, "bandwidth": intra},
                             {"size": count // slots, "bandwidth": between}]}
    else:
        levels = {"bandwidth": between}
    path = os.path.join(work, f"cluster-{layout}.json")
    json.dump({"format": "dpc-cluster", "version": 1,
               "devices": [{"name": "core", "count": count}], **levels},
              open(path, "w"))
    return path


def model_and_data(model, work, args):
    """The ONNX model and a --data spec: LeNet-5 (make_model.py) on random
    images, or the e2e tests' tiny GPT (test/e2e/oracle) on the token ids
    of a text file."""
    if model == "tiny-gpt":
        oracle = os.path.join(REPO, "test", "e2e", "oracle")
        sh(["/usr/bin/python3", os.path.join(oracle, "oracle.py"), "--model",
            "tiny-gpt", "--out", work])
        tokens = os.path.join(work, "gpl.u16")
        sh(["/usr/bin/python3", os.path.join(oracle, "write_data.py"),
            "tokens", "/usr/share/common-licenses/GPL-3", tokens])
        return os.path.join(work, "tiny-gpt.onnx"), "tokens:" + tokens
    onnx = os.path.join(work, "lenet.onnx")
    sh(["/usr/bin/python3",
        os.path.join(REPO, "test/Frontends/ONNX/Inputs/make_model.py"),
        "lenet", onnx])
    import numpy as np
    r = np.random.default_rng(0)
    n = args.microbatches * args.microbatch_size * 4
    np.save(os.path.join(work, "x.npy"),
            r.random((n, 1, 28, 28), dtype=np.float32))
    np.save(os.path.join(work, "y.npy"), r.integers(0, 10, n))
    return onnx, f"npy:{work}/x.npy,{work}/y.npy"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="lenet", choices=["lenet", "tiny-gpt"])
    p.add_argument("--rate", default="100mbit")
    p.add_argument("--intra", type=float, default=2e9,
                   help="B/s within a host (shared memory)")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--repeat", type=int, default=3,
                   help="runs of each variant; the median is reported")
    p.add_argument("--microbatches", type=int, default=4)
    p.add_argument("--microbatch-size", type=int, default=32,
                   help="LeNet-5's; the tiny GPT keeps its own batch")
    p.add_argument("--layouts", default="2x2,4x1")
    p.add_argument("--no-profile", action="store_true",
                   help="plan on the cost model's op costs, not dpc "
                   "profile's")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="dpc-bench-cluster-")
    try:
        measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(args, work):
    between = rate_bytes(args.rate)
    onnx, data = model_and_data(args.model, work, args)
    batch = (["--microbatch-size", str(args.microbatch_size)]
             if args.model == "lenet" else [])
    print(f"load before: {os.getloadavg()[0]:.2f}; links between hosts "
          f"{args.rate} ({between:.3g} B/s), within {args.intra:.3g} B/s; "
          f"{args.model}, {args.microbatches} microbatches"
          f"{' of ' + str(args.microbatch_size) if batch else ''} a step, "
          f"{args.steps} steps, 2 real cores", flush=True)
    # The ops' costs measured here, on one thread as the ranks run (one
    # slot a rank), instead of the planner's defaults.
    profile = os.path.join(work, "profile.json")
    if not args.no_profile:
        sh([DPC, "profile", onnx, "-o", profile, "--microbatches",
            str(args.microbatches)] + batch,
           env=dict(os.environ, OMP_NUM_THREADS="1"))
    common = (["--profile", profile] if not args.no_profile else []) + [
        "--microbatches", str(args.microbatches)] + batch + [
        "--schedule", "1f1b", "--lr", "0.00001", "--cores", "2"]
    rows = []
    for layout in args.layouts.split(","):
        hosts, slots = (int(v) for v in layout.split("x"))
        sh([CLUSTER, "down", NAME], check=False)
        sh([CLUSTER, "up", NAME, str(hosts), "--slots", str(slots),
            "--rate", args.rate, "--subnet", "93"])
        try:
            env = cluster_env()
            cfile = cluster_file(work, layout, hosts, slots, args.intra,
                                 between)
            variants = [("planned", ["--cluster", cfile]),
                        ("flat", ["--devices", str(hosts * slots)]),
                        ("naive", ["--stages", str(hosts * slots),
                                   "--bandwidth", str(between)])]
            for name, how in variants:
                out = os.path.join(work, f"{layout}-{name}")
                sh([DPC, "compile", onnx, "-o", out] + how + common)
                plan = json.load(open(out + "/plan.json"))
                used = sum(st.get("replicas", 1) for st in plan["stages"])
                if name == "planned" and used < hosts * slots:
                    # dpc run launches the plan's ranks only and refuses
                    # a plan.json of more devices: plan again on the
                    # first `used` devices, which the plan chose.
                    cfile = cluster_file(work, layout + "-used", hosts,
                                         slots, args.intra, between, used)
                    sh([DPC, "compile", onnx, "-o", out, "--cluster",
                        cfile] + common)
                runs = []
                for _ in range(args.repeat):
                    run = sh([DPC, "run", out, "--hostfile",
                              env["DPC_CLUSTER_HOSTFILE"], "--stage",
                              f"/tmp/dpc-stage-{NAME}", "--steps", str(args.steps),
                              "--data", data, "--no-eval"], env=env)
                    line = [ln for ln in run.stdout.splitlines()
                            if ln.startswith("step time:")]
                    m = re.search(r"measured ([0-9.e+]+) ms", line[-1])
                    runs.append((float(m.group(1)), line))
                # The median run of --repeat.
                runs.sort(key=lambda r: r[0])
                measured, line = runs[len(runs) // 2]
                plan, shape = plan_shape(out)
                pred = predicted_ms(plan)
                rows.append((layout, name, shape, measured, pred,
                             line[-1][len("step time: "):]))
                print(f"{layout} {name:8} {shape:28} measured "
                      f"{measured:8.2f} ms  plan.json "
                      f"{pred if pred is None else round(pred, 2)} ms  | "
                      f"{line[-1]}", flush=True)
        finally:
            sh([CLUSTER, "down", NAME], check=False)
    print(f"load after: {os.getloadavg()[0]:.2f}")
    print("\n| layout | variant | plan | measured ms | predicted ms | "
          "measured / predicted |\n|---|---|---|---|---|---|")
    for layout, name, shape, measured, pred, _ in rows:
        ratio = f"{measured / pred:.2f}" if pred else "-"
        print(f"| {layout} | {name} | {shape} | {measured:.2f} | "
              f"{'-' if pred is None else f'{pred:.2f}'} | {ratio} |")


if __name__ == "__main__":
    main()
