#!/usr/bin/env bash
# On a GPU host: ktune's tuned GEMM + activation (or gated FFN) and PyTorch's peers timed by one harness. Builds
# ktune_torch's op library from a tuned database (scripts/build_torch_ops.sh: the exported headers, compiled ahead of
# time with nvcc), then times ktune_torch.ops.linear_act beside F.linear + the activation, torch._addmm_activation
# (GELU: cuBLASLt's epilogue) and torch.compile (OP=gemm_act), or ktune_torch.ops.ffn_gated beside F.linear over
# [Wg; Wu] + ktune's SwiGLU kernel (the issue's two-step path), the same with PyTorch's silu and product, and
# torch.compile (OP=ffn_gated), in one Python process with ktune's method (bench/peers/gemm_peers.py --ktune-torch:
# cold L2, a sleep kernel hiding the launches, events, p50), and prints each peer over ktune's time, and cuBLAS's
# GEMM alone (x W^T, no bias or activation; the FFN's over [Wg; Wu]) over ktune's time: the issue's "at least 0.97x
# of cuBLAS's GEMM alone". The worker's
# times and the peers' come from different harnesses, which differ by several percent on power-limited products
# (docs/performance.md, tag s27g); this compares the kernels with everything else equal.
#   OUT=/tmp/o bench/gemm/gemm_same_harness.sh DB
#   OP=ffn_gated OUT=/tmp/o bench/gemm/gemm_same_harness.sh DB
# Env: OP (gemm_act, default, or ffn_gated), VARIANT (default gelu; ffn_gated: swiglu), M, N (gemm_act) or I
# (ffn_gated), K (lists; default "2048 8192", "4096 14336" or "14336", "4096"), COMPILE_M (the M at which
# torch.compile max-autotune is timed, default 2048; "" for none), SAMPLES (default 60), KTUNE (default
# build-gpu/ktune). Writes $OUT/gemm_same_harness/ (the library, peers.json, peers.md). Fails when ktune's op is
# missing from the library, failed, or missed its fp32 reference.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
db=${1:?usage: gemm_same_harness.sh DB (a database holding gemm_act results)}
dir=${OUT:-/tmp/out}/gemm_same_harness
mkdir -p "$dir"
op=${OP:-gemm_act}
case $op in
  gemm_act) variant=${VARIANT:-gelu} cols=(--axis "N=$(echo "${N:-4096 14336}" | tr ' ' ',')") ;;
  ffn_gated) variant=${VARIANT:-swiglu} cols=(--axis "I=$(echo "${I:-14336}" | tr ' ' ',')") ;;
  *) echo "gemm_same_harness: OP is gemm_act or ffn_gated, not $op" >&2; exit 2 ;;
esac
csv() { echo "$1" | tr ' ' ','; }
"$root/scripts/build_torch_ops.sh" --db "$db" --ktune "${KTUNE:-$root/build-gpu/ktune}" --out "$dir/lib" \
  > "$dir/build.log" 2>&1 || { tail -20 "$dir/build.log"; exit 1; }
[ -f "$dir/lib/include/ktune_tuned_${op}_$variant.hpp" ] ||
  { echo "gemm_same_harness: no $op/$variant results in $db" >&2; exit 1; }
impls=ktune_torch,eager,gemm_alone
[ "$op/$variant" = gemm_act/gelu ] && impls=$impls,addmm_gelu
[ "$op/$variant" = ffn_gated/swiglu ] && impls=$impls,two_step
compile=()
if [ -n "${COMPILE_M-2048}" ]; then
  impls=$impls,compile
  compile=(--compile-axis "M=$(csv "${COMPILE_M-2048}")")
fi
KTUNE_TORCH_LIB=$dir/lib/libktune_torch_ops.so python3 "$root/bench/peers/gemm_peers.py" --ktune-torch \
  --out "$dir/peers.json" --ops "$op/$variant" --impls "$impls" --axis "M=$(csv "${M:-2048 8192}")" \
  "${cols[@]}" --axis "K=$(csv "${K:-4096}")" "${compile[@]}" --samples "${SAMPLES:-60}" \
  --cupti-samples 0 --time-budget 120 --no-gelu-probe > "$dir/peers.log" 2>&1 || { tail -20 "$dir/peers.log"; exit 1; }
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
peers = json.load(open(f"{d}/peers.json"))
failures = json.load(open(f"{d}/peers.failures.json"))
t = {}
for r in peers["results"]:
    if r.get("method", peers.get("method")) == "cold_l2_events":
        t.setdefault(",".join(f"{k}={v}" for k, v in r["shape"].items()), {})[r["impl"]] = r["p50_us"]
# cuBLAS's GEMM alone is the yardstick, not a peer: ktune's throughput relative to it in a column of its own.
alone = "cublas_gemm_alone"
impls = sorted({i for v in t.values() for i in v if i not in ("ktune_torch", alone)})
print("| problem | ktune_torch us | " + " | ".join(f"{i} us" for i in impls) + f" | best peer / ktune | {alone} us"
      " | GEMM alone / ktune |")
print("|---|---|" + "---|" * (len(impls) + 3))
for problem, v in t.items():
    ours = v.get("ktune_torch")
    theirs = [v[i] for i in impls if i in v]
    ratio = f"{min(theirs) / ours:.2f}x" if ours and theirs else "-"
    yard = f"{v[alone]:.1f} | {v[alone] / ours:.3f}x" if ours and alone in v else "- | -"
    print(f"| {problem} | {'-' if ours is None else f'{ours:.1f}'} | "
          + " | ".join(f"{v[i]:.1f}" if i in v else "-" for i in impls) + f" | {ratio} | {yard} |")
print("Event p50s (us) of one harness and process; best peer / ktune > 1: ktune faster; GEMM alone / ktune: ktune's "
      "throughput relative to cuBLAS's x W^T without bias or activation (the FFN's over [Wg; Wu]).")
bad = [f for f in failures.get("failures", []) if f["impl"] == "ktune_torch"]
bad += [c for c in failures.get("checks", []) if c["impl"] == "ktune_torch"]
for f in failures.get("failures", []) + failures.get("checks", []):
    print(f"{f['impl']} {f['shape']}: {f.get('error', f.get('relative_error'))}")
sys.exit(1 if bad or not any("ktune_torch" in v for v in t.values()) else 0)
PY
