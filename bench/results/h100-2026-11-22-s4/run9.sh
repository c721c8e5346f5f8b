#!/usr/bin/env bash
# Session 4, device run 9 (carry as run 5): the final tree on the GPU: the GPU tests, a dirty and a clean tuning of
# one problem into one database and what `best` shows after each (the clean results, schema 3).
set -uo pipefail
R=$OUT; export OUT=/tmp/o9; mkdir -p $OUT
root=$(pwd); if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=/work/main KTUNE_CACHE_DIR=/tmp/ktune-cache
k=/work/main/build-gpu/ktune
trap 'tar czf $R/run9.tgz -C $OUT --exclude="*.db*" .' EXIT
(cd /work/main/build-gpu && timeout 300 tests/ktune_gpu_tests 2>&1 | tee $OUT/gpu-tests.log | grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) ")
for flush in clean dirty; do
  $k --db $OUT/m.db tune rmsnorm --flush $flush --dtype bf16 --problem M=16,H=4096 --quiet | tail -1
  $k --db $OUT/m.db best rmsnorm | tail -1 | tee $OUT/best-after-$flush.txt
done
python3 -c "import sqlite3; c=sqlite3.connect('$OUT/m.db'); print('schema', c.execute('pragma user_version').fetchone(), c.execute('select l2_state, count(*) from kernels k join measurements m on m.kernel_id=k.id group by 1').fetchall())" | tee $OUT/schema.txt
