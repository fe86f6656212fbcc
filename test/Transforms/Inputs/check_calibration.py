"""Checks apply-profile's calibration of ops the profile did not measure.

Usage: check_calibration.py ANALYTIC.mlir MEASURED.mlir FWD BWD, where FWD and
BWD are the profile's summed forward and backward times of the measured
nodes. Every op of no measured node must keep the fixed cost of its kernel
call (call_ms) and have the rest of its analytic time scaled by the measured
nodes' FWD / (their analytic forward time) in forward segments and by BWD /
(their analytic whole-backward time) elsewhere, both sides without their
calls' fixed cost.
"""
import re
import sys

OP = re.compile(r'nn\.(\w+) .*, time_ms = ([-+.eE0-9]+) : f64}(?:, nn.node = "(\w+)")?')
CALL = re.compile(r'call_ms = ([-+.eE0-9]+) : f64')
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
            call = CALL.search(line)
            found.append((segment, m.group(1), float(m.group(2)), m.group(3),
                          float(call.group(1)) if call else 0.0))
    return found


analytic, measured = ops(sys.argv[1]), ops(sys.argv[2])
assert len(analytic) == len(measured), (len(analytic), len(measured))
ratios = {}
for direction, total in (("forward", float(sys.argv[3])), ("backward", float(sys.argv[4]))):
    ops = [(t, c) for s, _, t, n, c in analytic if s == direction and n in MEASURED]
    calls = sum(c for _, c in ops)
    ratios[direction] = (total - calls) / (sum(t for t, _ in ops) - calls)
wrong = False
for (segment, op, before, node, call), (_, _, after, _, _) in zip(analytic, measured):
    if node in MEASURED or segment in ("backward_input", "backward_weight"):
        continue
    direction = "forward" if segment == "forward" else "backward"
    expected = call + (before - call) * ratios[direction]
    ok = abs(after - expected) <= 1e-9 * max(after, 1e-30)
    print(op, direction, "ratio", "ok" if ok else "WRONG: %g -> %g" % (before, after))
    wrong = wrong or not ok
sys.exit(1 if wrong else 0)
