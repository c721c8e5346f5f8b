#!/usr/bin/env bash
# Session 12, last device call, on the final tree: the NVRTC-cache fix (registers read in every process: two compile-only
# sweeps with fresh ktune caches), the GPU tests, and a second batch of four independent whole-space tunings ranked by
# kernel time at decode sizes (bench/gpu_run.sh stability-runs; every pair compared), run a resumed once.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export KTUNE_ROOT=/work/main
k=/work/main/build-gpu/ktune
for i in 1 2; do
  KTUNE_CACHE_DIR=/tmp/regs-$i $k --db /tmp/regs-$i.db tune rmsnorm --compile-only --dtype bf16 --problem M=1,H=8192 \
    --config BLOCK=256,VEC=8,UNROLL=4,ROWS_PER_BLOCK=1 --quiet 2>&1 | tail -1
  echo "fresh ktune cache $i: $(grep -ho '"registers": [0-9]*' -r /tmp/regs-$i | sort | uniq -c | tr '\n' ' ')"
done | tee $OUT/registers.txt
"$root/bench/gpu_run.sh" tests
STABILITY_RUNS="a b c d" "$root/bench/gpu_run.sh" stability-runs 2>&1 | tee $OUT/stability-runs.log | grep -v "^rmsnorm\|^problem"
for pair in "b c" "b d" "c d"; do
  set -- $pair
  python3 "$root/bench/compare_best.py" $OUT/run-$1.json $OUT/run-$2.json > $OUT/run-$1-$2.txt
done
echo "=== resume run a"
KTUNE_CACHE_DIR=/tmp/ktune-cache-a /usr/bin/time -f "%e s wall (resumed)" $k --db $OUT/run-a.db tune rmsnorm --quiet 2>&1 | tail -2
$k --db $OUT/run-a.db best rmsnorm > $OUT/best-a.txt
for f in $OUT/run-*-*.txt; do echo "== $(basename $f)"; tail -n 3 $f; done
python3 -c "
import json
for r in 'abcd':
    j = json.load(open('$OUT/run-%s.json' % r))
    print(r, 'results with 0 registers:', sum(b['registers'] == 0 for e in j for b in e['best']))"
tar czf $R/final.tgz -C /tmp/o --exclude='*.db*' .
