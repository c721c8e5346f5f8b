#!/usr/bin/env bash
# Session 12, device call 7: confirmations of decode-size leaders pooled over eight measurements (measure_pooled). The
# REP experiment (repeat.sh: does a confirmed kernel time still fall in two modes?), the GPU tests, and four
# independent whole-space tunings (bench/gpu_run.sh stability-runs; every pair compared), run a resumed once.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export KTUNE_ROOT=/work/main
k=/work/main/build-gpu/ktune
for r in a b c; do
  KTUNE_CACHE_DIR=/tmp/rep-cache-$r $k --db $OUT/rep-$r.db tune $root/bench/results/h100-2026-11-26-s12/rmsnorm_repeat.yaml \
    --dtype bf16 --config BLOCK=256,VEC=8,UNROLL=4,ROWS_PER_BLOCK=1 --config BLOCK=256,VEC=4,UNROLL=4,ROWS_PER_BLOCK=1 \
    --quiet 2>&1 | tail -1
done
python3 $root/bench/results/h100-2026-11-26-s12/repeat_summary.py $OUT/rep-a.db $OUT/rep-b.db $OUT/rep-c.db | tee $OUT/rep-summary.txt
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
tar czf $R/pooled.tgz -C /tmp/o --exclude='*.db*' .
