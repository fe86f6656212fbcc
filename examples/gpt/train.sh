#!/bin/sh
# The text example: a GPT-like decoder exported from PyTorch, compiled into 4
# pipeline stages, trained for a few minutes on the quotes of Debian's
# `fortunes` package and exported back to ONNX with its trained weights.
#
#   examples/gpt/train.sh [OUT_DIR]      (default /tmp/dpc-gpt)
#
# Environment: TEXT (default /usr/share/games/fortunes/cookie), EPOCHS
# (default 8), STAGES (default 4), DPC (default build/bin/dpc, else dpc on
# PATH). Needs `apt-get install fortunes` and a built dpc.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-/tmp/dpc-gpt}
text=${TEXT:-/usr/share/games/fortunes/cookie}
epochs=${EPOCHS:-8}
stages=${STAGES:-4}
dpc=${DPC:-$repo/build/bin/dpc}
[ -x "$dpc" ] || dpc=$(command -v dpc || true)
if [ -z "$dpc" ]; then
  echo "train.sh: no dpc; build it first (scripts/build)" >&2
  exit 2
fi
if [ ! -f "$text" ]; then
  echo "train.sh: no $text; install the quotes with 'apt-get install fortunes'" >&2
  exit 2
fi
mkdir -p "$out"

echo "== export: a GPT-like decoder, 64 tokens, 4 layers of width 64"
/usr/bin/python3 "$here/export.py" "$out/gpt.onnx" --batch 8 2>/dev/null

echo "== dpc compile --stages $stages"
"$dpc" compile "$out/gpt.onnx" -o "$out/gpt" --stages "$stages" \
  --microbatches 8 --schedule 1f1b --optimizer adam --lr 0.003 >/dev/null

echo "== dpc run --data text:$text,stride=32 --epochs $epochs"
rm -f "$out/metrics.jsonl"
started=$(date +%s)
"$dpc" run "$out/gpt" --data "text:$text,stride=32" --epochs "$epochs" \
  --metrics "$out/metrics.jsonl" --checkpoint-dir "$out/ckpt"
seconds=$(($(date +%s) - started))

echo "== dpc export"
"$dpc" export "$out/gpt" --checkpoint "$out/ckpt" -o "$out/trained.onnx"

/usr/bin/python3 - "$out/metrics.jsonl" "$seconds" <<'PY'
import json, os, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
first, last = steps[0], steps[-1]
tokens = last["samples"] * 64
print(f"loss {first['loss']:.3f} (step 1) -> {last['loss']:.3f} "
      f"(step {last['step']}); {tokens} tokens in {last['time_s']:.0f} s of "
      f"training, {tokens / last['time_s']:.0f} tokens/s ({sys.argv[2]} s "
      f"with launch and evaluation); load average {os.getloadavg()[0]:.2f}")
PY
