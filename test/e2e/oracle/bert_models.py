#!/usr/bin/python3
"""PyTorch oracle for a model of several graph inputs (#43): a tiny BERT
masked-LM that takes token ids, an attention mask and token types as three
inputs, as BERT-style models are exported, and its RoBERTa-style variant
whose position ids are computed inside the graph from the ids.

Trains BertMLM the way oracle.py trains its models (export, reload of the
exported initializers, SGD steps on minibatches in file order, a float32
and a float64 run) on synthetic sentences, and writes what match_oracle.py
reads: MODEL.onnx, MODEL.oracle.json (data: `npy:IDS,MASK,TYPES,LABELS`,
the arrays written beside it), MODEL.init/final/final64.safetensors.
oracle.py's single-input export and data cannot express three inputs,
hence a main of its own; oracle.py adds MODELS_BY_NAME to EXTRA_MODELS.

Usage: bert_models.py --out DIR [--model bert-mlm|roberta-mlm] [--steps 20]
       [--layers 2]
"""

import argparse
import copy
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn

VOCAB = 32
LENGTH = 8
WIDTH = 16
HEADS = 2
PAD, MASK_ID = 0, 1
IGNORE_INDEX = -100
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


class BertLayer(nn.Module):
    """A post-norm BERT encoder layer: self-attention whose scores get the
    additive mask (1 - mask) * -10000 over the keys, computed in the layer
    from the [B, T] float mask input itself (so a later stage reads the
    input), then a GELU MLP, each with a residual and a LayerNorm."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(WIDTH, WIDTH)
        self.k = nn.Linear(WIDTH, WIDTH)
        self.v = nn.Linear(WIDTH, WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.ln1 = nn.LayerNorm(WIDTH)
        self.up = nn.Linear(WIDTH, 2 * WIDTH)
        self.down = nn.Linear(2 * WIDTH, WIDTH)
        self.ln2 = nn.LayerNorm(WIDTH)

    def forward(self, x, mask):
        batch, length, width = x.shape
        head = width // HEADS
        q, k, v = (t(x).reshape(batch, length, HEADS, head).transpose(1, 2)
                   for t in (self.q, self.k, self.v))
        additive = (1.0 - mask.reshape(batch, 1, 1, length)) * -10000.0
        scores = q @ k.transpose(-2, -1) / math.sqrt(head) + additive
        y = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2)
        x = self.ln1(x + self.proj(y.reshape(batch, length, width)))
        return self.ln2(x + self.down(nn.functional.gelu(self.up(x))))


class BertMLM(nn.Module):
    """Word, position and token-type embeddings summed and normalized,
    `layers` BertLayers, and a masked-LM head: a dense GELU transform, a
    LayerNorm and logits [B, T, VOCAB] from the word embedding's own weight
    (tied) plus a bias. The loss is over the masked positions only: every
    other label is IGNORE_INDEX."""

    opset = 17
    export_training = True
    ignore_index = IGNORE_INDEX

    def __init__(self, layers=2):
        super().__init__()
        self.word = nn.Embedding(VOCAB, WIDTH)
        self.position = nn.Embedding(LENGTH, WIDTH)
        self.token_type = nn.Embedding(2, WIDTH)
        self.ln = nn.LayerNorm(WIDTH)
        self.layers = nn.ModuleList(BertLayer() for _ in range(layers))
        self.transform = nn.Linear(WIDTH, WIDTH)
        self.head_ln = nn.LayerNorm(WIDTH)
        self.bias = nn.Parameter(torch.zeros(VOCAB))

    def positions(self, ids):
        return torch.arange(ids.shape[1])

    def forward(self, ids, mask, types):
        x = self.ln(self.word(ids) + self.position(self.positions(ids)) +
                    self.token_type(types))
        for layer in self.layers:
            x = layer(x, mask)
        h = self.head_ln(nn.functional.gelu(self.transform(x)))
        return h @ self.word.weight.t() + self.bias


class RobertaMLM(BertMLM):
    """BertMLM with RoBERTa's position ids, computed inside the graph from
    the ids: the running count of the real (non-PAD) tokens, times the
    mask, plus PAD (CumSum of a Cast of Not(Equal), Mul, Add), so the
    position table, of LENGTH + 1 rows, is gathered by indices computed at
    run time and PAD positions read its row PAD."""

    def __init__(self, layers=2):
        super().__init__(layers)
        self.position = nn.Embedding(LENGTH + 1, WIDTH)

    def positions(self, ids):
        real = ids.ne(PAD).int()
        return (torch.cumsum(real, dim=1).type_as(real) * real).long() + PAD


MODELS_BY_NAME = {"bert-mlm": BertMLM, "roberta-mlm": RobertaMLM}


def synthetic_data(count, generator):
    """Sentence pairs of ids in [2, VOCAB): each sample's real length is 5
    to LENGTH (mask 1.0 there, 0.0 and PAD ids past it), its second segment
    (type 1) starts at 2 to length - 1; about 25% of the real positions,
    at least one a sample, are replaced by MASK_ID and labelled with the
    original id, every other label IGNORE_INDEX."""
    ids = torch.randint(2, VOCAB, (count, LENGTH), generator=generator)
    lengths = torch.randint(5, LENGTH + 1, (count,), generator=generator)
    split = (torch.rand(count, generator=generator) *
             (lengths - 2).float()).long() + 2
    positions = torch.arange(LENGTH).expand(count, LENGTH)
    real = positions < lengths[:, None]
    types = ((positions >= split[:, None]) & real).long()
    chosen = (torch.rand(count, LENGTH, generator=generator) < 0.25) & real
    chosen[torch.arange(count), torch.randint(0, 5, (count,),
                                              generator=generator)] = True
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE_INDEX))
    ids = torch.where(chosen, torch.full_like(ids, MASK_ID), ids)
    ids = torch.where(real, ids, torch.full_like(ids, PAD))
    return ids, real.float(), types, labels


def export_and_reload(oracle, model, name, batch, out_dir):
    """oracle.export_and_reload for three inputs: exports in training mode
    with the inputs named INPUT_NAMES, then copies the exported
    initializers back into the model."""
    path = os.path.join(out_dir, f"{name}.onnx")
    dummy = (torch.zeros(batch, LENGTH, dtype=torch.long),
             torch.ones(batch, LENGTH),
             torch.zeros(batch, LENGTH, dtype=torch.long))
    model.train(True)
    torch.onnx.export(model, dummy, path, opset_version=model.opset,
                      input_names=list(INPUT_NAMES), output_names=["logits"],
                      do_constant_folding=False, export_params=True,
                      training=torch.onnx.TrainingMode.TRAINING,
                      **({"dynamo": False} if "dynamo" in
                         oracle.inspect.signature(
                             torch.onnx.export).parameters else {}))
    proto = oracle.onnx.load(path)
    oracle.onnx.checker.check_model(proto)
    inits = {t.name: oracle.onnx.numpy_helper.to_array(t)
             for t in proto.graph.initializer}
    state = oracle.trained_state(model)
    for key, value in state.items():
        if key not in inits or inits[key].shape != tuple(value.shape):
            sys.exit(f"bert_models: parameter {key} is not an initializer "
                     f"of {path} of its shape")
        value.copy_(torch.from_numpy(inits[key].copy()))
    oracle.write_safetensors(os.path.join(out_dir, f"{name}.init.safetensors"),
                             {k: v.detach().numpy() for k, v in state.items()})
    return path, sorted({node.op_type for node in proto.graph.node})


def train(model, arrays, labels, steps, minibatch, settings, oracle):
    """SGD steps on minibatches in file order; each loss is the mean over
    the minibatch's masked positions (the pipeline's microbatch losses sum
    to the same mean)."""
    model.train()
    optimizer = oracle.make_optimizer(model, settings)
    losses = []
    for step in range(steps):
        part = slice(step * minibatch, (step + 1) * minibatch)
        optimizer.zero_grad()
        logits = model(*(a[part] for a in arrays))
        loss = oracle.cross_entropy(logits, labels[part], IGNORE_INDEX)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--model", choices=sorted(MODELS_BY_NAME),
                        default="bert-mlm")
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import oracle  # noqa: E402 (oracle.py imports this file)
    import oracle_result  # noqa: E402
    microbatches, size, name = 4, 16, args.model
    settings = {"kind": "sgd", "lr": 0.05, "momentum": 0.9,
                "weight_decay": 0.0}
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    model = MODELS_BY_NAME[name](args.layers)
    onnx_path, ops = export_and_reload(oracle, model, name, size, args.out)
    ids, mask, types, labels = synthetic_data(
        args.steps * microbatches * size, torch.Generator().manual_seed(1))
    files = [os.path.abspath(os.path.join(args.out, f"{name}.{part}.npy"))
             for part in ("ids", "mask", "types", "labels")]
    for path, array in zip(files, (ids, mask, types, labels)):
        np.save(path, array.numpy())
    reference = copy.deepcopy(model).double()
    minibatch = microbatches * size
    losses = train(model, (ids, mask, types), labels, args.steps, minibatch,
                   settings, oracle)
    losses64 = train(reference, (ids, mask.double(), types), labels,
                     args.steps, minibatch, settings, oracle)
    oracle_result.write(oracle, args.out, name, model, reference, onnx_path,
                        ops, losses, losses64, {
        "opset": BertMLM.opset, "inputs": list(INPUT_NAMES),
        "input_shape": [size, LENGTH],
        "data": "npy:" + ",".join(files),
        "steps": args.steps, "microbatches": microbatches,
        "microbatch_size": size,
        "loss": "softmax-cross-entropy, mean over the minibatch's masked "
                "positions (labels not ignore_index)",
        "ignore_index": IGNORE_INDEX, "optimizer": settings})


if __name__ == "__main__":
    main()
