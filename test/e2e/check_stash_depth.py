"""Checks a dpc run's measured peak stash depth and weight versions per rank
(the metrics records `dpc run --metrics` writes after training) against the
schedule's promise and against the textbook figures for the kind.

    check_stash_depth.py METRICS.jsonl KIND STAGES MICROBATCHES [CHUNKS]

Textbook peaks of stashed microbatches on rank s of p, m microbatches:
gpipe m; 1f1b and pipedream min(m, p - s); zb-h1 min(m, p); zb-2p at most min(m, 2p); interleaved
with v chunks min(2 (p - s - 1) + (v - 1) p + 1, m v). PipeDream keeps
min(m, p - s) weight versions (the live weights included); the others one
per chunk.
"""
import json
import sys


def textbook(kind, p, m, v, s):
    if kind == "gpipe":
        stashes = m
    elif kind in ("1f1b", "pipedream"):
        stashes = min(m, p - s)
    elif kind == "zb-h1":
        stashes = min(m, p)
    elif kind == "zb-2p":
        stashes = min(m, 2 * p)
    elif kind == "interleaved":
        stashes = min(2 * (p - s - 1) + (v - 1) * p + 1, m * v)
    else:
        sys.exit(f"unknown kind {kind}")
    versions = min(m, p - s) if kind == "pipedream" else v
    return stashes, versions


def main():
    path, kind, p, m = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    v = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    rows = [json.loads(line) for line in open(path) if line.strip()]
    ranks = {r["rank"]: r for r in rows if "peak_stashes" in r}
    if sorted(ranks) != list(range(p)):
        sys.exit(f"{path}: memory records for ranks {sorted(ranks)}, expected 0..{p - 1}")
    bad = 0
    for s in range(p):
        r = ranks[s]
        stashes, versions = textbook(kind, p, m, v, s)
        measured = (r["peak_stashes"], r["peak_weight_versions"])
        promised = (r["promised_stashes"], r["promised_weight_versions"])
        if kind == "zb-2p":
            # The order comes from the stages' costs: the bound, not a figure.
            ok = measured == promised and promised[0] <= stashes and promised[1] == versions
        else:
            ok = measured == promised == (stashes, versions)
        bad += not ok
        print(f"{kind} rank {s}: measured {measured} promised {promised} "
              f"textbook {(stashes, versions)}{'' if ok else '  MISMATCH'}")
    print(f"{kind}: {'all ranks as promised' if not bad else f'{bad} ranks differ'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
