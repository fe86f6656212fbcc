"""The files an oracle fed by .npy arrays (seg_oracle.py, bert_models.py)
writes after training: MODEL.final.safetensors (the float32 model's trained
weights), MODEL.final64.safetensors (the float64 reference's, as float32)
and MODEL.oracle.json, whose fields every such oracle shares are filled in
here and the model's own come in `fields`."""

import json
import os

import numpy as np
import torch


def write(oracle, out, name, model, reference, onnx_path, ops, losses,
          losses64, fields):
    """Writes the three files for `model` (trained) and `reference` (its
    float64 copy, trained) and prints the summary line. `oracle` is the
    oracle module (passed in: it imports the model files that call this)."""
    oracle.write_safetensors(os.path.join(out, f"{name}.final.safetensors"),
                             oracle.trained_arrays(model))
    oracle.write_safetensors(
        os.path.join(out, f"{name}.final64.safetensors"),
        {k: v.detach().numpy().astype(np.float32)
         for k, v in oracle.trained_state(reference).items()})
    result = {
        "model": name, "onnx": os.path.basename(onnx_path),
        "initial_weights": f"{name}.init.safetensors",
        "final_weights": f"{name}.final.safetensors",
        "onnx_ops": ops, **fields, "order": "file", "seed": 0,
        "torch_version": torch.__version__, "first_step": 1,
        "losses": losses, "losses64": losses64,
    }
    path = os.path.join(out, f"{name}.oracle.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"{name}: {onnx_path} ({', '.join(ops)}); {len(losses)} steps, "
          f"loss {losses[0]:.6f} -> {losses[-1]:.6f}; wrote {path}")
