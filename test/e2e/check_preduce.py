#!/usr/bin/env python3
"""Compares two dpc run metrics files of a replicated stage: an all-reduce
run and a partial-reduce run (--reduce preduce) of the same build.

  check_preduce.py same ALLREDUCE PREDUCE
      every step's loss is the same float
  check_preduce.py straggler ALLREDUCE PREDUCE
      rank 0 (replica 0) waits in the median step less than half of what
      it waits under the all-reduce; some round applies replica 1's gradient of the
      step before (a late gradient in a later round) and none an older one
      (staleness at most 1); the last round takes every replica
  check_preduce.py epoch ALLREDUCE PREDUCE [ALLREDUCE PREDUCE ...]
      one pair per seed: the test accuracies are within 1 point on
      average over the pairs (one epoch's accuracy varies by 1-2 points
      from seed to seed, so a single pair cannot tell), and in every pair
      the partial reduce trains at least 1.1 times the samples a second
      (samples trained over the training time)
Prints one line per check, "ok" or what is wrong.
"""
import json
import statistics
import sys


def steps(path):
    with open(path) as f:
        return [r for r in map(json.loads, f) if "loss" in r and "step" in r]


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def epoch(pairs):
    diffs, slow = [], []
    for allreduce, preduce in pairs:
        a, p = records(allreduce), records(preduce)
        acc = [[r["eval_accuracy"] for r in x if "eval_accuracy" in r][-1]
               for x in (a, p)]
        last = [[r for r in x if "step" in r][-1] for x in (a, p)]
        trained = [last[0]["samples"],
                   [r["trained_samples"] for r in p
                    if "trained_samples" in r][0]]
        rate = [n / r["time_s"] for n, r in zip(trained, last)]
        diffs.append(acc[1] - acc[0])
        if rate[1] < 1.1 * rate[0]:
            slow.append(preduce)
        print(f"{preduce}: allreduce {acc[0]:.4f} at {rate[0]:.0f} samples/s, "
              f"preduce {acc[1]:.4f} at {rate[1]:.0f} ({rate[1] / rate[0]:.2f}x)")
    mean = sum(diffs) / len(diffs)
    print(f"accuracy: {'ok' if abs(mean) <= 0.01 else 'off'} "
          f"(preduce - allreduce {100 * mean:+.2f} points on average over "
          f"{len(diffs)}, {100 * min(diffs):+.2f} to {100 * max(diffs):+.2f})")
    print("throughput: ok" if not slow else
          f"throughput: below 1.1x in {', '.join(slow)}")


def main():
    mode = sys.argv[1]
    if mode == "epoch":
        files = sys.argv[2:]
        epoch(list(zip(files[0::2], files[1::2])))
        return
    allreduce, preduce = sys.argv[2:4]
    a, p = steps(allreduce), steps(preduce)
    if len(a) != len(p) or not a:
        print(f"step counts differ: {len(a)} and {len(p)}")
        return
    if mode == "same":
        diff = [r["step"] for r, q in zip(a, p) if r["loss"] != q["loss"]]
        print("losses: ok" if not diff else f"losses differ at steps {diff}")
        return
    # The median step's wait, after the first (which pays for warm-up): on
    # a loaded machine a rank descheduled for a time slice lengthens a few
    # steps' waits by milliseconds, which would move a mean of 60 steps by
    # as much as the effect measured here; the median step is the typical.
    wait_a = statistics.median(r["wait_ms"][0] for r in a[1:])
    wait_p = statistics.median(r["wait_ms"][0] for r in p[1:])
    print("wait: ok" if wait_p < wait_a / 2 else
          f"wait: replica 0 waits {wait_p:.2f} ms in the median step with "
          f"preduce, {wait_a:.2f} ms with allreduce")
    late = [r["step"] for r in p
            if r["reduced_steps"][1] == r["step"] - 2]  # steps count from 1
    stale = [r["step"] for r in p
             if 0 <= r["reduced_steps"][1] < r["step"] - 2]
    print("late gradients: ok" if late and not stale else
          f"late gradients: rounds {late[:5]}, too stale {stale[:5]}")
    last = p[-1]["reduced_steps"]
    print("last round: ok" if min(last) >= 0 else f"last round: {last}")


if __name__ == "__main__":
    main()
