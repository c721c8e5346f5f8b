#!/usr/bin/env bash
# Session 12, one device call, after repeat.sh found a configuration's kernel time at M = 1 in two modes ~64 ns apart
# from one measurement of it to the next within a process (rmsnorm_repeat.yaml: 12 copies of one configuration, each
# its own module). Hypothesis: where the module's code lands. A/B: the same experiment with one copy of the kernel's
# code (KTUNE_WORKER_CODE_COPIES=1, as before) and with samples rotating over 8 (the default now), 3 processes each;
# then GPU tests and four independent whole-space tunings (bench/gpu_run.sh stability-runs), every pair compared, run a
# resumed once.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export KTUNE_ROOT=/work/main
k=/work/main/build-gpu/ktune
for copies in 1 8; do
  for r in a b c; do
    KTUNE_WORKER_CODE_COPIES=$copies KTUNE_CACHE_DIR=/tmp/rep-cache-$r $k --db $OUT/rep-$copies-$r.db tune \
      $root/bench/results/h100-2026-11-26-s12/rmsnorm_repeat.yaml --dtype bf16 \
      --config BLOCK=256,VEC=8,UNROLL=4,ROWS_PER_BLOCK=1 --config BLOCK=256,VEC=4,UNROLL=4,ROWS_PER_BLOCK=1 \
      --quiet 2>&1 | tail -1
  done
done
tar czf $R/rep-dbs.tgz -C /tmp/o $(cd /tmp/o && ls rep-*.db)
"$root/bench/gpu_run.sh" tests
STABILITY_RUNS="a b c d" "$root/bench/gpu_run.sh" stability-runs
for pair in "b c" "b d" "c d"; do
  set -- $pair
  python3 "$root/bench/compare_best.py" $OUT/run-$1.json $OUT/run-$2.json > $OUT/run-$1-$2.txt
done
echo "=== resume run a"
KTUNE_CACHE_DIR=/tmp/ktune-cache-a /usr/bin/time -f "%e s wall (resumed)" $k --db $OUT/run-a.db tune rmsnorm --quiet 2>&1 | tail -2
$k --db $OUT/run-a.db best rmsnorm | tee $OUT/best-a.txt
for f in $OUT/run-*-*.txt; do echo "== $(basename $f)"; tail -n 3 $f; done
tar czf $R/stability.tgz -C /tmp/o --exclude='*.db*' .
tar czf $R/dbs.tgz -C /tmp/o run-a.db run-b.db
