#!/usr/bin/python3
"""stop_rank.py EXE LIMIT COMMAND...: runs COMMAND (a dpc run), and once it
has printed its first training step sends SIGSTOP to the process running
EXE (one rank). Passes the output through and prints when the watchdog
named the rank and when the job exited, in seconds after the stop. Fails
when the job is still running LIMIT seconds after the stop; the stopped
rank is killed in any case."""

import os
import signal
import subprocess
import sys
import threading
import time

exe, limit, command = os.path.realpath(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]


def find_rank():
    """The pid whose executable is EXE (this job's rank), or None."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.path.realpath(f"/proc/{entry}/exe") == exe:
                return int(entry)
        except OSError:
            pass
    return None


job = subprocess.Popen(command, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
stopped_at = None
stopped_pid = None
lines = []


def read():
    global stopped_at, stopped_pid
    for line in job.stdout:
        now = time.monotonic()
        lines.append(line)
        if stopped_at is None and line.startswith("step "):
            stopped_pid = find_rank()
            if stopped_pid is None:
                print("stop_rank: no process runs " + exe)
                continue
            os.kill(stopped_pid, signal.SIGSTOP)
            stopped_at = now
            print("stop_rank: stopped", flush=True)
        elif stopped_at is not None and line.startswith("watchdog:"):
            print(f"stop_rank: watchdog after {now - stopped_at:.1f} s")
        sys.stdout.write(line)
        sys.stdout.flush()


reader = threading.Thread(target=read)
reader.start()
started = time.monotonic()
try:
    while job.poll() is None:
        if stopped_at is not None and time.monotonic() - stopped_at > limit:
            print(f"stop_rank: HANG: still running {limit:g} s after the stop")
            job.kill()
            sys.exit(1)
        if stopped_at is None and time.monotonic() - started > 120:
            print("stop_rank: the job never printed a step")
            job.kill()
            sys.exit(1)
        time.sleep(0.1)
    reader.join()
    if stopped_at is not None:
        print(f"stop_rank: exit code {job.returncode} after "
              f"{time.monotonic() - stopped_at:.1f} s")
finally:
    if stopped_pid is not None:
        try:
            os.kill(stopped_pid, signal.SIGKILL)
        except OSError:
            pass
