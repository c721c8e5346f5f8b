#!/usr/bin/env bash
# On an H100: tunes each op whose built-in switch became alternative kernels (decode attention's ENGINE, softmax's and
# GLU's PATH, RMSNorm backward's ROWS_IN_FLIGHT 8 and 16) at a few default problems, exhaustively, with one ktune build
# over one source tree, and writes the best per problem under $OUT. Run it once for the tree before the split and once
# for this one (same GPU, same call), then compare: the split moved the kernels' code without changing it, so the best
# times should agree within the run-to-run noise (bench/compare_best.py prints the differences).
#   OUT=/tmp/o bench/alternatives_gpu.sh KTUNE ROOT LABEL    # e.g. .before/build-gpu/ktune .before before
#                                                            #      build-gpu/ktune . after
#   OUT=/tmp/o bench/alternatives_gpu.sh compare before after
# Writes $OUT/alternatives-LABEL/ (database, cubin cache, logs, best.json) and $OUT/alternatives-LABEL.txt (one line a
# problem: space, problem, kernel, configuration, ranked time); compare writes $OUT/alternatives-compare.txt.
# About 3-4 minutes a tree with a cold cache (TIME_PER_SPACE, default 70 s, caps each space). Needs an NVIDIA GPU, the
# ktune binary with its ktune-worker beside it, python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/ktune-alternatives}
mkdir -p "$out"

if [ "${1:-}" = compare ]; then
  [ $# -eq 3 ] || { echo "usage: $0 compare LABEL_A LABEL_B" >&2; exit 2; }
  python3 "$here/compare_best.py" "$out/alternatives-$2/best.json" "$out/alternatives-$3/best.json" |
    tee "$out/alternatives-compare.txt"
  exit 0
fi
[ $# -eq 3 ] || { echo "usage: $0 KTUNE ROOT LABEL | $0 compare LABEL_A LABEL_B" >&2; exit 2; }
ktune=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$2" && pwd)
label=$3
dir=$out/alternatives-$label
rm -rf "$dir" && mkdir -p "$dir"

# space|problems (bf16): where the alternatives compete (decode sizes) and one larger problem where one kernel runs.
runs=(
  "decode_attention|B=1,L=8192,HQ=32,HK=8,D=128,U=1 B=8,L=8192,HQ=32,HK=8,D=128,U=1"
  "softmax|M=16,N=32768 M=4096,N=128256"
  "glu_swiglu|M=16,I=8192 M=4096,I=14336"
  "rmsnorm_bwd|M=1,H=4096 M=16,H=4096"
)
k() { "$ktune" --root "$root" --db "$dir/ktune.db" --cache-dir "$dir/cache" "$@"; }
echo "=== $label: $ktune over $root ($(date -u +%H:%M:%S))"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
spaces=()
for run in "${runs[@]}"; do
  space=${run%%|*}
  filters=()
  for p in ${run#*|}; do filters+=(--problem "$p"); done
  t0=$SECONDS
  if k tune "$space" --dtype bf16 "${filters[@]}" --strategy exhaustive --time "${TIME_PER_SPACE:-70}" --quiet \
      > "$dir/tune-$space.log" 2>&1; then
    status=ok
  else
    status="failed (rc $?)"
  fi
  grep -q "stopped at the --time limit" "$dir/tune-$space.log" && status="$status, stopped at the --time limit"
  echo "$space: $((SECONDS - t0)) s, $status"
  [ "$status" = ok ] || tail -5 "$dir/tune-$space.log"
  spaces+=("$space")
done

# Every space's best rows in one file (the format bench/compare_best.py reads), and one line a problem.
for space in "${spaces[@]}"; do k best "$space" --json > "$dir/best-$space.json" || echo "[]" > "$dir/best-$space.json"; done
python3 - "$dir" "$out/alternatives-$label.txt" "${spaces[@]}" <<'PY'
import json, sys
dir, summary, spaces = sys.argv[1], sys.argv[2], sys.argv[3:]
entries = [e for s in spaces for e in json.load(open(f"{dir}/best-{s}.json"))]
json.dump(entries, open(f"{dir}/best.json", "w"), indent=1)
with open(summary, "w") as f:
    for e in entries:
        for r in e["best"]:
            rank = r.get("rank_us", r["p50_us"])
            line = (f'{e.get("op", "")}/{e.get("variant", "")} {r["problem"]:<36} {r.get("kernel") or "-":<12} '
                    f'{rank:9.3f} us ({r.get("ranked_by", "event")})  {r["config"]}')
            print(line)
            f.write(line + "\n")
PY
echo "=== $label done ($(date -u +%H:%M:%S)): $out/alternatives-$label.txt"
