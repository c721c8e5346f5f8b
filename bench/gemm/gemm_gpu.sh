#!/usr/bin/env bash
# On an H100: tunes the Hopper wgmma GEMMs (kernels/gemm/gemm_wgmma.cuh) in bf16 with a random sample of their
# spaces, checks that no configuration failed validation, and prints per problem the best time, TFLOP/s, the
# validation counts and (torch present) cuBLAS's time for the plain GEMM (torch.nn.functional.linear, CUDA events,
# warm L2: an indication, not ktune's method).
#   bench/gemm/gemm_gpu.sh                        # ktune in build-gpu/, everything under ${OUT:-/tmp/out}/gemm_gpu/
#   BUDGET=24 TIME=120 bench/gemm/gemm_gpu.sh     # more configurations per problem, seconds per space
#   PROBLEMS="M=2048,N=4096,K=4096" FFN_PROBLEMS="M=2048,I=14336,K=4096" SPACES="gemm_act_gelu ffn_gated_swiglu" ...
# Fails (exit 1) if any measured configuration is invalid_result (the kernel's output differs from the reference),
# listing each with ktune's message: that is where the indexing is wrong.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ktune=${KTUNE:-$root/build-gpu/ktune}
out=${OUT:-/tmp/out}/gemm_gpu
mkdir -p "$out"
db=$out/ktune.db
budget=${BUDGET:-10}
time_limit=${TIME:-40}
spaces=${SPACES:-"gemm_act_gelu ffn_gated_swiglu gemm_act_none gemm_act_silu"}
gemm_problems=${PROBLEMS:-"M=256,N=14336,K=4096 M=2048,N=14336,K=4096 M=8192,N=14336,K=4096 M=256,N=4096,K=4096 M=2048,N=4096,K=4096 M=8192,N=4096,K=4096"}
# none and silu share the kernel with gelu (only the epilogue differs): two problems each keep the run short.
small_problems=${SMALL_PROBLEMS:-"M=2048,N=14336,K=4096 M=8192,N=4096,K=4096"}
ffn_problems=${FFN_PROBLEMS:-"M=256,I=14336,K=4096 M=2048,I=14336,K=4096 M=8192,I=14336,K=4096 M=2048,I=8192,K=3072"}

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
for space in $spaces; do
  case $space in
    ffn_gated_*) problems=$ffn_problems ;;
    gemm_act_gelu) problems=$gemm_problems ;;
    *) problems=$small_problems ;;
  esac
  filters=()
  for p in $problems; do filters+=(--problem "$p"); done
  t0=$SECONDS
  rc=0
  "$ktune" --root "$root" --db "$db" --cache-dir "$out/cache" tune "$space" --dtype bf16 "${filters[@]}" \
    --strategy random --budget "$budget" --time "$time_limit" --quiet --json > "$out/tune-$space.json" \
    2> "$out/tune-$space.log" || rc=$?
  echo "$space: $((SECONDS - t0)) s, rc $rc"
  [ "$rc" = 0 ] || { tail -20 "$out/tune-$space.log"; }
done

python3 - "$out" "$db" $spaces <<'PY'
import json, sqlite3, sys
out, db, spaces = sys.argv[1], sys.argv[2], sys.argv[3:]
con = sqlite3.connect(db)
rows, failures = [], []
for space in spaces:
    try:
        summary = json.load(open(f"{out}/tune-{space}.json"))
    except Exception as e:  # the tune failed before printing its summary
        failures.append(f"{space}: no summary ({e}); see {out}/tune-{space}.log")
        continue
    for p in summary.get("problems", []):
        key = p["problem"]
        counts = dict(con.execute(
            "SELECT m.status, COUNT(*) FROM measurements m JOIN problems pr ON pr.id = m.problem_id "
            "JOIN kernels k ON k.id = m.kernel_id WHERE pr.key = ? AND k.op || '_' || k.variant = ? GROUP BY m.status",
            (key, space)).fetchall())
        for cfg, msg in con.execute(
                "SELECT c.key, m.message FROM measurements m JOIN problems pr ON pr.id = m.problem_id "
                "JOIN configurations c ON c.id = m.configuration_id JOIN kernels k ON k.id = m.kernel_id "
                "WHERE pr.key = ? AND k.op || '_' || k.variant = ? AND m.status NOT IN ('ok', 'compiled')",
                (key, space)):
            failures.append(f"{space} {key} {cfg}: {msg[:300]}")
        best = p.get("best")
        shape = dict(kv.split("=") for kv in key.split(":")[-1].split(",") if "=" in kv)
        M, K = int(shape.get("M", 0)), int(shape.get("K", 0))
        N = int(shape.get("N", shape.get("I", 0)))
        flops = 2 * M * N * K * (2 if space.startswith("ffn_gated") else 1)
        us = best.get("rank_us", best.get("p50_us")) if best else None
        rows.append((space, key, us, flops / us / 1e6 if us else None, best["config"] if best else "-",
                     " ".join(f"{k} {v}" for k, v in sorted(counts.items())), (M, N, K)))

cublas = {}
try:
    import torch
    for (M, N, K) in sorted({r[6] for r in rows}):
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.05
        for _ in range(5): torch.nn.functional.linear(x, w)
        ts = []
        for _ in range(30):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); torch.nn.functional.linear(x, w); b.record(); b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
        cublas[(M, N, K)] = sorted(ts)[len(ts) // 2]
except Exception as e:
    print(f"(no cuBLAS comparison: {e})")

print("\n| space | problem | best us | TFLOP/s | cuBLAS GEMM us (x W^T, N cols) | statuses | config |")
print("|---|---|---|---|---|---|---|")
for space, key, us, tf, cfg, counts, mnk in rows:
    cb = cublas.get(mnk)
    cb_text = "-" if cb is None else (f"{cb:.1f} (x2 for ffn: {2 * cb:.1f})" if space.startswith("ffn") else f"{cb:.1f}")
    print(f"| {space} | {key} | {us:.1f} | {tf:.0f} | {cb_text} | {counts} | {cfg} |" if us else
          f"| {space} | {key} | - | - | {cb_text} | {counts} | - |")
if failures:
    print(f"\nFAILED: {len(failures)} configurations did not validate or run:")
    for f in failures[:40]: print("  " + f)
    sys.exit(1)
print("\nall measured configurations validated")
PY
