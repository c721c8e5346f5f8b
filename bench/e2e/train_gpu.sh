#!/usr/bin/env bash
# On the GPU host: the training-step benchmark of issue 26 (bench/e2e/train.py): 4 Llama-3.2-3B-shaped layers, fwd +
# bwd at batch 2 x seq 2048, eager vs torch.compile vs Liger-Kernel vs ktune (ktune_torch.llama.patch_model; eager
# and compiled around it).
#   OUT=/tmp/out bench/e2e/train_gpu.sh     after bench/e2e/decode_gpu.sh (reuses its op library, which it tunes
#                                           rmsnorm/bwd for at these rows)
# Liger-Kernel: its wheel travels in .gpu-deps/wheels (pip download liger-kernel --no-deps -d .gpu-deps/wheels) and is
# installed here into /tmp/liger (no network). Knobs: KTUNE_TORCH_LIB, LAYERS (4), VARIANTS, TRAIN_EXTRA (more train.py
# arguments, e.g. "--profile 16": each variant's costliest kernels). Under $OUT/train/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/out}/train
mkdir -p "$out"
export KTUNE_TORCH_LIB=${KTUNE_TORCH_LIB:-${OUT:-/tmp/out}/decode/lib/libktune_torch_ops.so}
[ -f "$KTUNE_TORCH_LIB" ] || { echo "train_gpu: no op library at $KTUNE_TORCH_LIB (run decode_gpu.sh first)" >&2; exit 1; }
start=$SECONDS
wheel=$(find "$root/.gpu-deps/wheels" -name "liger_kernel*.whl" 2>/dev/null | head -1 || true)
if [ -n "$wheel" ]; then
  pip install --no-index --no-deps --target /tmp/liger "$wheel" > "$out/liger_install.log" 2>&1 ||
    echo "train_gpu: installing $wheel failed ($out/liger_install.log)"
  export PYTHONPATH=/tmp/liger${PYTHONPATH:+:$PYTHONPATH}
else
  echo "train_gpu: no Liger-Kernel wheel in .gpu-deps/wheels: the liger variant will say it failed"
fi
status=0
# shellcheck disable=SC2086  # TRAIN_EXTRA is a list of arguments
timeout --signal=INT --kill-after=15 "${TIMEOUT:-300}" python3 "$root/bench/e2e/train.py" --layers "${LAYERS:-4}" \
  --variants "${VARIANTS:-eager,compile,compile-ro,liger,ktune,ktune+compile,ktune+graph}" ${TRAIN_EXTRA:-} --json "$out/train.json" > "$out/train.txt" 2>&1 || status=$?
{ grep -vE "Warning|warnings.warn" "$out/train.txt" || true; } | tail -30
echo "train_gpu: $((SECONDS - start)) s; results in $out/"
((status == 0)) || { echo "train_gpu: train.py failed (exit $status; $out/train.txt)" >&2; exit 1; }
