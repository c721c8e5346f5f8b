#!/usr/bin/env bash
# Session 12, one device call: is the ~3 % kernel-time difference between two tunings' confirmed best at M = 1 (seen in
# stability-kernel/) a property of the measurement or of the process? rmsnorm_repeat.yaml measures the same
# configuration 12 times in one process (REP changes nothing); four fresh processes, four configurations, bf16 M=1 (two at H=4096).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export KTUNE_ROOT=/work/main
k=/work/main/build-gpu/ktune
for r in a b c d; do
  KTUNE_CACHE_DIR=/tmp/rep-cache-$r $k --db $OUT/rep-$r.db tune $root/bench/results/h100-2026-11-26-s12/rmsnorm_repeat.yaml \
    --dtype bf16 --config BLOCK=256,VEC=8,UNROLL=4,ROWS_PER_BLOCK=1 --config BLOCK=512,VEC=8,UNROLL=2,ROWS_PER_BLOCK=1 \
    --config BLOCK=256,VEC=8,UNROLL=2,ROWS_PER_BLOCK=1 --config BLOCK=256,VEC=4,UNROLL=4,ROWS_PER_BLOCK=1 \
    --quiet 2>&1 | tail -1
done
tar czf $R/repeat.tgz -C /tmp/o .
