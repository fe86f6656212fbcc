#!/usr/bin/python3
"""Models of the size that needs a pipeline (issue #36), in one run.

  1. Models: a GPT-style decoder (test/e2e/oracle's TinyGPT: token and
     learned position embeddings, pre-norm blocks of causal attention and a
     GELU MLP, the output layer tied to the token embedding) at each size of
     --params and --train-params (presets in gen_random_gpt.py: 0.1B, 0.5B,
     1.5B, 8B, and tiny/small for trying the script), built in PyTorch with
     a fixed seed and exported by torch.onnx.export in training mode (opset
     17, no constant folding, as the oracle exports), then re-saved with
     every weight in one external data file (torch.onnx writes a file per
     tensor past 2 GiB and none below).
  2. Compile: `dpc compile` of each --params model into --compile-stages
     stages (--emit, default exe), Adam: seconds and the compiler's peak
     RSS (the dpc process's, from wait4), against the model's bytes.
  3. Training (--train-params, default 0.5B): compiled into each of
     --stages (default 4 and 8) and trained --steps steps with Adam on a
     random uint16 token file (`--data tokens:FILE,seq=T`, file order):
     start-up (from `dpc run` to the start of training, i.e. the first
     metrics line's arrival less that step's time_s), step 1's loss,
     tokens/s over steps 2..N, MFU against this machine's measured peak
     (bench/common/peak.c) on the cores the ranks use, the largest process's
     peak RSS and the sum over all the run's processes (sampled), and each
     rank's peak memory against the compiler's prediction.
  4. PyTorch eager, in a fresh process, on OpenBLAS (bench/common/
     baseline.py): the same model from the exported bytes, the same
     microbatches, Adam with the same settings, accumulating the
     microbatches as dpc does; its step-1 loss is the reference for dpc's
     (goal: within 1e-4), and its tokens/s and MFU the peer's, with as many
     threads as the first --stages run's ranks have (at most the cores).
  5. --huge (opt-in, long): an --huge-params (8B: 31 GB of float32) model
     written with random weights straight into external data by
     gen_random_gpt.py (no PyTorch; its RSS is reported too), compiled for
     the 16-device cluster-16.json with --emit exe: seconds and peak RSS
     (goal under 4 GB). The model and the compile output are removed after.

Every figure is measured in this run; a step that fails prints its error
line and the others go on. Prints the load average at start and end, a
table, and writes everything to --out as JSON.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "test", "e2e", "oracle"))
sys.path.insert(0, os.path.join(REPO, "bench", "common"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import baseline  # noqa: E402  (OpenBLAS for torch, peak FLOPS, find_dpc)
import external_onnx  # noqa: E402
import gen_random_gpt as gpt  # noqa: E402  (presets, FLOPs, generator)
import measure  # noqa: E402  (peak RSS and start-up of subprocesses)
import torch_side  # noqa: E402  (export and the PyTorch eager peer)

GiB = 1 << 30


def fail(message):
    sys.exit(f"bench/large-models: {message}")


def note_error(record, what, message):
    """Keeps a failed step's error and prints its line; the run goes on."""
    line = message.strip().splitlines()[-1] if message.strip() else "failed"
    record["error"] = f"{what}: {line}"
    print(f"  ERROR {what}: {line}", flush=True)


def error_line(result):
    """The last line of a failed command's stderr (or stdout)."""
    for text in (result.get("stderr", ""), result.get("stdout", "")):
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        if lines:
            return lines[-1]
    return f"exit {result['rc']}"


def load():
    return os.getloadavg()


def directory_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            if not os.path.islink(full):
                total += os.path.getsize(full)
    return total


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

def model_path(args, preset):
    return os.path.join(args.work, f"gpt-{preset}-b{args.microbatch_size}"
                                   f"-s{args.seed}-{args.storage}",
                        "model.onnx")


def ensure_model(args, preset, models):
    """Exports `preset` once (or reuses it with --reuse) and records its
    row; returns the path, or None when the export failed."""
    if preset in models:
        return models[preset].get("path")
    path = model_path(args, preset)
    cfg = gpt.config(preset)
    row = {"preset": preset, "params": gpt.parameter_count(cfg),
           "config": cfg, "path": path}
    models[preset] = row
    if args.reuse and os.path.exists(path):
        row["source"] = "reused"
        row["path"] = path
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not export_torch(args, preset, path, row):
            if not args.fallback or not generate_random(args, preset, path,
                                                        row):
                row["path"] = None
                return None
    row["bytes"] = external_onnx.model_bytes(path)
    row["external_files"] = len(external_onnx.external_files(path))
    return path


def export_torch(args, preset, path, row):
    """torch.onnx export in a fresh process (torch_side.py export)."""
    print(f"== export {preset} ({row['params'] / 1e9:.3f} B parameters) "
          f"with torch.onnx", flush=True)
    result = measure.run([sys.executable, os.path.join(HERE, "torch_side.py"),
                          "export", path, "--params", preset,
                          "--batch", str(args.microbatch_size),
                          "--seed", str(args.seed),
                          "--storage", args.storage])
    row["export_s"] = result["seconds"]
    row["export_rss"] = result["maxrss"]
    if result["rc"] != 0:
        note_error(row, f"torch export {preset}", error_line(result))
        return False
    row["source"] = "torch.onnx"
    return True


def generate_random(args, preset, path, row):
    """The same graph with random weights from gen_random_gpt.py, when the
    torch export failed (torch.onnx's own memory can exceed this machine's
    at 1.5 B): the compile's figures stay comparable, and PyTorch loads
    these weights by name as it loads the export's."""
    print(f"== generate {preset} with gen_random_gpt.py instead", flush=True)
    command = [sys.executable, os.path.join(HERE, "gen_random_gpt.py"), path,
               "--params", preset, "--batch", str(args.microbatch_size),
               "--seed", str(args.seed)]
    command += ["--inline"] if args.storage == "inline" else []
    result = measure.run(command)
    row["generate_s"] = result["seconds"]
    row["generate_rss"] = result["maxrss"]
    if result["rc"] != 0:
        note_error(row, f"generate {preset}", error_line(result))
        return False
    row["source"] = "gen_random_gpt (torch export failed)"
    return True


def drop_model(args, preset, models, keep_for):
    """Removes a model that no later step needs (disk), unless --keep."""
    row = models.get(preset)
    if args.keep or not row or not row.get("path") or preset in keep_for:
        return
    external_onnx.remove_model(row["path"])
    shutil.rmtree(os.path.dirname(row["path"]), ignore_errors=True)


# ---------------------------------------------------------------------------
# dpc compile and dpc run
# ---------------------------------------------------------------------------

def compile_model(args, preset, onnx_path, out_dir, stages=None,
                  cluster=None, emit="exe"):
    """`dpc compile` in a fresh process: a row with seconds, peak RSS and
    the output's bytes."""
    shutil.rmtree(out_dir, ignore_errors=True)
    command = [args.dpc, "compile", onnx_path, "-o", out_dir,
               "--microbatches", str(args.microbatches),
               "--optimizer", "adam", "--lr", str(args.lr),
               "--emit", emit]
    command += ["--stages", str(stages)] if stages else []
    command += ["--cluster", cluster] if cluster else []
    command += shlex.split(args.compile_args)
    row = {"preset": preset, "stages": stages, "emit": emit,
           "cluster": cluster, "command": " ".join(command)}
    print(f"== {' '.join(command)}", flush=True)
    result = measure.run(command)
    row["compile_s"] = result["seconds"]
    row["compile_rss"] = result["maxrss"]
    row["compile_anon"] = result["anon_peak"]
    if result["rc"] != 0:
        note_error(row, f"dpc compile {preset}", error_line(result))
        return row
    row["output_bytes"] = directory_bytes(out_dir)
    try:
        with open(os.path.join(out_dir, "plan.json")) as f:
            plan = json.load(f)
        row["plan_replicas"] = [s.get("replicas", 1) for s in plan["stages"]]
    except (OSError, ValueError, KeyError):
        pass
    return row


def read_metrics(path):
    steps, ranks = [], []
    with open(path) as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if "step" in record and "loss" in record:
                steps.append(record)
            elif "rank" in record and "peak_bytes" in record:
                ranks.append(record)
    return steps, ranks


def train(args, out_dir, tokens, cfg, stages):
    """`dpc run` of a compiled model: a row of start-up, losses, tokens/s,
    RSS and the ranks' peak memory."""
    metrics = os.path.join(out_dir, "metrics.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    command = [args.dpc, "run", out_dir, "--data",
               f"tokens:{tokens},dtype=uint16,seq={cfg['length']}",
               "--steps", str(args.steps), "--no-shuffle", "--no-eval",
               "--metrics", metrics] + shlex.split(args.run_args)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads_per_rank),
               OMPI_MCA_hwloc_base_binding_policy="none")
    print(f"== OMP_NUM_THREADS={args.threads_per_rank} {' '.join(command)}",
          flush=True)
    result = measure.run(command, env=env, first_line_of=metrics,
                         sample_tree=True)
    row = {"stages": stages, "wall_s": result["seconds"],
           "largest_rss": result["maxrss"],
           "total_rss_sampled": result.get("tree_rss_peak")}
    if result["rc"] != 0:
        note_error(row, f"dpc run ({stages} stages)", error_line(result))
    if not os.path.exists(metrics):
        return row
    steps, ranks = read_metrics(metrics)
    if not steps:
        return row
    row["losses"] = [s["loss"] for s in steps]
    row["first_loss"] = steps[0]["loss"]
    row["steps_done"] = len(steps)
    row["first_step_s"] = steps[0]["time_s"]
    if result.get("first_line_s") is not None:
        row["startup_s"] = result["first_line_s"] - steps[0]["time_s"]
        row["to_first_step_s"] = result["first_line_s"]
    first, last = (steps[0], steps[-1]) if len(steps) > 1 else \
        ({"samples": 0, "time_s": 0.0}, steps[0])
    seconds = last["time_s"] - first["time_s"]
    if seconds > 0:
        row["tokens_s"] = ((last["samples"] - first["samples"]) *
                           cfg["length"] / seconds)
    if ranks:
        row["rank_peak_bytes"] = [r["peak_bytes"] for r in ranks]
        row["rank_predicted_bytes"] = [r.get("predicted_peak_bytes")
                                       for r in ranks]
        errors = [r["peak_bytes"] / r["predicted_peak_bytes"] - 1
                  for r in ranks if r.get("predicted_peak_bytes")]
        if errors:
            row["memory_prediction_error"] = max(errors, key=abs)
    return row


def write_tokens(args, cfg):
    """A random uint16 token file, enough windows for every step (dpc
    trains on its first 90%)."""
    needed = (args.steps * args.microbatches * args.microbatch_size *
              cfg["length"] + 1)
    count = max(int(needed / 0.85) + 4 * cfg["length"], 1 << 20)
    path = os.path.join(args.work, f"tokens-v{cfg['vocab']}-s{args.seed}.bin")
    if not os.path.exists(path) or os.path.getsize(path) != 2 * count:
        rng = np.random.default_rng(args.seed)
        rng.integers(0, cfg["vocab"], size=count,
                     dtype=np.uint16).tofile(path)
    return path


# ---------------------------------------------------------------------------
# The steps of the run
# ---------------------------------------------------------------------------

def compile_sizes(args, models, results):
    """Step 2: compile-only rows (the training size's come from step 3)."""
    for preset in args.params:
        if preset == args.train_params and args.compile_stages in \
                args.stages:
            continue  # its compile into that many stages is step 3's
        path = ensure_model(args, preset, models)
        if path is None:
            continue
        out_dir = os.path.join(args.work, f"out-{preset}-"
                                          f"{args.compile_stages}")
        row = compile_model(args, preset, path, out_dir,
                            stages=args.compile_stages, emit=args.emit)
        row["model_bytes"] = models[preset].get("bytes")
        results["compile"].append(row)
        if not args.keep:
            shutil.rmtree(out_dir, ignore_errors=True)
        drop_model(args, preset, models, keep_for={args.train_params})


def train_size(args, models, results):
    """Step 3 and 4: the training size on each stage count, then PyTorch."""
    preset = args.train_params
    cfg = gpt.config(preset)
    path = ensure_model(args, preset, models)
    if path is None:
        return
    tokens = write_tokens(args, cfg)
    flops = gpt.training_flops_per_token(cfg)
    results["train_config"] = {
        "preset": preset, "microbatches": args.microbatches,
        "microbatch_size": args.microbatch_size, "steps": args.steps,
        "lr": args.lr, "tokens_per_step": args.microbatches *
        args.microbatch_size * cfg["length"], "flops_per_token": flops,
        "threads_per_rank": args.threads_per_rank, "tokens_file": tokens}
    for stages in args.stages:
        out_dir = os.path.join(args.work, f"out-{preset}-{stages}")
        row = compile_model(args, preset, path, out_dir, stages=stages)
        row["model_bytes"] = models[preset].get("bytes")
        results["compile"].append(row)
        if "error" in row:
            results["train"].append({"stages": stages,
                                     "error": row["error"]})
            continue
        trained = train(args, out_dir, tokens, cfg, stages)
        cores = min(stages * args.threads_per_rank, os.cpu_count())
        trained["cores"] = cores
        if trained.get("tokens_s") and args.peak:
            trained["mfu"] = (flops * trained["tokens_s"] /
                              (args.peak * 1e9 * cores))
        results["train"].append(trained)
        if not args.keep:
            shutil.rmtree(out_dir, ignore_errors=True)
    if args.no_torch:
        return
    print(f"== PyTorch eager, {args.torch_threads} threads, {args.steps} "
          f"steps", flush=True)
    peer = torch_side.run_peer(args, path, preset, tokens)
    if peer.get("tokens_s") and args.peak:
        peer["mfu"] = (flops * peer["tokens_s"] /
                       (args.peak * 1e9 * min(args.torch_threads,
                                              os.cpu_count())))
    results["torch"] = peer
    for row in results["train"]:
        if "first_loss" in row and "first_loss" in peer:
            row["first_loss_diff"] = abs(row["first_loss"] -
                                         peer["first_loss"])
            pairs = list(zip(row["losses"], peer["losses"]))
            row["max_loss_diff"] = max(abs(a - b) for a, b in pairs)
        if row.get("tokens_s") and peer.get("tokens_s"):
            row["vs_torch"] = row["tokens_s"] / peer["tokens_s"]


def huge(args, results):
    """Step 5: a model larger than memory, generated without PyTorch,
    compiled for 16 devices; removed afterwards."""
    cfg = gpt.config(args.huge_params)
    params = gpt.parameter_count(cfg)
    row = {"preset": args.huge_params, "params": params,
           "fill": args.huge_fill, "cluster": args.huge_cluster}
    results["huge"] = row
    os.makedirs(args.huge_dir, exist_ok=True)
    path = os.path.join(args.huge_dir, f"gpt-{args.huge_params}.onnx")
    out_dir = os.path.join(args.huge_dir, f"out-{args.huge_params}")
    expected = 4 * params
    # The model (no disk when sparse), the compile's stage weights, and
    # room to spare.
    needed = (1 if args.huge_fill == "sparse" else 2) * expected + 4 * GiB
    free = shutil.disk_usage(args.huge_dir).free
    row["disk_free"], row["disk_needed"] = free, needed
    if free < needed and not args.huge_force:
        note_error(row, "huge", f"{args.huge_dir} has {free / 1e9:.1f} GB "
                   f"free, the model and its compile output need about "
                   f"{needed / 1e9:.1f} GB (--huge-dir elsewhere, a smaller "
                   f"--huge-params, or --huge-force)")
        return
    print(f"== generate {args.huge_params} ({params / 1e9:.2f} B "
          f"parameters, {expected / 1e9:.1f} GB) into {path}", flush=True)
    try:
        result = measure.run([sys.executable, os.path.join(
            HERE, "gen_random_gpt.py"), path, "--params", args.huge_params,
            "--batch", str(args.microbatch_size), "--seed", str(args.seed),
            "--fill", args.huge_fill])
        row["generate_s"] = result["seconds"]
        row["generate_rss"] = result["maxrss"]
        if result["rc"] != 0:
            note_error(row, "generate", error_line(result))
            return
        row["bytes"] = external_onnx.model_bytes(path)
        compiled = compile_model(args, args.huge_params, path, out_dir,
                                 stages=args.huge_stages,
                                 cluster=args.huge_cluster, emit="exe")
        for key in ("compile_s", "compile_rss", "output_bytes",
                    "plan_replicas", "error", "command"):
            if key in compiled:
                row[key] = compiled[key]
    finally:
        if not args.keep:
            shutil.rmtree(out_dir, ignore_errors=True)
            try:
                external_onnx.remove_model(path)
            except Exception:  # noqa: BLE001  (an unreadable model file)
                pass
            for leftover in (path, path + ".data"):
                if os.path.exists(leftover):
                    os.remove(leftover)


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------

def fmt(value, spec):
    if value is None:
        return "-"
    if spec == "error":  # the whole line is in the JSON
        return value if len(value) <= 100 else value[:97] + "..."
    try:
        return spec.format(value)
    except (ValueError, TypeError):
        return str(value)


def table(title, columns, rows):
    """Prints rows (dicts) under `columns` [(key or function, title,
    format)]."""
    cells = [[t for _, t, _ in columns]]
    for row in rows:
        cells.append([fmt(key(row) if callable(key) else row.get(key), spec)
                      for key, _, spec in columns])
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    print(f"\n{title}")
    for i, r in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def ratio(a, b):
    return lambda row: (row[a] / row[b] if row.get(a) and row.get(b) and
                        "error" not in row else None)


def report(results):
    gib = "{:.2f}"
    models = list(results["models"].values())
    table("Models (torch.onnx export; storage: "
          f"{results['args']['storage']})", [
        ("preset", "model", "{}"), ("params", "params", "{:,}"),
        (lambda r: r.get("bytes") and r["bytes"] / 1e9, "GB", gib),
        ("source", "source", "{}"),
        ("export_s", "export s", "{:.1f}"),
        (lambda r: r.get("export_rss") and r["export_rss"] / GiB,
         "export RSS GiB", gib),
        ("error", "error", "error")], models)
    table("dpc compile (goal: peak RSS < 25% of the model's bytes)", [
        ("preset", "model", "{}"), ("stages", "stages", "{}"),
        ("emit", "emit", "{}"),
        (lambda r: r.get("model_bytes") and r["model_bytes"] / 1e9,
         "model GB", gib),
        ("compile_s", "compile s", "{:.1f}"),
        (lambda r: r.get("compile_rss") and r["compile_rss"] / GiB,
         "peak RSS GiB", gib),
        (ratio("compile_rss", "model_bytes"), "RSS/model", "{:.0%}"),
        (lambda r: r.get("compile_anon") and r["compile_anon"] / GiB,
         "private GiB", gib),
        (ratio("compile_anon", "model_bytes"), "private/model", "{:.0%}"),
        (lambda r: r.get("output_bytes") and r["output_bytes"] / 1e9,
         "output GB", gib),
        ("error", "error", "error")], results["compile"])
    config = results.get("train_config")
    if config:
        peer = results.get("torch", {})
        rows = results["train"] + ([dict(peer, stages="torch")]
                                   if peer else [])
        table(f"Training {config['preset']}: {config['steps']} steps of "
              f"{config['microbatches']} x {config['microbatch_size']} "
              f"samples ({config['tokens_per_step']} tokens), Adam lr "
              f"{config['lr']} (goal: first loss within 1e-4 of PyTorch's)",
              [("stages", "stages", "{}"),
               ("startup_s", "start-up s", "{:.1f}"),
               ("first_step_s", "step 1 s", "{:.1f}"),
               ("first_loss", "loss 1", "{:.6f}"),
               ("first_loss_diff", "|loss 1 - torch|", "{:.1e}"),
               ("max_loss_diff", "max |loss - torch|", "{:.1e}"),
               ("steps_done", "steps", "{}"),
               ("tokens_s", "tokens/s", "{:.1f}"),
               ("vs_torch", "vs torch", "{:.2f}"),
               ("mfu", "MFU", "{:.1%}"), ("cores", "cores", "{}"),
               (lambda r: r.get("largest_rss") and r["largest_rss"] / GiB,
                "largest RSS GiB", gib),
               (lambda r: r.get("total_rss_sampled") and
                r["total_rss_sampled"] / GiB, "all RSS GiB", gib),
               ("memory_prediction_error", "mem vs predicted", "{:+.1%}"),
               ("error", "error", "error")], rows)
    if results.get("huge"):
        table("Larger than memory: generated without PyTorch, compiled for "
              "16 devices (goal: peak RSS < 4 GB)", [
                  ("preset", "model", "{}"), ("params", "params", "{:,}"),
                  (lambda r: r.get("bytes") and r["bytes"] / 1e9,
                   "model GB", gib),
                  ("generate_s", "generate s", "{:.0f}"),
                  (lambda r: r.get("generate_rss") and
                   r["generate_rss"] / GiB, "generator RSS GiB", gib),
                  ("compile_s", "compile s", "{:.0f}"),
                  (lambda r: r.get("compile_rss") and
                   r["compile_rss"] / GiB, "compile RSS GiB", gib),
                  ("plan_replicas", "replicas a stage", "{}"),
                  ("error", "error", "error")], [results["huge"]])


def goals(results):
    """Issue #36's goals, met or not, from the figures above."""
    lines = []

    def add(name, met, figure):
        lines.append({"goal": name, "met": met, "figure": figure})

    for row in results["compile"]:
        if row.get("compile_rss") and row.get("model_bytes") and \
                "error" not in row:
            share = row["compile_rss"] / row["model_bytes"]
            private = row.get("compile_anon", 0) / row["model_bytes"]
            add(f"compile {row['preset']} into {row['stages']} stages: peak "
                f"RSS < 25% of the model's bytes", share < 0.25,
                f"{share:.1%}; private memory {private:.1%}, the rest "
                f"the shared libraries' resident code")
    steps = results.get("train_config", {}).get("steps")
    for row in results["train"]:
        if "first_loss_diff" in row:
            add(f"{row['stages']} stages: first loss within 1e-4 of "
                f"PyTorch's", row["first_loss_diff"] <= 1e-4,
                f"{row['first_loss_diff']:.1e}")
        add(f"{row['stages']} stages: trains {steps} steps with Adam",
            row.get("steps_done") == steps and "error" not in row,
            f"{row.get('steps_done', 0)} steps")
    huge_row = results.get("huge")
    if huge_row:
        rss = huge_row.get("compile_rss")
        add(f"{huge_row['preset']} compiles for 16 devices with peak RSS "
            f"< 4 GB", bool(rss) and rss < 4e9 and "error" not in huge_row,
            f"{rss / 1e9:.2f} GB" if rss else "no compile")
    print("\nGoals (issue #36)")
    for line in lines:
        print(f"  {'met    ' if line['met'] else 'NOT met'}  {line['goal']}"
              f" ({line['figure']})")
    results["goals"] = lines


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]))
    presets = list(gpt.PRESETS)
    parser.add_argument("--dpc", help="the dpc driver (default build/bin/"
                                      "dpc, else the one on PATH)")
    parser.add_argument("--work", default="/tmp/dpc-large-models",
                        help="models, token file and compile outputs")
    parser.add_argument("--out", help="the JSON of every figure (default "
                                      "WORK/results.json)")
    parser.add_argument("--params", default="0.1B,0.5B,1.5B",
                        help="sizes to compile, comma-separated presets of "
                             f"{', '.join(presets)}; 'none' for none")
    parser.add_argument("--compile-stages", type=int, default=4)
    parser.add_argument("--emit", default="exe", choices=["plan", "exe"],
                        help="--emit of the compile-only sizes")
    parser.add_argument("--train-params", default="0.5B",
                        help="the size trained ('none' to skip)")
    parser.add_argument("--stages", default="4,8",
                        help="stage counts the training size runs on")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--microbatch-size", type=int, default=1,
                        help="samples a microbatch (the export's batch)")
    parser.add_argument("--lr", type=float, default=1e-4, help="Adam's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads-per-rank", type=int, default=1)
    parser.add_argument("--torch-threads", type=int,
                        help="PyTorch's threads (default the first --stages "
                             "run's ranks x threads, at most the cores)")
    parser.add_argument("--torch-blas", default="openblas",
                        help="openblas, system or a directory with "
                             "libblas.so.3 (bench/common/baseline.py)")
    parser.add_argument("--no-torch", action="store_true",
                        help="skip the PyTorch peer")
    parser.add_argument("--compile-args", default="",
                        help="more dpc compile options, e.g. '--recompute "
                             "auto'")
    parser.add_argument("--run-args", default="",
                        help="more dpc run options")
    parser.add_argument("--huge", action="store_true",
                        help="also the larger-than-memory model (long)")
    parser.add_argument("--huge-params", default="8B", choices=presets)
    parser.add_argument("--huge-dir", help="where it is written (default "
                                           "WORK)")
    parser.add_argument("--huge-fill", default="random",
                        choices=["random", "constant", "sparse"])
    parser.add_argument("--huge-cluster",
                        default=os.path.join(HERE, "cluster-16.json"))
    parser.add_argument("--huge-stages", type=int,
                        help="force the stage count (default: the planner "
                             "chooses stages and replicas on the cluster)")
    parser.add_argument("--huge-force", action="store_true",
                        help="go on even when the disk looks too small")
    parser.add_argument("--storage", default="external",
                        choices=["external", "inline"],
                        help="the exported models' weights: in one external "
                             "file (default), or kept inline in the "
                             "protobuf as torch.onnx writes models under "
                             "2 GiB (to compare, or for a dpc without "
                             "external-data import)")
    parser.add_argument("--no-fallback", dest="fallback",
                        action="store_false",
                        help="when torch.onnx's export of a size fails, "
                             "report it and skip the size instead of "
                             "generating the same graph with random weights "
                             "(gen_random_gpt.py)")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse models exported by an earlier --keep run")
    parser.add_argument("--keep", action="store_true",
                        help="keep models and compile outputs")
    args = parser.parse_args()
    for name in ("params", "stages"):
        text = getattr(args, name)
        setattr(args, name, [] if text == "none" else text.split(","))
    for preset in args.params + [args.train_params, args.huge_params]:
        if preset not in presets + ["none"]:
            fail(f"unknown size '{preset}' (presets: {', '.join(presets)})")
    args.stages = [int(s) for s in args.stages]
    if args.train_params == "none":
        args.train_params = None
    args.huge_dir = args.huge_dir or args.work
    args.out = args.out or os.path.join(args.work, "results.json")
    if args.torch_threads is None:
        first = args.stages[0] if args.stages else 1
        args.torch_threads = min(first * args.threads_per_rank,
                                 os.cpu_count())
    return args


def main():
    args = parse_args()
    needs_torch = not args.no_torch and args.train_params
    if needs_torch:
        baseline.use_blas(args.torch_blas, fail)  # may start us again
    args.dpc = baseline.find_dpc(args.dpc, fail)
    os.makedirs(args.work, exist_ok=True)
    start_load = load()
    print(f"bench/large-models: load average at start {start_load[0]:.2f} "
          f"{start_load[1]:.2f} {start_load[2]:.2f} on {os.cpu_count()} "
          f"cores; dpc {args.dpc}", flush=True)
    try:
        args.peak = baseline.peak_gflops()
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"  ERROR peak: {e}")
        args.peak = None
    print(f"fp32 peak {args.peak} GFLOPS a core (bench/common/peak.c)",
          flush=True)
    results = {"load_start": start_load, "peak_gflops_core": args.peak,
               "cores": os.cpu_count(), "models": {}, "compile": [],
               "train": [], "args": {k: v for k, v in vars(args).items()
                                     if k != "peak"}}
    started = time.time()
    steps = [("compile", lambda: compile_sizes(args, results["models"],
                                               results))]
    if args.train_params:
        steps.append(("train", lambda: train_size(args, results["models"],
                                                  results)))
    if args.huge:
        steps.append(("huge", lambda: huge(args, results)))
    for name, step in steps:
        try:
            step()
        except Exception as e:  # noqa: BLE001  (report it, do the rest)
            failed = {}
            note_error(failed, name, f"{type(e).__name__}: {e}")
            results.setdefault("errors", []).append(failed["error"])
    if args.train_params:
        drop_model(args, args.train_params, results["models"], set())
    results["seconds"] = time.time() - started
    results["load_end"] = load()
    report(results)
    goals(results)
    end = results["load_end"]
    print(f"\nload average at end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}; "
          f"{results['seconds']:.0f} s in all; results in {args.out}")
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main()
