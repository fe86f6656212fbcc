#!/usr/bin/python3
"""Self-check of the oracle's variable-length data and model: text.py cuts
documents as lib/runtime/DataText.cpp does (the same cases as DataTest's), pads
and truncates them, and generates the same corpus every time; var-gpt's loss
and gradients do not depend on how a minibatch's samples are grouped into
microbatches or how far each is padded, and it exports a dynamic batch and
length."""

import os
import sys
import tempfile
import unittest

import numpy as np
import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import oracle  # noqa: E402
import text  # noqa: E402


def ids(chars):
    return [ord(c) - 32 for c in chars]


class DocumentsTest(unittest.TestCase):
    def test_modes(self):
        self.assertEqual(
            text.documents(b"first\nquote\n%\nsecond\n%\r\n\n%\nthird",
                           "fortune"), [b"first\nquote", b"second", b"third"])
        self.assertEqual(text.documents(b"50% off\n%%\n%\n", "fortune"),
                         [b"50% off\n%%"])
        self.assertEqual(
            text.documents(b"para one\nstill one\n\n  \npara two\r\n\r\n"
                           b"three\n", "blank"),
            [b"para one\nstill one", b"para two\r", b"three"])
        self.assertEqual(text.documents(b"a\n\n b \n\t\nlast", "line"),
                         [b"a", b" b ", b"last"])
        for mode in text.DOC_MODES:
            self.assertEqual(text.documents(b"", mode), [])
        self.assertEqual(text.documents(b"\n \n", "line"), [])
        self.assertEqual(text.documents(b"\n \n", "blank"), [])
        self.assertEqual(text.documents(b"\n \n", "fortune"), [b"\n "])

    def test_samples_padded_truncated_and_split(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "d.txt")
            with open(path, "wb") as f:
                f.write(b"AB\n\nX\nCDEFGHIJ\n \t\nKLM\nNOPQR\nST\nUVW\nXYZ0\n"
                        b"12345\n67\n89AB\n")
            x, y, lengths = text.document_samples(path, "line", 4, -100)
            self.assertEqual(lengths.tolist(), [1, 4, 2, 4, 1, 2, 3, 4, 1])
            self.assertEqual(x[0].tolist(), ids("A") + [0, 0, 0])
            self.assertEqual(y[0].tolist(), ids("B") + [-100] * 3)
            self.assertEqual(x[1].tolist(), ids("CDEF"))
            self.assertEqual(y[1].tolist(), ids("DEFG"))
            x, y, lengths = text.document_samples(path, "line", 4, -100,
                                                  split="test")
            self.assertEqual(lengths.tolist(), [3])
            self.assertEqual(x[0].tolist(), ids("89A") + [0])

    def test_corpus_is_deterministic_and_skewed(self):
        with tempfile.TemporaryDirectory() as directory:
            a = text.write_corpus(os.path.join(directory, "a.txt"))
            b = text.write_corpus(os.path.join(directory, "b.txt"))
            with open(a, "rb") as f, open(b, "rb") as g:
                self.assertEqual(f.read(), g.read())
            _, _, lengths = text.document_samples(a, "line", 64, -100)
            self.assertGreater(len(lengths), 1700)
            self.assertLess(lengths.mean() / lengths.max(), 0.5)
            self.assertEqual(lengths.max(), 64)
            self.assertEqual(lengths.min(), 1)


class VarGptTest(unittest.TestCase):
    def test_loss_and_gradients_ignore_grouping(self):
        torch.manual_seed(0)
        model = oracle.VarGPT(length=32).double()
        generator = np.random.default_rng(0)
        lengths = torch.from_numpy(generator.integers(1, 33, 24))
        x = torch.from_numpy(generator.integers(0, 64, (24, 32)))
        y = torch.from_numpy(generator.integers(0, 64, (24, 32)))
        padding = torch.arange(32)[None, :] >= lengths[:, None]
        x[padding] = 0
        y[padding] = -100

        def gradients(loss):
            model.zero_grad()
            loss.backward()
            return torch.cat([p.grad.flatten() for p in model.parameters()])

        whole = oracle.cross_entropy(model(x), y)
        expected = gradients(whole)
        # Microbatches of sorted lengths, each padded to its own longest,
        # their token losses summed over the minibatch's token count.
        tokens = (y != -100).sum()
        total = 0
        for part in torch.argsort(lengths).split([3, 10, 7, 4]):
            longest = int(lengths[part].max())
            logits = model(x[part][:, :longest])
            total = total + torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]),
                y[part][:, :longest].reshape(-1), ignore_index=-100,
                reduction="sum") / tokens
        self.assertLess(abs(whole.item() - total.item()), 1e-12)
        self.assertLess((expected - gradients(total)).abs().max().item(),
                        1e-12)

    def test_exports_dynamic_batch_and_length(self):
        torch.manual_seed(0)
        model = oracle.VarGPT(length=16)
        with tempfile.TemporaryDirectory() as directory:
            path, _ = oracle.export_and_reload(model, "var", 4, directory,
                                               dynamic=True)
            graph = onnx.load(path).graph
            for value in (graph.input[0], graph.output[0]):
                dims = value.type.tensor_type.shape.dim
                self.assertEqual([d.dim_param for d in dims[:2]],
                                 ["batch", "length"])


if __name__ == "__main__":
    unittest.main()
