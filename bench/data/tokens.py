#!/usr/bin/python3
"""bench/data/tokens.py: the tiny GPT trained from a token file larger than
memory (issue #37's token-corpus goal: a file of at least 20 GB, `dpc run`
starting in under 5 s, every rank under 1 GB resident).

One run, on whatever cores the machine has (the load average is printed at
the start and at the end):

1. Writes a flat file of --gb GiB of uint16 token ids (nanoGPT's layout),
   uniform below the model's vocabulary, from numpy in chunks of --chunk-mb
   MiB, under --dir (/var/tmp by default: it must hold the file). The file
   is deleted at the end, whatever happens (a failure, Ctrl-C).
2. Exports test/e2e/oracle/oracle.py's tiny-gpt (T = 16, a vocabulary of
   64) to ONNX with oracle.export_and_reload, as bench/training and
   match_oracle do, and compiles it for --stages stages (4 x 16).
3. Runs `dpc run OUT --data tokens:FILE,dtype=uint16 --steps N --no-eval`
   and, while it runs, samples /proc/PID/status of every process under it
   (the rank processes and the launcher) every --sample-ms: VmHWM (the
   kernel's peak resident set), and RssAnon and RssFile (anonymous memory
   and mapped file pages) as sampled, their maxima. Printed: the seconds
   from starting `dpc run` to its first `step` line, and each process's
   figures. The mapped token file's pages are RssFile; RssAnon is what the
   rank itself allocated, and is what must not grow with the file.

With --eot ID the file holds documents instead: ids uniform below ID, each
followed by the end-of-text id ID with probability 1/500 (documents of 500
tokens on average), and `--build DIR` (a variable-length build, such as
test/e2e/varlen.test's Output/varlen.test.tmp/runs/var-gpt-2-1f1b-dp, whose
vocabulary holds ID) is run twice with `--data tokens:FILE,eot=ID`: the first
run scans the file and saves its document index beside it, the second maps
that index (docs/RUNTIME.md); both runs' start times are printed.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
BIN = os.path.join(ROOT, "build", "bin")
sys.path.insert(0, os.path.join(ROOT, "test", "e2e", "oracle"))
sys.path.insert(0, os.path.join(ROOT, "bench", "common"))

from procs import descendants  # noqa: E402  (the ranks under dpc run)


def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def write_tokens(path, gib, chunk_mib, vocab, seed, eot=None):
    """`gib` GiB of uint16 ids uniform in [0, vocab), in chunks; with `eot`,
    ids below it, each position the end-of-text id with probability
    1/500."""
    total = int(gib * 2**30) // 2 * 2
    chunk = (chunk_mib << 20) // 2
    rng = np.random.default_rng(seed)
    written = 0
    start = time.perf_counter()
    with open(path, "wb") as f:
        while written < total:
            count = min(chunk, (total - written) // 2)
            ids = rng.integers(0, vocab if eot is None else eot, count,
                               dtype=np.uint16)
            if eot is not None:
                ids[rng.random(count) < 1 / 500] = eot
            ids.tofile(f)
            written += 2 * count
    seconds = time.perf_counter() - start
    print(f"wrote {written / 2**30:.1f} GiB ({written / 1e9:.2f} GB, "
          f"{written // 2} tokens) in {seconds:.0f} s: {path}")


def export_and_compile(work, stages):
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    import oracle
    torch.manual_seed(0)
    model = oracle.build("tiny-gpt")
    path, _ = oracle.export_and_reload(model, "tiny-gpt", 16, work)
    out = os.path.join(work, f"tiny-gpt-{stages}")
    subprocess.run([os.path.join(BIN, "dpc"), "compile", path, "-o", out,
                    "--stages", str(stages), "--microbatches", "4"],
                   check=True, stdout=subprocess.DEVNULL)
    return out, model.tok.num_embeddings


def status_of(pid):
    """{name, VmHWM, RssAnon, RssFile (kB)} of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return None
    values = {key: int(kb) for key, kb in
              re.findall(r"^(VmHWM|RssAnon|RssFile):\s+(\d+) kB", text, re.M)}
    if len(values) < 3:
        return None
    name = " ".join(os.path.basename(a.decode()) for a in argv[:2] if a)
    return {"name": name, **values}


class Sampler(threading.Thread):
    """Samples every process under `pid` until stopped: the last VmHWM
    seen, the maxima of RssAnon and RssFile."""

    def __init__(self, pid, interval):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peaks = {}
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            for child in [self.pid] + descendants(self.pid):
                status = status_of(child)
                if status is None:
                    continue
                peak = self.peaks.setdefault(child, dict(status))
                peak["name"] = status["name"]
                peak["VmHWM"] = max(peak["VmHWM"], status["VmHWM"])
                peak["RssAnon"] = max(peak["RssAnon"], status["RssAnon"])
                peak["RssFile"] = max(peak["RssFile"], status["RssFile"])
            self.done.wait(self.interval)


def train(build, data, steps, interval, lock):
    if lock:
        # No build beside the run: others' builds take the same lock.
        import fcntl
        held = open(lock, "a")
        fcntl.flock(held, fcntl.LOCK_EX)
        print(f"holding {lock}: {load()}", flush=True)
    cmd = [os.path.join(BIN, "dpc"), "run", build, "--data", data,
           "--steps", str(steps), "--no-eval"]
    print("$ " + " ".join(cmd), flush=True)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, bufsize=1)
    sampler = Sampler(proc.pid, interval)
    sampler.start()
    first_step = None
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if first_step is None and re.match(r"\s*step \d+", line):
            first_step = time.perf_counter() - start
            print(f"  first step line after {first_step:.2f} s: "
                  f"{line.strip()}", flush=True)
    proc.wait()
    wall = time.perf_counter() - start
    sampler.done.set()
    sampler.join()
    print("\n".join("  | " + line for line in lines[-6:]))
    if proc.returncode != 0:
        raise RuntimeError(f"dpc run failed (exit {proc.returncode})")
    return first_step, wall, sampler.peaks


def print_peaks(peaks):
    print(f"  {'process (dpc: the launcher)':40} {'VmHWM MiB':>10} "
          f"{'RssAnon MiB':>12} {'RssFile MiB':>12}")
    for pid, peak in sorted(peaks.items()):
        print(f"  {peak['name'][:40]:40} {peak['VmHWM'] / 1024:10.1f} "
              f"{peak['RssAnon'] / 1024:12.1f} {peak['RssFile'] / 1024:12.1f}")


def run_documents(args, path):
    """--eot: the build run twice, scanning then from the saved index."""
    write_tokens(path, args.gb, args.chunk_mb, None, 0, args.eot)
    # An index is saved only for a file modified 2 s before (TokenIndex.h).
    time.sleep(max(0.0, os.stat(path).st_mtime + 3 - time.time()))
    print(f"after writing: {load()}", flush=True)
    data = f"tokens:{path},eot={args.eot}"
    for label in ("scan, index saved", "index mapped"):
        first_step, wall, peaks = train(args.build, data, args.steps,
                                        args.sample_ms / 1e3, args.lock)
        print(f"{label}: a {args.gb} GiB token file, eot={args.eot}: first "
              f"step line {first_step:.2f} s after starting dpc run, "
              f"{wall:.1f} s in all")
        print_peaks(peaks)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default="/var/tmp",
                        help="where the token file is written (and deleted)")
    parser.add_argument("--gb", type=float, default=20,
                        help="the token file's size in GiB")
    parser.add_argument("--chunk-mb", type=int, default=256)
    parser.add_argument("--stages", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--sample-ms", type=float, default=20)
    parser.add_argument("--lock", default="",
                        help="a file to flock around the run (the build "
                        "lock, /tmp/dpc-build.lock, where builds share "
                        "the cores)")
    parser.add_argument("--eot", type=int, default=None,
                        help="documents cut at this end-of-text id; runs "
                        "--build twice")
    parser.add_argument("--build", default="",
                        help="with --eot: the variable-length build to run")
    args = parser.parse_args()
    print(f"cores {os.cpu_count()}, {load()}", flush=True)
    if args.eot is not None:
        if not args.build:
            parser.error("--eot needs --build")
        path = os.path.join(args.dir, f"dpc-bench-docs-{os.getpid()}.bin")
        index = f"{path}.eot{args.eot}.uint16.dpcidx"
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
        try:
            run_documents(args, path)
        finally:
            for leftover in (path, index):
                if os.path.exists(leftover):
                    os.remove(leftover)
                    print(f"deleted {leftover}")
        print(load())
        return
    work = tempfile.mkdtemp(prefix="dpc-bench-tokens-")
    build, vocab = export_and_compile(work, args.stages)
    path = os.path.join(args.dir, f"dpc-bench-tokens-{os.getpid()}.bin")
    # Deleted whatever happens: on SIGTERM too, not only on exceptions.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        write_tokens(path, args.gb, args.chunk_mb, vocab, 0)
        print(f"after writing: {load()}", flush=True)
        first_step, wall, peaks = train(
            build, f"tokens:{path},dtype=uint16", args.steps,
            args.sample_ms / 1e3, args.lock)
    finally:
        if os.path.exists(path):
            os.remove(path)
            print(f"deleted {path}")
        shutil.rmtree(work, ignore_errors=True)
    print(f"tiny-gpt, {args.stages} stages, 4 x 16, {args.steps} steps, "
          f"a {args.gb} GiB token file: first step line {first_step:.2f} s "
          f"after starting dpc run, {wall:.1f} s in all")
    print_peaks(peaks)
    print(load())


if __name__ == "__main__":
    main()
