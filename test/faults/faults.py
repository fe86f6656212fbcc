#!/usr/bin/python3
"""The fault suite (ctest label `faults`): what a user's job does when a rank
dies, stops or finds its files corrupt, and when two jobs run at once.

    faults.py --dpc build/bin/dpc --work DIR setup
    faults.py --dpc build/bin/dpc --work DIR CASE

`setup` writes the MLP the cases train (test/Frontends/ONNX/Inputs/
make_model.py's mlp) to DIR/mlp.onnx. Each CASE works in its own sandbox,
DIR/CASE: it copies the model there beside a file of the user's, compiles
it, breaks something, runs `dpc run` under MPI and asserts

  - the message: a line naming the rank, file or tensor at fault;
  - the exit code: 1 for a runtime failure, 2 for bad input;
  - the time to exit, bounded (limits below; generous, so that a loaded
    2-core machine passes, but far from the 600 s a hang would take);
  - that no file outside the output directory changed: the sandbox's file
    list, sizes, modes and mtimes before and after (the output directory,
    which `dpc run` writes plan.json's measurements to, left out);
  - that no rank process outlives the job.

Exits 0 when every assertion holds, 1 otherwise, printing the job's output.
"""

import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_MODEL = os.path.join(HERE, "..", "Frontends", "ONNX", "Inputs",
                          "make_model.py")

# Time limits, in seconds. A kill or a stop on an idle machine ends the job
# in 1-3 s (kill) and timeout + 1 s (stop); the limits leave room for a
# machine busy with other tests.
KILL_LIMIT = 20  # from the kill to the job's exit
STOP_TIMEOUT = 6  # dpc run --timeout for a stopped rank
WATCHDOG_LIMIT = 10  # from the stop to the watchdog's line (issue 20's goal)
STOP_LIMIT = STOP_TIMEOUT + 14  # from the stop to the job's exit
START_LIMIT = 30  # a job that fails at start-up, from launch to exit
TRAIN_LIMIT = 90  # a short job that trains to the end

RUN_ARGS = ["--data", "synthetic:256", "--no-eval"]
LONG_RUN = RUN_ARGS + ["--steps", "1000000"]


class Failure(Exception):
    pass


class Case:
    def __init__(self, dpc, work, name):
        self.dpc = dpc
        self.name = name
        self.dir = os.path.join(work, name)
        self.model = os.path.join(work, "mlp.onnx")
        self.problems = []

    # --- the sandbox ------------------------------------------------------

    def prepare(self):
        if os.path.exists(self.dir):
            subprocess.run(["chattr", "-R", "-i", self.dir],
                           stderr=subprocess.DEVNULL)
            shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        shutil.copy(self.model, os.path.join(self.dir, "mlp.onnx"))
        with open(os.path.join(self.dir, "notes.txt"), "w") as f:
            f.write("a file of the user's that no job may touch\n")
        os.makedirs(os.path.join(self.dir, "data"))
        with open(os.path.join(self.dir, "data", "keep"), "w") as f:
            f.write("x\n")

    def compile(self, out, stages):
        path = os.path.join(self.dir, out)
        result = subprocess.run(
            [self.dpc, "compile", os.path.join(self.dir, "mlp.onnx"), "-o",
             path, "--stages", str(stages), "--microbatches", "2"],
            capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise Failure(f"dpc compile failed:\n{result.stdout}"
                          f"{result.stderr}")
        return path

    def snapshot(self, skip):
        """(path, size, mode, mtime) of every file and directory in the
        sandbox except those under the directories in `skip`."""
        skip = [os.path.join(self.dir, s) for s in skip]
        state = set()
        for root, dirs, files in os.walk(self.dir):
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]
            for name in dirs + files:
                path = os.path.join(root, name)
                info = os.lstat(path)
                state.add((os.path.relpath(path, self.dir), info.st_size,
                           info.st_mode, info.st_mtime_ns))
        return state

    def check_unchanged(self, before, skip):
        after = self.snapshot(skip)
        for entry in sorted(before - after):
            self.fail(f"changed or removed outside the output: {entry[0]}")
        for entry in sorted(after - before):
            if not any(entry[0] == b[0] for b in before):
                self.fail(f"created outside the output: {entry[0]}")

    # --- assertions -------------------------------------------------------

    def fail(self, message):
        self.problems.append(message)

    def expect(self, output, pattern):
        if not re.search(pattern, output, re.MULTILINE):
            self.fail(f"output does not match {pattern!r}")

    def expect_exit(self, code, expected):
        if code != expected:
            self.fail(f"exit code {code}, expected {expected}")

    def expect_within(self, what, seconds, limit):
        print(f"faults: {what} after {seconds:.1f} s (limit {limit} s)")
        if seconds > limit:
            self.fail(f"{what} after {seconds:.1f} s, more than {limit} s")

    def rank_pids(self):
        """Processes whose executable lies in the sandbox (ranks)."""
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                exe = os.readlink(f"/proc/{entry}/exe")
            except OSError:
                continue
            if exe.startswith(self.dir + "/"):
                pids.append((int(entry), exe))
        return pids

    def check_no_ranks_left(self):
        # mpirun reaps its children as it exits; give a loaded machine a
        # moment before calling one left behind.
        deadline = time.monotonic() + 5
        while self.rank_pids() and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid, exe in self.rank_pids():
            self.fail(f"rank process {pid} ({exe}) outlived the job")
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    # --- running jobs -----------------------------------------------------

    def run(self, args, limit):
        """Runs dpc with `args` to its end; returns (exit code, output,
        seconds)."""
        started = time.monotonic()
        try:
            result = subprocess.run([self.dpc] + args,
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True,
                                    timeout=2 * limit)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if e.stdout else ""
            raise Failure(f"{out}\nHANG: still running after {2 * limit} s")
        seconds = time.monotonic() - started
        print(result.stdout, end="")
        return result.returncode, result.stdout, seconds

    def run_and_hit(self, args, exe, sig, limit):
        """Runs a long job, sends `sig` to the rank running `exe` once the
        job prints its first step, and returns (exit code, output, seconds
        from the signal to the exit, seconds from the signal to the first
        watchdog line or None)."""
        job = subprocess.Popen([self.dpc] + args, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        lines, hit = [], {}

        def read():
            for line in job.stdout:
                now = time.monotonic()
                lines.append(line)
                sys.stdout.write(line)
                if "at" not in hit and line.startswith("step "):
                    pid = next((p for p, e in self.rank_pids() if e == exe),
                               None)
                    if pid is None:
                        continue
                    os.kill(pid, sig)
                    hit["at"], hit["pid"] = now, pid
                    print(f"faults: sent signal {sig} to {exe} (pid {pid})",
                          flush=True)
                elif "at" in hit and "watchdog" not in hit and \
                        line.startswith("watchdog:"):
                    hit["watchdog"] = now - hit["at"]

        reader = threading.Thread(target=read)
        reader.start()
        started = time.monotonic()
        try:
            while job.poll() is None:
                now = time.monotonic()
                if "at" in hit and now - hit["at"] > 2 * limit:
                    job.kill()
                    raise Failure(f"HANG: still running {2 * limit} s after "
                                  "the signal")
                if "at" not in hit and now - started > 120:
                    job.kill()
                    raise Failure("the job printed no step in 120 s")
                time.sleep(0.05)
            ended = time.monotonic()
            reader.join()
        finally:
            if "pid" in hit:
                for s in (signal.SIGKILL, signal.SIGCONT):
                    try:
                        os.kill(hit["pid"], s)
                    except OSError:
                        pass
        if "at" not in hit:
            raise Failure("the job ended before its first step")
        return job.returncode, "".join(lines), ended - hit["at"], \
            hit.get("watchdog")


# --- the cases --------------------------------------------------------------


def kill_rank(case, stages, rank):
    """kill -9 of one rank of a running job: the job ends within seconds,
    exit 1, naming the rank and the signal."""
    out = case.compile("out", stages)
    before = case.snapshot(["out"])
    code, output, seconds, _ = case.run_and_hit(
        ["run", out] + LONG_RUN, os.path.join(out, f"rank{rank}"),
        signal.SIGKILL, KILL_LIMIT)
    case.expect(output, rf"^dpc run: rank {rank} was killed by signal 9 "
                r"\(Killed\)")
    case.expect_exit(code, 1)
    case.expect_within("exit", seconds, KILL_LIMIT)
    case.check_no_ranks_left()
    case.check_unchanged(before, ["out"])


def stop_rank(case, stages, rank):
    """SIGSTOP of one rank: the watchdog names it within seconds, with what
    the others wait for, and --timeout ends the job, exit 1."""
    out = case.compile("out", stages)
    before = case.snapshot(["out"])
    code, output, seconds, watchdog = case.run_and_hit(
        ["run", out] + LONG_RUN + ["--timeout", str(STOP_TIMEOUT)],
        os.path.join(out, f"rank{rank}"), signal.SIGSTOP, STOP_LIMIT)
    case.expect(output, rf"^watchdog: rank {rank} has not answered for "
                r"\d+ s; rank \d+ waits")
    case.expect(output, rf"^dpc run: rank {rank} has not answered for \d+ s "
                rf"\(--timeout {STOP_TIMEOUT} s\); the job was ended$")
    case.expect_exit(code, 1)
    if watchdog is None:
        case.fail("no watchdog line after the stop")
    else:
        case.expect_within("watchdog line", watchdog, WATCHDOG_LIMIT)
    case.expect_within("exit", seconds, STOP_LIMIT)
    case.check_no_ranks_left()
    case.check_unchanged(before, ["out"])


def corrupt_rank_binary(case):
    """A rank executable overwritten with bytes that are no program, or
    truncated, is refused before launch naming its appfile line and file,
    exit 1 (mpirun itself would report an exec failure or a crash at load
    naming neither)."""
    out = case.compile("out", 2)
    rank1 = os.path.join(out, "rank1")
    with open(rank1, "rb") as f:
        pristine = f.read()
    before = case.snapshot(["out"])
    damage = [(bytes(range(256)) * 8,
               r"is not a program \(no ELF header\)"),
              (pristine[:4096],
               r"is truncated \(its ELF header needs \d+ bytes, the file "
               r"has 4096\)")]
    for data, message in damage:
        with open(rank1, "wb") as f:
            f.write(data)
        code, output, seconds = case.run(["run", out] + RUN_ARGS +
                                         ["--steps", "4"], START_LIMIT)
        case.expect(output, r"^dpc run: \S+/out/appfile:2: " +
                    re.escape(rank1) + " " + message +
                    ": a corrupt rank executable$")
        case.expect_exit(code, 1)
        case.expect_within("exit", seconds, START_LIMIT)
    case.check_no_ranks_left()
    case.check_unchanged(before, ["out"])


def corrupt_schedule(case):
    """schedule.json with a flipped byte (no longer JSON) or an edited
    instruction (JSON, but not a schedule the verifier accepts): every rank
    refuses it at start-up naming the file, exit 1 (the output directory is
    damaged; nothing the user passed is wrong)."""
    out = case.compile("out", 2)
    path = os.path.join(out, "schedule.json")
    with open(path, "rb") as f:
        pristine = f.read()
    before = case.snapshot(["out"])
    broken = bytearray(pristine)
    at = pristine.index(b'"programs"')
    broken[at] ^= 0x01  # the key's opening quote
    edits = [(bytes(broken), r"schedule\.json: invalid JSON"),
             (pristine.replace(b'"forward"', b'"forwarx"', 1),
              r"schedule\.json: rank 0: instruction \d+: unknown op "
              r"'forwarx'"),
             (pristine.replace(b'"mb": 0', b'"mb": 1', 1),
              r"schedule\.json: rank 0: instruction \d+ \(Forward mb 0\): "
              r"forward of mb 0 before its LoadMicrobatch")]
    for data, message in edits:
        with open(path, "wb") as f:
            f.write(data)
        code, output, seconds = case.run(["run", out] + RUN_ARGS +
                                         ["--steps", "4"], START_LIMIT)
        case.expect(output, r"^dpc run: rank \d .*" + message)
        if output.count(path + ": " + path):
            case.fail("the file is named twice in one message")
        case.expect_exit(code, 1)
        case.expect_within("exit", seconds, START_LIMIT)
    case.check_no_ranks_left()
    case.check_unchanged(before, ["out"])


def crc32c(data):
    """CRC-32C, bit by bit: an independent check of dpc's table-driven one."""
    table = []
    for b in range(256):
        crc = b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    crc = 0xFFFFFFFF
    for byte in data:
        crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFFFFFF


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + size]), data[8 + size:]


def write_safetensors(path, header, body):
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


def corrupt_weights(case):
    """A weights file with one flipped byte fails its checksum, naming the
    file and the tensor, exit 1; one whose tensor holds a NaN (with a
    matching checksum, or with none, as other tools write files) trains into
    a NaN loss, and the job stops at that step, exit 1."""
    out = case.compile("out", 2)
    path = os.path.join(out, "weights", "stage0.safetensors")
    header, body = read_safetensors(path)
    crcs = {k[len("crc32c:"):]: v
            for k, v in header.get("__metadata__", {}).items()
            if k.startswith("crc32c:")}
    tensors = sorted(k for k in header if k != "__metadata__")
    if sorted(crcs) != tensors:
        case.fail(f"checksums {sorted(crcs)} for tensors {tensors}")
    for name in tensors:
        begin, end = header[name]["data_offsets"]
        if crcs.get(name) != f"{crc32c(body[begin:end]):08x}":
            case.fail(f"tensor {name}: stored checksum {crcs.get(name)} is "
                      "not the CRC-32C of its data")
    before = case.snapshot(["out"])

    # The largest tensor, one byte in its middle.
    name = max(tensors, key=lambda k: header[k]["data_offsets"][1] -
               header[k]["data_offsets"][0])
    begin, end = header[name]["data_offsets"]
    flipped = bytearray(body)
    flipped[(begin + end) // 2] ^= 0x04
    write_safetensors(path, header, bytes(flipped))
    code, output, seconds = case.run(["run", out] + RUN_ARGS +
                                     ["--steps", "4"], START_LIMIT)
    case.expect(output, rf"^dpc run: rank 0 .*{re.escape(path)}: tensor "
                rf"'{re.escape(name)}' fails its CRC-32C checksum "
                r"\(stored [0-9a-f]{8}, data gives [0-9a-f]{8}\): the file "
                r"is corrupt$")
    case.expect_exit(code, 1)
    case.expect_within("exit", seconds, START_LIMIT)
    if re.search(r"^step ", output, re.MULTILINE):
        case.fail("trained on a corrupt file")

    # The NaN goes into the last stage's parameters (the head), after
    # which no ReLU can turn it into a zero.
    write_safetensors(path, header, body)
    path = os.path.join(out, "weights", "stage1.safetensors")
    header, body = read_safetensors(path)
    name = sorted(k for k in header if k != "__metadata__")[0]
    begin, end = header[name]["data_offsets"]
    nan = bytearray(body)
    nan[begin:begin + 4] = struct.pack("<f", float("nan"))
    for with_checksums in (True, False):
        meta = dict(header.get("__metadata__", {}))
        meta.pop(f"crc32c:{name}")
        if with_checksums:
            meta[f"crc32c:{name}"] = f"{crc32c(nan[begin:end]):08x}"
        else:
            meta = {k: v for k, v in meta.items()
                    if not k.startswith("crc32c:")}
        write_safetensors(path, dict(header, __metadata__=meta), bytes(nan))
        code, output, seconds = case.run(["run", out] + RUN_ARGS +
                                         ["--steps", "4"], START_LIMIT)
        case.expect(output, r"^dpc run: rank 1 .*step 1: the loss is NaN; "
                    r"stopping \(--allow-nonfinite-loss trains on\)$")
        case.expect_exit(code, 1)
        case.expect_within("exit", seconds, START_LIMIT)
    case.check_no_ranks_left()
    case.check_unchanged(before, ["out"])


def unwritable_checkpoint_dir(case):
    """A checkpoint directory nobody may write to (read-only for a user,
    immutable for root) is refused at start-up naming it, exit 2, and
    nothing is written there."""
    out = case.compile("out", 2)
    ckpt = os.path.join(case.dir, "ckpt")
    os.makedirs(ckpt)
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", ckpt]).returncode != 0:
            print("faults: cannot make a directory immutable here; skipped")
            sys.exit(77)
    else:
        os.chmod(ckpt, 0o555)
    try:
        before = case.snapshot(["out"])
        code, output, seconds = case.run(
            ["run", out] + RUN_ARGS + ["--steps", "4", "--checkpoint-dir",
                                       ckpt], START_LIMIT)
        case.expect(output, rf"--checkpoint-dir {re.escape(ckpt)}: cannot "
                    r"write there: (Operation not permitted|Permission "
                    r"denied)$")
        case.expect_exit(code, 2)
        case.expect_within("exit", seconds, START_LIMIT)
        if re.search(r"^step ", output, re.MULTILINE):
            case.fail("trained before finding the directory unwritable")
        case.check_no_ranks_left()
        case.check_unchanged(before, ["out"])
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", ckpt])
        else:
            os.chmod(ckpt, 0o755)


def checkpoint_steps(ckpt, stages):
    """The steps of each stage's newest and previous checkpoint files in
    `ckpt`, read from their metadata."""
    steps = []
    for stage in range(stages):
        held = set()
        for name in (f"stage{stage}.safetensors",
                     f"stage{stage}.previous.safetensors"):
            path = os.path.join(ckpt, name)
            if os.path.exists(path):
                header, _ = read_safetensors(path)
                held.add(int(header["__metadata__"]["step"]))
        steps.append(held)
    return steps


def launcher_killed(case):
    """kill -9 of dpc run itself while its ranks train with --checkpoint-every:
    mpirun is told (its parent-death signal) and ends the ranks, so no rank
    outlives the launcher; the checkpoints left hold a step every stage
    has (newest or previous file), and --resume trains on from it."""
    out = case.compile("out", 2)
    ckpt = os.path.join(case.dir, "ckpt")
    before = case.snapshot(["out", "ckpt"])
    every = 3
    job = subprocess.Popen(
        [case.dpc, "run", out] + LONG_RUN +
        ["--checkpoint-dir", ckpt, "--checkpoint-every", str(every)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # A progress line past the second checkpoint: every rank has then
    # finished writing the first (each write waits for the one before it
    # on every rank).
    started = time.monotonic()
    for line in job.stdout:
        sys.stdout.write(line)
        m = re.match(r"step (\d+)/", line)
        if m and int(m.group(1)) > 2 * every:
            break
        if time.monotonic() - started > 120:
            break
    else:
        case.fail("the job ended before its checkpoints")
        return
    job.kill()
    killed = time.monotonic()
    job.wait()
    deadline = killed + KILL_LIMIT
    while case.rank_pids() and time.monotonic() < deadline:
        time.sleep(0.2)
    case.expect_within("no rank left", time.monotonic() - killed, KILL_LIMIT)
    case.check_no_ranks_left()
    held = checkpoint_steps(ckpt, 2)
    common = set.intersection(*held)
    if not common:
        case.fail(f"no step every stage's checkpoint holds: {held}")
        return
    step = max(common)
    if step < every or step % every:
        case.fail(f"resumable step {step} is no checkpoint of every {every}")
    code, output, seconds = case.run(
        ["run", out] + RUN_ARGS + ["--steps", str(step + 4),
                                   "--checkpoint-dir", ckpt, "--resume"],
        TRAIN_LIMIT)
    case.expect(output, r"^training 4 steps of ")
    case.expect_exit(code, 0)
    case.check_no_ranks_left()
    case.check_unchanged(before, ["out", "ckpt"])


def losses(output):
    return re.findall(r"^step (\d+)/\d+ +loss (\S+)", output, re.MULTILINE)


def two_jobs(case, same_output):
    """Two jobs at once, on one output directory or on two: both train to
    the end with the losses of a job alone, exit 0, each leaves plan.json
    whole, and neither leaves its per-job files behind."""
    outs = [case.compile("out", 2)]
    outs.append(outs[0] if same_output else case.compile("out2", 2))
    skip = ["out", "out2"]
    args = RUN_ARGS + ["--steps", "40"]
    _, alone, _ = case.run(["run", outs[0]] + args, TRAIN_LIMIT)
    before = case.snapshot(skip)
    results = [None, None]

    def job(i):
        results[i] = case.run(["run", outs[i]] + args, TRAIN_LIMIT)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, result in enumerate(results):
        if result is None:
            case.fail(f"job {i} did not finish")
            continue
        code, output, seconds = result
        case.expect_exit(code, 0)
        case.expect_within(f"job {i}'s exit", seconds, TRAIN_LIMIT)
        if not losses(output) or losses(output) != losses(alone):
            case.fail(f"job {i}'s losses differ from a job alone")
    for out in set(outs):
        try:
            with open(os.path.join(out, "plan.json")) as f:
                plan = json.load(f)
            if "measured" not in plan:
                case.fail(f"{out}/plan.json lost its measurement")
        except ValueError as e:
            case.fail(f"{out}/plan.json is not JSON: {e}")
        left = [n for n in os.listdir(out)
                if n.startswith(".dpc-run-summary") or ".tmp" in n]
        if left:
            case.fail(f"left behind in {out}: {left}")
    case.check_no_ranks_left()
    case.check_unchanged(before, skip)


CASES = {}
for stages in (2, 4):
    for rank in range(stages):
        CASES[f"kill-{stages}-rank{rank}"] = \
            lambda c, s=stages, r=rank: kill_rank(c, s, r)
        CASES[f"stop-{stages}-rank{rank}"] = \
            lambda c, s=stages, r=rank: stop_rank(c, s, r)
CASES["corrupt-rank-binary"] = corrupt_rank_binary
CASES["corrupt-schedule"] = corrupt_schedule
CASES["corrupt-weights"] = corrupt_weights
CASES["unwritable-checkpoint-dir"] = unwritable_checkpoint_dir
CASES["launcher-killed"] = launcher_killed
CASES["two-jobs-same-output"] = lambda c: two_jobs(c, True)
CASES["two-jobs-different-outputs"] = lambda c: two_jobs(c, False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dpc", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("case", choices=["setup", "list"] + sorted(CASES))
    args = parser.parse_args()
    work = os.path.abspath(args.work)
    if args.case == "list":
        print("\n".join(CASES))
        return 0
    if args.case == "setup":
        os.makedirs(work, exist_ok=True)
        return subprocess.run([sys.executable, MAKE_MODEL, "mlp",
                               os.path.join(work, "mlp.onnx")]).returncode
    case = Case(os.path.abspath(args.dpc), work, args.case)
    started = time.monotonic()
    case.prepare()
    try:
        CASES[args.case](case)
    except Failure as e:
        print(e)
        case.fail(str(e).splitlines()[-1])
    for problem in case.problems:
        print(f"faults: FAIL: {problem}")
    print(f"faults: {args.case}: {'FAIL' if case.problems else 'ok'} in "
          f"{time.monotonic() - started:.1f} s")
    return 1 if case.problems else 0


if __name__ == "__main__":
    sys.exit(main())
