#!/usr/bin/env bash
# Session 12, one device call: issue 2's "two independent tunings give best times within 2 % for every problem", with
# decode-size problems now ranked by kernel time (CUPTI, trimmed mean; tuner/session/space_measurer.hpp rank_timer).
# GPU tests; four independent whole-space RMSNorm tunings (fresh process, database and compile cache each; the wall
# time of each is a cold-cache tuning); every pair compared (bench/compare_best.py); run a resumed once.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
k=/work/main/build-gpu/ktune
"$root/bench/gpu_run.sh" info devices tests
STABILITY_RUNS="a b c d" "$root/bench/gpu_run.sh" stability-runs
for pair in "b c" "b d" "c d"; do
  set -- $pair
  python3 "$root/bench/compare_best.py" $OUT/run-$1.json $OUT/run-$2.json > $OUT/run-$1-$2.txt
done
echo "=== resume run a"
KTUNE_CACHE_DIR=/tmp/ktune-cache-a /usr/bin/time -f "%e s wall (resumed)" $k --db $OUT/run-a.db tune rmsnorm --quiet 2>&1 | tail -2
$k --db $OUT/run-a.db best rmsnorm | tee $OUT/best-a.txt
for f in $OUT/run-*-*.txt; do echo "== $(basename $f)"; tail -n 3 $f; done
tar czf $R/stability-kernel.tgz -C /tmp/o --exclude='*.db*' .
tar czf $R/dbs.tgz -C /tmp/o run-a.db run-b.db
ls -la $R
