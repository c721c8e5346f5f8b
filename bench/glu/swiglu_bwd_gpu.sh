#!/usr/bin/env bash
# On an H100: validates and tunes glu/swiglu_bwd (SwiGLU's backward, search_spaces/glu_swiglu_bwd.yaml): every
# configuration in bf16 at M=4096, I=8192 with gate, up and the gradients the halves of [M, 2I] tensors (S 16384, dy
# SO 8192: what ktune_torch's autograd launches for a fused gate_up), a few configurations of each of the space's
# problems in every dtype (M 1, 16, 4096, 32768 x I 8192, 14336; fp32, fp16, bf16), and an odd shape that takes the
# scalar path (I 8191, misaligned strides). Beside it copy/fwd over the same bytes as the main problem (5 M I elements
# moved), the bandwidth a kernel moving them could reach. Then builds the ktune_torch op library from the database and
# runs the op's GPU tests (tests/python_torch/test_ops_gpu.py -k swiglu_backward).
#   OUT=/tmp/out bench/glu/swiglu_bwd_gpu.sh
# Needs build-gpu/ktune (+ ktune-worker), nvcc, python3 with torch and pytest for the last step (skipped without).
# Writes ${OUT:-/tmp/out}/swiglu_bwd/ (database, logs); about 90 s. Fails on any configuration that does not validate
# and on a failed GPU test.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/out}/swiglu_bwd
rm -rf "$out" && mkdir -p "$out"
k() { "$root/build-gpu/ktune" --root "$root" --db "$out/ktune.db" --cache-dir "$out/cache" "$@"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
space=search_spaces/glu_swiglu_bwd.yaml

echo "== glu_swiglu_bwd: M=4096 I=8192, halves of [M, 2I] (S 16384, SO 8192), bf16, every configuration"
k tune "$space" --dtype bf16 --strategy exhaustive --time 20 --quiet --shape M=4096,I=8192,S=16384,SO=8192 \
  > "$out/tune_main.log" 2>&1 || { tail -5 "$out/tune_main.log"; echo "tuning the main shape failed" >&2; exit 1; }
echo "== glu_swiglu_bwd: the space's problems, every dtype, a few configurations each"
k tune "$space" --budget 4 --time 30 --quiet > "$out/tune_space.log" 2>&1 ||
  { tail -5 "$out/tune_space.log"; echo "tuning the space's problems failed" >&2; exit 1; }
echo "== glu_swiglu_bwd: the scalar path (I 8191, odd strides), every dtype, two configurations"
k tune "$space" --budget 2 --time 6 --quiet --shape M=33,I=8191,S=16383,SO=8193 > "$out/tune_odd.log" 2>&1 ||
  { tail -5 "$out/tune_odd.log"; echo "tuning the odd shape failed" >&2; exit 1; }
echo "== copy/fwd over the main problem's bytes (N = 5 * 4096 * 8192 / 2 bf16 elements, copied)"
k tune search_spaces/copy.yaml --dtype bf16 --time 6 --quiet --shape N=83886080 > "$out/tune_copy.log" 2>&1 ||
  { tail -5 "$out/tune_copy.log"; echo "tuning copy failed" >&2; exit 1; }

k best "$space" --json > "$out/best_bwd.json"
k best search_spaces/copy.yaml --json > "$out/best_copy.json"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
copy_us = min((r.get("rank_us", r["p50_us"]) for e in json.load(open(f"{out}/best_copy.json")) for r in e["best"]),
              default=None)
rows = [r for e in json.load(open(f"{out}/best_bwd.json")) for r in e["best"]]
rows.sort(key=lambda r: (r["dtype"], r["shape"].get("I", 0), r["shape"].get("M", 0), r["problem"]))
print("\n| dtype | problem | best us | GB/s | % of copy | configuration |\n| --- | --- | --- | --- | --- | --- |")
for r in rows:
    us = r.get("rank_us", r["p50_us"])
    pct = r.get("pct_of_copy")
    main = r["dtype"] == "bf16" and r["shape"] == {"M": 4096, "I": 8192, "S": 16384, "SO": 8192}
    if main and copy_us:
        pct = 100.0 * copy_us / us  # the same bytes copied
    print(f'| {r["dtype"]} | {r["problem"]} | {us:.2f} | {r.get("gbps") or 0:.0f} | '
          f'{"-" if pct is None else f"{pct:.0f}"}{" (same-size copy)" if main and copy_us else ""} | {r["config"]} |')
if copy_us:
    print(f"\ncopy/fwd of the main problem's 335.5 MB: {copy_us:.2f} us")
PY
"$root/bench/measurements_ok.py" "$out/ktune.db"

echo "== ktune_torch: the op library from this database, then the op's GPU tests"
"$root/bench/torch_ops_gpu_tests.sh" "$out/ktune.db" "$out" "swiglu_backward"
