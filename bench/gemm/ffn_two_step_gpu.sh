#!/usr/bin/env bash
# On an H100: the gated FFN in one kernel (ffn_gated/swiglu, ktune's kernels) against the best two-step path the
# issue names, one cuBLAS GEMM over [Wg; Wu] (N = 2 I, search_spaces/linear_cublas_gemm.yaml) followed by ktune's
# SwiGLU kernel on its [M, 2 I] output (glu/swiglu_cat), all tuned into one database with ktune's method. bf16, every
# default M of the FFN space at each (I, K) of FFN_IK:
#   M <= SMALL_M_MAX: every kernel of ffn_gated_swiglu, exhaustively (7 to 43 configurations a problem);
#   larger M: the wgmma_tma kernel over the tile shapes of FFN_CONFIGS (exhaustive within them);
#   cuBLAS at N = 2 I and glu/swiglu_cat at (M, I): exhaustively (its loads_first kernel at M <= 16 only).
# Prints per problem the best of each and two-step time / ffn time (> 1: the one kernel is faster). Fails (exit 1)
# if any ktune configuration is invalid_result or failed (bench/measurements_ok.py).
#   bench/gemm/ffn_two_step_gpu.sh                 # ktune in build-gpu/, everything under ${OUT:-/tmp/out}/ffn_two_step/
#   M_VALUES="2048 8192" FFN_IK="14336x4096" bench/gemm/ffn_two_step_gpu.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ktune=${KTUNE:-$root/build-gpu/ktune}
[ -x "$ktune" ] || { echo "ffn_two_step: $ktune not found: build ktune in build-gpu/ first" >&2; exit 1; }
out=${OUT:-/tmp/out}/ffn_two_step
mkdir -p "$out"
db=$out/ktune.db
m_values=${M_VALUES:-1 16 64 256 2048 8192}
ffn_ik=${FFN_IK:-14336x4096 8192x3072}
small_m_max=${SMALL_M_MAX:-64}
ffn_configs=${FFN_CONFIGS:-"MT=1,BN=128,GROUP_M=8 MT=2,BN=64,GROUP_M=8 MT=1,BN=64,GROUP_M=8"}
export KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache}
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true

# shellcheck source=bench/gemm/tune_run.sh
source "$root/bench/gemm/tune_run.sh"  # run TAG SPACE [ktune tune flags...]

small=() large=() gemm=() glu_decode=() glu=()
for m in $m_values; do
  for ik in $ffn_ik; do
    i=${ik%x*} k=${ik#*x}
    if [ "$m" -le "$small_m_max" ]; then small+=(--problem "M=$m,I=$i,K=$k"); else large+=(--problem "M=$m,I=$i,K=$k"); fi
    gemm+=(--shape "M=$m,N=$((2 * i)),K=$k")
    # glu's loads_first kernel takes M <= 16 only: larger M tune its loop kernel alone.
    if [ "$m" -le 16 ]; then glu_decode+=(--shape "M=$m,I=$i"); else glu+=(--shape "M=$m,I=$i"); fi
  done
done
cfg=()
for c in $ffn_configs; do cfg+=(--config "$c"); done
[ ${#small[@]} = 0 ] || run ffn_small ffn_gated_swiglu "${small[@]}" --strategy exhaustive
[ ${#large[@]} = 0 ] || run ffn_large ffn_gated_swiglu --kernel wgmma_tma "${large[@]}" "${cfg[@]}" --strategy exhaustive
run cublas linear_cublas_gemm "${gemm[@]}" --strategy exhaustive
[ ${#glu_decode[@]} = 0 ] || run glu_decode glu_swiglu_cat "${glu_decode[@]}" --strategy exhaustive
[ ${#glu[@]} = 0 ] || run glu glu_swiglu_cat --kernel loop "${glu[@]}" --strategy exhaustive
echo "tuning: $((SECONDS - start)) s"

python3 - "$out" <<'PY' | tee "$out/summary.md" || failed=1
import json, os, sys
out = sys.argv[1]

def best(tag):
    path = f"{out}/tune-{tag}.json"
    if not os.path.exists(path) or not open(path).read().strip():
        return {}
    s = json.load(open(path))
    found = {}
    for summary in s if isinstance(s, list) else [s]:
        for p in summary.get("problems", []):
            b = p.get("best")
            if b:
                kv = dict(x.split("=") for x in p["problem"].split(":")[-1].split(","))
                key, entry = tuple(sorted(kv.items())), (b["rank_us"], b["config"], b.get("kernel", ""))
                if key not in found or entry[0] < found[key][0]:  # the fastest of every kernel's summary
                    found[key] = entry
    return found

ffn = {**best("ffn_small"), **best("ffn_large")}
gemm, glu = best("cublas"), {**best("glu_decode"), **best("glu")}
print("| M | I | K | ffn_gated (us, TFLOP/s) | its kernel | cuBLAS GEMM N = 2I | SwiGLU (glu/swiglu_cat) | two-step | two-step / ffn |")
print("|---|---|---|---|---|---|---|---|---|")
for key in sorted(ffn, key=lambda k: (int(dict(k)["I"]), int(dict(k)["M"]))):
    d = dict(key)
    M, I, K = int(d["M"]), int(d["I"]), int(d["K"])
    us, cfg, alt = ffn[key]
    g = gemm.get(tuple(sorted({"M": str(M), "N": str(2 * I), "K": str(K)}.items())))
    s = glu.get(tuple(sorted({"M": str(M), "I": str(I)}.items())))
    two = g[0] + s[0] if g and s else None
    print(f"| {M} | {I} | {K} | {us:.1f} ({4 * M * I * K / us / 1e6:.0f}) | {alt} {cfg} | "
          f"{g[0] if g else float('nan'):.1f} | {s[0] if s else float('nan'):.1f} | "
          f"{two or float('nan'):.1f} | {two / us if two else float('nan'):.3f} |")
PY
"$root/bench/measurements_ok.py" "$db" --wrong-results-only linear/fwd || failed=1
echo "ffn_two_step: $((SECONDS - start)) s, results in $out"
[ "$failed" = 0 ] || { echo "ffn_two_step: FAILED (see above)" >&2; exit 1; }
