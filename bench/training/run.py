#!/usr/bin/python3
"""Training throughput: dpc --stages 1 against PyTorch eager, in one run.

The peer is PyTorch eager at its best on this machine: its matmuls on
OpenBLAS (found or fetched by bench/common/baseline.py; `--torch-blas system`
for Debian's default, netlib's reference BLAS), OpenBLAS's pool and PyTorch's
both set to T threads, convnets in the faster of contiguous and channels_last
(probed for each row), and under bf16 autocast when dpc runs --precision
bf16. Every row reports MFU against this machine's fp32 peak, measured by
bench/common/peak.c.

For every model (by default LeNet-5 and the MLP of test/e2e/oracle/oracle.py;
`--models headline` for torchvision's ResNet-18 and ResNet-50, the tiny GPT
and the GPT-2-small-sized decoder of models.py), minibatch (M microbatches x
B samples) and thread count T, the script

  1. builds the model with a fixed seed and exports it to ONNX with a static
     batch of B through oracle.py's own export (which also loads the exported
     initializers back, so PyTorch and dpc start from the same bytes);
  2. compiles it with `dpc compile --stages 1` (compile time reported apart);
  3. trains it with `dpc run` for WARMUP + STEPS steps on Fashion-MNIST in file
     order with OMP_NUM_THREADS=T, and takes dpc's samples/s from the metrics
     file's time_s over the last STEPS steps (the launch is left out there and
     reported separately as a wall-clock figure);
  4. trains the same model in PyTorch eager with torch.set_num_threads(T) on
     the same samples in the same order: forward, CrossEntropyLoss (mean over
     the minibatch), backward, SGD momentum step, accumulating the M
     microbatches before the step as dpc does ("torch mb"), and once more on
     the whole minibatch at once ("torch full");
  5. for T = 2 also runs dpc with --stages 2 (2 ranks x 1 thread) for
     reference.

dpc compiles with `--schedule auto` unless --schedule says otherwise: the
schedule is dpc's to choose, and auto keeps 1f1b on one stage and takes
zb-h1 or zb-2p on two stages where the simulator predicts it faster.

The sequence models (`--models tiny-gpt,lstm-lm,gru-lm`: oracle.py's
GPT-like decoder, LSTM and GRU language models) read windows of character tokens of
oracle/text.py's text, one starting at every token, with next-token labels
and the token-level loss (the mean over every position); their rows also
give tokens/s (samples/s times the window length).

With --target cuda both sides train on the GPU: dpc's ranks are compiled
with --target cuda, PyTorch runs eagerly on torch.device("cuda") with TF32
off (as dpc's kernels), its timer starting and stopping on a synchronized
device; T is 1, and the 2-stage reference row shares the GPU (or takes two).

It prints one table. Benchmarks are not tests: nothing here asserts a time.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "test", "e2e", "oracle"))
sys.path.insert(0, os.path.join(REPO, "bench", "common"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import baseline  # noqa: E402  (the peer at its best: BLAS, formats, peak)

import torch  # noqa: E402

import numpy as np  # noqa: E402

import oracle  # noqa: E402  (model definitions, export, IDX reader)
import text  # noqa: E402  (the sequence models' character tokens)
import vision  # noqa: E402  (torchvision's models' inputs)
import models as bench_models  # noqa: E402,F401  (registers bench-only models)

# --models headline: the models the performance goals are stated for.
HEADLINE = ["tv-resnet18", "tv-resnet50", "tiny-gpt", "gpt2-small"]
TRAIN_SAMPLES = 60000  # Fashion-MNIST training set


def fail(message):
    sys.exit(f"bench/training: {message}")


def parse_batches(text):
    """'4x16,4x64' -> [(4, 16), (4, 64)]."""
    batches = []
    for item in text.split(","):
        try:
            m, b = (int(v) for v in item.lower().split("x"))
        except ValueError:
            fail(f"--batches: '{item}' is not MxB")
        batches.append((m, b))
    return batches


def load_avg1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


# ---------------------------------------------------------------------------
# dpc side
# ---------------------------------------------------------------------------

def dpc_compile(dpc, onnx_path, out_dir, stages, microbatches, args):
    command = [dpc, "compile", onnx_path, "-o", out_dir,
               "--target", args.target,
               "--stages", str(stages), "--microbatches", str(microbatches),
               "--schedule", args.schedule, "--lr", str(args.lr),
               "--momentum", str(args.momentum),
               "--precision", args.precision]
    if args.fusion:
        command += ["--fusion", args.fusion]
    # A caller's own options (bench/families: --ignore-index for BERT).
    command += getattr(args, "compile_options", [])
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        fail(f"{' '.join(command)} failed ({result.returncode}):\n"
             f"{result.stderr}")
    return seconds


def read_metrics(path):
    steps = []
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "step" in record:
                steps.append(record)
    return steps


def dpc_train(dpc, out_dir, data, total_steps, warmup, threads, bind_cores,
              args, trace=None):
    """Runs `dpc run` and returns (timed samples/s, launch-inclusive
    samples/s, wall seconds, per-step losses)."""
    metrics = os.path.join(out_dir, "metrics.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    command = [dpc, "run", out_dir, "--data", data,
               "--steps", str(total_steps), "--no-shuffle", "--no-eval",
               "--metrics", metrics]
    if trace:
        command += ["--trace", trace]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if not bind_cores:
        # Open MPI binds a job of 1 or 2 ranks to one core per rank, which
        # would squeeze a rank's T OpenMP threads onto a single core.
        env["OMPI_MCA_hwloc_base_binding_policy"] = "none"
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        fail(f"{' '.join(command)} failed ({result.returncode}):\n"
             f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    records = read_metrics(metrics)
    if len(records) != total_steps:
        fail(f"{metrics}: {len(records)} steps, expected {total_steps}")
    first, last = records[warmup - 1], records[-1]
    timed = (last["samples"] - first["samples"]) / (last["time_s"] -
                                                     first["time_s"])
    with_launch = last["samples"] / wall
    return timed, with_launch, wall, [r["loss"] for r in records]


# ---------------------------------------------------------------------------
# PyTorch side
# ---------------------------------------------------------------------------

def torch_train(model, x, y, total_steps, warmup, microbatches,
                microbatch_size, accumulate, args):
    """Trains in place and returns (timed samples/s, per-step losses).

    accumulate=True runs the M microbatches one after another, each loss
    scaled by 1/M so that the gradients sum to those of the minibatch mean,
    and steps once; accumulate=False runs the M*B samples at once. The
    forward and the loss run under bf16 autocast with --precision bf16."""
    minibatch = microbatches * microbatch_size
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr,
                                momentum=args.momentum)
    # nn.CrossEntropyLoss's mean, over every position for logits [B, T, C].
    loss_fn = oracle.cross_entropy
    losses = []
    started = None
    cuda = x.is_cuda
    for step in range(total_steps):
        if step == warmup:
            if cuda:
                torch.cuda.synchronize()
            started = time.perf_counter()
        begin = step * minibatch
        inputs = x[begin:begin + minibatch]
        labels = y[begin:begin + minibatch]
        optimizer.zero_grad()
        if accumulate:
            total = 0.0
            for k in range(microbatches):
                part = slice(k * microbatch_size, (k + 1) * microbatch_size)
                with baseline.autocast(torch, args.precision):
                    loss = loss_fn(model(inputs[part]),
                                   labels[part]) / microbatches
                loss.backward()
                total += loss.item()
            losses.append(total)
        else:
            with baseline.autocast(torch, args.precision):
                loss = loss_fn(model(inputs), labels)
            loss.backward()
            losses.append(loss.item())
        optimizer.step()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    return (total_steps - warmup) * minibatch / seconds, losses


def fresh_model(name, microbatch_size, export_dir, device="cpu"):
    """The oracle's model with a fixed seed, exported for a static batch and
    reloaded from the exported initializers, on `device`. Returns (model,
    onnx path)."""
    torch.manual_seed(0)
    model = oracle.build(name)
    path, _ = oracle.export_and_reload(model, name, microbatch_size,
                                       export_dir)
    return model.to(device), path


def token_data(length, count, export_dir, name):
    """`count` windows of `length` character tokens of text.py's text, one
    starting at every token (stride 1, wrapping round when the text runs
    out), with their next-token labels: tensors for PyTorch and the npy spec
    for dpc."""
    with open(text.DEFAULT_TEXT, "rb") as f:
        tokens = text.tokens_of(f.read())
    starts = np.arange(count) % (tokens.size - length)
    index = starts[:, None] + np.arange(length)[None, :]
    inputs, labels = tokens[index], tokens[index + 1]
    files = [os.path.join(export_dir, f"{name}.{part}.npy")
             for part in ("inputs", "labels")]
    np.save(files[0], inputs)
    np.save(files[1], labels)
    return (torch.from_numpy(inputs), torch.from_numpy(labels),
            "npy:" + ",".join(files))


LOSS_CHECK_STEPS = 20  # the oracle's window; later steps drift apart by
                      # rounding (summation orders differ), as any two
                      # implementations do


def max_relative_difference(a, b):
    pairs = list(zip(a, b))[:LOSS_CHECK_STEPS]
    return max(abs(p - q) / max(abs(q), 1e-12) for p, q in pairs)


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------

def measure(name, microbatches, microbatch_size, threads, work, dpc, args,
            total_steps):
    """One table row (a dict)."""
    export_dir = os.path.join(work, f"{name}-b{microbatch_size}")
    os.makedirs(export_dir, exist_ok=True)
    row = {"model": name, "batch": f"{microbatches}x{microbatch_size}",
           "threads": threads, "load": load_avg1(), "peak": args.peak}
    x, y = oracle.load_split(args.data, "train",
                             total_steps * microbatches * microbatch_size)

    # dpc, 1 stage, T threads.
    model, onnx_path = fresh_model(name, microbatch_size, export_dir)
    if oracle.reads_tokens(model):
        # Sequence models: throughput in tokens too (a sample is T tokens).
        length = oracle.input_shape_of(model)[0]
        row["tokens"] = length
        x, y, data = token_data(length, total_steps * microbatches *
                                microbatch_size, export_dir, name)
    else:
        # torchvision's models take 3-channel upscaled images, which dpc
        # reads as .npy (oracle/vision.py).
        x, data = vision.training_data(x, y, oracle.input_shape_of(model),
                                       export_dir, name,
                                       f"fashion-mnist:{args.data}")
    x, y = x.to(args.device), y.to(args.device)
    out1 = os.path.join(export_dir, "s1")
    shutil.rmtree(out1, ignore_errors=True)
    row["compile_s"] = dpc_compile(dpc, onnx_path, out1, 1, microbatches, args)
    trace = (os.path.join(args.keep, f"{name}-{row['batch']}-t{threads}.json")
             if args.trace else None)
    (row["dpc"], row["dpc_wall"], row["wall_s"],
     dpc_losses) = dpc_train(dpc, out1, data, total_steps, args.warmup,
                             threads, False, args, trace)
    flops = baseline.forward_flops(out1)
    if flops:
        # Training work per sample: the forward and a backward of twice
        # its FLOPs (the usual 3x; recomputation is not counted as work).
        row["flops_sample"] = 3 * flops / microbatch_size

    # PyTorch eager, same start, same data, T threads (its intra-op pool
    # and OpenBLAS's own both), convnets in the faster memory format.
    torch.set_num_threads(threads)
    if args.blas_threads:
        args.blas_threads(threads)
    row["torch_format"], memory_format = "contiguous", None
    if x.dim() == 4 and args.device == "cpu":
        probe_steps = 3
        row["torch_format"], memory_format = baseline.faster_memory_format(
            torch,
            lambda m, inputs: torch_train(m, inputs, y, probe_steps, 1,
                                          microbatches, microbatch_size,
                                          True, args)[0],
            lambda: fresh_model(name, microbatch_size, export_dir)[0], x)
        x = x.contiguous(memory_format=memory_format)
    model, _ = fresh_model(name, microbatch_size, export_dir, args.device)
    if memory_format is not None:
        model = model.to(memory_format=memory_format)
    row["torch_mb"], torch_losses = torch_train(
        model, x, y, total_steps, args.warmup, microbatches, microbatch_size,
        True, args)
    row["loss_diff"] = max_relative_difference(dpc_losses, torch_losses)
    if not args.no_full:
        model, _ = fresh_model(name, microbatch_size, export_dir, args.device)
        if memory_format is not None:
            model = model.to(memory_format=memory_format)
        row["torch_full"], _ = torch_train(
            model, x, y, total_steps, args.warmup, microbatches,
            microbatch_size, False, args)

    # dpc, 2 stages on the 2 cores (1 thread per rank), or on the GPU(s),
    # for reference.
    if (threads == 2 or args.target == "cuda") and not args.no_two_stage:
        out2 = os.path.join(export_dir, "s2")
        shutil.rmtree(out2, ignore_errors=True)
        dpc_compile(dpc, onnx_path, out2, 2, microbatches, args)
        with open(os.path.join(out2, "schedule.json")) as f:
            row["kind_2st"] = json.load(f)["kind"]  # auto's choice
        row["dpc_2st"], _, _, _ = dpc_train(dpc, out2, data, total_steps,
                                            args.warmup, 1, True, args)
    row["load"] = max(row["load"], load_avg1())
    return row


def format_table(rows):
    columns = [
        ("model", "model", "{}"),
        ("batch", "MxB", "{}"),
        ("threads", "T", "{}"),
        ("dpc", "dpc/s", "{:.0f}"),
        ("torch_mb", "torch mb/s", "{:.0f}"),
        ("ratio_mb", "dpc/torch mb", "{:.2f}"),
        ("torch_full", "torch full/s", "{:.0f}"),
        ("ratio_full", "dpc/torch full", "{:.2f}"),
        ("dpc_2st", "dpc 2st/s", "{:.0f}"),
        ("kind_2st", "2st kind", "{}"),
        ("dpc_tokens", "dpc tok/s", "{:.0f}"),
        ("torch_tokens", "torch mb tok/s", "{:.0f}"),
        ("dpc_mfu", "dpc MFU", "{:.1%}"),
        ("torch_mfu", "torch MFU", "{:.1%}"),
        ("torch_format", "torch format", "{}"),
        ("dpc_wall", "dpc wall/s", "{:.0f}"),
        ("compile_s", "compile s", "{:.2f}"),
        ("loss_diff", "loss diff", "{:.1e}"),
        ("load", "load", "{:.2f}"),
    ]
    for row in rows:
        row["ratio_mb"] = row["dpc"] / row["torch_mb"]
        if "torch_full" in row:
            row["ratio_full"] = row["dpc"] / row["torch_full"]
        if "flops_sample" in row and row.get("peak"):
            peak = row["peak"] * 1e9 * row["threads"]
            row["dpc_mfu"] = row["flops_sample"] * row["dpc"] / peak
            row["torch_mfu"] = row["flops_sample"] * row["torch_mb"] / peak
        if "tokens" in row:
            row["dpc_tokens"] = row["dpc"] * row["tokens"]
            row["torch_tokens"] = row["torch_mb"] * row["tokens"]
    cells = [[title for _, title, _ in columns]]
    for row in rows:
        cells.append([fmt.format(row[key]) if key in row else "-"
                      for key, _, fmt in columns])
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = []
    for i, r in enumerate(cells):
        lines.append("  ".join(c.rjust(w) if i and j > 2 else c.ljust(w)
                               for j, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("--dpc",
                        help="the dpc driver (default: build/bin/dpc, else "
                             "the one on PATH)")
    parser.add_argument("--models", default="lenet5,mlp",
                        help="comma-separated names from "
                             "test/e2e/oracle/oracle.py and bench/training/"
                             "models.py, or 'headline' for "
                             + ", ".join(HEADLINE))
    parser.add_argument("--batches", default="4x16,4x64",
                        help="comma-separated MxB minibatches")
    parser.add_argument("--threads", default="1,2",
                        help="comma-separated thread counts")
    parser.add_argument("--steps", type=int, default=200,
                        help="timed steps (default 200)")
    parser.add_argument("--warmup", type=int, default=20,
                        help="untimed steps before them (default 20)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 4x16 only, 20 timed steps after 5")
    parser.add_argument("--schedule", default="auto",
                        help="dpc compile --schedule (default auto: 1f1b "
                             "on one stage, zb-h1 or zb-2p on two where "
                             "the simulator finds it faster)")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--data", default=oracle.DEFAULT_DATA,
                        help="directory with the Fashion-MNIST IDX files")
    parser.add_argument("--no-full", action="store_true",
                        help="skip the full-batch PyTorch loop")
    parser.add_argument("--no-two-stage", action="store_true",
                        help="skip the 2-stage dpc reference")
    parser.add_argument("--trace", action="store_true",
                        help="also write dpc's Chrome traces (needs --keep)")
    parser.add_argument("--keep", metavar="DIR",
                        help="work in DIR and keep it (default: a temporary "
                             "directory, removed at the end)")
    parser.add_argument("--torch-blas", metavar="WHICH", default="openblas",
                        help="PyTorch's BLAS: openblas (default; the "
                             "installed package's, else one unpacked from "
                             "Debian's registry into ~/.cache/dpc-bench), "
                             "system (whatever libblas.so.3 is: netlib's "
                             "reference BLAS on a bare Debian), or a "
                             "directory holding a libblas.so.3")
    parser.add_argument("--json", metavar="FILE",
                        help="also write the rows as JSON")
    parser.add_argument("--precision", choices=["fp32", "bf16"],
                        default="fp32",
                        help="dpc compile --precision; PyTorch runs its "
                             "forward and loss under bf16 autocast for bf16")
    parser.add_argument("--fusion", choices=["on", "off"],
                        help="dpc compile --fusion (elementwise chains as "
                             "generated loops; dpc's default when not given: "
                             "on for the CPU)")
    parser.add_argument("--target", choices=["cpu", "cuda"], default="cpu",
                        help="train both sides on the CPU (default) or the "
                             "GPU")
    args = parser.parse_args()

    if args.target == "cuda" and args.torch_blas == "openblas":
        args.torch_blas = "system"  # matmuls run on the GPU
    baseline.use_blas(args.torch_blas, fail)
    blas_path, blas_name, args.blas_threads = baseline.loaded_blas(torch)
    # MFU is against the CPU's peak; on the GPU there is none to measure.
    args.peak = baseline.peak_gflops() if args.target == "cpu" else None
    args.device = "cpu"
    if args.target == "cuda":
        if not torch.cuda.is_available():
            fail(f"--target cuda: this PyTorch ({torch.__version__}) sees no "
                 f"CUDA device; run it on a GPU machine with a CUDA build of "
                 f"PyTorch")
        # FP32 products stay FP32 on both sides (dpc's kernels use no TF32).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        args.device = "cuda"
        args.threads = "1"  # host threads do not matter on the GPU
    if args.quick:
        args.batches, args.steps, args.warmup = "4x16", 20, 5
    args.dpc = baseline.find_dpc(args.dpc, fail)
    if args.trace and not args.keep:
        fail("--trace needs --keep DIR to put the traces in")
    if args.warmup < 1 or args.steps < 1:
        fail("--warmup and --steps must be at least 1")
    models = (HEADLINE if args.models == "headline" else
              args.models.split(","))
    for name in models:
        known = list(oracle.MODELS) + list(oracle.EXTRA_MODELS)
        if name not in known:
            fail(f"unknown model '{name}' (have {', '.join(known)})")
    batches = parse_batches(args.batches)
    threads = [int(t) for t in args.threads.split(",")]
    total_steps = args.warmup + args.steps
    for m, b in batches:
        if total_steps * m * b > TRAIN_SAMPLES:
            fail(f"{total_steps} steps of {m}x{b} samples exceed the "
                 f"{TRAIN_SAMPLES} training samples (one epoch, file order)")

    work = args.keep or tempfile.mkdtemp(prefix="dpc-bench-training-")
    os.makedirs(work, exist_ok=True)
    print(f"dpc {args.dpc}; torch {torch.__version__}; {os.cpu_count()} cores;"
          f" {args.warmup} warm-up + {args.steps} timed steps; schedule "
          f"{args.schedule}; dpc precision {args.precision}; "
          f"SGD lr {args.lr} momentum {args.momentum}; "
          f"torch BLAS {blas_name} ({blas_path}), threads set to T; "
          f"fp32 peak {args.peak or 0:.1f} GFLOPS a core (peak.c); "
          f"load {load_avg1():.2f}", flush=True)
    if args.target == "cuda":
        print(f"target cuda: both sides on {torch.cuda.get_device_name()}",
              flush=True)
    rows = []
    try:
        for name in models:
            for m, b in batches:
                for t in threads:
                    row = measure(name, m, b, t, work, args.dpc, args,
                                  total_steps)
                    rows.append(row)
                    print(f"  {name} {m}x{b} T={t}: dpc {row['dpc']:.0f}/s, "
                          f"torch {row['torch_mb']:.0f}/s", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    print()
    print(format_table(rows))
    print()
    print("dpc/s: dpc --stages 1 over the timed steps, from the metrics "
          "file's time_s; torch mb/s: PyTorch eager accumulating M "
          "microbatches per step; torch full/s: PyTorch on the M*B samples "
          "at once; dpc 2st/s: dpc --stages 2, 2 ranks x 1 thread (cuda: "
          "2 ranks on the GPUs); 2st kind: the schedule it ran; dpc "
          "wall/s: all steps over `dpc run`'s wall clock (launch "
          "included); MFU: the training FLOPs per sample (3x the forward's "
          "as dpc's cost model counts them) times samples/s over T times "
          "the measured one-core peak; torch format: the memory format "
          "PyTorch ran in (the faster of contiguous and channels_last for "
          "convnets); compile s: `dpc compile --stages 1`; loss diff: "
          f"largest relative difference of a step's loss over the first "
          f"{LOSS_CHECK_STEPS} steps, dpc vs torch mb; "
          "load: highest 1-minute load average seen around the row.")
    busy = [f"{r['model']} {r['batch']} T={r['threads']}" for r in rows
            if r["load"] > 0.5]
    if busy:
        print(f"warning: the machine was busy (1-minute load above 0.5) "
              f"during {', '.join(busy)}; other processes distort these "
              f"rows, 2-thread rows most (OpenMP threads wait on each "
              f"other); re-run on an idle machine.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
