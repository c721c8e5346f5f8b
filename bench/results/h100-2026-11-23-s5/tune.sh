#!/usr/bin/env bash
# Session 5: tunes search spaces with the clean flush inside one device call, optionally narrowed.
# Usage (on the GPU host): tune.sh NAME DB SECONDS SPACE[:FILTER...]... where FILTER is ktune tune's own narrowing
# (e.g. linear_int4:--dtype=bf16:--problem=M=1 : each ':' becomes a space). Databases come back without raw samples
# as $OUT/NAME.tgz, with the logs and `ktune best` tables. GPU_TESTS=1 first runs the GPU test binary.
set -uo pipefail
name=$1 db=$2 seconds=$3; shift 3
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
root=$(cd "$(dirname "$0")/../../.." && pwd)
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=/work/main KTUNE_CACHE_DIR=/tmp/ktune-cache
k=/work/main/build-gpu/ktune
deadline=$(( $(date +%s) + seconds ))
finish() {
  python3 - $OUT/$db <<'PY'
import sqlite3, sys
for p in sys.argv[1:]:  # the backup API also takes what is still in the WAL
    q = p[:-3] + ".sqlite"; c = sqlite3.connect(q); sqlite3.connect(p).backup(c)
    c.execute("update measurements set samples = NULL"); c.commit(); c.execute("vacuum"); c.close()
PY
  tar czf $R/$name.tgz -C $OUT --exclude='*.db*' .; ls -la $R
}
trap finish EXIT
if [ -n "${GPU_TESTS:-}" ]; then
  (cd /work/main/build-gpu && timeout 300 tests/ktune_gpu_tests 2>&1 | tee $OUT/gpu-tests.log | grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) ")
fi
cd /work/main
for arg in "$@"; do
  s=${arg%%:*}
  # only the first '=' of each filter word is the option's: --problem=M=1 -> --problem M=1
  filter=$(for w in $(echo "${arg#$s}" | tr ':' ' '); do echo -n "${w%%=*} ${w#*=} "; done)
  left=$(( deadline - $(date +%s) )); [ $left -gt 5 ] || { echo "deadline: $arg not tuned"; continue; }
  echo "=== $s $filter($left s left)"
  /usr/bin/time -f "%e s wall" $k --db $OUT/$db tune search_spaces/$s.yaml $filter --quiet --time-cap 0.5 --time $left 2>&1 | tail -2
  $k --db $OUT/$db best search_spaces/$s.yaml > $OUT/best-$s.txt 2>&1
done
