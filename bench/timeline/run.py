"""Measured against predicted step time of dpc's pipelines.

For models of test/e2e/oracle/oracle.py (LeNet-5 and the MLP by default; 4
microbatches, SGD lr 0.05 momentum 0.9), each stage count, schedule and cost
source, this compiles with `dpc compile` (analytic costs from
annotate-costs, or measured ones with `--profile` from `dpc profile`, which
price the partition, the schedule and its simulation), trains with
`dpc run --trace` on Fashion-MNIST (the image models) or synthetic data (the
others), and prints the step time plan.json predicted beside the one
`dpc run` measured (the median over the steps after the first; with
--repeat N, the median of N runs and their range). Two predictions: the
simulator's (`simulated_step_ms`: the per-op costs, analytic or measured,
through the real instruction streams; `dpc run` compares with this one) and
the planner's (`step_ms`, its own cost model over the same node costs); with
more ranks than cores, the simulated step shares the cores among the ranks
(dpc compile's `--cores`, this machine's count) and charges a rank waiting
for a message the wake-up latency the profile measured. The trace
splits the measured step per rank into compute (forward, backward,
optimizer, loads) and the rest (waiting for messages, MPI, the launcher's
bookkeeping), next to the compute the simulator predicted for that rank,
and `dpc-schedule simulate` replays the schedule with the measured median
forward, backward and optimizer times of each stage and free transfers
("sim@measured"): the step an idle machine with instant messages would
take. Analytic -> sim@measured is the cost model's error; sim@measured ->
measured is waiting (messages, MPI progress, other processes on the cores).

Usage: /usr/bin/python3 bench/timeline/run.py [--dpc build/bin/dpc]
       [--models lenet5,mlp] [--stages 2] [--schedules 1f1b,gpipe]
       [--costs analytic,profile] [--steps 300] [--repeat 1] [--keep DIR]
       [--json FILE] [--precision fp32|bf16]

With --precision bf16 the profile times the bf16 build and every build is
compiled bf16 (the analytic costs scale the bf16 convolutions and matmuls
by kBf16Speedup, passes/CostModel.h).

`dpc profile` runs one rank; it and `dpc run` are run with OMP_NUM_THREADS=1,
what each of the two ranks gets on a 2-core machine (one stage runs one
thread too), unless OMP_NUM_THREADS is set (the ranks of more stages than
cores share them). It times the build fused as
`dpc compile` fuses it, and measures the latency of a message between stages
at each --stages count (`--message-ranks`), which the simulated step charges
every transfer, and where those ranks share the cores the wake-up latency;
sim@measured keeps transfers free and wakes at once.
Timings on a busy machine are noisy: the header prints the load average.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = "/usr/share/datasets/fashion-mnist"
COMPUTE = {"forward", "backward", "backward-input", "backward-weight",
           "optimizer", "load"}


def run(cmd, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def spans(path):
    return [e for e in json.load(open(path))["traceEvents"] if e["ph"] == "X"]


def compute_per_step(events, ranks):
    """Median compute milliseconds per training step on each rank; an
    optimizer span ends a step, evaluation after the last one is left out."""
    result = []
    for r in range(ranks):
        mine = sorted((e for e in events if e["pid"] == r), key=lambda e: e["ts"])
        steps, current = [], 0.0
        for e in mine:
            if e["cat"] in COMPUTE:
                current += e["dur"] / 1000
            if e["cat"] == "optimizer":
                steps.append(current)
                current = 0.0
        result.append(statistics.median(steps[1:] or steps))
    return result


def simulate_measured(dpc_schedule, out, events, work):
    """The step dpc-schedule simulate predicts for OUT's schedule with the
    measured median forward and backward time of each stage and the median
    optimizer time."""
    schedule = json.load(open(os.path.join(out, "schedule.json")))
    def med(rank, cat):
        values = [e["dur"] / 1000 for e in events
                  if e["pid"] == rank and e["cat"] == cat]
        return statistics.median(values) if values else 0.0
    for stage in schedule["stages"]:
        stage["forward_ms"] = med(stage["rank"], "forward")
        # The combined backward costs backward_input + backward_weight;
        # zero-bubble schedules run the halves apart.
        whole = med(stage["rank"], "backward")
        stage["backward_input_ms"] = whole or med(stage["rank"], "backward-input")
        stage["backward_weight_ms"] = 0.0 if whole else med(stage["rank"],
                                                            "backward-weight")
    optimizer = max(med(r, "optimizer") for r in range(schedule["ranks"]))
    path = os.path.join(work, "measured-costs.schedule.json")
    with open(path, "w") as f:
        json.dump(schedule, f)
    # Ranks beyond the cores share them, as in the run.
    cores = os.cpu_count() or 0
    shared = (["--cores", str(cores)]
              if 0 < cores < schedule["ranks"] else ["--cores", "0"])
    # Free transfers: not the latencies the profile measured.
    text = run([dpc_schedule, "simulate", path, "--optimizer-ms", str(optimizer),
                "--latency", "0", "--wake-latency", "0"] + shared)
    # A step of a long run (steps back to back), as plan.json predicts.
    return float(text.split("back to back ")[1].split(" ms")[0])


def predicted_compute(timeline, ranks):
    events = spans(timeline)
    return [sum(e["dur"] for e in events
                if e["pid"] == r and e["cat"] in COMPUTE) / 1000
            for r in range(ranks)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dpc", default=os.path.join(ROOT, "build", "bin", "dpc"))
    parser.add_argument("--models", default="lenet5,mlp")
    parser.add_argument("--stages", default="2")
    parser.add_argument("--schedules", default="1f1b,gpipe")
    parser.add_argument("--costs", default="analytic,profile")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", help="keep the compiled outputs and traces here")
    parser.add_argument("--json", help="also write the rows as JSON")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                        help="dpc profile and dpc compile --precision")
    args = parser.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="dpc-timeline-")
    os.makedirs(work, exist_ok=True)
    dpc = os.path.abspath(args.dpc)
    dpc_schedule = os.path.join(os.path.dirname(dpc), "dpc-schedule")
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"# {os.cpu_count()} cores, load average {load}; {args.steps} steps "
          f"of 4 microbatches; {args.precision}")
    print(f"{'model':9} {'st':2} {'schedule':8} {'costs':8} {'simulated':>9} {'planner':>8} "
          f"{'sim@measured':>12} {'measured':>20} {'ratio':>6} {'/planner':>8}  "
          f"compute per rank, simulated -> measured (ms)")
    rows = []
    for model in args.models.split(","):
        run([sys.executable, os.path.join(ROOT, "test", "e2e", "oracle", "oracle.py"),
             "--model", model, "--out", work, "--steps", "1"])
        onnx = os.path.join(work, model + ".onnx")
        profile = os.path.join(work, model + ".profile.json")
        # The profile and the runs take a kernel thread per rank (what each
        # of two ranks gets on two cores; one stage then runs one thread
        # too) unless OMP_NUM_THREADS says otherwise.
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")
        if "profile" in args.costs.split(","):
            # Messages are measured at the stage counts compiled below.
            run([dpc, "profile", onnx, "-o", profile, "--microbatches", "4",
                 "--message-ranks", args.stages,
                 "--precision", args.precision], env)
        data = ("fashion-mnist:" + DATA
                if model in ("lenet5", "mlp", "resnet", "resnet18")
                else "synthetic")
        cells = [(int(st), sc, c) for st in args.stages.split(",")
                 for sc in args.schedules.split(",")
                 for c in args.costs.split(",")]
        for stages, schedule, costs in cells:
                out = os.path.join(work, f"{model}-{stages}-{schedule}-{costs}")
                trace = out + ".trace.json"
                run([dpc, "compile", onnx, "-o", out, "--stages", str(stages),
                     "--microbatches", "4", "--schedule", schedule,
                     "--lr", "0.05", "--momentum", "0.9",
                     "--precision", args.precision]
                    + (["--profile", profile] if costs == "profile" else []))
                runs = []
                for _ in range(args.repeat):
                    run([dpc, "run", out, "--data", data,
                         "--steps", str(args.steps), "--no-eval", "--trace", trace],
                        env)
                    plan = json.load(open(os.path.join(out, "plan.json")))
                    events = spans(trace)
                    runs.append((plan["measured"]["step_ms"],
                                 compute_per_step(events, stages),
                                 simulate_measured(dpc_schedule, out, events, work)))
                runs.sort(key=lambda r: r[0])
                step, actual, replayed = runs[len(runs) // 2]
                # dpc run's prediction: plan.json's, or with more ranks than
                # cores the schedule simulated on the shared cores.
                simulated = plan["measured"].get(
                    "predicted_step_ms", plan["predicted"]["simulated_step_ms"])
                planner = plan["predicted"]["step_ms"]
                predicted = predicted_compute(os.path.join(out, "timeline.json"),
                                              stages)
                row = {"model": model, "stages": stages, "schedule": schedule,
                       "costs": costs, "precision": args.precision,
                       "simulated_step_ms": simulated, "planner_step_ms": planner,
                       "simulated_at_measured_ms": replayed,
                       "measured_step_ms": step,
                       "measured_range_ms": [runs[0][0], runs[-1][0]],
                       "ratio": step / simulated, "planner_ratio": step / planner,
                       "simulated_compute_ms": predicted,
                       "measured_compute_ms": actual}
                rows.append(row)
                spread = (f"({runs[0][0]:.2f}-{runs[-1][0]:.2f})"
                          if len(runs) > 1 else "")
                detail = ", ".join(f"{p:.2f} -> {a:.2f}"
                                   for p, a in zip(predicted, actual))
                print(f"{model:9} {stages:2} {schedule:8} {costs:8} {simulated:9.2f} "
                      f"{planner:8.2f} {replayed:12.2f} {step:7.2f} {spread:>12} {row['ratio']:5.2f}x "
                      f"{row['planner_ratio']:7.2f}x  {detail}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
