#!/usr/bin/python3
"""Compares the weights dpc trained with the PyTorch oracle's.

    compare_weights.py CHECKPOINT_DIR|MODEL.onnx ORACLE_FINAL.safetensors
                       [--rtol 1e-4] [--ties N] [--noise-factor 4]

CHECKPOINT_DIR holds what `dpc run --checkpoint-dir` wrote, one
stageK.safetensors per stage (or MODEL.onnx is what `dpc export` wrote from
them, its initializers the trained weights); together they must hold every
tensor of the oracle's final weights (oracle.py writes MODEL.final.safetensors after its
training steps). A tensor agrees when max |dpc - torch| <= rtol * max |torch|.

Both sides train in float32, and where they round differently (other
kernels, other summation orders: PyTorch and dpc pick oneDNN algorithms
apart, and a CPU model changes both), training amplifies the difference,
most in small tensors that are sums of cancelling terms (batch
normalization's shifts). So when oracle.py also wrote MODEL.final64.safetensors
(the same training in float64) beside the final weights, a tensor that misses
rtol is judged against that reference instead: it agrees when dpc is no
farther from float64 than NOISE_FACTOR times PyTorch's own float32 run is
(and at least rtol), max |dpc - t64| <= NOISE_FACTOR * max(max |torch - t64|,
rtol * max |t64|). A real error (a wrong gradient, a missed update) puts dpc
orders of magnitude farther from float64 than float32 rounding puts PyTorch.
Where oracle.py --perturbed-runs also wrote
MODEL.final-perturbedK.safetensors (float32 runs from weights one ulp away),
"PyTorch's float32 run" is the farthest of them and the unperturbed one.
With --ties N, up to N single elements of the whole model may miss that
bound too, each named: a ReLU (or max-pool) input within float32 rounding of
its threshold takes one side in PyTorch's float64 and float32 runs and the
other in dpc's, which adds or drops one sample's term in the gradients
behind it. A test passes --ties only where it has found such a tie and says
which; a real error moves far more than a few elements.
Momentum buffers in the checkpoints are ignored. Prints one line per tensor
and a verdict; exits 0 when all agree, 1 otherwise, 2 on unreadable input.
"""

import argparse
import glob
import json
import os
import struct
import sys

import numpy as np

# How much farther from the float64 reference than PyTorch's float32 run
# dpc's float32 run may be: the two are independent roundings of the same
# computation, so their distances agree to within a small factor.
NOISE_FACTOR = 4.0


def read_safetensors(path):
    try:
        with open(path, "rb") as f:
            size = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(size))
            data = f.read()
    except (OSError, struct.error, json.JSONDecodeError) as e:
        print(f"compare_weights: {path}: {e}", file=sys.stderr)
        sys.exit(2)
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=np.float32).reshape(
            entry["shape"])
    return tensors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint_dir")
    parser.add_argument("oracle")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--ties", type=int, default=0,
                        help="single elements that may miss the float64 "
                        "bound, at activation thresholds (see above)")
    parser.add_argument("--noise-factor", type=float, default=NOISE_FACTOR,
                        help="how many times PyTorch's float32 distance "
                        "from float64 dpc may be (default %(default)s; "
                        "Winograd convolutions, which round worse than a "
                        "direct sum, need more: test/e2e/winograd.test)")
    args = parser.parse_args()

    trained = {}
    if args.checkpoint_dir.endswith(".onnx"):
        import onnx
        from onnx import numpy_helper
        files = []
        for init in onnx.load(args.checkpoint_dir).graph.initializer:
            trained[init.name] = numpy_helper.to_array(init)
    else:
        files = sorted(glob.glob(os.path.join(args.checkpoint_dir,
                                              "stage*.safetensors")))
    if not files and not trained:
        print(f"compare_weights: no stage*.safetensors in "
              f"{args.checkpoint_dir}", file=sys.stderr)
        sys.exit(2)
    for path in files:
        for name, value in read_safetensors(path).items():
            if not name.startswith("momentum."):
                trained[name] = value
    expected = read_safetensors(args.oracle)
    reference, perturbed = {}, []
    if args.oracle.endswith(".final.safetensors"):
        stem = args.oracle[:-len(".final.safetensors")]
        if os.path.exists(stem + ".final64.safetensors"):
            reference = read_safetensors(stem + ".final64.safetensors")
        perturbed = [read_safetensors(path) for path in sorted(
            glob.glob(stem + ".final-perturbed*.safetensors"))]

    bad = noisy = 0
    ties_left = args.ties
    for name, want in sorted(expected.items()):
        got = trained.get(name)
        if got is None:
            print(f"  {name}: missing from the checkpoints")
            bad += 1
            continue
        if got.shape != want.shape:
            print(f"  {name}: shape {list(got.shape)}, expected "
                  f"{list(want.shape)}")
            bad += 1
            continue
        error = float(np.max(np.abs(got.astype(np.float64) - want)))
        scale = float(np.max(np.abs(want)))
        ok = error <= args.rtol * scale
        note = ""
        t64 = reference.get(name)
        if not ok and t64 is not None and t64.shape == want.shape:
            t64 = t64.astype(np.float64)
            ours = float(np.max(np.abs(got - t64)))
            theirs = max(float(np.max(np.abs(run[name] - t64)))
                         for run in [expected, *perturbed] if name in run)
            bound = args.noise_factor * max(theirs, args.rtol * float(np.max(np.abs(t64))))
            ok = ours <= bound
            outside = np.flatnonzero(np.abs(got - t64) > bound)
            if not ok and outside.size <= ties_left:
                ties_left -= outside.size
                ok = True
                note_ties = ", ".join(f"[{i}] dpc {got.flat[i]:.3g} float64 "
                                      f"{t64.flat[i]:.3g}" for i in outside)
                ours = float(np.max(np.delete(np.abs(got - t64).ravel(),
                                              outside)))
                print(f"  {name}: tie: {note_ties}")
            noisy += ok
            note = (f"; from float64: dpc {ours:.3g}, torch {theirs:.3g}"
                    f"{', within float32 noise' if ok else ''}")
        bad += not ok
        print(f"  {name}: max error {error:.3g} of max {scale:.3g}{note}"
              f"{'' if ok else '  DIFFERS'}")
    if bad:
        print(f"compare_weights: {bad} of {len(expected)} tensors differ by "
              f"more than {args.rtol} relative")
        sys.exit(1)
    print(f"compare_weights: all {len(expected)} tensors within {args.rtol} "
          f"relative" + (f" ({noisy} within float32 noise of the float64 "
                         f"reference)" if noisy else ""))


if __name__ == "__main__":
    main()
