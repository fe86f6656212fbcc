"""Encoder-decoder models for the oracle (#43) whose one int64 id input
feeds both sides, split inside the model (by Slice in t5-style, by Split in
gnmt-style). oracle.py adds MODELS_BY_NAME to
its EXTRA_MODELS."""

import torch
import torch.nn as nn

import text


class T5Style(nn.Module):
    """A tiny T5-style encoder-decoder on text.py's tokens. The one input
    holds 2T ids [B, 2T]; the model slices it into a source (ids[:, :T])
    and a target (ids[:, T:]), so the exported graph slices an int64 tensor.
    One embedding is shared by both sides (and by the output layer, tied as
    T5's): an nn.TransformerEncoderLayer over the source, an
    nn.TransformerDecoderLayer over the target shifted right by one, the
    source's last token first (causal self-attention, a
    constant additive mask, and cross-attention over the encoder's output),
    and logits [B, 2T, vocab] for every position, the encoder's and the
    decoder's concatenated, under a token-level cross-entropy against the
    window's next tokens."""

    opset = 17
    fold_constants = False
    export_training = True
    tokens = True

    def __init__(self, vocab=text.VOCAB, half=6, width=16, heads=2):
        super().__init__()
        self.half = half
        self.input_shape = (2 * half,)
        self.embed = nn.Embedding(vocab, width)
        nn.init.normal_(self.embed.weight, std=0.1)
        self.encoder = nn.TransformerEncoderLayer(
            width, heads, 2 * width, dropout=0.0, batch_first=True)
        self.decoder = nn.TransformerDecoderLayer(
            width, heads, 2 * width, dropout=0.0, batch_first=True)
        # A plain attribute, not a buffer: the exporter writes a Constant.
        self.mask = torch.triu(torch.full((half, half), float("-inf")),
                               diagonal=1)

    def forward(self, ids):
        src, tgt = ids[:, :self.half], ids[:, self.half:]
        # The decoder reads the target shifted right, starting from the
        # source's last token (a Gather of one position, an Unsqueeze and a
        # Concat of ids).
        start = src[:, -1].unsqueeze(1)
        tgt = torch.cat([start, tgt[:, :-1]], dim=1)
        memory = self.encoder(self.embed(src))
        h = self.decoder(self.embed(tgt), memory, tgt_mask=self.mask)
        return torch.cat([memory, h], dim=1) @ self.embed.weight.t()


class GnmtStyle(nn.Module):
    """A small GNMT-style LSTM encoder-decoder on text.py's tokens whose one
    input of 2T ids [B, 2T] is cut into a source and a target by
    torch.split, which torch.onnx writes as an ONNX Split of the int64 ids.
    One embedding serves both sides; a two-layer nn.LSTM encoder over the
    source; a one-layer nn.LSTM decoder over the target shifted right (the
    source's last token first: a Slice and a Concat of ids) that starts
    from the encoder's top layer's final h and c; dot-product attention of
    each decoder state over the encoder's states; logits [B, 2T, vocab],
    the encoder's positions from its states and the decoder's from its
    state and context, under a token-level cross-entropy against the
    window's next tokens."""

    opset = 14
    fold_constants = False
    export_training = True
    tokens = True

    def __init__(self, vocab=text.VOCAB, half=5, width=16, hidden=16):
        super().__init__()
        self.half = half
        self.input_shape = (2 * half,)
        self.embed = nn.Embedding(vocab, width)
        self.encoder = nn.LSTM(width, hidden, num_layers=2, batch_first=True)
        self.decoder = nn.LSTM(width, hidden, batch_first=True)
        self.src_out = nn.Linear(hidden, vocab)
        self.out = nn.Linear(2 * hidden, vocab)

    def forward(self, ids):
        src, tgt = torch.split(ids, self.half, dim=1)
        tgt = torch.cat([src[:, -1:], tgt[:, :-1]], dim=1)
        memory, (h, c) = self.encoder(self.embed(src))
        states, _ = self.decoder(self.embed(tgt), (h[-1:], c[-1:]))
        weights = torch.softmax(states @ memory.transpose(1, 2), dim=-1)
        context = weights @ memory
        return torch.cat([self.src_out(memory),
                          self.out(torch.cat([states, context], dim=-1))],
                         dim=1)


MODELS_BY_NAME = {"t5-style": T5Style, "gnmt-style": GnmtStyle}
