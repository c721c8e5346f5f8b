#!/usr/bin/env bash
# On an H100: validates and tunes linear_skinny/fwd_swiglu (SwiGLU fused into the skinny down projection,
# search_spaces/linear_skinny_swiglu.yaml) in bf16 at the decode shapes patch_model uses it for: Llama-3.2-3B's down
# projection (N 3072, K 8192) at M 1, 8 and Llama-3-8B's (4096, 14336) at M 1, 16; plus fp16 and shapes off the fast
# path (K % 8 != 0: the element path; N, M not multiples of the tiles) with a few configurations. Beside it, the
# unfused pair at the same shapes: glu/swiglu (halves in place, row stride 2K) and linear_skinny/fwd. Then builds the
# ktune_torch op library from the database and runs the op's GPU tests (test_ops_gpu.py -k "swiglu or skinny").
#   OUT=/tmp/out bench/linear_skinny/swiglu_linear_gpu.sh
# Needs build-gpu/ktune (+ ktune-worker), nvcc, python3 with torch and pytest for the last step (skipped without).
# Writes ${OUT:-/tmp/out}/swiglu_linear/ (database, logs); about 3 minutes. Fails on any configuration that does not
# validate and on a failed GPU test.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/out}/swiglu_linear
rm -rf "$out" && mkdir -p "$out"
k() { "$root/build-gpu/ktune" --root "$root" --db "$out/ktune.db" --cache-dir "$out/cache" "$@"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
shapes=(--shape M=1,N=3072,K=8192 --shape M=8,N=3072,K=8192 --shape M=1,N=4096,K=14336 --shape M=16,N=4096,K=14336)

echo "== linear_skinny/fwd_swiglu: decode shapes, bf16"
k tune search_spaces/linear_skinny_swiglu.yaml --dtype bf16 --time 80 --quiet "${shapes[@]}" > "$out/tune.log" 2>&1 ||
  { tail -5 "$out/tune.log"; echo "tuning linear_skinny_swiglu failed" >&2; exit 1; }
echo "== linear_skinny/fwd_swiglu: fp16, other paths (K 8196: element path; K 4104: partial chunk; odd N, M)"
k tune search_spaces/linear_skinny_swiglu.yaml --dtype fp16 --dtype bf16 --budget 6 --time 20 --quiet \
  --shape M=3,N=1000,K=8196 --shape M=13,N=3072,K=8192 --shape M=1,N=1000,K=4104 > "$out/tune_paths.log" 2>&1 ||
  { tail -5 "$out/tune_paths.log"; echo "tuning the other paths failed" >&2; exit 1; }
echo "== the unfused pair at the decode shapes: glu_swiglu (in place, row stride 2K) and linear_skinny"
k tune search_spaces/glu_swiglu.yaml --dtype bf16 --time 20 --quiet --shape M=1,I=8192,S=16384,SO=8192 \
  --shape M=8,I=8192,S=16384,SO=8192 --shape M=1,I=14336,S=28672,SO=14336 --shape M=16,I=14336,S=28672,SO=14336 \
  > "$out/tune_glu.log" 2>&1 || { tail -5 "$out/tune_glu.log"; echo "tuning glu_swiglu failed" >&2; exit 1; }
k tune search_spaces/linear_skinny.yaml --dtype bf16 --time 40 --quiet "${shapes[@]}" > "$out/tune_skinny.log" 2>&1 ||
  { tail -5 "$out/tune_skinny.log"; echo "tuning linear_skinny failed" >&2; exit 1; }

for s in linear_skinny_swiglu glu_swiglu linear_skinny; do k best "search_spaces/$s.yaml" --json > "$out/best_$s.json"; done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print("\n| op | problem | best us | GB/s | configuration |\n| --- | --- | --- | --- | --- |")
for name in ("linear_skinny_swiglu", "glu_swiglu", "linear_skinny"):
    for e in json.load(open(f"{out}/best_{name}.json")):
        for r in e["best"]:
            print(f'| {name} | {r["problem"]} | {r.get("rank_us", r["p50_us"]):.2f} | '
                  f'{r.get("gbps") or 0:.0f} | {r["config"]} |')
PY
"$root/bench/measurements_ok.py" "$out/ktune.db"

echo "== ktune_torch: the op library from this database, then the GPU tests of the fused op and the skinny linear"
"$root/bench/torch_ops_gpu_tests.sh" "$out/ktune.db" "$out" "swiglu or skinny"
