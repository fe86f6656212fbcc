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
  - The recipe applies per update (dpc run --lr-schedule, --clip-grad-norm):
    update u (counted over the run, M a window) has the schedule's rate of
    update u, as a PyTorch scheduler stepped after every optimizer.step();
    clipping scales microbatch k's gradients, on every stage, by
    max_norm / (norm + 1e-6) when that is below 1, the norm taken over all
    stages' gradients of that microbatch (clip_grad_norm_ over the model).
    Label smoothing is CrossEntropyLoss's.

The window's loss is the mean of its M microbatch losses; the output's
"lrs" and "grad_norms" are those of each window's last update, which dpc's
metrics record per step. The schedule's own
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
import recipe  # noqa: E402  (learning-rate schedules)


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


def one_ulp_away(tensors, seed):
    """`tensors` with every element moved up or down by one unit in the last
    place, at random (as oracle.py's perturbed runs)."""
    generator = torch.Generator().manual_seed(seed)
    return {name: oracle.one_ulp_away(value, generator)
            for name, value in tensors.items()}


class Emulation:
    """PipeDream's training of `model_name` with the weight versions of
    `table` (stage by microbatch) and the settings' SGD and recipe."""

    def __init__(self, model_name, stage_of, table, optimizer, M, B):
        self.model = oracle.build(model_name)
        self.names = [n for n, _ in self.model.named_parameters()]
        missing = [n for n in self.names if n not in stage_of]
        if missing:
            fail(f"no stage holds {', '.join(missing)}")
        self.stage_of, self.table, self.M, self.B = stage_of, table, M, B
        self.momentum = optimizer["momentum"]
        self.clip = optimizer.get("clip_grad_norm", 0)
        self.optimizer = optimizer
        # The mean over one microbatch.
        self.loss_fn = nn.CrossEntropyLoss(
            label_smoothing=optimizer.get("label_smoothing", 0.0))

    def train(self, initial, x, y, steps, dtype):
        """Per window: the mean loss, the last update's learning rate and,
        with clipping, the last update's gradient norm before clipping."""
        M, B, names = self.M, self.B, self.names
        rates = recipe.learning_rates(self.optimizer.get("lr_schedule", ""),
                                      self.optimizer["lr"], steps * M)
        model = self.model.to(dtype)
        x = x.to(dtype) if x.is_floating_point() else x
        live = {n: initial[n].to(dtype) for n in names}
        buffers = {n: None for n in names}
        losses, lrs, norms = [], [], []
        for step in range(steps):
            # history[n][v]: parameter n after v updates of this window.
            history = {n: [live[n]] for n in names}
            window = []
            for k in range(M):
                begin = (step * M + k) * B
                inputs, labels = x[begin:begin + B], y[begin:begin + B]
                used = {n: history[n][self.table[self.stage_of[n]][k]].clone()
                        .requires_grad_(True) for n in names}
                loss = self.loss_fn(functional_call(model, used, (inputs,)),
                                    labels)
                grads = torch.autograd.grad(loss, [used[n] for n in names])
                window.append(loss.item())
                rate = rates[step * M + k]
                if self.clip:
                    # clip_grad_norm_'s norm and coefficient.
                    norm = torch.norm(torch.stack([torch.norm(g)
                                                   for g in grads]))
                    coefficient = torch.clamp(self.clip / (norm + 1e-6),
                                              max=1.0)
                    grads = [g * coefficient for g in grads]
                    if k == M - 1:
                        norms.append(norm.item())
                # torch.optim.SGD without dampening: v = momentum v + g (the
                # first v is g), w -= lr v; applied to the newest weights.
                with torch.no_grad():
                    for n, g in zip(names, grads):
                        if buffers[n] is None or self.momentum == 0:
                            buffers[n] = g.clone()
                        else:
                            buffers[n] = buffers[n] * self.momentum + g
                        history[n].append(history[n][-1] - rate * buffers[n])
            live = {n: history[n][-1] for n in names}
            losses.append(sum(window) / M)
            lrs.append(rates[step * M + M - 1])
        self.final = live
        return losses, lrs, norms


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("oracle_dir")
    # Models without batch normalization or dropout, whose training is a
    # function of the weights alone.
    parser.add_argument("model", choices=sorted(oracle.MODELS) + ["tied-mlp"])
    parser.add_argument("compiled")
    parser.add_argument("-o", "--out", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--perturbed-runs", type=int, default=2, metavar="N",
                        help="also train N times from the initial weights "
                        "moved by one ulp at random (\"losses_perturbed\", "
                        "\"grad_norms_perturbed\"): samples of float32's "
                        "rounding noise for compare.py and compare_recipe.py")
    parser.add_argument("--final-weights", metavar="FILE",
                        help="write the float32 emulation's trained weights "
                        "here (safetensors, by parameter name)")
    args = parser.parse_args()

    settings = json.load(open(os.path.join(args.oracle_dir,
                                           args.model + ".oracle.json")))
    M, B = settings["microbatches"], settings["microbatch_size"]
    if settings["optimizer"].get("kind", "sgd") != "sgd":
        fail("the emulation implements SGD only, not "
             f"{settings['optimizer']['kind']}")
    optimizer = settings["optimizer"]
    if optimizer.get("weight_decay", 0):
        fail("the emulation implements SGD without weight decay")
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
    x, y = oracle.load_split(settings["data"].split(":", 1)[1], "train",
                             args.steps * M * B)
    initial = read_safetensors(os.path.join(args.oracle_dir,
                                            args.model + ".init.safetensors"))
    run = Emulation(args.model, stage_of, table, optimizer, M, B)
    losses, lrs, norms = run.train(initial, x, y, args.steps, torch.float32)
    # The same emulation in float64: the reference that compare.py and
    # compare_recipe.py judge a step by where float32 training has drifted.
    if args.final_weights:
        oracle.write_safetensors(
            args.final_weights,
            {n: v.detach().numpy() for n, v in run.final.items()})
    losses64, _, norms64 = run.train(initial, x, y, args.steps,
                                     torch.float64)
    perturbed = [run.train(one_ulp_away(initial, seed), x, y, args.steps,
                           torch.float32)
                 for seed in range(args.perturbed_runs)]

    # What oracle.py measured of synchronous training does not apply.
    result = {k: v for k, v in settings.items()
              if k not in ("losses", "losses64", "losses_perturbed", "lrs",
                           "grad_norms", "final_weights")}
    result.update({"schedule": "pipedream", "stages": p,
                   "vertical_sync": schedule.get("vertical_sync", False),
                   "versions": table, "steps": args.steps, "first_step": 1,
                   "loss": "softmax-cross-entropy, mean over each microbatch; "
                           "a step's loss is the mean over its window",
                   "losses": losses, "losses64": losses64,
                   **({"lrs": lrs} if "lr_schedule" in optimizer else {}),
                   "losses_perturbed": [run[0] for run in perturbed],
                   **({"grad_norms": norms, "grad_norms64": norms64,
                       "grad_norms_perturbed": [run[2] for run in perturbed]}
                      if norms else {})})
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"{args.model} pipedream p={p}: versions {table}; loss "
          f"{losses[0]:.6f} -> {losses[-1]:.6f}; wrote {args.out}")


if __name__ == "__main__":
    main()
