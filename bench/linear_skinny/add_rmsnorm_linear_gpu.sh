#!/usr/bin/env bash
# On an H100: validates and tunes linear_skinny/fwd_add_rmsnorm (residual add + RMSNorm fused into the skinny
# projection after it, search_spaces/linear_skinny_add_rmsnorm.yaml) in bf16 at Llama-3.2-3B's decode shapes: the
# fused qkv (N 5120) and gate/up (16384) projections of K 3072 at M 1 and 8, eps 1e-5; plus fp16 and shapes off the
# fast path (K % 8 != 0: the element path and the prologue's scalar loop; a partial last chunk; odd N; M 13 across
# two row blocks) with a few configurations. Beside it, the unfused pair at the same shapes:
# python/ktune_torch/spaces/add_rmsnorm_eps.yaml (M, H 3072, EPS_E9 10000) and linear_skinny/fwd. Prints per shape the
# fused kernel's best against the pair's sum (add + RMSNorm best + linear best), by CUPTI kernel time and by events.
# Then builds the ktune_torch op library from the database and runs the op's GPU tests (test_ops_gpu.py -k
# "add_rms_norm_linear or skinny").
#   OUT=/tmp/out bench/linear_skinny/add_rmsnorm_linear_gpu.sh
# Needs build-gpu/ktune (+ ktune-worker), nvcc, python3 with torch and pytest for the last step (skipped without).
# Writes ${OUT:-/tmp/out}/add_rmsnorm_linear/ (database, logs); about 3 minutes. Fails on any configuration that does
# not validate and on a failed GPU test.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/out}/add_rmsnorm_linear
rm -rf "$out" && mkdir -p "$out"
k() { "$root/build-gpu/ktune" --root "$root" --db "$out/ktune.db" --cache-dir "$out/cache" "$@"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
ms=(1 8)
nks=(5120,3072 16384,3072)
fused=() skinny=() norm=()
for m in "${ms[@]}"; do
  norm+=(--shape "M=$m,H=3072,EPS_E9=10000")
  for nk in "${nks[@]}"; do
    fused+=(--shape "M=$m,N=${nk%,*},K=${nk#*,},EPS_E9=10000")
    skinny+=(--shape "M=$m,N=${nk%,*},K=${nk#*,}")
  done
done

echo "== linear_skinny/fwd_add_rmsnorm: decode shapes, bf16"
k tune "$root/search_spaces/linear_skinny_add_rmsnorm.yaml" --dtype bf16 --time 60 --quiet "${fused[@]}" > "$out/tune.log" 2>&1 ||
  { tail -5 "$out/tune.log"; echo "tuning linear_skinny_add_rmsnorm failed" >&2; exit 1; }
echo "== linear_skinny/fwd_add_rmsnorm: fp16, other paths (K 3076: element path; K 3080: partial chunk; odd N, M 13)"
k tune "$root/search_spaces/linear_skinny_add_rmsnorm.yaml" --dtype fp16 --dtype bf16 --budget 6 --time 15 --quiet \
  --shape M=3,N=1000,K=3076,EPS_E9=10000 --shape M=13,N=5120,K=3072,EPS_E9=10000 \
  --shape M=1,N=1000,K=3080,EPS_E9=1000 > "$out/tune_paths.log" 2>&1 ||
  { tail -5 "$out/tune_paths.log"; echo "tuning the other paths failed" >&2; exit 1; }
echo "== the unfused pair at the decode shapes: add_rmsnorm_eps (ktune_torch's op) and linear_skinny"
k tune "$root/python/ktune_torch/spaces/add_rmsnorm_eps.yaml" --dtype bf16 --time 15 --quiet "${norm[@]}" \
  > "$out/tune_norm.log" 2>&1 || { tail -5 "$out/tune_norm.log"; echo "tuning add_rmsnorm_eps failed" >&2; exit 1; }
k tune "$root/search_spaces/linear_skinny.yaml" --dtype bf16 --time 40 --quiet "${skinny[@]}" > "$out/tune_skinny.log" 2>&1 ||
  { tail -5 "$out/tune_skinny.log"; echo "tuning linear_skinny failed" >&2; exit 1; }

k best "$root/search_spaces/linear_skinny_add_rmsnorm.yaml" --json > "$out/best_fused.json"
k best "$root/python/ktune_torch/spaces/add_rmsnorm_eps.yaml" --json > "$out/best_norm.json"
k best "$root/search_spaces/linear_skinny.yaml" --json > "$out/best_skinny.json"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]


def best(name):
    """(dtype, shape items) -> the best row of `ktune best --json`."""
    rows = {}
    for e in json.load(open(f"{out}/best_{name}.json")):
        for r in e["best"]:
            rows[(r["dtype"], tuple(sorted(r["shape"].items())))] = r
    return rows


fused, norm, skinny = best("fused"), best("norm"), best("skinny")


def find(rows, dtype, **shape):
    for (d, s), r in rows.items():
        if d == dtype and all(dict(s).get(a) == v for a, v in shape.items()):
            return r
    return None


def us(r, key):
    v = r.get(key) if r else None
    return v if v else float("nan")


print("\n| M | N | K | fused CUPTI us | add+norm + linear CUPTI us | fused events us | pair events us | fused config |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for m in (1, 8):
    for n, k in ((5120, 3072), (16384, 3072)):
        f = find(fused, "bf16", M=m, N=n, K=k, EPS_E9=10000)
        a = find(norm, "bf16", M=m, H=k, EPS_E9=10000)
        l = find(skinny, "bf16", M=m, N=n, K=k)
        pair_k = us(a, "kernel_us") + us(l, "kernel_us")
        pair_e = us(a, "p50_us") + us(l, "p50_us")
        print(f'| {m} | {n} | {k} | {us(f, "kernel_us"):.2f} | {pair_k:.2f} ({us(a, "kernel_us"):.2f} + '
              f'{us(l, "kernel_us"):.2f}) | {us(f, "p50_us"):.2f} | {pair_e:.2f} ({us(a, "p50_us"):.2f} + '
              f'{us(l, "p50_us"):.2f}) | {f["config"] if f else "-"} |')
PY
"$root/bench/measurements_ok.py" "$out/ktune.db"

echo "== ktune_torch: the op library from this database, then the GPU tests of the fused op and the skinny linear"
"$root/bench/torch_ops_gpu_tests.sh" "$out/ktune.db" "$out" "add_rms_norm_linear or skinny"
