#!/usr/bin/python3
"""Compares the schedule figures of a build without and with --recompute all.

    recompute_figures.py NONE_DIR ALL_DIR

Per stage: whether the stashed bytes per microbatch shrank, and how the
backward time (input and weight halves) grew, as a share of the stage's
forward time: at most all of it (the loss, and ops whose results only
cross to the next stage, are not recomputed). Then whether the simulated step grew and which
stages plan.json marks as recomputed.
"""
import json
import sys


def load(directory, name):
    with open(f"{directory}/{name}") as f:
        return json.load(f)


none_dir, all_dir = sys.argv[1:3]
before = load(none_dir, "schedule.json")["stages"]
after = load(all_dir, "schedule.json")["stages"]
for b, a in zip(before, after):
    stash = "smaller" if a["activation_bytes"] < b["activation_bytes"] else "not smaller"
    grown = (a["backward_input_ms"] + a["backward_weight_ms"]) - (
        b["backward_input_ms"] + b["backward_weight_ms"])
    if 0 < grown <= b["forward_ms"] + 1e-9:
        growth = f"longer by {100 * grown / b['forward_ms']:.0f}% of the forward"
    else:
        growth = f"changed by {grown} ms, forward {b['forward_ms']} ms"
    print(f"stage {b['id']}: stash {stash}, backward {growth}")
step = lambda d: load(d, "plan.json")["predicted"]["simulated_step_ms"]
print("simulated step", "longer" if step(all_dir) > step(none_dir) else "not longer")
print("plan marks", [s.get("recompute", False) for s in load(all_dir, "plan.json")["stages"]])
