"""Helpers of seq-buckets.test.

  buckets.py export DIR      writes DIR/var-gpt.onnx: oracle.py's VarGPT
                             (length 32) with a dynamic batch and length,
                             and DIR/mlp.onnx (image inputs)
  buckets.py manifest RANK   prints the shape buckets of a rank executable's
                             manifest, one line each, and whether their
                             bytes scale with batch x length
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def export(directory):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "e2e", "oracle"))
    import torch
    import oracle
    torch.manual_seed(0)
    os.makedirs(directory, exist_ok=True)
    oracle.export_and_reload(oracle.VarGPT(length=32), "var-gpt", 4,
                             directory, dynamic=True)
    oracle.export_and_reload(oracle.MLP(), "mlp", 4, directory)


def manifest(rank):
    data = open(rank, "rb").read()
    start = data.index(b'{"buckets":')
    text = data[start:data.index(b"\0", start)].decode()
    top = json.loads(text)
    buckets = top["buckets"]
    print(f"rank {top['rank']}: {len(buckets)} buckets, top level "
          f"batch {top['microbatch_size']}")
    def stashed(b):
        return sum(e["bytes"] for e in b["stashes"])
    for b in buckets:
        print(f"bucket {b['batch']}x{b['length']}: "
              f"inputs {[i['shape'] for i in b['inputs']]} "
              f"labels {b['labels'] and b['labels']['shape']} "
              f"output {b['output'] and b['output']['shape']} "
              f"stashes {stashed(b)} stages {len(b['stage_costs'])}")
        if ([s["tag"] for s in b["sends"]] != [s["tag"] for s in top["sends"]]
                or [s["key"] for s in b["stashes"]] !=
                [s["key"] for s in top["stashes"]]):
            print(f"bucket {b['batch']}x{b['length']}: other tags or keys")
    # What a microbatch stashes grows with its batch at one length and with
    # its length at one batch.
    scaled = all(stashed(a) < stashed(b) for a in buckets for b in buckets
                 if (a["length"] == b["length"] and a["batch"] < b["batch"]) or
                 (a["batch"] == b["batch"] and a["length"] < b["length"]))
    order = [(b["length"], b["batch"]) for b in buckets]
    print("sorted" if order == sorted(order) else "NOT SORTED")
    print("bytes scale with tokens" if scaled else "bytes DO NOT SCALE")


if __name__ == "__main__":
    {"export": export, "manifest": manifest}[sys.argv[1]](sys.argv[2])
