"""Checks apply-profile's calibration of ops the profile did not measure.

Usage: check_calibration.py ANALYTIC.mlir MEASURED.mlir FWD BWD, where FWD and
BWD are the profile's summed forward and backward times of the measured
nodes. Every op of no measured node must have its analytic time scaled by
FWD / (their analytic forward time) in forward segments and by BWD / (their
analytic whole-backward time) elsewhere.
"""
import re
import sys

OP = re.compile(r'nn\.(\w+) .*, time_ms = ([-+.eE0-9]+) : f64}(?:, nn.node = "(\w+)")?')
SEGMENT = re.compile(r'func\.func @\w+\(\) attributes {pipe\.segment = "(\w+)"')
MEASURED = {"fc0", "act", "fc1"}


def ops(path):
    segment, found = None, []
    for line in open(path):
        m = SEGMENT.search(line)
        if m:
            segment = m.group(1)
            continue
        m = OP.search(line)
        if m:
            found.append((segment, m.group(1), float(m.group(2)), m.group(3)))
    return found


analytic, measured = ops(sys.argv[1]), ops(sys.argv[2])
assert len(analytic) == len(measured), (len(analytic), len(measured))
forward = sum(t for s, _, t, n in analytic if s == "forward" and n in MEASURED)
backward = sum(t for s, _, t, n in analytic if s == "backward" and n in MEASURED)
ratios = {"forward": float(sys.argv[3]) / forward, "backward": float(sys.argv[4]) / backward}
wrong = False
for (segment, op, before, node), (_, _, after, _) in zip(analytic, measured):
    if node in MEASURED or segment in ("backward_input", "backward_weight"):
        continue
    direction = "forward" if segment == "forward" else "backward"
    ok = abs(after - before * ratios[direction]) <= 1e-9 * max(after, 1e-30)
    print(op, direction, "ratio", "ok" if ok else "WRONG: %g -> %g" % (before, after))
    wrong = wrong or not ok
sys.exit(1 if wrong else 0)
