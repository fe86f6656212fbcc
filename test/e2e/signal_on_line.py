#!/usr/bin/python3
"""Runs a command, passing its output through, and sends it SIGUSR1 once
when a line of its output contains TEXT: a test's way to tell
`dpc run --elastic` that a lost device is back at a known point.

    signal_on_line.py TEXT COMMAND...

Exits with the command's exit code, or 1 when no line contained TEXT.
"""

import os
import signal
import subprocess
import sys


def main():
    text, command = sys.argv[1], sys.argv[2:]
    job = subprocess.Popen(command, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    sent = False
    for line in job.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if not sent and text in line:
            os.kill(job.pid, signal.SIGUSR1)
            sent = True
    code = job.wait()
    if not sent:
        print(f"signal_on_line: no line contained {text!r}")
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
