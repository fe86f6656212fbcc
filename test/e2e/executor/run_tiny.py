#!/usr/bin/python3
"""Trains the hand-written tiny model (TinyModel.cpp) through the executor
under mpirun and checks it against references.

    run_tiny.py --bin DIR --mpirun MPIRUN --work DIR --kind 1f1b [--mode M]

--bin holds dpc-tiny-gen and the rank executables dpc-tiny-stage0,
dpc-tiny-stage1 (the two-stage pipeline) and dpc-tiny-single (the whole
model on one stage); with --staged, their dpc-tiny-staged-* twins, whose
device the host may not read (StagedTarget.cpp), so that every upload and
download is staged as on the CUDA target. Their transfers take the path
--transport names (the ranks' option): auto, a device communicator that
matches in start order as NCCL does; host-staging, one that matches by tag;
mpi, the executor's own staging through host memory. --replicas 2,1 runs
stage 0 on two data-parallel ranks. Modes:

  train     the pipeline's per-step losses must match the one-stage run and
            a float64 numpy reference within 1e-5 relative, and so must the
            final parameters of the checkpoints; a shuffled run across an
            epoch boundary must match the one-stage run; a run resumed from
            a checkpoint must continue exactly; the trace files must exist.
            With --unproven (1f1b, --staged, --transport auto), a schedule
            edited so that it is no longer deadlock-free under rendezvous
            transfers must make the ranks fall back to matching by tag, and
            refuse an explicit --transport nccl
  fail-restore, fail-weights, fail-np
            one rank fails (a bad stash key inside a segment, a missing
            weights file, a job with too few ranks): the job must end
            non-zero within 20 s with that rank's message
"""

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

import numpy as np

M, B = 4, 8
LR, MOMENTUM, WD = 0.05, 0.9, 1e-3
RTOL = 1e-5


def fail(message):
    print("run_tiny: FAIL: " + message)
    sys.exit(1)


# What the staged ranks must say they transfer with, by --transport.
TRANSPORT_LINES = {
    "auto": "transport device memory in start order (test)",
    "host-staging": "transport device memory by tag (test)",
    "mpi": "transport mpi, staged through host memory by the executor",
}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        assert info["dtype"] == "F32", info
        tensors[name] = np.frombuffer(body[begin:end], dtype="<f4").reshape(
            info["shape"])
    return tensors


def read_metrics(path):
    losses, accuracy = {}, None
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "step" in record:
                losses[record["step"]] = record["loss"]
            if "eval_accuracy" in record:
                accuracy = record["eval_accuracy"]
    return losses, accuracy


class Layout:
    """A directory laid out like `dpc compile`'s output."""

    def __init__(self, args, name, stages):
        self.dir = os.path.join(args.work, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        replicas = args.replicas if stages == 2 else "1"
        subprocess.run([os.path.join(args.bin, "dpc-tiny-gen"), self.dir,
                        str(stages), args.kind, str(M), replicas], check=True)
        prefix = "dpc-tiny-staged-" if args.staged else "dpc-tiny-"
        counts = [int(n) for n in replicas.split(",")]
        exes = ([prefix + "stage0"] * counts[0] + [prefix + "stage1"] *
                counts[1] if stages == 2 else [prefix + "single"])
        # Copies, not links: a rank finds its files next to /proc/self/exe.
        self.ranks = []
        for k, exe in enumerate(exes):
            path = os.path.join(self.dir, "rank%d" % k)
            shutil.copy(os.path.join(args.bin, exe), path)
            self.ranks.append(path)
        self.mpirun = args.mpirun
        self.transport = ["--transport", args.transport]
        self.data = "npy:%s/inputs.npy,%s/labels.npy" % (self.dir, self.dir)

    def command(self, options, ranks=None):
        cmd = [self.mpirun, "--oversubscribe"]
        for k, exe in enumerate(ranks or self.ranks):
            if k:
                cmd.append(":")
            cmd += (["-np", "1", exe, "--data", self.data] + self.transport +
                    options)
        return cmd

    def run(self, options, tag, env=None):
        metrics = os.path.join(self.dir, tag + ".jsonl")
        cmd = self.command(options + ["--metrics", metrics])
        result = subprocess.run(cmd, capture_output=True, text=True,
                                timeout=120, env=env)
        if result.returncode != 0:
            print(result.stdout + result.stderr)
            fail("%s: %s exited with %d" % (self.dir, tag, result.returncode))
        return read_metrics(metrics), result.stdout


def reference(layout, steps):
    """Float64 numpy training of the same model on the same samples."""
    x = np.load(os.path.join(layout.dir, "inputs.npy")).reshape(-1, 64)
    y = np.load(os.path.join(layout.dir, "labels.npy"))
    w = read_safetensors(os.path.join(layout.dir, "weights/stage0.safetensors"))
    params = {k: v.astype(np.float64) for k, v in w.items()}
    momentum = {k: np.zeros_like(v) for k, v in params.items()}
    losses = []
    for step in range(steps):
        grads = {k: np.zeros_like(v) for k, v in params.items()}
        total = 0.0
        for mb in range(M):
            lo = (step * M + mb) * B
            xb, yb = x[lo:lo + B].astype(np.float64), y[lo:lo + B]
            h = np.maximum(xb @ params["fc0.weight"].T, 0)
            logits = h @ params["fc1.weight"].T + params["fc1.bias"]
            shifted = logits - logits.max(axis=1, keepdims=True)
            logp = shifted - np.log(np.exp(shifted).sum(axis=1,
                                                        keepdims=True))
            total += -logp[np.arange(B), yb].sum() / (M * B)
            d = np.exp(logp)
            d[np.arange(B), yb] -= 1
            d /= M * B
            grads["fc1.weight"] += d.T @ h
            grads["fc1.bias"] += d.sum(axis=0)
            dz = (d @ params["fc1.weight"]) * (h > 0)
            grads["fc0.weight"] += dz.T @ xb
        losses.append(total)
        for k in params:
            g = grads[k] + WD * params[k]
            momentum[k] = MOMENTUM * momentum[k] + g
            params[k] -= LR * momentum[k]
    return losses, params


def compare_losses(name, got, want, steps):
    worst = 0.0
    for step in range(1, steps + 1):
        if step not in got or step not in want:
            fail("%s: step %d missing" % (name, step))
        rel = abs(got[step] - want[step]) / abs(want[step])
        worst = max(worst, rel)
        if not rel <= RTOL:
            fail("%s: step %d loss %.9g vs %.9g (relative %.2e)" %
                 (name, step, got[step], want[step], rel))
    print("%s: %d steps, largest relative loss difference %.2e" %
          (name, steps, worst))
    return worst


def compare_params(name, got, want):
    for key, ref in want.items():
        if key not in got:
            fail("%s: no parameter %s" % (name, key))
        err = np.abs(got[key] - ref).max() / max(np.abs(ref).max(), 1e-30)
        if not err <= RTOL:
            fail("%s: %s differs by %.2e (relative to its largest element)" %
                 (name, key, err))
    print("%s: parameters match" % name)


def train(args):
    pipe = Layout(args, "pipe", 2)
    single = Layout(args, "single", 1)
    steps = 6
    common = ["--no-shuffle", "--steps", str(steps)]
    ckpt_pipe = os.path.join(pipe.dir, "ckpt")
    ckpt_single = os.path.join(single.dir, "ckpt")
    trace = os.path.join(pipe.dir, "trace.json")
    (pipe_losses, pipe_acc), out = pipe.run(
        common + ["--checkpoint-dir", ckpt_pipe, "--trace", trace], "run")
    (single_losses, single_acc), _ = single.run(
        common + ["--checkpoint-dir", ckpt_single], "run")
    print(out.strip())
    expected = TRANSPORT_LINES[args.transport] if args.staged else None
    said = [line for line in out.splitlines() if "transport" in line]
    if expected and len([l for l in said if expected in l]) != len(pipe.ranks):
        fail("every rank should report '%s'" % expected)
    if not expected and said:
        fail("host-memory ranks should not report a transport: %s" % said)
    peaks = re.search(r"peak stashed microbatches per rank:([ 0-9]*) \(as",
                      out)
    if not peaks or len(peaks.group(1).split()) != len(pipe.ranks):
        fail("the memory report should list all %d ranks" % len(pipe.ranks))
    ref_losses, ref_params = reference(single, steps)
    ref = {k + 1: v for k, v in enumerate(ref_losses)}
    compare_losses("pipeline vs one stage", pipe_losses, single_losses, steps)
    compare_losses("pipeline vs numpy", pipe_losses, ref, steps)
    compare_losses("one stage vs numpy", single_losses, ref, steps)
    if not ref_losses[-1] < ref_losses[0]:
        fail("the reference loss does not decrease: %s" % ref_losses)
    if pipe_acc is None or pipe_acc != single_acc:
        fail("eval accuracy %s (pipeline) vs %s (one stage)" %
             (pipe_acc, single_acc))
    print("eval accuracy %.4f on both" % pipe_acc)

    got = read_safetensors(os.path.join(ckpt_pipe, "stage0.safetensors"))
    got.update(read_safetensors(os.path.join(ckpt_pipe, "stage1.safetensors")))
    compare_params("pipeline checkpoint vs numpy", got, ref_params)
    for rank in range(len(pipe.ranks)):
        with open("%s/trace.rank%d.json" % (pipe.dir, rank)) as f:
            events = json.load(f)
        events = events.get("traceEvents", events)
        names = {e.get("name") for e in events}
        # A replica runs every other microbatch.
        if not names & {"F0", "F1"} or "opt" not in names:
            fail("trace of rank %d lacks F0/F1 or opt: %s" %
                 (rank, sorted(names)[:20]))

    # Shuffled, across the epoch boundary (8 steps per epoch).
    shuffled = ["--shuffle", "--seed", "7", "--steps", "10", "--no-eval"]
    (a, _), _ = pipe.run(shuffled, "shuffled")
    (b, _), _ = single.run(shuffled, "shuffled")
    compare_losses("shuffled pipeline vs one stage", a, b, 10)

    # Resuming from a checkpoint continues the same run exactly.
    ckpt = os.path.join(pipe.dir, "ckpt-resume")
    base = ["--no-shuffle", "--no-eval", "--checkpoint-dir", ckpt]
    pipe.run(base + ["--steps", "3"], "resume")
    (resumed, _), _ = pipe.run(base + ["--steps", "6", "--resume"], "resume")
    for step in range(1, 7):
        if step not in resumed or resumed[step] != pipe_losses[step]:
            fail("resumed run: step %d loss %s, uninterrupted %s" %
                 (step, resumed.get(step), pipe_losses[step]))
    print("resumed run: steps 4-6 equal the uninterrupted run")

    if args.unproven:
        unproven(pipe, pipe_losses)


def unproven(pipe, pipe_losses):
    """The last stage posts its receive of microbatch k + 1's activation
    only after its send of microbatch k's gradient: still deadlock-free with
    non-blocking transfers, but no longer under rendezvous ones, so matching
    in start order is not licensed."""
    path = os.path.join(pipe.dir, "schedule.json")
    with open(path) as f:
        sched = json.load(f)
    program = sched["programs"][-1]["instructions"]

    def find(op, what, mb):
        return next(k for k, i in enumerate(program) if i["op"] == op and
                    i.get("what") == what and i["mb"] == mb)

    moved = 0
    for mb in range(M - 1):
        recv = find("recv_start", "act", mb + 1)
        send = find("send_start", "grad", mb)
        if recv < send:
            program.insert(send, program.pop(recv))
            moved += 1
    if not moved:
        fail("no receive/send pair to reorder in %s" % path)
    with open(path, "w") as f:
        json.dump(sched, f)
    (losses, _), out = pipe.run(["--no-shuffle", "--steps", "6", "--no-eval"],
                                "unproven")
    if out.count("not proven free of deadlock under rendezvous") != len(
            pipe.ranks):
        print(out)
        fail("the ranks did not fall back from start-order matching")
    compare_losses("reordered schedule vs pipeline", losses, pipe_losses, 6)
    pipe.transport = ["--transport", "nccl"]
    expect_failure(pipe.command(["--no-shuffle", "--steps", "2"]),
                   r"error: transport nccl: .*schedule\.json is not proven "
                   r"free of deadlock")


def expect_failure(cmd, pattern, env=None):
    start = time.monotonic()
    try:
        result = subprocess.run(cmd, capture_output=True, text=True,
                                timeout=60, env=env)
    except subprocess.TimeoutExpired:
        fail("HANG: the job was still running after 60 s")
    elapsed = time.monotonic() - start
    output = result.stdout + result.stderr
    print(output.strip())
    print("exit %d after %.1f s" % (result.returncode, elapsed))
    if result.returncode == 0:
        fail("expected a non-zero exit")
    if elapsed > 20:
        fail("took %.1f s to stop" % elapsed)
    if not re.search(pattern, output):
        fail("output does not match %r" % pattern)


def fault(args):
    pipe = Layout(args, "pipe-" + args.mode, 2)
    options = ["--no-shuffle", "--steps", "4"]
    env = dict(os.environ)
    if args.mode == "fail-restore":
        env["DPC_TINY_FAIL"] = "restore"
        expect_failure(pipe.command(options),
                       r"rank 1: error: Backward mb 0: dpc_restore: stash key "
                       r"99 is not in the manifest", env)
    elif args.mode == "fail-weights":
        os.remove(os.path.join(pipe.dir, "weights/stage1.safetensors"))
        expect_failure(pipe.command(options),
                       r"rank 1: error: .*weights/stage1\.safetensors")
    elif args.mode == "fail-np":
        expect_failure(pipe.command(options, ranks=pipe.ranks[:1]),
                       r"rank 0: error: the job has 1 ranks but the schedule "
                       r"has 2 \(launch one rank per line of the appfile\)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--kind", default="1f1b")
    parser.add_argument("--mode", default="train")
    parser.add_argument("--staged", action="store_true")
    parser.add_argument("--transport", default="auto",
                        choices=sorted(TRANSPORT_LINES))
    parser.add_argument("--replicas", default="1,1")
    parser.add_argument("--unproven", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.mode == "train":
        train(args)
    else:
        fault(args)
    print("run_tiny: PASS")


if __name__ == "__main__":
    main()
