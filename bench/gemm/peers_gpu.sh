#!/usr/bin/env bash
# On a GPU host: the baselines of ktune's GEMM ops, measured with ktune's method. (1) cuBLAS alone
# (search_spaces/linear_cublas_gemm*.yaml: cublasGemmEx and cuBLASLt's heuristic ranks 1..8) and cuBLASLt with the
# bias / bias+GELU epilogue (gemm_act_{none,gelu}_cublaslt*.yaml), tuned exhaustively by build-gpu/ktune into one
# database and validated against the reference kernels; (2) PyTorch's peers by bench/peers/gemm_peers.py (F.linear +
# a separate activation, torch._addmm_activation, the gated FFN's two-step path, SDPA's backends at the attention
# problems; torch.compile max-autotune at one problem per op), written as a peer file `ktune import-peers` reads and
# imported into the same database. Prints Markdown tables; exits non-zero when a configuration fails validation.
# About 3 minutes on an H100 with the defaults (not yet run: the times are estimates).
#
#   OUT=/tmp/out bench/gemm/peers_gpu.sh
#   PEERS_M="2048 8192" PEERS_NK="14336x4096 4096x14336" bench/gemm/peers_gpu.sh   # other GEMM problems
#   COMPILE=0 ...            skip torch.compile (its max-autotune compile takes ~20-60 s a problem)
#   ATTENTION_AXES="--axis D=128,64"   the attention problems (gemm_peers.py --axis filters; default D 128, L 2048 and
#                                      8192: (B, S) (1, 2048), (4, 2048), (1, 8192), causal and full)
# Needs: ktune built in build-gpu/ (ktune and ktune-worker), python3 with PyTorch (2.11) and Triton.
# Writes under $OUT/peers_gpu/: ktune.db, tune-*.json / .log, gemm_peers.json (+ .failures.json, .md), summary.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/out}/peers_gpu
mkdir -p "$out"
ktune=${KTUNE:-$root/build-gpu/ktune}
[ -x "$ktune" ] || { echo "peers_gpu: $ktune not found: build ktune in build-gpu/ first" >&2; exit 1; }
m_values=${PEERS_M:-256 2048 8192}
nk_pairs=${PEERS_NK:-14336x4096 4096x4096}
attention_axes=${ATTENTION_AXES:---axis D=128 --axis L=2048,8192}
export PYTHONUNBUFFERED=1 KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache}
k() { "$ktune" --root "$root" --db "$out/ktune.db" "$@"; }
start=$SECONDS
echo "=== peers_gpu ($(date -u +%H:%M:%S)): M {$m_values} x (N, K) {$nk_pairs}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader || true

# ---- (1) cuBLAS / cuBLASLt through ktune's library launcher ----------------------------------------------------
failed=0
for family in linear_cublas_gemm gemm_act_none_cublaslt gemm_act_gelu_cublaslt; do
  for nk in $nk_pairs; do
    n=${nk%x*} kk=${nk#*x}
    space=$family; [ "$kk" = 14336 ] && space=${family}_k14336
    filters=()
    for m in $m_values; do filters+=(--problem "M=$m,N=$n,K=$kk"); done
    tag=$space-N$n
    t0=$SECONDS
    if ! k tune "$root/search_spaces/$space.yaml" --dtype bf16 "${filters[@]}" --strategy exhaustive --json --quiet \
        > "$out/tune-$tag.json" 2> "$out/tune-$tag.log"; then
      echo "peers_gpu: ktune tune $space failed ($out/tune-$tag.log):" >&2
      tail -5 "$out/tune-$tag.log" >&2
      failed=1
      continue
    fi
    echo "$tag: $((SECONDS - t0)) s"
  done
done

python3 - "$out" <<'PY' | tee "$out/summary.md" || failed=1
import glob, json, os, sys
out = sys.argv[1]
rows, invalid = [], []
for path in sorted(glob.glob(f"{out}/tune-*.json")):
    tag = os.path.basename(path)[5:-5]
    text = open(path).read().strip()
    if not text:
        continue
    summaries = json.loads(text)
    for s in summaries if isinstance(summaries, list) else [summaries]:
        bad = s.get("status_counts", {}).get("invalid_result", 0)
        if bad:
            invalid.append(f"{tag}: {bad} configurations failed validation")
        for p in s.get("problems", []):
            b = p.get("best")
            shape = dict(kv.split("=") for kv in p["problem"].split(":")[1].split(","))
            flops = 2 * int(shape["M"]) * int(shape["N"]) * int(shape["K"])
            if b:
                rows.append((tag, p["problem"], b["config"], b["p50_us"], flops / (b["p50_us"] * 1e-6) / 1e12,
                             p["failed"], p["measured"]))
            else:
                rows.append((tag, p["problem"], "none valid", float("nan"), float("nan"), p["failed"], p["measured"]))
print("| space | problem | best config | p50 us | TFLOP/s | failed / measured |")
print("| --- | --- | --- | ---: | ---: | ---: |")
for tag, prob, cfg, p50, tf, fail, meas in rows:
    print(f"| {tag} | {prob} | {cfg} | {p50:.2f} | {tf:.1f} | {fail} / {meas} |")
for line in invalid:
    print(f"\nVALIDATION FAILED {line}")
sys.exit(3 if invalid else 0)
PY
echo "ktune part: $((SECONDS - start)) s"

# ---- (2) PyTorch's peers, same method ------------------------------------------------------------------------------
m_csv=$(echo "$m_values" | tr ' ' ',')
n_csv=$(for nk in $nk_pairs; do echo "${nk%x*}"; done | sort -u | paste -sd,)
k_csv=$(for nk in $nk_pairs; do echo "${nk#*x}"; done | sort -u | paste -sd,)
peers=$out/gemm_peers.json
# shellcheck disable=SC2086  # ATTENTION_AXES is a list of flags
python3 "$root/bench/peers/gemm_peers.py" --out "$peers" --axis "M=$m_csv" --axis "N=$n_csv" --axis "K=$k_csv" \
  $attention_axes --impls eager,addmm_gelu,sdpa,sdpa_cudnn,sdpa_flash,sdpa_efficient --samples 30 \
  --cupti-samples 10 --time-budget "${PEERS_TIME_BUDGET:-75}" > "$out/gemm_peers.log" 2>&1 ||
  { echo "peers_gpu: gemm_peers.py failed or ran out of time ($out/gemm_peers.log):"; tail -5 "$out/gemm_peers.log"; }
if [ "${COMPILE:-1}" = 1 ]; then
  # torch.compile (max-autotune, no CUDA graphs: the sleep kernel already hides the launches) at one problem per op:
  # each problem autotunes its GEMM templates, ~20-60 s.
  python3 "$root/bench/peers/gemm_peers.py" --out "$peers" --merge --ops gemm_act/gelu,ffn_gated/swiglu \
    --impls eager,compile --axis M=2048 --axis N=14336 --axis I=14336 --samples 30 --cupti-samples 0 \
    --time-budget "${COMPILE_TIME_BUDGET:-60}" --no-gelu-probe > "$out/gemm_peers_compile.log" 2>&1 ||
    { echo "peers_gpu: the torch.compile run failed ($out/gemm_peers_compile.log):"; tail -5 "$out/gemm_peers_compile.log"; }
fi
grep -m1 "cuBLASLt's GELU epilogue" "$out/gemm_peers.log" || true
[ -f "$peers" ] && cat "${peers%.json}.md"
[ -f "$peers" ] && k import-peers "$peers" > "$out/import.log" 2>&1 && echo "peers imported into $out/ktune.db"

echo "=== peers_gpu done in $((SECONDS - start)) s ($(date -u +%H:%M:%S)): $out"
[ "$failed" = 0 ] || { echo "peers_gpu: FAILED (validation or ktune errors above)" >&2; exit 1; }
