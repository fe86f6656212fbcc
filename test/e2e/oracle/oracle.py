#!/usr/bin/python3
"""PyTorch training oracle for dpc's end-to-end tests.

For each model it (1) builds it with a fixed seed, (2) exports it to ONNX,
(3) loads the exported initializers back into the PyTorch model so that both
sides provably start from the same bytes, (4) trains it in PyTorch on
Fashion-MNIST minibatches taken in file order, and (5) writes the per-step
losses as JSON. dpc trains the exported ONNX with the same settings and
compare.py checks the two loss curves step by step.

Conventions shared with dpc (docs/RUNTIME.md): step k (1-based) trains on the
training samples [(k-1)*M*B, k*M*B) in file order; its loss is the mean
CrossEntropyLoss over those M*B samples under the weights before step k's
update. Pixels are float32(byte)/255, labels int64.
"""

import argparse
import copy
import gzip
import inspect
import json
import math
import os
import struct
import sys
import time

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

import recipe
import text
import vision

OPSET = 13
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


class LeNet5(nn.Module):
    """conv5x5(1->6,pad 2)-relu-maxpool2-conv5x5(6->16)-relu-maxpool2-
    flatten-fc120-relu-fc84-relu-fc10. nn.Flatten exports as ONNX Flatten."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


class MLP(nn.Module):
    """784-256-relu-10. The reshape is a `view`, which torch.onnx exports as
    a Reshape (with a constant or Shape-derived target shape), so the MLP
    exercises the importer's Reshape path while LeNet-5 exercises Flatten."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 256)
        self.fc2 = nn.Linear(256, 10)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = x.view(x.shape[0], -1)
        return self.fc2(self.relu(self.fc1(x)))


class SmoothMLP(nn.Module):
    """784-64-tanh-32-sigmoid-10: the smooth activations (ONNX Tanh and
    Sigmoid) in training, where their gradients matter."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 64)
        self.fc2 = nn.Linear(64, 32)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(torch.sigmoid(self.fc2(torch.tanh(self.fc1(x)))))


class ArithmeticMLP(nn.Module):
    """ONNX Sub, Mul, Div, Neg and Add with constants and parameters in
    training: inputs centred and scaled by constants, a swish hidden layer
    (h * sigmoid(h)) divided by a trained per-feature 1 + gain^2, negated."""

    # Constant folding at export would fold 1 + gain^2, a function of a
    # parameter, into a constant.
    fold_constants = False

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 64)
        self.gain = nn.Parameter(0.5 + 0.1 * torch.randn(64))
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = (torch.flatten(x, 1) - 0.5) / 0.25
        h = self.fc1(x)
        h = h * torch.sigmoid(h)
        h = h / (1.0 + self.gain * self.gain)
        return self.fc2(-h)


class GeluMLP(SmoothMLP):
    """SmoothMLP's layers with GELU (the exact erf form, torch's default),
    which the ONNX exporter writes as x * 0.5 * (1 + Erf(x / sqrt 2)): Erf
    between Div, Add and Mul by constants."""

    def forward(self, x):
        h = nn.functional.gelu(self.fc1(torch.flatten(x, 1)))
        return self.fc3(nn.functional.gelu(self.fc2(h)))


class TableMLP(nn.Module):
    """784-64-hardswish-32-softplus-16-softsign-10: activations that reach
    dpc only through its elementwise function table (MobileNetV3's
    hardswish; ONNX HardSwish needs opset 14, whose exporter writes it as one
    node), in training."""

    opset = 14

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 64)
        self.fc2 = nn.Linear(64, 32)
        self.fc3 = nn.Linear(32, 16)
        self.fc4 = nn.Linear(16, 10)

    def forward(self, x):
        h = nn.functional.hardswish(self.fc1(torch.flatten(x, 1)))
        h = nn.functional.softplus(self.fc2(h))
        return self.fc4(nn.functional.softsign(self.fc3(h)))


class BranchNet(nn.Module):
    """The graph shapes of Inception, DenseNet, ShuffleNet and MobileNetV2 in
    one small convnet: ReLU6 (ONNX Clip 0..6), a channel split into two
    branches (Split), the input and both branches concatenated along the
    channels (Concat, DenseNet's feature reuse), a crop of the pooled
    feature map (Slice) and an explicit zero pad (Pad)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.left = nn.Conv2d(4, 8, 3, padding=1)
        self.right = nn.Conv2d(4, 8, 1)
        self.head = nn.Conv2d(24, 16, 3, stride=2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        h = nn.functional.relu6(self.stem(x))
        a, b = torch.split(h, 4, dim=1)
        a = torch.relu(self.left(a))
        b = nn.functional.relu6(self.right(b))
        h = nn.functional.max_pool2d(torch.cat([h, a, b], dim=1), 2)
        h = nn.functional.pad(h[:, :, 1:13, 1:13], (1, 1, 1, 1))
        h = torch.relu(self.head(h))
        return self.fc(h.mean(dim=(2, 3)))


class DropoutMLP(nn.Module):
    """784-128-relu-dropout(0.3)-64-relu-dropout(0.5)-10, exported for
    training (ONNX Dropout with training_mode true). Its masks come from
    PyTorch's generator here and from dpc's counter-based one there, so dpc's
    losses are compared with dpc's own on other stage splits, not with
    these."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, 10)
        self.drop1 = nn.Dropout(0.3)
        self.drop2 = nn.Dropout(0.5)

    def forward(self, x):
        h = self.drop1(torch.relu(self.fc1(torch.flatten(x, 1))))
        return self.fc3(self.drop2(torch.relu(self.fc2(h))))


class TiedMLP(nn.Module):
    """Tied weights, each parameter read twice: the image pooled to 7x7 (49
    features), a 49x49 layer applied first and again near the end, and a
    49->128 layer whose transposed weight (with a bias of its own) maps back
    to 49 features. The exporter writes each weight once, as one initializer
    read by two nodes, so every stage split that separates the reads makes
    the weight cross stages."""

    # Constant folding would fold the Transpose of fc2's weight into a new,
    # separate initializer and untie it.
    fold_constants = False

    def __init__(self):
        super().__init__()
        self.shared = nn.Linear(49, 49)
        self.fc2 = nn.Linear(49, 128)
        self.back_bias = nn.Parameter(0.1 * torch.randn(49))
        self.out = nn.Linear(49, 10)

    def forward(self, x):
        h = torch.flatten(nn.functional.avg_pool2d(x, 4), 1)
        h = torch.tanh(self.shared(h))
        h = torch.tanh(self.fc2(h))
        h = torch.tanh(nn.functional.linear(h, self.fc2.weight.t(),
                                            self.back_bias))
        h = torch.tanh(self.shared(h))
        return self.out(h)


class RegressionMLP(nn.Module):
    """16-32-tanh-8 regression trained with torch.nn.MSELoss (dpc compile
    --loss mse) on float inputs and targets from regression_data instead of
    Fashion-MNIST."""

    input_shape = (16,)
    loss = "mse"

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def regression_data(count, directory, stem):
    """`count` inputs [count, 16] drawn from N(0, 1) and float targets
    [count, 8]: a fixed smooth function of them (a sine of a random
    projection plus products of input pairs) with a little noise, all from a
    generator of their own. Saved as DIRECTORY/STEM.train_inputs.npy and
    .train_targets.npy (the float32 bytes PyTorch trains on); returns them
    and their npy: spec."""
    generator = torch.Generator().manual_seed(1234)
    x = torch.randn(count, 16, generator=generator)
    projection = torch.randn(16, 8, generator=generator) / 4
    offset = torch.randn(8, generator=generator)
    noise = torch.randn(count, 8, generator=generator)
    y = (torch.sin(x @ projection) + 0.5 * x[:, :8] * x[:, 8:] + offset +
         0.05 * noise)
    files = [os.path.abspath(os.path.join(directory, f"{stem}.{part}.npy"))
             for part in ("train_inputs", "train_targets")]
    np.save(files[0], x.numpy())
    np.save(files[1], y.numpy())
    return x, y, "npy:" + ",".join(files)


class GptBlock(nn.Module):
    """A pre-norm transformer decoder block: causal multi-head
    self-attention and a GELU MLP, each with a residual connection."""

    def __init__(self, width, heads, length):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)
        # A plain attribute, not a buffer: the exporter writes it as a
        # Constant, the additive causal mask.
        self.mask = torch.triu(torch.full((length, length), float("-inf")),
                               diagonal=1)

    def forward(self, x):
        batch, length, width = x.shape
        head = width // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(width, dim=-1)
        q, k, v = (t.reshape(batch, length, self.heads, head).transpose(1, 2)
                   for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(head) + self.mask
        y = torch.softmax(scores, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(batch, length, width))
        return x + self.down(nn.functional.gelu(self.up(self.ln2(x))))


class Encoder(nn.Module):
    """torch.nn.TransformerEncoder as a user builds one (BERT-like, two
    layers of two heads, batch_first, no dropout) on text.py's tokens,
    post-norm or pre-norm (`norm_first`), with a relu or gelu MLP: an
    embedding, the encoder, and a linear layer to the vocabulary. The
    exporter writes the attention's in-projection as one MatMul sliced into
    q, k and v, its heads with Reshape and Transpose, and each norm as one
    LayerNormalization (opset 17)."""

    opset = 17
    fold_constants = False
    export_training = True
    tokens = True

    def __init__(self, norm_first=False, activation="relu", length=16,
                 width=32, heads=2, layers=2):
        super().__init__()
        self.input_shape = (length,)
        self.embed = nn.Embedding(text.VOCAB, width)
        layer = nn.TransformerEncoderLayer(
            width, heads, 2 * width, dropout=0.0, activation=activation,
            batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)
        self.out = nn.Linear(width, text.VOCAB)

    def forward(self, ids):
        return self.out(self.encoder(self.embed(ids)))


class TinyGPT(nn.Module):
    """A GPT-like decoder on character tokens (text.py): token embedding plus
    a learned position embedding, two pre-norm causal blocks of two heads, a
    final LayerNorm, and logits from the token embedding's own weight (tied
    input and output embedding), [B, T, vocab] for a token-level loss.
    Exported at opset 17, where LayerNormalization is one op."""

    opset = 17
    fold_constants = False
    export_training = True
    tokens = True

    def __init__(self, vocab=text.VOCAB, length=16, width=32, heads=2,
                 layers=2):
        super().__init__()
        self.input_shape = (length,)
        # GPT-2's initial scale: with N(0, 1) rows the tied output layer's
        # logits would start far from uniform.
        self.tok = nn.Embedding(vocab, width)
        nn.init.normal_(self.tok.weight, std=0.02)
        self.pos = nn.Parameter(0.02 * torch.randn(length, width))
        self.blocks = nn.ModuleList(GptBlock(width, heads, length)
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, ids):
        h = self.tok(ids) + self.pos
        for block in self.blocks:
            h = block(h)
        return self.ln_f(h) @ self.tok.weight.t()


class VarBlock(GptBlock):
    """GptBlock for inputs of any length up to its own: the causal mask is
    a buffer sliced to the input's length, so the exported graph slices it
    by the input's shape."""

    def __init__(self, width, heads, length):
        super().__init__(width, heads, length)
        self.register_buffer(
            "causal", torch.triu(torch.full((length, length), float("-inf")),
                                 diagonal=1), persistent=False)

    def forward(self, x):
        batch, length, width = x.shape
        head = width // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(width, dim=-1)
        q, k, v = (t.reshape(batch, length, self.heads, head).transpose(1, 2)
                   for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1) / math.sqrt(head)
                  + self.causal[:length, :length])
        y = torch.softmax(scores, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(batch, length, width))
        return x + self.down(nn.functional.gelu(self.up(self.ln2(x))))


class VarGPT(nn.Module):
    """TinyGPT for variable-length sequences: the position table sliced to
    the input's length and VarBlock's sliced causal mask, exported with a
    dynamic batch and length (input and logits [batch, length]). It trains
    on one document a sample (text.document_samples), each padded past its
    length with input 0 and label `ignore_index`; causal attention keeps
    the padding out of every real position, and the loss is the mean over
    the minibatch's real tokens, so it does not depend on how the samples
    are grouped into microbatches or how far they are padded."""

    opset = 17
    fold_constants = False
    export_training = True
    tokens = True
    dynamic_axes = True
    variable_length = True
    ignore_index = -100

    def __init__(self, vocab=text.VOCAB, length=64, width=32, heads=2,
                 layers=2):
        super().__init__()
        self.input_shape = (length,)
        self.tok = nn.Embedding(vocab, width)
        nn.init.normal_(self.tok.weight, std=0.02)
        self.pos = nn.Parameter(0.02 * torch.randn(length, width))
        self.blocks = nn.ModuleList(VarBlock(width, heads, length)
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, ids):
        h = self.tok(ids) + self.pos[:ids.shape[1]]
        for block in self.blocks:
            h = block(h)
        return self.ln_f(h) @ self.tok.weight.t()


class MaskedBlock(GptBlock):
    """GptBlock with its masks as PyTorch code writes them: boolean masks
    given to forward and applied with masked_fill(-inf)."""

    def forward(self, x, causal, padding):
        batch, length, width = x.shape
        head = width // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(width, dim=-1)
        q, k, v = (t.reshape(batch, length, self.heads, head).transpose(1, 2)
                   for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(head)
        scores = scores.masked_fill(causal, float("-inf"))
        scores = scores.masked_fill(padding, float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(batch, length, width))
        return x + self.down(nn.functional.gelu(self.up(self.ln2(x))))


class MaskedGPT(nn.Module):
    """TinyGPT with masks computed in forward: the causal mask from
    torch.triu(torch.ones(...)) (Trilu and Cast of constants, folded at
    import), the padding mask from the token ids (`ids == pad`, ONNX Equal
    on int64, Unsqueeze), both applied by masked_fill (Where). Its data
    pads the end of some windows with the token `pad_id`, outside the
    text's vocabulary."""

    opset = 17
    fold_constants = False
    export_training = True
    tokens = True
    pad_id = text.VOCAB

    def __init__(self, length=16, width=32, heads=2, layers=2):
        super().__init__()
        self.input_shape = (length,)
        self.tok = nn.Embedding(text.VOCAB + 1, width)
        nn.init.normal_(self.tok.weight, std=0.02)
        self.pos = nn.Parameter(0.02 * torch.randn(length, width))
        self.blocks = nn.ModuleList(MaskedBlock(width, heads, length)
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, ids):
        length = ids.shape[1]
        causal = torch.triu(torch.ones(length, length, dtype=torch.bool),
                            diagonal=1)
        padding = (ids == self.pad_id)[:, None, None, :]
        h = self.tok(ids) + self.pos
        for block in self.blocks:
            h = block(h, causal, padding)
        return self.ln_f(h) @ self.tok.weight.t()


class IgnoreGPT(MaskedGPT):
    """MaskedGPT trained with nn.CrossEntropyLoss(ignore_index=-100): the
    labels of padded positions, and of the position before the first pad,
    are -100, so each minibatch's mean runs over a count of positions that
    the data decides (dpc compile --ignore-index -100)."""

    ignore_index = -100


class LstmLM(nn.Module):
    """A character-level LSTM language model (text.py's tokens): an
    embedding, a two-layer nn.LSTM (batch_first, zero initial states) and a
    linear layer to the vocabulary, logits [B, T, vocab]. torch.onnx writes
    one LSTM node per layer, the weights sliced and concatenated from
    torch's gate order into ONNX's, and the zero states as a Constant."""

    opset = 14
    fold_constants = False
    export_training = True
    tokens = True

    def __init__(self, vocab=text.VOCAB, length=12, width=16, hidden=24,
                 layers=2):
        super().__init__()
        self.input_shape = (length,)
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, hidden, num_layers=layers,
                            batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, ids):
        h, _ = self.lstm(self.embed(ids))
        return self.out(h)


class LstmSeq2Seq(nn.Module):
    """A small LSTM encoder-decoder with attention, GNMT-like, on text.py's
    tokens: one embedding shared by both sides, a one-layer nn.LSTM encoder
    over the window, a one-layer nn.LSTM decoder over the same window
    starting from the encoder's final h and c, dot-product attention of
    each decoder state over all encoder states (batched MatMul, Softmax),
    and a linear layer from the decoder state concatenated with its context
    to the vocabulary, logits [B, T, vocab]. The encoder reads the whole
    window, so the next token is in sight; the task is only there to train
    the numerics."""

    opset = 14
    fold_constants = False
    export_training = True
    tokens = True

    def __init__(self, vocab=text.VOCAB, length=10, width=16, hidden=16):
        super().__init__()
        self.input_shape = (length,)
        self.embed = nn.Embedding(vocab, width)
        self.encoder = nn.LSTM(width, hidden, batch_first=True)
        self.decoder = nn.LSTM(width, hidden, batch_first=True)
        self.out = nn.Linear(2 * hidden, vocab)

    def forward(self, ids):
        x = self.embed(ids)
        memory, state = self.encoder(x)
        h, _ = self.decoder(x, state)
        weights = torch.softmax(h @ memory.transpose(1, 2), dim=-1)
        return self.out(torch.cat([h, weights @ memory], dim=-1))


class Attention(nn.Module):
    """The image's 28 rows as a sequence of 28 tokens, embedded to `width`
    features: one self-attention head (softmax(q k^T / sqrt(width)) v) with a
    residual connection and LayerNorm, the mean over tokens, a linear
    classifier and log_softmax. The exporter writes LayerNorm as ReduceMean,
    Sub, Pow, Sqrt and Div, a linear layer on a sequence as MatMul by the
    Transpose of its weight, and the mean as ReduceMean without keepdims.
    log_softmax before the loss changes neither the loss nor the gradient,
    but trains log_softmax's own gradient."""

    # Constant folding would fold each Transpose of a weight into a new,
    # renamed initializer.
    fold_constants = False

    def __init__(self, width=32):
        super().__init__()
        self.embed = nn.Linear(28, width)
        self.query = nn.Linear(width, width, bias=False)
        self.key = nn.Linear(width, width, bias=False)
        self.value = nn.Linear(width, width, bias=False)
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 10)
        self.scale = width ** -0.5

    def forward(self, x):
        h = self.embed(x.view(x.shape[0], 28, 28))
        scores = self.query(h) @ self.key(h).transpose(1, 2) * self.scale
        h = self.norm(h + torch.softmax(scores, dim=-1) @ self.value(h))
        return torch.log_softmax(self.fc(h.mean(dim=1)), dim=-1)



class UNet(nn.Module):
    """A U-Net-shaped classifier, the two upsamplings torch.onnx exports as
    ONNX Resize: conv 1->8 at 28x28, max pool to 14x14, conv 8->16, a max
    pool to 7x7 brought back by nearest upsampling x2 and added, bilinear
    upsampling x2 (align_corners=False: half_pixel) to 28x28, the skip
    connection concatenated, conv 24->16, global average pool and a linear
    head. `width` scales the channels (8, 16 and 24 are width, 2 * width
    and 3 * width): bench/training trains it at 16."""

    def __init__(self, width=8):
        super().__init__()
        self.enc = nn.Conv2d(1, width, 3, padding=1)
        self.mid = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.dec = nn.Conv2d(3 * width, 2 * width, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(2 * width, 10)

    def forward(self, x):
        f = nn.functional
        e = torch.relu(self.enc(x))
        m = torch.relu(self.mid(self.pool(e)))
        m = m + f.interpolate(self.pool(m), scale_factor=2, mode="nearest")
        u = f.interpolate(m, scale_factor=2, mode="bilinear",
                          align_corners=False)
        d = torch.relu(self.dec(torch.cat([u, e], dim=1)))
        return self.fc(torch.flatten(f.adaptive_avg_pool2d(d, 1), 1))


class RelativeBiasAttention(nn.Module):
    """Two tables read through constant index tensors, as Swin and BERT read
    theirs: the image's 28 rows as 28 tokens, each plus a token-type
    embedding whose type ids are a constant of zeros (BERT's single
    segment), and two attention heads whose scores add a bias from a table
    of one row per relative offset (2 * 28 - 1 of them), read through the
    constant map of each query-key pair to its offset (Swin's relative
    position index). Both gathers take constant indices that are not an
    increasing arithmetic sequence, so neither is a slice."""

    fold_constants = False
    export_training = True

    def __init__(self, width=32, heads=2, tokens=28):
        super().__init__()
        # Not `tokens`, which marks a model that reads token ids.
        self.heads, self.length = heads, tokens
        self.width, self.head = width, width // heads
        self.embed = nn.Linear(28, width)
        self.types = nn.Embedding(2, width)
        self.qkv = nn.Linear(width, 3 * width)
        self.table = nn.Parameter(0.1 * torch.randn(2 * tokens - 1, heads))
        position = torch.arange(tokens)
        offset = position[:, None] - position[None, :] + tokens - 1
        self.register_buffer("relative_index", offset.reshape(-1))
        self.register_buffer("type_ids", torch.zeros(tokens, dtype=torch.long))
        self.fc = nn.Linear(width, 10)

    def forward(self, x):
        batch, t = x.shape[0], self.length
        h = self.embed(x.view(batch, t, 28)) + self.types(self.type_ids)
        width, head = self.width, self.head
        q, k, v = self.qkv(h).split(width, dim=-1)
        q, k, v = (z.reshape(batch, t, self.heads, head).transpose(1, 2)
                   for z in (q, k, v))
        bias = self.table[self.relative_index].reshape(t, t, self.heads)
        scores = q @ k.transpose(-2, -1) * head ** -0.5 + bias.permute(2, 0, 1)
        h = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2)
        return self.fc(h.reshape(batch, t, width).mean(dim=1))


class LayerNormAttention(Attention):
    """The attention model exported at opset 17, where torch.onnx writes
    each nn.LayerNorm as one LayerNormalization node (dpc's nn.layer_norm)
    instead of ReduceMean, Sub, Pow, Sqrt and Div: the block's LayerNorm
    over the width (axis -1), and one more over the tokens and the width
    (axis -2) after the embedding, so that a normalized shape of two
    dimensions trains too."""

    opset = 17

    def __init__(self, width=32):
        super().__init__(width)
        self.embed_norm = nn.LayerNorm([28, width])

    def forward(self, x):
        h = self.embed_norm(self.embed(x.view(x.shape[0], 28, 28)))
        scores = self.query(h) @ self.key(h).transpose(1, 2) * self.scale
        h = self.norm(h + torch.softmax(scores, dim=-1) @ self.value(h))
        return torch.log_softmax(self.fc(h.mean(dim=1)), dim=-1)


class BasicBlock(nn.Module):
    """ResNet's basic block: two 3x3 convolutions with batch normalization
    and a skip connection, projected by a 1x1 convolution when the shape
    changes."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False),
                nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet-18's layout for 1 x 28 x 28 inputs: a 3x3 stem, stages of
    basic blocks (the first at stride 1, the others at stride 2), global
    average pooling and a linear classifier. `widths` and `blocks` give the
    channels and depth of each stage; ResNet-18 is (64, 128, 256, 512) with
    two blocks each."""

    def __init__(self, widths=(8, 16), blocks=(1, 1)):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(1, widths[0], 3, padding=1, bias=False),
            nn.BatchNorm2d(widths[0]), nn.ReLU())
        layers, cin = [], widths[0]
        for i, (width, count) in enumerate(zip(widths, blocks)):
            for j in range(count):
                layers.append(BasicBlock(cin, width,
                                         2 if i > 0 and j == 0 else 1))
                cin = width
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(cin, 10)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(self.flatten(self.pool(x)))


def resnet18():
    return ResNet((64, 128, 256, 512), (2, 2, 2, 2))


# `--model all` exports MODELS; the others are asked for by name: "resnet"
# (batch normalization, skip connections, global average pooling, small
# enough for the tests), "resnet18" (the benchmark's), "smooth-mlp",
# "arithmetic-mlp", "gelu-mlp", "table-mlp", "branch-net", "dropout-mlp",
# "tied-mlp", "attention" and "layernorm-attention" (the same at opset 17,
# LayerNormalization nodes), "lstm-lm" and "lstm-seq2seq" (text.py's
# tokens), "var-gpt" (variable-length documents, --data
# text:FILE,docs=MODE or npy:TOKENS,LABELS,lengths=LENGTHS; without one, a
# generated corpus), "mse-mlp" (a regression with float targets, --loss
# mse), "unet" (nearest and bilinear upsampling, ONNX Resize); and
# "tv-NAME" for torchvision's classifiers (vision.py).
MODELS = {"lenet5": LeNet5, "mlp": MLP}
EXTRA_MODELS = {"resnet": ResNet, "resnet18": resnet18,
                "smooth-mlp": SmoothMLP, "arithmetic-mlp": ArithmeticMLP,
                "gelu-mlp": GeluMLP, "attention": Attention,
                "layernorm-attention": LayerNormAttention,
                "table-mlp": TableMLP, "branch-net": BranchNet,
                "dropout-mlp": DropoutMLP, "tied-mlp": TiedMLP,
                "tiny-gpt": TinyGPT, "masked-gpt": MaskedGPT,
                "encoder-post-relu": lambda: Encoder(False, "relu"),
                "encoder-post-gelu": lambda: Encoder(False, "gelu"),
                "encoder-pre-relu": lambda: Encoder(True, "relu"),
                "encoder-pre-gelu": lambda: Encoder(True, "gelu"), "lstm-lm": LstmLM,
                "ignore-gpt": IgnoreGPT, "var-gpt": VarGPT,
                "mse-mlp": RegressionMLP,
                "lstm-seq2seq": LstmSeq2Seq,
                "relbias-attention": RelativeBiasAttention, "unet": UNet}


EXTRA_MODELS.update({f"tv-{name}": (lambda name=name: vision.build(name))
                     for name in vision.NAMES})
EXTRA_MODELS.update(__import__("rnn_models").MODELS_BY_NAME)
EXTRA_MODELS.update(__import__("conv_models").MODELS_BY_NAME)
EXTRA_MODELS.update(__import__("bert_models").MODELS_BY_NAME)
EXTRA_MODELS.update(__import__("seq2seq_models").MODELS_BY_NAME)


def build(name):
    """A fresh model by name, from MODELS or EXTRA_MODELS."""
    return {**MODELS, **EXTRA_MODELS}[name]()


def input_shape_of(model):
    """The per-sample input shape: Fashion-MNIST's unless the model says."""
    return tuple(getattr(model, "input_shape", (1, 28, 28)))


def reads_tokens(model):
    """Whether the model reads token ids (text.py) rather than images."""
    return getattr(model, "tokens", False)


def is_regression(model):
    """Whether the model trains against float targets (--loss mse)."""
    return getattr(model, "loss", None) == "mse"


def cross_entropy(logits, labels, ignore_index=-100, label_smoothing=0.0):
    """nn.CrossEntropyLoss's mean over every row: a sample's, or for
    logits [B, T, C] every position's (a token-level loss); rows labelled
    `ignore_index` are left out of the sum and of the count."""
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                       labels.reshape(-1),
                                       ignore_index=ignore_index,
                                       label_smoothing=label_smoothing)


def exports_for_training(model):
    """Batch normalization and dropout behave differently in training, so
    such models are exported in training mode; so are models that ask to be,
    as a user who trains exports: an eval-mode export merges parameters of
    equal values into one initializer (every fresh LayerNorm's ones and
    zeros), which ties them."""
    return getattr(model, "export_training", False) or has_batch_norm(
        model) or any(isinstance(m, nn.Dropout) for m in model.modules())


def has_batch_norm(model):
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm)
               for m in model.modules())


def trained_state(model):
    """The state dpc keeps too: parameters and running statistics, without
    PyTorch's batch counter (which only matters for momentum=None)."""
    return {k: v for k, v in model.state_dict().items()
            if not k.endswith("num_batches_tracked")}


def trained_arrays(model):
    """trained_state as numpy arrays, for write_safetensors."""
    return {k: v.detach().numpy() for k, v in trained_state(model).items()}


def read_idx(path, expected_magic):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        sys.exit(f"oracle: {path}: truncated header")
    magic = struct.unpack(">I", data[:4])[0]
    if magic != expected_magic:
        sys.exit(f"oracle: {path}: bad magic {magic:#010x}, "
                 f"expected {expected_magic:#010x}")
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    payload = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if payload.size != int(np.prod(dims)):
        sys.exit(f"oracle: {path}: {payload.size} bytes of data, "
                 f"expected {int(np.prod(dims))}")
    return payload.reshape(dims)


def find_idx(directory, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    sys.exit(f"oracle: no {stem}[.gz] in {directory}")


def load_split(directory, prefix, count):
    images = read_idx(find_idx(directory, f"{prefix}-images-idx3-ubyte"),
                      0x00000803)
    labels = read_idx(find_idx(directory, f"{prefix}-labels-idx1-ubyte"),
                      0x00000801)
    if images.shape[0] != labels.shape[0]:
        sys.exit(f"oracle: {directory}: {images.shape[0]} images but "
                 f"{labels.shape[0]} labels")
    images, labels = images[:count], labels[:count]
    # float32(byte) / float32(255): the same correctly rounded division the
    # C++ reader performs, so inputs match bit for bit.
    x = torch.from_numpy(images.copy()).to(torch.float32).div_(255.0)
    x = x.reshape(-1, 1, images.shape[1], images.shape[2])
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def write_safetensors(path, tensors):
    """Minimal safetensors writer (F32/I64), enough to hand the initial
    weights to tests that compare them with dpc's out/weights/."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        dtype = {np.dtype("float32"): "F32", np.dtype("int64"): "I64"}[array.dtype]
        raw = array.astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "pt", "producer": "dpc oracle"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def opset_of(model):
    """The opset a model is exported at: OPSET unless it needs a later one."""
    return getattr(model, "opset", OPSET)


def export_and_reload(model, name, batch, out_dir, dynamic=False):
    """Exports to ONNX, then copies the exported initializers back into the
    model: the ONNX file is what dpc reads, so it is the source of truth.
    `dynamic` exports the input's and the output's first two dimensions as
    "batch" and "length" (dim_params) instead of the dummy's sizes."""
    path = os.path.join(out_dir, f"{name}.onnx")
    dummy = torch.zeros(batch, *input_shape_of(model),
                        dtype=torch.long if reads_tokens(model) else None)
    # An eval-mode export folds batch normalization into the convolutions;
    # a training-mode export keeps it (with the running statistics as
    # initializers), which is what training needs.
    training = exports_for_training(model)
    mode = (torch.onnx.TrainingMode.TRAINING if training
            else torch.onnx.TrainingMode.EVAL)
    model.train(training)
    # The TorchScript exporter, the only one in Debian's PyTorch; newer
    # releases (scripts/gpu-test may run under one) default to the dynamo
    # exporter, which builds another graph.
    legacy = ({"dynamo": False} if "dynamo" in
              inspect.signature(torch.onnx.export).parameters else {})
    both = {0: "batch", 1: "length"}
    axes = ({"dynamic_axes": {"input": both, "logits": both}} if dynamic
            else {})
    torch.onnx.export(model, dummy, path, opset_version=opset_of(model),
                      input_names=["input"], output_names=["logits"],
                      do_constant_folding=(not training and
                                           getattr(model, "fold_constants",
                                                   True)),
                      export_params=True,
                      training=mode, **legacy, **axes)
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    initializers = {t.name: onnx.numpy_helper.to_array(t)
                    for t in proto.graph.initializer}
    state = trained_state(model)
    for param_name, value in state.items():
        if param_name not in initializers:
            sys.exit(f"oracle: parameter {param_name} is not an initializer "
                     f"of {path}; the exporter renamed or folded it")
        exported = initializers[param_name]
        if exported.shape != tuple(value.shape):
            sys.exit(f"oracle: {param_name}: exported shape {exported.shape} "
                     f"!= {tuple(value.shape)}")
        value.copy_(torch.from_numpy(exported.copy()))
    weights = {k: v.detach().numpy() for k, v in state.items()}
    write_safetensors(os.path.join(out_dir, f"{name}.init.safetensors"), weights)
    ops = sorted({node.op_type for node in proto.graph.node})
    return path, ops


def make_optimizer(model, settings):
    """torch.optim.SGD, Adam or AdamW as `settings` (the oracle's
    "optimizer") describes it, with `no_decay`'s parameters in a group
    without weight decay."""
    params = recipe.parameter_groups(model, settings)
    if settings["kind"] in ("adam", "adamw"):
        kind = torch.optim.AdamW if settings["kind"] == "adamw" else \
            torch.optim.Adam
        return kind(params, lr=settings["lr"],
                    betas=tuple(settings["betas"]), eps=settings["eps"],
                    weight_decay=settings["weight_decay"])
    return torch.optim.SGD(params, lr=settings["lr"],
                           momentum=settings["momentum"],
                           weight_decay=settings["weight_decay"])


def minibatch_backward(model, inputs, labels, microbatches, smoothing=0.0):
    """One minibatch's loss (the mean over it) with its gradients
    accumulated into the parameters. A model with batch normalization takes
    its statistics per microbatch, as a pipeline does, so its gradients are
    accumulated microbatch by microbatch (each loss scaled by
    1/microbatches); any other model gets the same gradients from one pass
    over the whole minibatch."""
    ignore_index = getattr(model, "ignore_index", -100)

    def loss_fn(logits, labels):  # mean over the whole minibatch
        if is_regression(model):  # and over every output element
            return nn.functional.mse_loss(logits, labels)
        return cross_entropy(logits, labels, ignore_index, smoothing)
    if not has_batch_norm(model):
        loss = loss_fn(model(inputs), labels)
        loss.backward()
        return loss.item()
    loss = 0.0
    size = inputs.shape[0] // microbatches
    for k in range(microbatches):
        part = slice(k * size, (k + 1) * size)
        scaled = loss_fn(model(inputs[part]), labels[part]) / microbatches
        scaled.backward()
        loss += scaled.item()
    return loss


def train(model, x, y, steps, microbatches, microbatch_size, settings,
          lengths=None, record=None):
    """Optimizer steps on minibatches of microbatches * microbatch_size
    samples (minibatch_backward). With `lengths` (variable-length samples
    stored padded), each minibatch is cut to its longest sample before the
    forward pass. The settings' "lr_schedule" sets each step's learning rate
    and "clip_grad_norm" clips the gradients before it; `record`, a dict,
    gets the steps' "lrs" and "grad_norms"."""
    minibatch = microbatches * microbatch_size
    if steps * minibatch > x.shape[0]:
        sys.exit(f"oracle: {steps} steps of {minibatch} samples need more "
                 f"than the {x.shape[0]} training samples")
    model.train()
    optimizer = make_optimizer(model, settings)
    rates = recipe.learning_rates(settings.get("lr_schedule", ""),
                                  settings["lr"], steps)
    clip = settings.get("clip_grad_norm", 0)
    record = {} if record is None else record
    record["lrs"], record["grad_norms"] = rates, []
    losses = []
    for step in range(steps):
        begin = step * minibatch
        inputs, labels = x[begin:begin + minibatch], y[begin:begin + minibatch]
        if lengths is not None:
            longest = int(lengths[begin:begin + minibatch].max())
            inputs, labels = inputs[:, :longest], labels[:, :longest]
        optimizer.zero_grad()
        losses.append(minibatch_backward(model, inputs, labels, microbatches,
                                         settings.get("label_smoothing", 0.0)))
        for group in optimizer.param_groups:
            group["lr"] = rates[step]
        if clip:
            record["grad_norms"].append(float(
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)))
        optimizer.step()
    return losses


def perturb_by_one_ulp(model, seed):
    """`model` with every floating-point parameter moved up or down by one
    unit in the last place, at random: a float32 run from there differs from
    the unperturbed one by rounding-sized causes only."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(one_ulp_away(param, generator))
    return model


def one_ulp_away(value, generator):
    """`value` with every element moved up or down by one unit in the last
    place, each way with probability 1/2 drawn from `generator`."""
    up = torch.rand(value.shape, generator=generator) < 0.5
    toward = torch.where(up, torch.full_like(value, float("inf")),
                         torch.full_like(value, float("-inf")))
    return torch.nextafter(value, toward)


def evaluate(model, directory):
    x, y = load_split(directory, "t10k", None)
    x = vision.adapt_inputs(x, input_shape_of(model))
    model.eval()
    with torch.no_grad():
        predicted = model(x).argmax(dim=1)
    return (predicted == y).float().mean().item()


def write_predictions(model, name, directory, count, out_dir):
    x, _ = load_split(directory, "t10k", count)
    model.eval()
    with torch.no_grad():
        outputs = model(x)
    np.save(os.path.join(out_dir, "test_inputs.npy"), x.numpy())
    np.save(os.path.join(out_dir, f"{name}.predictions.npy"), outputs.numpy())


def variable_length_data(args, name, length, ignore_index, count):
    """A var-gpt's training samples from --data (text:FILE,docs=MODE or
    npy:TOKENS,LABELS,lengths=LENGTHS), padded to `length`: inputs and
    labels as tensors, the lengths, dpc's --data spec for the same samples,
    and what the oracle JSON says about them. The text's samples are also
    written as NAME.train_{tokens,labels,lengths}.npy (data_npy)."""
    spec = args.data
    if spec == DEFAULT_DATA:
        corpus = os.path.abspath(os.path.join(args.out, f"{name}.corpus.txt"))
        text.write_corpus(corpus)
        spec = f"text:{corpus},docs=line"
    kind, _, rest = spec.partition(":")
    parts = rest.split(",")
    options = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
    if kind == "text":
        if "docs" not in options:
            sys.exit(f"oracle: {name} needs --data text:FILE,docs=MODE")
        path = os.path.abspath(parts[0])
        inputs, labels, lengths = text.document_samples(
            path, options["docs"], length, ignore_index,
            vocab=options.get("vocab", "ascii64"))
        spec = ",".join([f"text:{path}"] + parts[1:])
        files = [os.path.abspath(os.path.join(args.out,
                                              f"{name}.train_{part}.npy"))
                 for part in ("tokens", "labels", "lengths")]
        for file, array in zip(files, (inputs, labels, lengths)):
            np.save(file, array)
        npy = f"npy:{files[0]},{files[1]},lengths={files[2]}"
    elif kind == "npy" and "lengths" in options:
        inputs, labels = np.load(parts[0]), np.load(parts[1])
        lengths = np.load(options["lengths"]).astype(np.int64)
        inputs, labels = inputs.astype(np.int64), labels.astype(np.int64)
        if inputs.shape[1] != length:
            sys.exit(f"oracle: {parts[0]}: samples of {inputs.shape[1]} "
                     f"tokens for a model of length {length}")
        positions = np.arange(length)[None, :]
        inputs[positions >= lengths[:, None]] = 0
        labels[positions >= lengths[:, None]] = ignore_index
        npy = spec
    else:
        sys.exit(f"oracle: {name} reads text:FILE,docs=MODE or "
                 f"npy:TOKENS,LABELS,lengths=LENGTHS, not {spec!r}")
    if count > len(lengths):
        sys.exit(f"oracle: {count} samples needed, {spec} holds "
                 f"{len(lengths)}")
    used = lengths[:count]
    minibatch = args.microbatches * args.microbatch_size
    steps = used.reshape(-1, minibatch)
    extra = {"data_npy": npy,
             "lengths": {"mean": float(used.mean()), "max": int(used.max()),
                         "model_length": length,
                         "mean_over_max": float(used.mean() / used.max()),
                         "step_longest": [int(v) for v in steps.max(1)],
                         "step_tokens": [int(v) for v in steps.sum(1)]}}
    return (torch.from_numpy(inputs), torch.from_numpy(labels),
            torch.from_numpy(lengths), spec, extra)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model",
                        choices=sorted(MODELS) + sorted(EXTRA_MODELS) + ["all"],
                        default="all")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--data", default=DEFAULT_DATA,
                        help="directory with the Fashion-MNIST IDX files; "
                        "for var-gpt a dpc data spec, text:FILE,docs=MODE"
                        "[,vocab=V] or npy:TOKENS,LABELS,lengths=LENGTHS "
                        "(default: a corpus generated into --out, "
                        "docs=line)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--microbatch-size", type=int, default=16)
    parser.add_argument("--optimizer", choices=["sgd", "adam", "adamw"],
                        default="sgd")
    parser.add_argument("--lr", type=float, default=None,
                        help="default 0.05 for SGD, 0.001 for Adam")
    parser.add_argument("--momentum", type=float, default=0.9,
                        help="SGD's momentum")
    parser.add_argument("--betas", default="0.9,0.999", help="Adam's betas")
    parser.add_argument("--eps", type=float, default=1e-8, help="Adam's eps")
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--no-decay", default="",
                        help="glob patterns of parameters without weight "
                        "decay (dpc compile --no-decay)")
    parser.add_argument("--lr-schedule", default="",
                        help="dpc run's --lr-schedule, as PyTorch's "
                        "schedulers (recipe.py)")
    parser.add_argument("--label-smoothing", type=float, default=0.0,
                        help="CrossEntropyLoss's label_smoothing (dpc "
                        "compile --label-smoothing)")
    parser.add_argument("--clip-grad-norm", type=float, default=0.0,
                        help="clip_grad_norm_ before every step")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--perturbed-runs", type=int, default=0, metavar="N",
                        help="also train N float32 copies whose initial "
                        "weights are moved by one ulp at random, and write "
                        "their losses (\"losses_perturbed\") and weights "
                        "(MODEL.final-perturbedK.safetensors): samples of "
                        "how far float32 rounding alone moves a run, for "
                        "the float64 tie-breaks of compare.py and "
                        "compare_weights.py")
    parser.add_argument("--reference64", action=argparse.BooleanOptionalAction,
                        default=True,
                        help="also train in float64 and write "
                        "MODEL.final64.safetensors (default on)")
    parser.add_argument("--eval", action="store_true",
                        help="also report test accuracy after training")
    parser.add_argument("--predictions", type=int, default=0, metavar="N",
                        help="also write the first N test samples "
                        "(test_inputs.npy) and the trained model's "
                        "eval-mode outputs for them (MODEL.predictions.npy)")
    args = parser.parse_args()

    if args.optimizer in ("adam", "adamw"):
        settings = {"kind": args.optimizer,
                    "lr": 0.001 if args.lr is None else args.lr,
                    "betas": [float(b) for b in args.betas.split(",")],
                    "eps": args.eps, "weight_decay": args.weight_decay}
    else:
        settings = {"kind": "sgd", "lr": 0.05 if args.lr is None else args.lr,
                    "momentum": args.momentum,
                    "weight_decay": args.weight_decay}
    for key, value in (("no_decay", args.no_decay),
                       ("lr_schedule", args.lr_schedule),
                       ("clip_grad_norm", args.clip_grad_norm),
                       ("label_smoothing", args.label_smoothing)):
        if value:
            settings[key] = value

    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)  # reproducible reduction order run to run
    torch.use_deterministic_algorithms(True)
    minibatch = args.microbatches * args.microbatch_size
    images = {}

    def fashion_mnist():
        if not images:
            images["x"], images["y"] = load_split(args.data, "train",
                                                  args.steps * minibatch)
        return images["x"], images["y"]

    names = sorted(MODELS) if args.model == "all" else [args.model]
    for name in names:
        started = time.time()
        torch.manual_seed(args.seed)
        model = build(name)
        onnx_path, ops = export_and_reload(
            model, name, args.microbatch_size, args.out,
            dynamic=getattr(model, "dynamic_axes", False))
        shape = input_shape_of(model)
        lengths, extra = None, {}
        if getattr(model, "variable_length", False):
            inputs, labels, lengths, data, extra = variable_length_data(
                args, name, shape[0], model.ignore_index,
                args.steps * minibatch)
        elif is_regression(model):
            inputs, labels, data = regression_data(args.steps * minibatch,
                                                   args.out, name)
        elif reads_tokens(model):
            inputs, labels, data = text.training_data(
                shape[0], args.steps * minibatch, args.out, name,
                pad_id=getattr(model, "pad_id", None),
                ignore_index=getattr(model, "ignore_index", None))
        else:
            x, labels = fashion_mnist()
            inputs, data = vision.training_data(x, labels, shape, args.out,
                                                name,
                                                f"fashion-mnist:{args.data}")
        # The same training in float64 from the same weights: the reference
        # that says how far float32 rounding alone moves the trained weights
        # (compare_weights.py, for tensors where dpc and PyTorch, both in
        # float32, round differently).
        reference = copy.deepcopy(model).double() if args.reference64 else None
        perturbed = [perturb_by_one_ulp(copy.deepcopy(model), seed)
                     for seed in range(args.perturbed_runs)]
        trained = {}
        losses = train(model, inputs, labels, args.steps, args.microbatches,
                       args.microbatch_size, settings, lengths, trained)
        write_safetensors(os.path.join(args.out, f"{name}.final.safetensors"),
                          trained_arrays(model))
        if reference is not None:
            inputs64 = inputs if reads_tokens(model) else inputs.double()
            labels64 = labels.double() if is_regression(model) else labels
            losses64 = train(reference, inputs64, labels64, args.steps,
                             args.microbatches, args.microbatch_size, settings,
                             lengths)
            final64 = {k: (v.detach().numpy().astype(np.float32)
                           if v.is_floating_point() else v.detach().numpy())
                       for k, v in trained_state(reference).items()}
            write_safetensors(
                os.path.join(args.out, f"{name}.final64.safetensors"), final64)
        result = {
            "model": name,
            "onnx": os.path.basename(onnx_path),
            "initial_weights": f"{name}.init.safetensors",
            "final_weights": f"{name}.final.safetensors",
            "opset": opset_of(model),
            "onnx_ops": ops,
            "input_shape": [args.microbatch_size, *shape],
            "data": data,
            "order": "file",
            "seed": args.seed,
            "steps": args.steps,
            "microbatches": args.microbatches,
            "microbatch_size": args.microbatch_size,
            "loss": ("mse, mean over every output element of the minibatch"
                     if is_regression(model) else
                     "softmax-cross-entropy, mean over the real (not "
                     "ignored) tokens of the minibatch"
                     if lengths is not None else
                     "softmax-cross-entropy, mean over the minibatch"),
            **extra,
            # dpc compile's --loss, where it is not the default.
            **({"dpc_loss": "mse"} if is_regression(model) else {}),
            **({"ignore_index": model.ignore_index}
               if hasattr(model, "ignore_index") else {}),
            "optimizer": settings,
            "torch_version": torch.__version__,
            "first_step": 1,
            "losses": losses,
            **({"lrs": trained["lrs"]} if "lr_schedule" in settings else {}),
            **({"grad_norms": trained["grad_norms"]}
               if trained["grad_norms"] else {}),
        }
        if reference is not None:
            result["losses64"] = losses64
        if perturbed:
            result["losses_perturbed"] = []
            for k, copy_ in enumerate(perturbed):
                result["losses_perturbed"].append(
                    train(copy_, inputs, labels, args.steps, args.microbatches,
                          args.microbatch_size, settings, lengths))
                write_safetensors(
                    os.path.join(args.out,
                                 f"{name}.final-perturbed{k}.safetensors"),
                    trained_arrays(copy_))
        if args.eval:
            result["eval_accuracy"] = evaluate(model, args.data)
        if args.predictions:
            write_predictions(model, name, args.data, args.predictions,
                              args.out)
        path = os.path.join(args.out, f"{name}.oracle.json")
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        print(f"{name}: {onnx_path} ({', '.join(ops)}); {args.steps} steps, "
              f"loss {losses[0]:.6f} -> {losses[-1]:.6f}; "
              f"{time.time() - started:.1f}s; wrote {path}")


if __name__ == "__main__":
    main()
