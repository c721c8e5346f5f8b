#!/usr/bin/env bash
# On an H100: validates and tunes rope/neox_cache (a decode step's RoPE + KV-cache write in one kernel,
# search_spaces/rope_neox_cache.yaml) in bf16: the space's decode problems, Llama-3.2-3B's decode shapes as
# bench/e2e/decode_gpu.sh tunes them (q, k, v rows of the fused qkv output, token stride 5120), and shapes that take the
# kernel's other paths (partial rotary; odd token strides: the element path). Beside it, rope/neox (RoPE alone, in
# place) at the same decode shapes: the fused kernel replaces it plus two index_copy_ launches a layer. Then builds the
# ktune_torch op library from the database and runs the op's GPU tests (tests/python_torch/test_ops_gpu.py -k rope).
#   OUT=/tmp/out bench/rope/rope_cache_gpu.sh
# Needs build-gpu/ktune (+ ktune-worker), nvcc, python3 with torch and pytest for the last step (skipped without).
# Writes ${OUT:-/tmp/out}/rope_cache/ (database, logs); about 2-3 minutes. Fails on any configuration that does not
# validate, fault-free or not, and on a failed GPU test.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/out}/rope_cache
rm -rf "$out" && mkdir -p "$out"
k() { "$root/build-gpu/ktune" --root "$root" --db "$out/ktune.db" --cache-dir "$out/cache" "$@"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true

e2e=",HQ=24,HK=8,D=128,R=128,P=131072,L=641,SQ=5120,SK=5120,SV=5120"  # decode.py's StaticCache: 512 + 128 + 1 rows
echo "== rope_neox_cache: the space's bf16 problems (M 1, 8, 16, 64; L 4096), exhaustive"
k tune search_spaces/rope_neox_cache.yaml --dtype bf16 --strategy exhaustive --time 90 --quiet > "$out/tune_space.log" 2>&1 ||
  { tail -5 "$out/tune_space.log"; echo "tuning the space failed" >&2; exit 1; }
echo "== rope_neox_cache: Llama-3.2-3B decode shapes (M 1, 8)"
k tune search_spaces/rope_neox_cache.yaml --dtype bf16 --strategy exhaustive --time 40 --quiet \
  --shape "M=1$e2e" --shape "M=8$e2e" > "$out/tune_e2e.log" 2>&1 ||
  { tail -5 "$out/tune_e2e.log"; echo "tuning the e2e shapes failed" >&2; exit 1; }
echo "== rope_neox_cache: the other paths (partial rotary R = 64; token strides 5121: element path), a few configurations"
k tune search_spaces/rope_neox_cache.yaml --dtype bf16 --dtype fp16 --dtype fp32 --budget 6 --time 30 --quiet \
  --shape "M=3,HQ=24,HK=8,D=128,R=64,P=4096,L=577,SQ=5120,SK=5120,SV=5120" \
  --shape "M=5,HQ=24,HK=8,D=128,R=128,P=4096,L=577,SQ=5121,SK=5121,SV=5121" > "$out/tune_paths.log" 2>&1 ||
  { tail -5 "$out/tune_paths.log"; echo "tuning the other paths failed" >&2; exit 1; }
echo "== rope_neox (RoPE alone) at the same decode shapes, for comparison"
k tune search_spaces/rope_neox.yaml --dtype bf16 --strategy exhaustive --time 30 --quiet \
  --shape "M=1,HQ=24,HK=8,D=128,R=128,P=131072,SQ=5120,SK=5120" \
  --shape "M=8,HQ=24,HK=8,D=128,R=128,P=131072,SQ=5120,SK=5120" > "$out/tune_rope.log" 2>&1 ||
  { tail -5 "$out/tune_rope.log"; echo "tuning rope_neox failed" >&2; exit 1; }

k best search_spaces/rope_neox_cache.yaml --json > "$out/best_cache.json"
k best search_spaces/rope_neox.yaml --json > "$out/best_rope.json"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print("\n| op | problem | best us | GB/s | configuration |\n| --- | --- | --- | --- | --- |")
for name in ("best_rope", "best_cache"):
    for e in json.load(open(f"{out}/{name}.json")):
        for r in e["best"]:
            print(f'| {e.get("variant", "")} | {r["problem"]} | {r.get("rank_us", r["p50_us"]):.2f} | '
                  f'{r.get("gbps") or 0:.0f} | {r["config"]} |')
PY
"$root/bench/measurements_ok.py" "$out/ktune.db"

echo "== ktune_torch: the op library from this database, then the op's GPU tests"
"$root/bench/torch_ops_gpu_tests.sh" "$out/ktune.db" "$out" "rope"
