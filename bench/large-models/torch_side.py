#!/usr/bin/python3
"""The PyTorch side of bench/large-models, each part in a fresh process so
that its time and peak RSS are its own:

    torch_side.py export MODEL.onnx --params P [--batch B] [--seed S]
    torch_side.py peer SPEC.json RESULT.json

`export` builds test/e2e/oracle's TinyGPT at preset P with seed S and
exports it as the oracle does for a model that trains (torch.onnx.export,
opset 17, TrainingMode.TRAINING, no constant folding, the TorchScript
exporter), then re-saves it with its weights in one external file,
MODEL.onnx.data (external_onnx.resave_one_file), or with --storage inline
keeps torch.onnx's own file (under 2 GiB only).

`peer` is the eager baseline: the same TinyGPT loaded with the ONNX file's
initializers (memory-mapped from its external data, so both sides start
from the same bytes), trained on the microbatches dpc reads from the token
file (no shuffle: sample k is the window of T tokens at k*T, its labels the
next T), cross-entropy over every position, the M microbatches' gradients
accumulated (each loss divided by M) before one torch.optim.Adam step. It
runs with torch.set_num_threads(T) and OpenBLAS's pool at T (the parent
chose the BLAS through LD_LIBRARY_PATH) and writes step 1's loss, every
loss and tokens/s over steps 2..N to RESULT.json.
"""

import argparse
import gc
import inspect
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "test", "e2e", "oracle"))
sys.path.insert(0, os.path.join(REPO, "bench", "common"))
sys.path.insert(0, HERE)

import external_onnx  # noqa: E402
import gen_random_gpt as gpt  # noqa: E402
import measure  # noqa: E402


def build(preset, seed):
    import torch
    import oracle
    cfg = gpt.config(preset)
    torch.manual_seed(seed)
    model = oracle.TinyGPT(vocab=cfg["vocab"], length=cfg["length"],
                           width=cfg["width"], heads=cfg["heads"],
                           layers=cfg["layers"])
    count = sum(p.numel() for p in model.parameters())
    if count != gpt.parameter_count(cfg):
        sys.exit(f"torch_side: TinyGPT has {count} parameters, "
                 f"gen_random_gpt counts {gpt.parameter_count(cfg)}")
    return model, cfg


def export(path, preset, batch, seed, storage="external"):
    import torch
    model, cfg = build(preset, seed)
    model.train(True)
    dummy = torch.zeros(batch, cfg["length"], dtype=torch.long)
    legacy = ({"dynamo": False} if "dynamo" in
              inspect.signature(torch.onnx.export).parameters else {})
    scratch = tempfile.mkdtemp(prefix="torch-export-",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        raw = os.path.join(scratch, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(model, dummy, raw, opset_version=17,
                              input_names=["input"],
                              output_names=["logits"],
                              do_constant_folding=False, export_params=True,
                              training=torch.onnx.TrainingMode.TRAINING,
                              **legacy)
        torch_files = len(os.listdir(scratch))
        del model
        gc.collect()
        if storage == "inline" and torch_files == 1:
            shutil.move(raw, path)
        elif storage == "inline":
            sys.exit(f"torch_side: {preset} is past 2 GiB: torch.onnx "
                     f"wrote its weights to {torch_files - 1} external "
                     f"files, it cannot be stored inline")
        else:
            external_onnx.resave_one_file(raw, path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{path}: {preset}, torch.onnx wrote {torch_files} file(s), "
          f"stored {storage}, "
          f"{external_onnx.model_bytes(path)} bytes")


def load_exported(model, onnx_path):
    """Copies the ONNX file's initializers into the model's parameters."""
    import torch
    arrays = external_onnx.read_initializers(onnx_path)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name not in arrays:
                sys.exit(f"torch_side: parameter {name} is not an "
                         f"initializer of {onnx_path}")
            value = arrays[name]
            if tuple(value.shape) != tuple(param.shape):
                sys.exit(f"torch_side: {name}: exported shape "
                         f"{tuple(value.shape)} != {tuple(param.shape)}")
            param.copy_(torch.from_numpy(value.astype("float32")))


def peer(spec_path, result_path):
    import numpy as np
    import torch
    import baseline
    with open(spec_path) as f:
        spec = json.load(f)
    threads = spec["threads"]
    torch.set_num_threads(threads)
    _, blas, set_threads = baseline.loaded_blas(torch)
    if set_threads:
        set_threads(threads)
    model, cfg = build(spec["preset"], spec["seed"])
    load_exported(model, spec["onnx"])
    model.train(True)
    t, m, b = cfg["length"], spec["microbatches"], spec["microbatch_size"]
    tokens = np.memmap(spec["tokens"], dtype=np.uint16, mode="r")
    optimizer = torch.optim.Adam(model.parameters(), lr=spec["lr"],
                                 betas=(0.9, 0.999), eps=1e-8)
    losses, ends = [], []
    started = time.perf_counter()
    for step in range(spec["steps"]):
        optimizer.zero_grad()
        total = 0.0
        for k in range(m):
            first = (step * m + k) * b
            window = np.stack([tokens[(first + i) * t:(first + i + 1) * t + 1]
                               for i in range(b)]).astype(np.int64)
            x = torch.from_numpy(window[:, :-1].copy())
            y = torch.from_numpy(window[:, 1:].copy())
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, cfg["vocab"]), y.reshape(-1)) / m
            loss.backward()
            total += loss.item()
        optimizer.step()
        losses.append(total)
        ends.append(time.perf_counter() - started)
        print(f"torch step {step + 1}/{spec['steps']} loss {total:.6f} "
              f"{ends[-1]:.1f} s", flush=True)
    result = {"losses": losses, "first_loss": losses[0],
              "steps_done": len(losses), "first_step_s": ends[0],
              "threads": threads, "blas": blas}
    tokens_step = m * b * t
    if len(ends) > 1:
        result["tokens_s"] = tokens_step * (len(ends) - 1) / (ends[-1] -
                                                              ends[0])
    else:
        result["tokens_s"] = tokens_step / ends[0]
    with open(result_path, "w") as f:
        json.dump(result, f)


def run_peer(args, onnx_path, preset, tokens):
    """Runs `peer` in a fresh process; its result dict (with its wall
    seconds and peak RSS, or the error)."""
    spec = {"onnx": onnx_path, "preset": preset, "seed": args.seed,
            "tokens": tokens, "steps": args.steps,
            "microbatches": args.microbatches,
            "microbatch_size": args.microbatch_size, "lr": args.lr,
            "threads": args.torch_threads}
    spec_path = os.path.join(args.work, "torch-spec.json")
    result_path = os.path.join(args.work, "torch-result.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    if os.path.exists(result_path):
        os.remove(result_path)
    result = measure.run([sys.executable, os.path.abspath(__file__), "peer",
                          spec_path, result_path])
    row = {"wall_s": result["seconds"], "largest_rss": result["maxrss"],
           "cores": min(args.torch_threads, os.cpu_count())}
    if result["rc"] != 0 or not os.path.exists(result_path):
        lines = (result["stderr"] or result["stdout"]).strip().splitlines()
        row["error"] = "torch: " + (lines[-1] if lines else
                                    f"exit {result['rc']}")
        print(f"  ERROR {row['error']}", flush=True)
        return row
    with open(result_path) as f:
        row.update(json.load(f))
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    e = sub.add_parser("export")
    e.add_argument("path")
    e.add_argument("--params", required=True, choices=list(gpt.PRESETS))
    e.add_argument("--batch", type=int, default=1)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--storage", default="external",
                   choices=["external", "inline"])
    p = sub.add_parser("peer")
    p.add_argument("spec")
    p.add_argument("result")
    args = parser.parse_args()
    if args.what == "export":
        export(args.path, args.params, args.batch, args.seed, args.storage)
    else:
        peer(args.spec, args.result)


if __name__ == "__main__":
    main()
