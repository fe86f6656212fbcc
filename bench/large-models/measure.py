"""Measures a command run in a fresh process: wall seconds, the peak RSS of
its largest process, and optionally the moment a file gets its first line
and the peak of the summed RSS of the whole process tree.

Peak RSS comes from wait4(2): Linux reports the child's ru_maxrss as the
largest of its own and its waited-for descendants' (for `dpc compile`, the
compiler; for `dpc run`, the largest of dpc, mpirun and the ranks). The
tree's sum is sampled from /proc every SAMPLE_S seconds, so it can miss a
short peak (a training run's weights and optimizer state stay for its
whole length).
"""

import os
import subprocess
import tempfile
import time

from procs import descendants  # bench/common, on the importer's path

SAMPLE_S = 1.0  # a /proc walk a second: little of the cores it measures


def tree_rss(root):
    """The summed VmRSS in bytes of `root` and its descendants."""
    total = 0
    for pid in [root] + descendants(root):
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
    return total


def anon_rss(pid):
    """The RssAnon of `pid` in bytes (its private memory, without the
    shared libraries' resident code), or 0."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _first_line(path):
    try:
        with open(path) as f:
            return f.readline().endswith("\n")
    except OSError:
        return False


def run(command, env=None, first_line_of=None, sample_tree=False):
    """Runs `command` and returns {"rc", "seconds", "maxrss" (bytes),
    "anon_peak" (the largest RssAnon of the command's own process seen,
    sampled every 20 ms), "stdout", "stderr" (their last 20,000
    characters), and with `first_line_of` "first_line_s" (seconds from the
    start until that file held a whole line; None if never), with
    `sample_tree` "tree_rss_peak" (bytes)}."""
    with tempfile.TemporaryFile("w+") as out, \
            tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err,
                                   stdin=subprocess.DEVNULL, text=True)
        first_line_s, tree_peak, next_sample = None, 0, 0.0
        anon_peak = 0
        while True:
            anon_peak = max(anon_peak, anon_rss(process.pid))
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            now = time.perf_counter() - started
            if pid:
                break
            if first_line_of and first_line_s is None and \
                    _first_line(first_line_of):
                first_line_s = now
            if sample_tree and now >= next_sample:
                tree_peak = max(tree_peak, tree_rss(process.pid))
                next_sample = now + SAMPLE_S
            time.sleep(0.02)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if first_line_of and first_line_s is None and \
                _first_line(first_line_of):
            first_line_s = seconds
        out.seek(0)
        err.seek(0)
        result = {"rc": process.returncode, "seconds": seconds,
                  "maxrss": usage.ru_maxrss * 1024,
                  "anon_peak": anon_peak,
                  "stdout": out.read()[-20000:],
                  "stderr": err.read()[-20000:]}
    if first_line_of:
        result["first_line_s"] = first_line_s
    if sample_tree:
        result["tree_rss_peak"] = tree_peak
    return result
