"""Cuts a host's network in the middle of a dpc run on the emulated cluster.

    cut_host.py CLUSTER_SCRIPT NAME HOST [--daemons NAMES] -- DPC RUN ARGS...

Starts the run, waits until it has printed a step of 3 or more, sets HOST's link
down (scripts/cluster link), and waits for the run to end (at most 120 s).
Then prints the run's exit code, its last line on stderr, the seconds from
the cut to the end (for the record; the verdict is the exit code and the
message), and the processes left on each host of the cluster ("left
running: none" when there are none), and sets the link up again. NAMES
(comma-separated process names, e.g. slurmd) are the cluster's own daemons,
not the job's: they are not counted as left running.
"""
import subprocess
import sys
import threading
import time


def process_name(pid):
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except OSError:
        return ""


def main():
    script, name, host = sys.argv[1:4]
    options = sys.argv[4:sys.argv.index("--")]
    daemons = set()
    if options[:1] == ["--daemons"]:
        daemons = set(options[1].split(","))
    command = sys.argv[sys.argv.index("--") + 1:]
    run = subprocess.Popen(command, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    errors = []
    reader = threading.Thread(target=lambda: errors.extend(run.stderr))
    reader.start()
    cut_at = None
    try:
        for line in run.stdout:
            step = line.split("/")[0].split()
            if (cut_at is None and len(step) == 2 and step[0] == "step"
                    and step[1].isdigit() and int(step[1]) >= 3):
                subprocess.run([script, "link", name, host, "down"],
                               check=True)
                cut_at = time.monotonic()
        code = run.wait(timeout=120)
    except subprocess.TimeoutExpired:
        run.kill()
        code = "none: still running after 120 s"
    reader.join()
    ended = time.monotonic()
    try:
        if cut_at is None:
            print("cut_host: the run ended before its third step")
        print(f"exit code: {code}")
        last = [e.strip() for e in errors if e.startswith("dpc run:")]
        print("message: " + (last[-1] if last else "(none)"))
        if cut_at is not None:
            print(f"ended {ended - cut_at:.1f} s after the cut")
        hosts = subprocess.run(
            ["cat", f"/run/dpc-cluster/{name}/hosts"], capture_output=True,
            text=True, check=True).stdout.split("\n")
        left = []
        for row in filter(None, hosts):
            h = row.split()[0]
            pids = subprocess.run([script, "pids", name, h],
                                  capture_output=True, text=True).stdout
            left += [f"{h}:{p}" for p in pids.split()
                     if process_name(p) not in daemons]
        print("left running: " + (" ".join(left) if left else "none"))
    finally:
        subprocess.run([script, "link", name, host, "up"])


if __name__ == "__main__":
    main()
