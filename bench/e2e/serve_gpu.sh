#!/usr/bin/env bash
# On the GPU host: the served-generation benchmark of issue 26 (bench/e2e/serve.py): an HTTP generate service over the
# Llama-3.2-3B-shaped model, torch.compile baseline against ktune (+ CUDA graph), at concurrency 1, 8, 32.
#   OUT=/tmp/out bench/e2e/serve_gpu.sh     after bench/e2e/decode_gpu.sh (reuses its op library)
# Knobs: KTUNE_TORCH_LIB (default $OUT/decode/lib/libktune_torch_ops.so), SECONDS_PER_RUN (10), CONCURRENCY ("1 8 32"),
# SLOTS (8), PROMPT (512), NEW_TOKENS (32). Everything under $OUT/serve/; ~3-4 minutes (the baseline's compilation is
# one to two of them).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/out}/serve
mkdir -p "$out"
export KTUNE_TORCH_LIB=${KTUNE_TORCH_LIB:-${OUT:-/tmp/out}/decode/lib/libktune_torch_ops.so}
[ -f "$KTUNE_TORCH_LIB" ] || { echo "serve_gpu: no op library at $KTUNE_TORCH_LIB (run decode_gpu.sh first)" >&2; exit 1; }
nvidia-smi -L > /dev/null 2>&1 || { echo "serve_gpu: no NVIDIA GPU here" >&2; exit 3; }
start=$SECONDS
echo "=== serve ($(date -u +%H:%M:%S)), library $KTUNE_TORCH_LIB"
status=0
# shellcheck disable=SC2086  # CONCURRENCY is a list
timeout --signal=INT --kill-after=15 "${TIMEOUT:-330}" python3 "$root/bench/e2e/serve.py" \
  --concurrency ${CONCURRENCY:-1 8 32} --seconds "${SECONDS_PER_RUN:-10}" --slots "${SLOTS:-8}" \
  --prompt "${PROMPT:-512}" --new-tokens "${NEW_TOKENS:-32}" --json "$out/serve.json" > "$out/serve.txt" 2>&1 || status=$?
{ grep -vE "Warning|warnings.warn|return fn" "$out/serve.txt" || true; } | tail -40
echo "serve_gpu: $((SECONDS - start)) s; results in $out/"
((status == 0)) || { echo "serve_gpu: serve.py failed (exit $status; $out/serve.txt)" >&2; exit 1; }
