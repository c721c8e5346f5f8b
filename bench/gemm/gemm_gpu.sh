#!/usr/bin/env bash
# On an H100: the warp-specialized Hopper GEMMs (alternative wgmma_ws, kernels/gemm/gemm_wgmma_ws.cuh) against
# ktune's cuBLAS baseline, all in one database with ktune's method. bf16 at M {256, 2048, 8192} x (N, K)
# {(14336, 4096), (4096, 4096)}:
#   1. cuBLAS alone (search_spaces/linear_cublas_gemm.yaml, exhaustive: cublasGemmEx and cuBLASLt's ranks 1..8);
#   2. gemm_act_gelu, alternatives wgmma_ws (cp.async producer) and wgmma_tma (TMA producer), the configurations of
#      WS_CONFIGS (exhaustive within them);
#   3. gemm_act_gelu, alternative wgmma (the validated kernel), its best configuration of the first H100 run;
#   4. ffn_gated_swiglu, wgmma_ws and wgmma_tma at M {256, 2048, 8192}, I 14336, K 4096 (FFN_WS_CONFIGS), and
#      wgmma's best;
#   5. gemm_act_gelu, alternative skinny (linear_skinny's decode kernel, M <= 64) at M {16, 64} (SKINNY_M; cuBLAS
#      there too), a random sample of SKINNY_BUDGET configurations per problem.
# Prints per problem the best of each and the ratio cuBLAS time / ktune time (>= 1: ktune faster; for the gated FFN
# against two cuBLAS GEMMs of N = I, i.e. cuBLAS on [Wg; Wu] without the SwiGLU). Fails (exit 1) if any ktune
# configuration is invalid_result or failed to compile / launch, listing each with ktune's message
# (bench/measurements_ok.py).
#   bench/gemm/gemm_gpu.sh                      # ktune in build-gpu/, everything under ${OUT:-/tmp/out}/gemm_gpu/
#   M_VALUES="2048" WS_CONFIGS="MT=1,BN=256" bench/gemm/gemm_gpu.sh
#   SPACES_OLD=0 ...                            # skip the old wgmma kernel's reference points
#   PRODUCERS=tma ...                           # the TMA producer's kernel alone (default: ws tma)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ktune=${KTUNE:-$root/build-gpu/ktune}
[ -x "$ktune" ] || { echo "gemm_gpu: $ktune not found: build ktune in build-gpu/ first" >&2; exit 1; }
out=${OUT:-/tmp/out}/gemm_gpu
mkdir -p "$out"
db=$out/ktune.db
m_values=${M_VALUES:-256 2048 8192}
nk_pairs=${NK_PAIRS:-14336x4096 4096x4096}
ffn_ik=${FFN_IK:-14336x4096}
time_limit=${TIME:-60}
# Tile shapes of the recipe (128 x 256, 256 x 128, 128 x 128, 128 x 192), every stage count that fits, GROUP_M 8
# (16 too for the two largest tiles), 128 x 64 for the small M: 17 configurations (gelu), 11 (ffn); ~0.3 s a
# measurement.
ws_configs=${WS_CONFIGS:-"MT=1,BN=256,GROUP_M=8 MT=2,BN=128,GROUP_M=8 MT=1,BN=128,GROUP_M=8 MT=1,BN=192,GROUP_M=8
  MT=1,BN=256,GROUP_M=16 MT=2,BN=128,GROUP_M=16 MT=1,BN=64,STAGES=4,GROUP_M=8"}
ffn_ws_configs=${FFN_WS_CONFIGS:-"MT=1,BN=128,GROUP_M=8 MT=2,BN=64,GROUP_M=8 MT=1,BN=64,GROUP_M=8 MT=1,BN=128,GROUP_M=16"}
old_gemm=${OLD_GEMM_CONFIG:-"WG=2,MT=1,BN=128,STAGES=6,GROUP_M=8"}
old_ffn=${OLD_FFN_CONFIG:-"WG=2,MT=1,BN=128,STAGES=3,GROUP_M=16"}
export KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-$out/cache}
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true

skinny_m=${SKINNY_M-16 64}
gemm_filters=() ffn_filters=() skinny_filters=()
for m in $skinny_m; do
  for nk in $nk_pairs; do skinny_filters+=(--problem "M=$m,N=${nk%x*},K=${nk#*x}"); done
done
for m in $m_values; do
  for nk in $nk_pairs; do gemm_filters+=(--problem "M=$m,N=${nk%x*},K=${nk#*x}"); done
  for ik in $ffn_ik; do ffn_filters+=(--problem "M=$m,I=${ik%x*},K=${ik#*x}"); done
done
cfg_flags() { for c in $1; do printf -- '--config\n%s\n' "$c"; done; }

# shellcheck source=bench/gemm/tune_run.sh
source "$root/bench/gemm/tune_run.sh"  # run TAG SPACE [ktune tune flags...]

run cublas linear_cublas_gemm "${gemm_filters[@]}" "${skinny_filters[@]}" --strategy exhaustive
mapfile -t ws_flags < <(cfg_flags "$ws_configs")
mapfile -t ffn_flags < <(cfg_flags "$ffn_ws_configs")
for producer in ${PRODUCERS:-ws tma}; do
  run "gelu_$producer" gemm_act_gelu --kernel "wgmma_$producer" "${gemm_filters[@]}" "${ws_flags[@]}" \
    --strategy exhaustive --time "$time_limit"
  run "ffn_$producer" ffn_gated_swiglu --kernel "wgmma_$producer" "${ffn_filters[@]}" "${ffn_flags[@]}" \
    --strategy exhaustive --time "$time_limit"
done
if [ "${SPACES_OLD:-1}" = 1 ]; then
  run gelu_old gemm_act_gelu --kernel wgmma "${gemm_filters[@]}" --config "$old_gemm" --strategy exhaustive
  run ffn_old ffn_gated_swiglu --kernel wgmma "${ffn_filters[@]}" --config "$old_ffn" --strategy exhaustive
fi
if [ -n "$skinny_m" ]; then
  run gelu_skinny gemm_act_gelu --kernel skinny "${skinny_filters[@]}" --strategy random --budget "${SKINNY_BUDGET:-16}" \
    --time "$time_limit"
fi
echo "tuning: $((SECONDS - start)) s"

python3 - "$out" <<'PY' || failed=1
import json, os, sys
out = sys.argv[1]

def load(tag):
    path = f"{out}/tune-{tag}.json"
    if not os.path.exists(path) or not open(path).read().strip():
        return []
    s = json.load(open(path))
    return s if isinstance(s, list) else [s]

def shape(key):
    kv = dict(p.split("=") for p in key.split(":")[-1].split(",") if "=" in p)
    return int(kv["M"]), int(kv.get("N", kv.get("I", 0))), int(kv["K"])

best = {}  # (tag, (M, N, K)) -> (us, config)
for tag in ["cublas", "gelu_ws", "gelu_tma", "ffn_ws", "ffn_tma", "gelu_old", "ffn_old", "gelu_skinny"]:
    for s in load(tag):
        for p in s.get("problems", []):
            b = p.get("best")
            if b:
                us = b.get("rank_us", b.get("p50_us"))
                best[(tag, shape(p["problem"]))] = (us, b["config"])

def row(label, tag, mnk, flops, cublas_us, n="N"):
    problem = f"M={mnk[0]},{n}={mnk[1]},K={mnk[2]}"
    if (tag, mnk) not in best:
        return f"| {label} | {problem} | - | - | - | (not measured) |"
    us, cfg = best[(tag, mnk)]
    ratio = f"{cublas_us / us:.3f}" if cublas_us else "-"
    return f"| {label} | {problem} | {us:.1f} | {flops / us / 1e6:.0f} | {ratio} | {cfg} |"

print("\n| kernel | problem | best us | TFLOP/s | cuBLAS us / ktune us | config |")
print("|---|---|---|---|---|---|")
for mnk in sorted({k[1] for k in best if k[0] == "cublas"}, key=lambda t: (t[1], t[0])):
    M, N, K = mnk
    cb = best[("cublas", mnk)][0]
    print(f"| cuBLAS GEMM | M={M},N={N},K={K} | {cb:.1f} | {2 * M * N * K / cb / 1e6:.0f} | 1 | {best[('cublas', mnk)][1]} |")
    if M <= 64:
        print(row("gelu skinny", "gelu_skinny", mnk, 2 * M * N * K, cb))
        continue
    print(row("gelu wgmma_ws", "gelu_ws", mnk, 2 * M * N * K, cb))
    print(row("gelu wgmma_tma", "gelu_tma", mnk, 2 * M * N * K, cb))
    print(row("gelu wgmma (old)", "gelu_old", mnk, 2 * M * N * K, cb))
for mnk in sorted({k[1] for k in best if k[0] in ("ffn_ws", "ffn_tma", "ffn_old")}):
    M, I, K = mnk
    cb = best.get(("cublas", mnk))
    cb2 = 2 * cb[0] if cb else None  # [Wg; Wu] as one GEMM of 2I columns costs about two of I
    print(f"| cuBLAS 2 x GEMM(N=I) | M={M},I={I},K={K} | {cb2 or float('nan'):.1f} | - | 1 | (no SwiGLU) |")
    print(row("swiglu wgmma_ws", "ffn_ws", mnk, 4 * M * I * K, cb2, "I"))
    print(row("swiglu wgmma_tma", "ffn_tma", mnk, 4 * M * I * K, cb2, "I"))
    print(row("swiglu wgmma (old)", "ffn_old", mnk, 4 * M * I * K, cb2, "I"))
PY
# Every ktune kernel measurement that is not ok; for cuBLAS only wrong results (a rank past cuBLASLt's offer is a
# launch error by design).
"$root/bench/measurements_ok.py" "$db" --wrong-results-only linear/fwd || failed=1
echo "gemm_gpu: $((SECONDS - start)) s, results in $out"
[ "$failed" = 0 ] || { echo "gemm_gpu: FAILED (see above)" >&2; exit 1; }
