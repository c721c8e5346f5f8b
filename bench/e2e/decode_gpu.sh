#!/usr/bin/env bash
# On the GPU host: the decode-step benchmark of issue 26 (bench/e2e/decode.py) with ktune's kernels from a database.
#   KTUNE_DB=results/tuned.db OUT=/tmp/out bench/e2e/decode_gpu.sh   use that database (tuned at the model's shapes)
#   OUT=/tmp/out bench/e2e/decode_gpu.sh                             tune the ops quickly at the model's shapes first
# Knobs: BUDGET (configurations per problem when tuning, default 8), BATCH ("1 8"), STEPS (128), PROMPT (512),
# MODES (eager,compile,ktune,ktune+graph), WEIGHTS (bf16,int4).
# Assumes ktune built in build-gpu/ (the lead's command in docs); builds the op library from the database with nvcc
# (scripts/build_torch_ops.sh), runs decode.py and prints its Markdown table. Everything under $OUT/decode/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/out}/decode
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache} KTUNE_ROOT=$root
k=$root/build-gpu/ktune
[ -x "$k" ] || { echo "decode_gpu: $k not built" >&2; exit 1; }
nvidia-smi -L > /dev/null 2>&1 || { echo "decode_gpu: no NVIDIA GPU here" >&2; exit 3; }
start=$SECONDS
prompt=${PROMPT:-512} steps=${STEPS:-128}
len=$((prompt + steps + 1))  # the StaticCache capacity decode.py allocates

db=${KTUNE_DB:-}
if [ -z "$db" ]; then
  db=$out/decode.db
  # Llama-3.2-3B: hidden 3072, intermediate 8192, 24 q heads, 8 kv heads, head dim 128, RoPE cache 131072 rows.
  # Decode rows are the batch (1, 8); prefill rows prompt * batch (512, 4096).
  quick=(--dtype bf16 --strategy random --budget "${BUDGET:-8}" --min-samples 6 --max-samples 40 --quiet)
  # tune SPACE ARGS...: SPACE a file stem under search_spaces/, or a path (without .yaml) from the repository root
  tune() {
    local space=$1 name; shift; name=$(basename "$space"); [[ $space == */* ]] || space=search_spaces/$space
    "$k" --db "$db" tune "$root/$space.yaml" "${quick[@]}" "$@" > "$out/tune_$name.log" 2>&1 ||
      { tail -5 "$out/tune_$name.log"; echo "decode_gpu: tuning $name failed" >&2; exit 1; }
  }
  echo "=== tune at the model's shapes ($(date -u +%H:%M:%S))"
  shapes() { local fmt=$1; for m in 1 8 512 4096; do printf -- "--shape %s " "${fmt//@/$m}"; done; }
  # shellcheck disable=SC2046  # the shapes are words
  tune rmsnorm $(shapes "M=@,H=3072,S=3072")
  # the fused residual add + RMSNorm at Llama 3's eps (1e-5: EPS_E9=10000), ktune_torch's op declared as data
  # shellcheck disable=SC2046
  tune python/ktune_torch/spaces/add_rmsnorm_eps $(shapes "M=@,H=3072,S=3072,EPS_E9=10000")
  # shellcheck disable=SC2046
  tune glu_swiglu $(shapes "M=@,I=8192,S=16384,SO=8192")  # the halves of the fused gate_up projection
  # shellcheck disable=SC2046
  tune rope_neox $(shapes "M=@,HQ=24,HK=8,D=128,R=128,P=131072,SQ=5120,SK=5120")  # q, k: rows of the qkv output
  tune decode_attention --shape "B=1,L=$len,HQ=24,HK=8,D=128,U=1" --shape "B=8,L=$len,HQ=24,HK=8,D=128,U=1"
  lin=()
  # patch_model's fused projections: qkv (3072 + 2 x 1024 rows), o, gate_up (2 x 8192), down
  for m in 1 8; do for nk in "5120 3072" "3072 3072" "16384 3072" "3072 8192"; do
    set -- $nk; lin+=(--shape "M=$m,N=$1,K=$2,G=128"); done; done
  tune linear_int4 "${lin[@]}"
  echo "tuned in $((SECONDS - start)) s: $db"
fi

echo "=== build the op library ($(date -u +%H:%M:%S))"
"$root/scripts/build_torch_ops.sh" --db "$db" --ktune "$k" --out "$out/lib" | tee "$out/build.log"
export KTUNE_TORCH_LIB=$out/lib/libktune_torch_ops.so

echo "=== GPU op tests ($(date -u +%H:%M:%S))"
if python3 -c "import pytest" 2>/dev/null; then
  if ! KTUNE_TORCH_PYTHON=python3 "$root/tests/python_torch/run.sh" gpu > "$out/gpu_tests.txt" 2>&1; then
    tail -40 "$out/gpu_tests.txt"; echo "decode_gpu: the ktune_torch GPU tests failed ($out/gpu_tests.txt)" >&2; exit 1
  fi
  tail -3 "$out/gpu_tests.txt"
else
  echo "no pytest here: tests/python_torch/test_ops_gpu.py not run (decode.py still checks outputs against eager)"
fi

echo "=== decode ($(date -u +%H:%M:%S))"
# shellcheck disable=SC2086  # BATCH is a list
python3 "$root/bench/e2e/decode.py" --batch ${BATCH:-1 8} --prompt "$prompt" --steps "$steps" \
  --modes "${MODES:-eager,compile,ktune,ktune+graph}" --weights "${WEIGHTS:-bf16,int4}" --json "$out/decode.json" \
  2>&1 | tee "$out/decode.txt"
echo "decode_gpu: $((SECONDS - start)) s; results in $out/"
