"""Runs the ONNX backend node tests through dpc's own path and reports how
many pass.

Usage: run_node_tests.py WORK_DIR [--dpc COMMAND] [--node-dir DIR]
       [--expected FILE] [--only REGEX] [--jobs N] [--verbose]

Each node test (a directory with model.onnx and test_data_set_*/ holding
input_K.pb and output_K.pb) goes through what a user of an inference build
runs:

  1. The model is rewritten so that its first input stays the data input and
     every other input becomes an initializer holding the test's value (a
     weight, as dpc trains it; dpc needs batch norm's statistics and a
     Reshape's target shape to be initializers anyway).
  2. `dpc compile model.onnx --inference --stages 1 --microbatches 1`.
  3. The rank executable predicts the first input, written as .npy
     (`--data npy:x.npy --predictions y.npy`).
  4. The prediction must have the expected output's shape and match it as
     the ONNX backend tests do (numpy allclose, rtol 1e-3, atol 1e-7).

A rank that fails with Open MPI's own framed message (its start-up failed
before dpc's code ran) is started once more, and the summary prints a
RETRIED line for it.

A test ends as PASS, FAIL (compiled, but the numbers or the shape differ, or
the rank failed), or REJECTED (dpc compile refused it with a message: an
unsupported op, attribute or type). A test whose first input is not a
float32 tensor with a batch dimension, or with more than one output, cannot
be phrased as a prediction and is REJECTED without calling dpc.

Exit status 1 when any test FAILs (a wrong answer is a bug whatever the op),
or when a test listed in --expected does not pass; the summary line gives
the counts.
"""
import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

DEFAULT_NODE_DIR = "/usr/include/onnx/backend/test/data/node"
RTOL, ATOL = 1e-3, 1e-7


def load_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def data_sets(test_dir):
    return sorted(
        os.path.join(test_dir, d)
        for d in os.listdir(test_dir)
        if d.startswith("test_data_set_"))


def first_line(text):
    """The first line that says something (Open MPI frames its messages in
    lines of dashes)."""
    for line in text.splitlines():
        line = line.strip()
        if line and line.strip("-"):
            return line
    return "(no message)"


def is_mpi_message(text):
    """Whether a failed rank's output is Open MPI's own framed message (a
    line of dashes first), not one of dpc's errors."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return bool(lines) and not lines[0].strip("-")


def run_one(name, test_dir, work, dpc, retried):
    """Returns (status, detail) for one node test; appends to retried the
    Open MPI message of a start-up that failed and was tried again."""
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    graph = model.graph
    sets = data_sets(test_dir)
    if not sets:
        return "REJECTED", "no test data"
    # LayerNormalization's Mean and InvStdDev are optional outputs that a
    # training framework saves for its backward pass; dpc's gradient
    # recomputes them, and a model of a dpc user leaves them unread. A test
    # that lists them as graph outputs is judged on Y alone.
    statistics = {name for node in graph.node
                  if node.op_type == "LayerNormalization"
                  for name in node.output[1:]}
    if len(graph.output) > 1 and all(o.name in statistics
                                     for o in graph.output[1:]):
        del graph.output[1:]
    if len(graph.output) != 1:
        return "REJECTED", f"{len(graph.output)} outputs; a prediction is one"
    inits = {t.name for t in graph.initializer}
    inputs = [v for v in graph.input if v.name not in inits]
    if not inputs:
        return "REJECTED", "no graph input"
    elem = inputs[0].type.tensor_type.elem_type
    if elem != onnx.TensorProto.FLOAT:
        return "REJECTED", (f"first input is "
                            f"{onnx.TensorProto.DataType.Name(elem)}, "
                            "not a float32 batch")
    for k, data_set in enumerate(sets):
        values = [load_tensor(os.path.join(data_set, f"input_{i}.pb"))
                  for i in range(len(inputs))]
        if values[0].ndim == 0:
            return "REJECTED", "first input is a scalar, not a batch"
        expected = load_tensor(os.path.join(data_set, "output_0.pb"))
        named = dict(zip((v.name for v in inputs), values))
        for node in graph.node:
            # A training-mode Dropout's output is random: its expected
            # values come from numpy's generator, dpc draws from its own.
            if (node.op_type == "Dropout" and len(node.input) > 2 and
                    bool(np.all(named.get(node.input[2], False))) and
                    len(node.input) > 1 and
                    float(np.max(named.get(node.input[1], 0.5))) > 0):
                return "REJECTED", ("training-mode Dropout: random output, "
                                    "not comparable")
        case = os.path.join(work, f"{name}.{k}")
        shutil.rmtree(case, ignore_errors=True)
        os.makedirs(case)
        rewritten = onnx.ModelProto()
        rewritten.CopyFrom(model)
        g = rewritten.graph
        for info, value in zip(inputs[1:], values[1:]):
            g.initializer.append(numpy_helper.from_array(value, info.name))
        # Before IR version 4 an initializer must be a graph input too.
        held = {info.name for info in inputs[1:]} if model.ir_version < 4 else set()
        keep = [v for v in g.input
                if v.name == inputs[0].name or v.name in inits | held]
        del g.input[:]
        g.input.extend(keep)
        model_path = os.path.join(case, "model.onnx")
        onnx.save(rewritten, model_path)
        np.save(os.path.join(case, "x.npy"),
                np.ascontiguousarray(values[0], dtype=np.float32))

        out = os.path.join(case, "out")
        compiled = subprocess.run(
            [*shlex.split(dpc), "compile", model_path, "-o", out, "--inference",
             "--stages", "1", "--microbatches", "1"],
            capture_output=True, text=True)
        if compiled.returncode != 0:
            message = first_line(compiled.stderr + compiled.stdout)
            message = message.replace(model_path, "model.onnx")
            return "REJECTED", message
        predict = [os.path.join(out, "rank0"), "--data", "npy:x.npy",
                   "--predictions", "y.npy"]
        ran = subprocess.run(predict, capture_output=True, text=True,
                             cwd=case)
        if ran.returncode != 0 and is_mpi_message(ran.stderr + ran.stdout):
            # Open MPI's start-up (a singleton MPI_Init forks its own
            # daemon) failed before dpc's code ran: once in a few thousand
            # starts during a full lit run, not reproduced alone. Started
            # once more, and said in the summary.
            retried.append(first_line(ran.stderr + ran.stdout))
            ran = subprocess.run(predict, capture_output=True, text=True,
                                 cwd=case)
        if ran.returncode != 0:
            return "FAIL", "rank0: " + first_line(ran.stderr + ran.stdout)
        got = np.load(os.path.join(case, "y.npy"))
        if got.shape != expected.shape:
            return "FAIL", (f"data set {k}: shape {list(got.shape)}, "
                            f"expected {list(expected.shape)}")
        if not np.allclose(got, expected, rtol=RTOL, atol=ATOL):
            err = np.abs(got.astype(np.float64) - expected)
            return "FAIL", (f"data set {k}: max abs error {err.max():.3g} "
                            f"at {np.unravel_index(err.argmax(), err.shape)}")
        shutil.rmtree(case, ignore_errors=True)
    return "PASS", f"{len(sets)} data set(s)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("work_dir")
    parser.add_argument("--dpc", default=shutil.which("dpc") or "dpc")
    parser.add_argument("--node-dir", default=DEFAULT_NODE_DIR)
    parser.add_argument("--expected", help="tests that must pass, one a line")
    parser.add_argument("--only", help="run the tests whose name matches")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--verbose", action="store_true",
                        help="print every test, not just failures")
    args = parser.parse_args()

    if not os.path.isdir(args.node_dir):
        print(f"{args.node_dir}: no such directory (install libonnx-testdata)")
        return 2
    names = sorted(d for d in os.listdir(args.node_dir)
                   if os.path.isfile(os.path.join(args.node_dir, d,
                                                  "model.onnx")))
    if args.only:
        names = [n for n in names if re.search(args.only, n)]
    expected = []
    if args.expected:
        with open(args.expected) as f:
            expected = [line.split("#")[0].strip() for line in f]
        expected = [e for e in expected if e]
        missing = sorted(set(expected) - set(names))
        if missing and not args.only:
            print(f"--expected lists tests that do not exist: {missing}")
            return 2
    os.makedirs(args.work_dir, exist_ok=True)

    retried = {}

    def job(name):
        try:
            return run_one(name, os.path.join(args.node_dir, name),
                           args.work_dir, args.dpc,
                           retried.setdefault(name, []))
        except Exception as e:  # a malformed test is reported, not fatal
            return "FAIL", f"runner: {type(e).__name__}: {e}"

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = dict(zip(names, pool.map(job, names)))

    counts = {"PASS": 0, "FAIL": 0, "REJECTED": 0}
    for name in names:
        status, detail = results[name]
        counts[status] += 1
        if args.verbose or status == "FAIL":
            print(f"{status} {name}: {detail}")
    for name in names:
        for message in retried[name]:
            print(f"RETRIED {name}: Open MPI failed to start the rank once: "
                  f"{message}")
    regressions = [e for e in expected
                   if e in results and results[e][0] != "PASS"]
    for name in regressions:
        print(f"REGRESSION {name}: listed as passing, now "
              f"{results[name][0]}: {results[name][1]}")
    unlisted = [n for n in names
                if results[n][0] == "PASS" and n not in set(expected)]
    if args.expected:
        for name in unlisted:
            print(f"NEW PASS {name} (add it to {args.expected})")
    print(f"onnx node tests: {counts['PASS']} passed, {counts['FAIL']} failed, "
          f"{counts['REJECTED']} rejected by dpc, of {len(names)}")
    return 1 if counts["FAIL"] or regressions else 0


if __name__ == "__main__":
    sys.exit(main())
