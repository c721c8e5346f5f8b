#!/usr/bin/env bash
# On an H100: the dense skinny linear (linear_skinny/fwd, kernels/linear_skinny/) against cuBLAS (linear/fwd through
# ktune's library launcher) at the same problems, tuned into one fresh database with the same measuring method,
# beside the read roofline (copy/read tuned at the weights' byte counts: search_spaces/copy_read.yaml's
# kernel) and the device's copy ceiling (`ktune devices`). Prints per problem: best ktune us, best cuBLAS us, speedup,
# GB/s over the weight bytes (N * K * 2) and % of the read roofline at that byte count (read's time / ktune's), and
# which of the space's kernels won (alternative mma: mma.sync; wgmma: Hopper warpgroup MMA, cp.async stages;
# wgmma_tma: the same fed by TMA), cuBLAS's % of the read roofline and each kernel's own best time.
# Targets: >= 93 % of the read roofline at M <= 16, faster than cuBLAS at every problem.
#   bench/gemm/skinny_gpu.sh                 # bf16; DTYPE=fp16 for the other, KTUNE=path/to/ktune, OUT=/tmp/out
# Writes $OUT/skinny_gpu/ (ktune.db, cubin cache, tune logs, best-*.json, table.md). Fails on a validation failure
# (invalid_result), a kernel that did not compile or launch, or a tune command that failed. About 3 minutes on an
# H100 host with a cold cache; TIME_SKINNY (default 40 s) caps each kernel's tuning of each linear_skinny space,
# BUDGET_MMA (45) the mma kernel's configurations a problem. Also validates linear_skinny_tails.yaml's odd shapes
# (12 random configurations a problem and kernel).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ktune=${KTUNE:-$root/build-gpu/ktune}
dtype=${DTYPE:-bf16}
dir=${OUT:-/tmp/out}/skinny_gpu
rm -rf "$dir" && mkdir -p "$dir"
failed_tunes=()
k() { "$ktune" --root "$root" --db "$dir/ktune.db" --cache-dir "$dir/cache" "$@"; }

echo "=== skinny_gpu: $dtype, $ktune ($(date -u +%H:%M:%S))"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
k devices > "$dir/devices.txt" 2>&1 || { cat "$dir/devices.txt"; exit 1; }
tail -n 3 "$dir/devices.txt"

tune() {  # space, extra arguments; LOG names the log (default: the space)
  local space=$1 log=${LOG:-$1} t0=$SECONDS status=ok
  shift
  k tune "$space" --quiet "$@" > "$dir/tune-$log.log" 2>&1 || { status="failed (rc $?)"; failed_tunes+=("$log"); }
  grep -q "stopped at the --time limit" "$dir/tune-$log.log" && status="$status, stopped at the --time limit"
  echo "$log: $((SECONDS - t0)) s, $status"
  [ "$status" = ok ] || tail -n 5 "$dir/tune-$log.log"
}
# The read roofline at the weights' byte counts (bf16 elements: N * K of 14336 x 4096, 4096 x 4096, 6144 x 4096;
# 4096 x 14336 reads as many bytes as the first), in bf16 whatever DTYPE is: a read does not care.
ex=(--strategy exhaustive)
tune copy_read "${ex[@]}" --dtype bf16 --shape N=58720256 --shape N=16777216 --shape N=25165824
# Each kernel on its own clock (a space's kernels are tuned one after the other under one --time): wgmma and wgmma_tma
# exhaustively (~30-50 configurations a problem), mma by the forest search with the same budget, so that a time limit leaves no
# problem (the M = 32, 64 ones come last) unmeasured by either. BUDGET_MMA=all: mma exhaustively too.
mma_search=(--strategy forest --budget "${BUDGET_MMA:-45}")
[ "${BUDGET_MMA:-}" = all ] && mma_search=("${ex[@]}")
for space in linear_skinny linear_skinny_k14336; do
  LOG=${space}_mma tune "$space" --kernel mma "${mma_search[@]}" --dtype "$dtype" --time "${TIME_SKINNY:-40}"
  for alt in wgmma wgmma_tma; do
    LOG=${space}_$alt tune "$space" --kernel "$alt" "${ex[@]}" --dtype "$dtype" --time "${TIME_SKINNY:-40}"
  done
done
tune linear_cublas_skinny "${ex[@]}" --dtype "$dtype"
tune linear_cublas_skinny_k14336 "${ex[@]}" --dtype "$dtype"
# Validation only: odd shapes (the plain paths, partial chunks and tiles), 12 random configurations a problem of
# each kernel (wgmma: M 17, 33, 63 and the 8-row tile at M 1, 3; wgmma_tma at K = 4136 only: TMA needs K % 8 == 0,
# and a problem without a valid configuration fails a tuning).
tma_shapes=()
for m in 1 3 17 33 63; do tma_shapes+=(--shape "M=$m,N=4100,K=4136"); done
for alt in mma wgmma wgmma_tma; do
  shapes=()
  [ "$alt" = wgmma_tma ] && shapes=("${tma_shapes[@]}")
  LOG=linear_skinny_tails_$alt tune linear_skinny_tails --kernel "$alt" --strategy random --budget 12 --dtype "$dtype" \
    --time 15 "${shapes[@]}"
done

for op in linear_skinny/fwd linear/fwd copy/read; do
  k best "$op" --json > "$dir/best-${op%%/*}.json"
done
# Each kernel's own best: a copy of the database without the other kernels' measurements.
alts=(mma wgmma wgmma_tma)
for alt in "${alts[@]}"; do
  cp "$dir/ktune.db" "$dir/only-$alt.db"
  python3 - "$dir/only-$alt.db" "$alt" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("""delete from measurements where kernel_id in
               (select id from kernels where op = 'linear_skinny' and variant = 'fwd' and alternative != ?)""",
           (sys.argv[2],))
db.commit()
PY
  "$ktune" --root "$root" --db "$dir/only-$alt.db" best linear_skinny/fwd --json > "$dir/best-linear_skinny-$alt.json"
done
python3 - "$dir" "$dtype" <<'PY'
import json, sqlite3, sys
dir, dtype = sys.argv[1], sys.argv[2]
db = sqlite3.connect(f"{dir}/ktune.db")
# Failures: any non-ok measurement of the skinny kernel; a wrong result from cuBLAS (its launch errors are algorithms
# cuBLASLt does not offer at RANK, expected).
bad = db.execute("""select k.op, m.status, count(*) from measurements m join kernels k on k.id = m.kernel_id
                    where m.status != 'ok' and (k.op = 'linear_skinny' or m.status = 'invalid_result')
                    group by 1, 2""").fetchall()
def rows(name):
    return [(e["device"], r) for e in json.load(open(f"{dir}/best-{name}.json")) for r in e["best"]]
# The default problems only (linear_skinny_tails.yaml's odd shapes are there to be validated).
default_nk = {(14336, 4096), (4096, 4096), (6144, 4096), (4096, 14336)}
ours = {(r["shape"]["M"], r["shape"]["N"], r["shape"]["K"]): r for _, r in rows("linear_skinny")
        if r["dtype"] == dtype and (r["shape"]["N"], r["shape"]["K"]) in default_nk}
cublas = {(r["shape"]["M"], r["shape"]["N"], r["shape"]["K"]): r for _, r in rows("linear") if r["dtype"] == dtype}
reads = {r["shape"]["N"]: r for _, r in rows("copy") if r["dtype"] == "bf16"}
alts = ("mma", "wgmma", "wgmma_tma")
per_kernel = {alt: {(r["shape"]["M"], r["shape"]["N"], r["shape"]["K"]): r for _, r in rows(f"linear_skinny-{alt}")
                    if r["dtype"] == dtype} for alt in alts}
devs = [d for d, _ in rows("linear_skinny")]
copy_gbps = devs[0]["copy_gbps"] if devs else 0.0
out = [f"linear_skinny/fwd vs cuBLAS (linear/fwd), {dtype}, {devs[0]['name'] if devs else '?'}; copy ceiling "
       f"{copy_gbps:.0f} GB/s (read + written); read roofline: copy/read at the weights' bytes. Times: rank_us "
       "(kernel time where ranked by it, else event p50).", "",
       "| M | N | K | ktune us | cuBLAS us | speedup | GB/s (W) | read GB/s | % of read | cuBLAS % of read | kernel | "
       "mma us | wgmma us | wgmma_tma us | ktune config |",
       "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
misses = []
for key in sorted(ours, key=lambda k: (k[1], k[2], k[0])):
    m, n, kk = key
    o, c = ours[key], cublas.get(key)
    wbytes = 2.0 * n * kk
    gbps = wbytes / o["rank_us"] / 1e3
    rd = reads.get(n * kk)
    read_gbps = 2.0 * n * kk / rd["rank_us"] / 1e3 if rd else float("nan")
    pct = 100.0 * gbps / read_gbps if rd else float("nan")
    sp = c["rank_us"] / o["rank_us"] if c else float("nan")
    c_pct = 100.0 * rd["rank_us"] / c["rank_us"] if rd and c else float("nan")
    alt_us = [f"{per_kernel[a][key]['rank_us']:.2f}" if key in per_kernel[a] else "-" for a in alts]
    out.append(f"| {m} | {n} | {kk} | {o['rank_us']:.2f} | {c['rank_us'] if c else float('nan'):.2f} | {sp:.3f} | "
               f"{gbps:.0f} | {read_gbps:.0f} | {pct:.1f} | {c_pct:.1f} | {o.get('kernel') or '-'} | "
               f"{' | '.join(alt_us)} | {o['config']} |")
    if not c or sp <= 1.0:
        misses.append(f"M={m} N={n} K={kk}: not faster than cuBLAS ({sp:.3f}x)")
    if m <= 16 and not pct >= 93.0:
        misses.append(f"M={m} N={n} K={kk}: {pct:.1f} % of the read roofline (< 93)")
out.append("")
out.append(f"problems: {len(ours)} ktune, {len(cublas)} cuBLAS, {len(reads)} read sizes")
out += ["target missed: " + s for s in misses] or ["targets met: >= 93 % of read at M <= 16, faster than cuBLAS everywhere"]
for op, st, n in bad:
    out.append(f"FAILED: {op}: {n} measurements {st}")
text = "\n".join(out)
open(f"{dir}/table.md", "w").write(text + "\n")
print(text)
sys.exit(1 if bad or len(ours) == 0 else 0)
PY
((${#failed_tunes[@]} == 0)) || { echo "FAILED: tune of ${failed_tunes[*]} (logs in $dir)"; exit 1; }
echo "=== skinny_gpu done ($(date -u +%H:%M:%S)): $dir/table.md"
