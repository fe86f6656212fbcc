#!/usr/bin/python3
"""within.py SECONDS COMMAND...: runs COMMAND, passes its output through,
prints its exit code, and fails when it ran longer than SECONDS (or hangs)."""

import subprocess
import sys
import time

limit = float(sys.argv[1])
started = time.monotonic()
try:
    result = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            timeout=2 * limit)
except subprocess.TimeoutExpired:
    print(f"within: HANG: still running after {2 * limit:g} s")
    sys.exit(1)
elapsed = time.monotonic() - started
sys.stdout.write(result.stdout)
print(f"within: exit code {result.returncode}")
if elapsed > limit:
    print(f"within: TOO SLOW: {elapsed:.1f} s > {limit:g} s")
    sys.exit(1)
