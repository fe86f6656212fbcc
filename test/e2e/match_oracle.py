"""Trains the oracle's exported models with dpc and compares every step's
loss with PyTorch's.

Usage: match_oracle.py ORACLE_DIR WORK_DIR [--models lenet5,mlp]
       [--stages 1,2,4,2+1] [--schedules gpipe,1f1b] [--steps 20]
       [--target cpu|cuda] [--rtol 1e-4]
       [--weights [--weights-rtol X] [--weights-noise-factor F]] [--shadow]
       [--bandwidth BYTES/S] [--compile-options "..."] [--run-options "..."]
       [--label NAME]

ORACLE_DIR holds what oracle.py wrote (MODEL.onnx, MODEL.oracle.json, with
its settings: 4 microbatches of 16, file order, the data it trained on, and
the optimizer, by default SGD lr 0.05 momentum 0.9, or Adam, and dpc's --loss
where it is not softmax-cross-entropy, as "dpc_loss").
A stage count written with "+" gives the ranks of each stage instead ("2+1":
stage 0 on two ranks, compiled with --replicas 2,1). For each combination:
`dpc compile --target TARGET`, `dpc run --no-shuffle
--metrics`, and compare.py at --rtol relative (default 1e-4; scripts/gpu-test
uses 1e-3 for the CUDA target, whose kernels sum in other orders). The
synchronous schedules must match oracle.py's plain minibatch SGD;
`pipedream` (and `pipedream-vs`, with --vertical-sync) must match
oracle/pipedream.py's emulation of weight stashing for the compiled
pipeline. With --weights the synchronous runs also checkpoint, and their
trained weights must match the oracle's final weights within --rtol
(oracle/compare_weights.py). With --shadow (for models whose float32
training is ill-conditioned, test/e2e/README.md) PyTorch's float32 run is
not compared: the first run is checked step by step against float64 from
dpc's own state (oracle/shadow.py), its losses and every tensor's update,
and the other stage counts are tied to it by same_losses.py in the tests.
With --shadow-weights every run's losses are compared with PyTorch's as
without it, and the first run's updates are checked by shadow.py instead
of any run's trained weights (whose distance from PyTorch's depends on
where two chaotic float32 runs happen to drift). Prints one line per
run; exits 1 if any run fails or differs.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "oracle"))
import recipe  # noqa: E402


def optimizer_options(optimizer):
    """dpc compile's options for the oracle's optimizer settings."""
    options = ["--optimizer", optimizer.get("kind", "sgd"),
               "--lr", str(optimizer["lr"]),
               "--weight-decay", str(optimizer["weight_decay"])]
    if optimizer.get("no_decay"):
        options += ["--no-decay", optimizer["no_decay"]]
    if optimizer.get("label_smoothing"):
        options += ["--label-smoothing", str(optimizer["label_smoothing"])]
    if optimizer.get("kind") in ("adam", "adamw"):
        return options + ["--betas", ",".join(map(str, optimizer["betas"])),
                          "--eps", str(optimizer["eps"])]
    return options + ["--momentum", str(optimizer["momentum"])]


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("oracle_dir")
    parser.add_argument("work_dir")
    parser.add_argument("--models", default="lenet5,mlp")
    parser.add_argument("--stages", default="1,2,4")
    parser.add_argument("--schedules", default="gpipe,1f1b")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--target", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--weights", action="store_true")
    parser.add_argument("--bandwidth",
                        help="dpc compile's --bandwidth, to steer the planner")
    parser.add_argument("--weight-ties", type=int, default=0,
                        help="compare_weights.py --ties: single elements "
                        "at activation thresholds that may differ")
    parser.add_argument("--compile-options", default="",
                        help="more dpc compile options, space-separated "
                        "(--seq-buckets 8,16,32,64)")
    parser.add_argument("--run-options", default="",
                        help="more dpc run options (--microbatching padded)")
    parser.add_argument("--label", default="",
                        help="added to each run's name and directory, to "
                        "keep runs of other options apart")
    parser.add_argument("--weights-rtol", type=float, default=None,
                        help="tolerance of the trained weights (default: "
                        "--rtol)")
    parser.add_argument("--shadow", action="store_true",
                        help="check the first stage count's run step by step "
                        "against float64 from its own state (shadow.py) "
                        "instead of against PyTorch's float32 run")
    parser.add_argument("--shadow-weights", action="store_true",
                        help="compare every run's losses with PyTorch's, and "
                        "check the first run's updates step by step against "
                        "float64 from its own state (shadow.py) instead of "
                        "the trained weights")
    parser.add_argument("--weights-noise-factor", type=float, default=None,
                        help="compare_weights.py --noise-factor (default: "
                        "its own)")
    args = parser.parse_args()

    failures = 0
    shadowing = args.shadow or args.shadow_weights
    first_run = True
    for model in args.models.split(","):
        oracle = os.path.join(args.oracle_dir, model + ".oracle.json")
        settings = json.load(open(oracle))
        optimizer = settings["optimizer"]
        for stages in args.stages.split(","):
            for schedule in args.schedules.split(","):
                name = f"{model} stages={stages} {schedule}"
                out = os.path.join(args.work_dir, f"{model}-{stages}-{schedule}")
                if args.label:
                    name += " " + args.label
                    out += "-" + args.label
                kind, extra = schedule, []
                layout = ["--stages", stages]
                if "+" in stages:
                    layout = ["--replicas", stages.replace("+", ",")]
                if schedule == "pipedream-vs":
                    kind, extra = "pipedream", ["--vertical-sync"]
                metrics = os.path.join(out, "metrics.jsonl")
                checkpoints = os.path.join(out, "ckpt")
                # What an earlier run of this script left in the output
                # (dpc compile replaces only what it wrote itself).
                shutil.rmtree(checkpoints, ignore_errors=True)
                for leftover in (metrics, os.path.join(out, "pipedream.oracle.json")):
                    if os.path.exists(leftover):
                        os.remove(leftover)
                code, log = run([
                    "dpc", "compile", os.path.join(args.oracle_dir, model + ".onnx"),
                    "-o", out, *layout, "--schedule", kind, *extra,
                    "--target", args.target,
                    "--microbatches", str(settings["microbatches"]),
                    *(["--bandwidth", args.bandwidth] if args.bandwidth else []),
                    *(["--ignore-index", str(settings["ignore_index"])]
                      if "ignore_index" in settings else []),
                    *(["--loss", settings["dpc_loss"]]
                      if "dpc_loss" in settings else []),
                    *optimizer_options(optimizer),
                    *args.compile_options.split()])
                if code != 0:
                    print(f"{name}: compile failed\n{log}")
                    failures += 1
                    continue
                weights = (args.weights and kind != "pipedream"
                           and not shadowing)
                code, log = run([
                    "dpc", "run", out, "--steps", str(args.steps), "--no-shuffle",
                    "--data", settings["data"],
                    "--no-eval", "--metrics", metrics,
                    *(["--checkpoint-dir", checkpoints] if weights else []),
                    *recipe.run_options(optimizer),
                    *args.run_options.split()])
                if code != 0:
                    print(f"{name}: run failed\n{log}")
                    failures += 1
                    continue
                expected = oracle
                if kind == "pipedream":
                    expected = os.path.join(out, "pipedream.oracle.json")
                    code, log = run([
                        sys.executable, os.path.join(HERE, "oracle", "pipedream.py"),
                        args.oracle_dir, model, out, "-o", expected,
                        "--steps", str(args.steps)])
                    if code != 0:
                        print(f"{name}: emulation failed\n{log}")
                        failures += 1
                        continue
                # The invocation's first run is the one shadow.py follows.
                shadowed = shadowing and kind != "pipedream" and first_run
                first_run = False
                if args.shadow:
                    code, log = 0, f"ran {args.steps} steps"
                else:
                    code, log = run([
                        sys.executable,
                        os.path.join(HERE, "oracle", "compare.py"), metrics,
                        expected, "--rtol", str(args.rtol)])
                verdict = log.strip().splitlines()[-1] if log.strip() else ""
                if code == 0 and recipe.run_options(optimizer):
                    clip = optimizer.get("clip_grad_norm")
                    code, log = run([
                        sys.executable,
                        os.path.join(HERE, "oracle", "compare_recipe.py"),
                        metrics, expected, "--rtol", str(args.rtol),
                        *(["--expect-clip", str(clip)] if clip else [])])
                    verdict += "; " + (log.strip().splitlines()[-1]
                                       if log.strip() else "")
                if code == 0 and shadowed:
                    code, log = run([
                        sys.executable, os.path.join(HERE, "oracle", "shadow.py"),
                        args.oracle_dir, model, out, "--steps", str(args.steps)])
                    shadow_verdict = (log.strip().splitlines()[-1]
                                      if log.strip() else "")
                    verdict = (shadow_verdict if args.shadow
                               else verdict + "; " + shadow_verdict)
                if code == 0 and weights:
                    code, log = run([
                        sys.executable,
                        os.path.join(HERE, "oracle", "compare_weights.py"),
                        checkpoints,
                        os.path.join(args.oracle_dir, model + ".final.safetensors"),
                        "--rtol", str(args.weights_rtol or args.rtol),
                        "--ties", str(args.weight_ties)] +
                        (["--noise-factor", str(args.weights_noise_factor)]
                         if args.weights_noise_factor else []))
                    if log.strip():
                        verdict += "; " + log.strip().splitlines()[-1]
                print(f"{name}: {'ok' if code == 0 else 'MISMATCH'}: {verdict}")
                if code != 0:
                    print(log)
                    failures += 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
