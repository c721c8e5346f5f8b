#!/usr/bin/env bash
# On the GPU host (a working tree that carries .gpu-deps/, scripts/gpu-deps.sh): builds ktune, then tunes ktune's
# largest spaces exhaustively from a cold compile cache into one database, the ground truth that `ktune replay --op`
# replays strategies against (docs/search.md). Each space's wall time is printed; the database comes back gzipped.
#   OUT=/tmp/o SPACES="softmax decode_attention linear_int8 linear_int4" bench/search/exhaustive_gpu.sh
#   OUT=/tmp/o SPACES=gemm_act_gelu TUNE_ARGS="--gpus all --dtype bf16" bench/search/exhaustive_gpu.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/out}; mkdir -p "$out"
spaces=${SPACES:-softmax decode_attention linear_int8 linear_int4}
read -r -a tune_args <<< "${TUNE_ARGS:-}"  # more `ktune tune` options: --gpus all, --dtype bf16
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
t0=$SECONDS
cmake -S "$root" -B "$root/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$root/.gpu-deps/usr" \
  -DKTUNE_BUILD_BENCH=OFF > "$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
cmake --build "$root/build-gpu" -j "$(nproc)" --target ktune ktune-worker > "$out/build.log" 2>&1 ||
  { grep -m5 -A5 error "$out/build.log"; exit 1; }
echo "built in $((SECONDS - t0)) s"
k="$root/build-gpu/ktune"
db=$out/exhaustive.db
for s in $spaces; do
  t=$SECONDS
  KTUNE_CACHE_DIR=/tmp/ktune-cold-$s "$k" --db "$db" tune "$s" --strategy exhaustive "${tune_args[@]}" --quiet --json \
    >> "$out/summaries.jsonl" 2>> "$out/tune.log"
  echo "$s: exit $?, $((SECONDS - t)) s wall (cold compile cache)" | tee -a "$out/tune.log"
done
gzip -f "$db" && ls -la "$db.gz"
