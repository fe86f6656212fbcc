#!/usr/bin/python3
"""bench/data/run.py: training from an image folder of JPEGs against the
same images as .npy, and dpc's decode rate against PyTorch's DataLoader.

One run, on whatever cores the machine has (the load average is printed
before and after: other work on the cores moves every figure):

1. scripts/fashion-mnist-to-images writes the first --train-count training
   and --test-count test images of Fashion-MNIST as 28x28 gray JPEGs
   (quality 90) into WORK/fm.
2. Decode throughput per core on that folder, the training transform of a
   64x64 RGB model (RandomResizedCrop(64), a horizontal flip, ToTensor,
   Normalize): dpc's loader threads (dpc-data --throughput, 1 and 2
   threads) against torch.utils.data.DataLoader over torchvision's
   ImageFolder with the same transforms (num_workers 0 with one torch
   thread: one core; then num_workers 2), batches of 64.
3. torchvision's ResNet-18 (10 classes) at 64x64, compiled by dpc on 1 stage
   (4 x 16, SGD lr 0.05 momentum 0.9), trained one epoch of the
   --train-count samples, shuffled, then evaluated on the test images,
   three ways: from the .npy of the same images (the IDX pixels resized to
   64x64 by PIL's bilinear resize, gray repeated to 3 channels, in the image
   folder's order), from the JPEGs without augmentation (augment=none: the
   same resize, of the JPEG-decoded pixels), and from the JPEGs with
   augmentation. Printed: test accuracy, the median step time, and the
   median load wait per step (metrics' load_wait_ms).

--train-count 12800 (200 steps) keeps a run to minutes on 2 cores; the full
60000 (an epoch of 937 steps) takes about 5x as long.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
BIN = os.path.join(ROOT, "build", "bin")
SOURCE = "/usr/share/datasets/fashion-mnist"


def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def run(cmd, env=None):
    result = subprocess.run(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, **(env or {})))
    if result.returncode != 0:
        sys.exit(f"run.py: {' '.join(cmd)} failed:\n{result.stdout}")
    return result.stdout


def dpc_decode_rate(folder, samples, threads):
    out = run([os.path.join(BIN, "dpc-data"), "imagefolder:" + folder +
               ",mean=0.5,std=0.5", "--shape", "3,64,64", "--throughput",
               str(samples), "--loader-threads", str(threads)])
    return float(re.search(r"([0-9.]+) samples/s", out).group(1))


def torch_decode_rate(folder, samples, workers):
    import torch
    import torchvision.transforms as T
    from torchvision.datasets import ImageFolder
    torch.set_num_threads(1)
    transform = T.Compose([T.RandomResizedCrop(64), T.RandomHorizontalFlip(),
                           T.ToTensor(), T.Normalize(0.5, 0.5)])
    dataset = ImageFolder(folder, transform=transform)
    loader = torch.utils.data.DataLoader(dataset, batch_size=64,
                                         shuffle=False, num_workers=workers)
    count = 0
    start = time.perf_counter()
    for x, _ in loader:
        count += x.shape[0]
        if count >= samples:
            break
    return count / (time.perf_counter() - start)


def read_idx(name):
    import gzip
    with gzip.open(os.path.join(SOURCE, name), "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
            for i in range(rank)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(dims)


def write_npy(work, prefix, count, stem):
    """The first `count` images of the IDX split as [N, 3, 64, 64] uint8,
    resized by PIL's bilinear, in the image folder's order (class by
    class, each in file order), and their labels."""
    from PIL import Image
    images = read_idx(f"{prefix}-images-idx3-ubyte.gz")[:count]
    labels = read_idx(f"{prefix}-labels-idx1-ubyte.gz")[:count]
    order = np.argsort(labels, kind="stable")
    big = np.stack([np.asarray(Image.fromarray(images[i], "L").resize(
        (64, 64), Image.BILINEAR)) for i in order])
    big = np.repeat(big[:, None], 3, axis=1)
    x, y = os.path.join(work, stem + "_x.npy"), os.path.join(work,
                                                            stem + "_y.npy")
    np.save(x, big)
    np.save(y, labels[order].astype(np.int64))
    return f"npy:{x},{y},scale=255,mean=0.5,std=0.5"


def export_resnet(path):
    import inspect
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    model.train()
    legacy = ({"dynamo": False} if "dynamo" in
              inspect.signature(torch.onnx.export).parameters else {})
    torch.onnx.export(model, torch.zeros(16, 3, 64, 64), path,
                      opset_version=14, input_names=["input"],
                      output_names=["logits"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING, **legacy)


def train(build, work, name, data, eval_data, seed):
    metrics = os.path.join(work, re.sub(r"[^a-z0-9]+", "-", name) + ".jsonl")
    cmd = [os.path.join(BIN, "dpc"), "run", build, "--epochs", "1",
           "--data", data, "--metrics", metrics, "--seed", str(seed)]
    if eval_data:
        cmd += ["--eval-data", eval_data]
    start = time.perf_counter()
    out = run(cmd)
    wall = time.perf_counter() - start
    accuracy = re.search(r"test accuracy ([0-9.]+) \((\d+)/(\d+)\)", out)
    rows = [json.loads(line) for line in open(metrics) if '"step"' in line]
    times = [b["time_s"] - a["time_s"] for a, b in zip(rows, rows[1:])]
    waits = [r.get("load_wait_ms", [0])[0] for r in rows[1:]]
    return {"name": name, "accuracy": float(accuracy.group(1)),
            "hits": accuracy.group(2) + "/" + accuracy.group(3),
            "steps": len(rows), "step_ms": 1e3 * statistics.median(times),
            "load_wait_ms": statistics.median(waits),
            "final_loss": rows[-1]["loss"], "wall_s": wall}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", default="/tmp/dpc-bench-data")
    parser.add_argument("--train-count", type=int, default=12800)
    parser.add_argument("--test-count", type=int, default=2000)
    parser.add_argument("--decode-samples", type=int, default=4000)
    parser.add_argument("--no-train", action="store_true",
                        help="only the conversion and the decode rates")
    parser.add_argument("--no-decode", action="store_true",
                        help="leave out the decode rates")
    parser.add_argument("--seed", type=int, default=0,
                        help="dpc run --seed: the shuffle and augmentation")
    parser.add_argument("--runs", default="npy,none,augmented",
                        help="which trainings: npy, none (JPEGs, "
                        "augment=none), augmented (JPEGs)")
    args = parser.parse_args()
    print(f"cores {os.cpu_count()}, {load()}")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    folder = os.path.join(args.work, "fm")
    start = time.perf_counter()
    run([os.path.join(ROOT, "scripts", "fashion-mnist-to-images"), folder,
         "--count", str(args.train_count), "--test-count",
         str(args.test_count)])
    print(f"converted {args.train_count} + {args.test_count} images to JPEG "
          f"in {time.perf_counter() - start:.1f} s")
    train_folder = os.path.join(folder, "train")
    if not args.no_decode:
        decode_rates(train_folder, args.decode_samples)
    if args.no_train:
        print(load())
        return
    train_all(args, folder)


def decode_rates(train_folder, samples):
    print("decode rate, RandomResizedCrop(64) + flip + ToTensor + Normalize, "
          "3 channels, batches of 64:")
    for threads in (1, 2):
        rate = dpc_decode_rate(train_folder, samples, threads)
        print(f"  dpc loader, {threads} thread{'s' if threads > 1 else ''}: "
              f"{rate:8.0f} samples/s ({rate / threads:.0f} per thread)")
    for workers in (0, 2):
        rate = torch_decode_rate(train_folder, samples, workers)
        label = ("main process" if workers == 0 else f"{workers} workers")
        print(f"  torch DataLoader, {label}: {rate:8.0f} samples/s"
              f" ({rate / max(workers, 1):.0f} per process)")


def train_all(args, folder):
    onnx = os.path.join(args.work, "resnet18.onnx")
    export_resnet(onnx)
    build = os.path.join(args.work, "rn")
    run([os.path.join(BIN, "dpc"), "compile", onnx, "-o", build, "--stages",
         "1", "--microbatches", "4", "--optimizer", "sgd", "--lr", "0.05",
         "--momentum", "0.9"])
    npy = write_npy(args.work, "train", args.train_count, "train")
    npy_test = write_npy(args.work, "t10k", args.test_count, "test")
    runs = {
        "npy": ("npy", npy, npy_test),
        "none": ("jpeg, augment=none", "imagefolder:" + folder +
                 ",augment=none,mean=0.5,std=0.5", None),
        "augmented": ("jpeg, augmented", "imagefolder:" + folder +
                      ",mean=0.5,std=0.5", None),
    }
    results = [train(build, args.work, *runs[key], args.seed)
               for key in args.runs.split(",")]
    print(f"ResNet-18 64x64, 1 stage, 4 x 16, one epoch of "
          f"{args.train_count} samples, {args.test_count} test images, "
          f"seed {args.seed}:")
    print(f"  {'data':20} {'test accuracy':>18} {'step ms':>8} "
          f"{'load wait ms':>12} {'final loss':>10}")
    for r in results:
        print(f"  {r['name']:20} {r['accuracy']:8.4f} ({r['hits']:>9}) "
              f"{r['step_ms']:8.1f} {r['load_wait_ms']:12.2f} "
              f"{r['final_loss']:10.4f}")
    print(load())


if __name__ == "__main__":
    main()
