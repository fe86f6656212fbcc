#!/bin/sh
# The text example trained twice for the same number of steps, to compare
# the transformer recipe with the example's constant learning rate:
#
#   constant  Adam, lr 0.003 throughout (what train.sh does);
#   recipe    AdamW, weight decay 0.1 except on biases, norms and the
#             position table, lr 0.003 after a linear warm-up over 50
#             updates, then cosine decay to 3e-4, gradients clipped to a
#             global norm of 1.0 (docs/TRAINING.md).
#
# Both evaluate on the held-out 10% every EVAL_EVERY steps and draw their
# curves into OUT_DIR/curves.svg (dpc-schedule curves).
#
#   examples/gpt/recipe.sh [OUT_DIR]      (default /tmp/dpc-gpt-recipe)
#
# Environment as train.sh's: TEXT, STAGES (default 4), DPC; STEPS (default
# 856, train.sh's 8 epochs of the default text), EVAL_EVERY (default 107,
# an epoch of it).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-/tmp/dpc-gpt-recipe}
text=${TEXT:-/usr/share/games/fortunes/cookie}
steps=${STEPS:-856}
stages=${STAGES:-4}
every=${EVAL_EVERY:-107}
dpc=${DPC:-$repo/build/bin/dpc}
[ -x "$dpc" ] || dpc=$(command -v dpc || true)
if [ -z "$dpc" ]; then
  echo "recipe.sh: no dpc; build it first (scripts/build)" >&2
  exit 2
fi
curves=$(dirname "$dpc")/dpc-schedule
[ -x "$curves" ] || curves=dpc-schedule
if [ ! -f "$text" ]; then
  echo "recipe.sh: no $text; install the quotes with 'apt-get install fortunes'" >&2
  exit 2
fi
mkdir -p "$out"
/usr/bin/python3 "$here/export.py" "$out/gpt.onnx" --batch 8 2>/dev/null

common="--stages $stages --microbatches 8 --schedule 1f1b --lr 0.003"
# shellcheck disable=SC2086
"$dpc" compile "$out/gpt.onnx" -o "$out/constant" $common --optimizer adam \
  >/dev/null
# shellcheck disable=SC2086
"$dpc" compile "$out/gpt.onnx" -o "$out/recipe" $common --optimizer adamw \
  --weight-decay 0.1 --no-decay '*.bias,*ln*,pos' >/dev/null

data="text:$text,stride=32"
for run in constant recipe; do
  extra=""
  if [ "$run" = recipe ]; then
    extra="--lr-schedule warmup:steps=50+cosine:steps=$((steps - 50)),min=3e-4
      --clip-grad-norm 1.0"
  fi
  echo "== $run"
  rm -f "$out/$run.jsonl"
  # shellcheck disable=SC2086
  "$dpc" run "$out/$run" --data "$data" --steps "$steps" \
    --eval-every "$every" --metrics "$out/$run.jsonl" $extra |
    grep -E '^(eval after|training|test accuracy)'
done
"$curves" curves "$out/constant.jsonl,$out/recipe.jsonl" --svg "$out/curves.svg"

/usr/bin/python3 - "$out/constant.jsonl" "$out/recipe.jsonl" <<'PY'
import json, os, sys
for path in sys.argv[1:]:
    evals = [json.loads(l) for l in open(path) if '"eval_step"' in l]
    last = evals[-1]
    print(f"{os.path.basename(path)[:-6]:9s} validation loss after step "
          f"{last['eval_step']}: {last['eval_loss']:.4f} (perplexity "
          f"{last['eval_perplexity']:.3f}); lowest "
          f"{min(e['eval_loss'] for e in evals):.4f}")
print(f"load average {os.getloadavg()[0]:.2f}")
PY
