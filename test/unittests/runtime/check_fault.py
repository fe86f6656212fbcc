#!/usr/bin/python3
"""Runs a command that must fail quickly: checks that it exits non-zero
within --max-seconds and that its output matches every --expect regex.

    check_fault.py --max-seconds 20 --expect 'rank 1' -- mpirun -np 2 ...
"""

import argparse
import re
import subprocess
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-seconds", type=float, required=True)
    parser.add_argument("--expect", action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    started = time.monotonic()
    try:
        # Twice the limit before we kill it ourselves: a hang shows as a
        # failure with its output, not as a stuck ctest.
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=2 * args.max_seconds)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + \
              (e.stderr or b"").decode(errors="replace")
        print(out)
        print(f"check_fault: HANG: still running after {2 * args.max_seconds:g} s")
        return 1
    elapsed = time.monotonic() - started
    output = result.stdout + result.stderr
    print(output)
    print(f"check_fault: exit {result.returncode} after {elapsed:.1f} s")
    ok = True
    if result.returncode == 0:
        print("check_fault: FAIL: expected a non-zero exit")
        ok = False
    if elapsed > args.max_seconds:
        print(f"check_fault: FAIL: took longer than {args.max_seconds:g} s")
        ok = False
    for pattern in args.expect:
        if not re.search(pattern, output):
            print(f"check_fault: FAIL: output does not match {pattern!r}")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
