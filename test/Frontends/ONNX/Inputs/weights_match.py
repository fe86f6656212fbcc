"""Checks that the per-stage weight files dpc wrote hold exactly the
reference tensors (names, shapes and bytes). Usage: weights_match.py REF
STAGE0 [STAGE1 ...]; prints a summary, exits 1 on a mismatch."""
import json
import struct
import sys


def read(path):
    data = open(path, "rb").read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    header.pop("__metadata__", None)
    body = data[8 + size:]
    return {name: (info["shape"], body[info["data_offsets"][0]:info["data_offsets"][1]])
            for name, info in header.items()}


reference = read(sys.argv[1])
stages = {}
for path in sys.argv[2:]:
    for name, tensor in read(path).items():
        if name in stages:
            sys.exit(f"{name} is in more than one stage")
        stages[name] = tensor
if stages != reference:
    missing = sorted(set(reference) - set(stages))
    extra = sorted(set(stages) - set(reference))
    differ = sorted(n for n in set(reference) & set(stages) if reference[n] != stages[n])
    sys.exit(f"mismatch: missing {missing}, extra {extra}, different {differ}")
print(f"{len(stages)} tensors, same names, shapes and values")
