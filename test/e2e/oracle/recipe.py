"""The training recipe on PyTorch's side: dpc run's --lr-schedule text as
PyTorch's own schedulers (torch.optim.lr_scheduler) give it, and AdamW's
parameter groups for --no-decay.

The schedule's learning rates come from stepping PyTorch's schedulers on a
throw-away optimizer, one scheduler per phase, each started at the phase's
first update as SequentialLR starts them; dpc's closed forms
(lib/runtime/LrSchedule.cpp) are not used here, so a disagreement shows.
"""
import fnmatch

import torch


def _phases(text):
    for part in text.split("+"):
        kind, _, rest = part.partition(":")
        params = dict(item.split("=", 1) for item in rest.split(",") if item)
        yield kind, params


def _scheduler(kind, p, optimizer):
    """PyTorch's scheduler for one phase (dpc's defaults where dpc's text
    leaves a parameter out)."""
    sched = torch.optim.lr_scheduler
    steps = int(p["steps"]) if "steps" in p else None
    if kind == "constant":
        factor = float(p.get("factor", 1))
        return sched.LambdaLR(optimizer, lambda t: factor)
    if kind == "warmup" and float(p.get("start", 0)) == 0:
        # LinearLR refuses a start factor of 0; this is the warm-up of
        # transformers' get_linear_schedule_with_warmup.
        return sched.LambdaLR(optimizer, lambda t: min(t, steps) / steps)
    if kind in ("linear", "warmup"):
        start = float(p.get("start", 1 / 3 if kind == "linear" else 0))
        end = float(p.get("end", 1)) if kind == "linear" else 1.0
        return sched.LinearLR(optimizer, start_factor=start, end_factor=end,
                              total_iters=steps)
    if kind == "cosine":
        return sched.CosineAnnealingLR(optimizer, T_max=steps,
                                       eta_min=float(p.get("min", 0)))
    if kind == "step":
        return sched.StepLR(optimizer, step_size=int(p["every"]),
                            gamma=float(p.get("gamma", 0.1)))
    if kind == "exponential":
        return sched.ExponentialLR(optimizer, gamma=float(p["gamma"]))
    if kind == "onecycle":
        return sched.OneCycleLR(
            optimizer, max_lr=float(p["max"]), total_steps=steps,
            pct_start=float(p.get("pct", 0.3)),
            anneal_strategy=p.get("anneal", "cos"),
            div_factor=float(p.get("div", 25)),
            final_div_factor=float(p.get("final-div", 1e4)),
            cycle_momentum=False)
    raise SystemExit(f"recipe: unknown schedule {kind!r}")


def learning_rates(text, base, updates):
    """The learning rate of each of `updates` optimizer updates."""
    rates = []
    phases = list(_phases(text)) if text else [("constant", {})]
    for index, (kind, params) in enumerate(phases):
        last = index == len(phases) - 1
        length = updates - len(rates) if last else int(params["steps"])
        holder = torch.nn.Parameter(torch.zeros(1))
        optimizer = torch.optim.SGD([holder], lr=base)
        scheduler = _scheduler(kind, params, optimizer)
        for _ in range(min(length, updates - len(rates))):
            rates.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
    return rates


def run_options(settings):
    """dpc run's options for the oracle optimizer settings' schedule and
    clipping."""
    options = []
    if settings.get("lr_schedule"):
        options += ["--lr-schedule", settings["lr_schedule"]]
    if settings.get("clip_grad_norm"):
        options += ["--clip-grad-norm", str(settings["clip_grad_norm"])]
    return options


def parameter_groups(model, settings):
    """The model's parameters, those matching `no_decay`'s globs in a group
    without weight decay (as GPT and BERT recipes leave out biases and
    norms)."""
    patterns = [p for p in settings.get("no_decay", "").split(",") if p]
    if not patterns:
        return model.parameters()
    decayed, undecayed = [], []
    for name, param in model.named_parameters():
        matched = any(fnmatch.fnmatchcase(name, p) for p in patterns)
        (undecayed if matched else decayed).append(param)
    return [{"params": decayed},
            {"params": undecayed, "weight_decay": 0.0}]
