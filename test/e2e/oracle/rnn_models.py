"""Recurrent models for the oracle (#43), on text.py's tokens: a GRU
language model and a bidirectional GRU and LSTM tagger. oracle.py adds
MODELS_BY_NAME to its EXTRA_MODELS."""

import torch.nn as nn

import text


class GruLM(nn.Module):
    """A character-level GRU language model: an embedding, a two-layer
    nn.GRU (batch_first, zero initial state) and a linear layer to the
    vocabulary, logits [B, T, vocab]. torch.onnx writes one GRU node per
    layer with linear_before_reset = 1, the weights sliced from torch's
    gate order r, z, n and concatenated into ONNX's z, r, h."""

    opset = 14
    fold_constants = False
    export_training = True
    tokens = True

    def __init__(self, vocab=text.VOCAB, length=12, width=16, hidden=24,
                 layers=2):
        super().__init__()
        self.input_shape = (length,)
        self.embed = nn.Embedding(vocab, width)
        self.gru = nn.GRU(width, hidden, num_layers=layers, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, ids):
        h, _ = self.gru(self.embed(ids))
        return self.out(h)


class BiRnnTagger(nn.Module):
    """A tagger of each position by the whole window: an embedding, a
    bidirectional nn.GRU, a bidirectional nn.LSTM over its outputs that
    starts (h and c) from the GRU's final states (each one ONNX node with
    direction = "bidirectional", its Y transposed and reshaped to
    [B, T, 2H], its Y_h the forward direction's last step and the reverse
    direction's first) and a linear layer, logits [B, T, vocab]. The task
    (the next token, in sight of the backward direction) is only there to
    train the numerics."""

    opset = 14
    fold_constants = False
    export_training = True
    tokens = True

    def __init__(self, vocab=text.VOCAB, length=8, width=12, hidden=10):
        super().__init__()
        self.input_shape = (length,)
        self.embed = nn.Embedding(vocab, width)
        self.gru = nn.GRU(width, hidden, batch_first=True, bidirectional=True)
        self.lstm = nn.LSTM(2 * hidden, hidden, batch_first=True,
                            bidirectional=True)
        self.out = nn.Linear(2 * hidden, vocab)

    def forward(self, ids):
        h, last = self.gru(self.embed(ids))
        h, _ = self.lstm(h, (last, last))
        return self.out(h)


MODELS_BY_NAME = {"gru-lm": GruLM, "birnn-tagger": BiRnnTagger}
