#!/usr/bin/python3
"""PyTorch emulation of PipeDream's weight stashing, the oracle for dpc's
`--schedule pipedream`.

    pipedream.py ORACLE_DIR MODEL COMPILED_DIR -o LOSSES.json [--steps 20]

ORACLE_DIR is what oracle.py wrote (MODEL.onnx, MODEL.init.safetensors,
MODEL.oracle.json with the settings); COMPILED_DIR is `dpc compile`'s output
for that model with `--schedule pipedream`. From it the emulation takes only
facts a user chose or can read off the plan: how many stages, whether
vertical sync is on, and which parameters each stage holds
(weights/stageK.safetensors). The weight versions themselves follow from
PipeDream's rules, derived here independently of dpc's schedule builder:

  - A step is a window of M microbatches that starts from the live weights.
    Stage s runs min(M, p - s) forwards before its first backward, then
    alternates, so when microbatch k's forward runs, stage s has applied
    max(0, k - min(M, p - s) + 1) updates: version v_s(k) = that count.
  - Microbatch k's forward and its backward on stage s both use
    W_s^(v_s(k)) (weight stashing). With vertical sync, every stage uses
    stage 0's version v_0(k).
  - A parameter read on several stages (a tied weight) is held by its
    first reader, and the others compute with the version that stage uses:
    dpc sends it downstream with the microbatch.
  - Stage s updates after every backward, in microbatch order: W_s^(k+1) =
    SGD(W_s^(k), grad of microbatch k), each loss the mean over its B
    samples, one momentum buffer per parameter across all updates.

The window's loss is the mean of its M microbatch losses. The schedule's own
versions (the "version" of each forward in schedule.json) are checked
against these rules, so a builder that drifts from PipeDream fails here too.
The output has oracle.py's "losses" format, for compare.py.
"""

import argparse
import json
import os
import struct
import sys

import torch
import torch.nn as nn
from torch.nn.utils.stateless import functional_call

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402  (models and data loading)


def fail(message):
    sys.exit(f"pipedream oracle: {message}")


def safetensors_names(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
    return [name for name in header if name != "__metadata__"]


def read_safetensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            fail(f"{path}: {name} is {entry['dtype']}, expected F32")
        begin, end = entry["data_offsets"]
        flat = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.float32)
        tensors[name] = flat.reshape(entry["shape"]).clone()
    return tensors


def versions(stages, microbatches, vertical_sync):
    """versions[s][k]: the updates stage s applied before microbatch k's
    forward, within a window."""
    table = []
    for s in range(stages):
        ahead = min(microbatches, stages - s)
        table.append([max(0, k - ahead + 1) for k in range(microbatches)])
    if vertical_sync:
        table = [list(table[0]) for _ in range(stages)]
    return table


def check_schedule(schedule, table):
    for program in schedule["programs"]:
        rank = program["rank"]
        for inst in program["instructions"]:
            if inst["op"] != "forward":
                continue
            expected = table[rank][inst["mb"]]
            if inst.get("version") != expected:
                fail(f"schedule.json: rank {rank} runs forward mb {inst['mb']} "
                     f"with weight version {inst.get('version')}, PipeDream's "
                     f"rule gives {expected}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("oracle_dir")
    # Models without batch normalization or dropout, whose training is a
    # function of the weights alone.
    parser.add_argument("model", choices=sorted(oracle.MODELS) + ["tied-mlp"])
    parser.add_argument("compiled")
    parser.add_argument("-o", "--out", required=True)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    settings = json.load(open(os.path.join(args.oracle_dir,
                                           args.model + ".oracle.json")))
    M, B = settings["microbatches"], settings["microbatch_size"]
    if settings["optimizer"].get("kind", "sgd") != "sgd":
        fail("the emulation implements SGD only, not "
             f"{settings['optimizer']['kind']}")
    lr = settings["optimizer"]["lr"]
    momentum = settings["optimizer"]["momentum"]
    schedule = json.load(open(os.path.join(args.compiled, "schedule.json")))
    if schedule["kind"] != "pipedream":
        fail(f"{args.compiled} was compiled for {schedule['kind']}, not "
             f"pipedream")
    if schedule["microbatches"] != M:
        fail(f"{args.compiled} has {schedule['microbatches']} microbatches "
             f"per window, the oracle's settings {M}")
    p = schedule["ranks"]
    table = versions(p, M, schedule.get("vertical_sync", False))
    check_schedule(schedule, table)

    # Which stage holds each parameter.
    stage_of = {}
    for s in range(p):
        path = os.path.join(args.compiled, "weights", f"stage{s}.safetensors")
        if os.path.exists(path):
            for name in safetensors_names(path):
                stage_of[name] = s

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    model = oracle.build(args.model)
    live = read_safetensors(os.path.join(args.oracle_dir,
                                         args.model + ".init.safetensors"))
    names = [n for n, _ in model.named_parameters()]
    missing = [n for n in names if n not in stage_of]
    if missing:
        fail(f"no stage of {args.compiled} holds {', '.join(missing)}")
    live = {n: live[n] for n in names}
    buffers = {n: None for n in names}
    x, y = oracle.load_split(settings["data"].split(":", 1)[1], "train",
                             args.steps * M * B)
    loss_fn = nn.CrossEntropyLoss()  # mean over one microbatch

    losses = []
    for step in range(args.steps):
        # history[n][v]: parameter n after v updates of this window.
        history = {n: [live[n]] for n in names}
        window = []
        for k in range(M):
            begin = (step * M + k) * B
            inputs, labels = x[begin:begin + B], y[begin:begin + B]
            used = {n: history[n][table[stage_of[n]][k]].clone()
                    .requires_grad_(True) for n in names}
            loss = loss_fn(functional_call(model, used, (inputs,)), labels)
            grads = torch.autograd.grad(loss, [used[n] for n in names])
            window.append(loss.item())
            # torch.optim.SGD without dampening: v = momentum v + g (the
            # first v is g), w -= lr v; applied to the newest weights.
            with torch.no_grad():
                for n, g in zip(names, grads):
                    if buffers[n] is None or momentum == 0:
                        buffers[n] = g.clone()
                    else:
                        buffers[n] = buffers[n] * momentum + g
                    history[n].append(history[n][-1] - lr * buffers[n])
        live = {n: history[n][-1] for n in names}
        losses.append(sum(window) / M)

    result = dict(settings)
    result.update({"schedule": "pipedream", "stages": p,
                   "vertical_sync": schedule.get("vertical_sync", False),
                   "versions": table, "steps": args.steps, "first_step": 1,
                   "loss": "softmax-cross-entropy, mean over each microbatch; "
                           "a step's loss is the mean over its window",
                   "losses": losses})
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"{args.model} pipedream p={p}: versions {table}; loss "
          f"{losses[0]:.6f} -> {losses[-1]:.6f}; wrote {args.out}")


if __name__ == "__main__":
    main()
