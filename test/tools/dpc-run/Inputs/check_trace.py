"""Summarises a merged `dpc run --trace` file for trace.test: the ranks, the
span kinds and optimizer steps of each, whether span names carry their
microbatch ids, and whether rank 1's forward of each microbatch starts after
rank 0's ends on the shared clock."""
import json
import sys

events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
ranks = sorted({e["pid"] for e in events})
print("ranks", ranks)
for r in ranks:
    mine = [e for e in events if e["pid"] == r]
    kinds = sorted({e["cat"] for e in mine} - {"load"})
    opts = sum(e["cat"] == "optimizer" for e in mine)
    mbs = sorted({e["args"]["mb"] for e in mine if "mb" in e["args"]})
    print(f"rank {r}: {' '.join(kinds)}; {opts} optimizer steps; microbatches {mbs}")

prefix = {"forward": "F", "backward": "B", "backward-input": "B",
          "backward-weight": "W"}
bad = []
for e in events:
    mb = e["args"].get("mb")
    if e["cat"] in prefix:
        ok = e["name"] == f"{prefix[e['cat']]}{mb}"
    elif e["cat"] in ("send", "recv"):
        ok = e["name"].startswith(e["cat"] + " ") and e["name"].endswith(f" mb{mb}")
    else:
        ok = True
    if not ok:
        bad.append(e["name"])
print("names match microbatches" if not bad else f"names differ: {bad[:5]}")

# The k-th forward of microbatch j on each rank belongs to the k-th step.
# Ranks on one machine share rank 0's origin exactly, so rank 1 starts it
# no earlier than rank 0 ends it (a barrier alone leaves them up to
# milliseconds apart on a loaded machine).
forwards = {}
for e in sorted(events, key=lambda e: e["ts"]):
    if e["cat"] == "forward":
        forwards.setdefault((e["pid"], e["args"]["mb"]), []).append(e)
late = [(mb, k) for (r, mb), spans in forwards.items() if r == 0
        for k, f0 in enumerate(spans)
        if k < len(forwards.get((1, mb), []))
        and forwards[(1, mb)][k]["ts"] < f0["ts"] + f0["dur"]]
print("causal on one clock" if not late else f"rank 1 ahead of rank 0: {late[:5]}")
