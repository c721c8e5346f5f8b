#!/usr/bin/env bash
# Session 4, device run 1 (device tool: carry build-gpu/{ktune,ktune-worker,lib,tests/ktune_gpu_tests,
# tests/ktune_nvrtc_tests}): the GPU tests and the worker's utility kernels with the clean flush; the copy roofline
# under the dirty and the clean flush; issue 2's stability pair; decode attention and INT4/INT8 linear (bf16) re-tuned
# with the clean flush. Databases come back without raw samples.
set -uo pipefail
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
strip() { python3 - "$@" <<'PY'
import sqlite3, sys
for p in sys.argv[1:]:  # the backup API also takes what is still in the WAL
    q = p[:-3] + ".sqlite"; c = sqlite3.connect(q); sqlite3.connect(p).backup(c)
    c.execute("update measurements set samples = NULL"); c.commit(); c.execute("vacuum"); c.close()
PY
}
finish() { strip $OUT/*.db 2>/dev/null; tar czf $R/run1.tgz -C $OUT --exclude='*.db*' . ; ls -la $R; }
trap finish EXIT
k=/work/main/build-gpu/ktune
timeout 60 bench/gpu_run.sh info devices
timeout 240 bench/gpu_run.sh tests
( cd /work/main && LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 timeout 60 \
    build-gpu/tests/ktune_nvrtc_tests --gtest_filter='*Utility*' 2>&1 | tail -3 ) | tee $OUT/utility-kernels.txt
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=/work/main
for flush in dirty clean; do  # best shows the latest method's results
  timeout 90 $k --db $OUT/copy.db tune copy --flush $flush --quiet 2>&1 | tail -1
  $k --db $OUT/copy.db best copy > $OUT/copy-$flush.txt; $k --db $OUT/copy.db best copy --json > $OUT/copy-$flush.json
done
STABILITY_RUNS="a b" timeout 200 bench/gpu_run.sh stability-runs
for s in decode_attention decode_attention_gqa8; do
  timeout 100 $k --db $OUT/decode.db tune search_spaces/$s.yaml --dtype bf16 --quiet --time-cap 0.5 2>&1 | tail -1
  $k --db $OUT/decode.db best search_spaces/$s.yaml > $OUT/best-$s.txt
done
for s in linear_int4 linear_int8; do
  timeout 60 $k --db $OUT/decode.db tune search_spaces/$s.yaml --dtype bf16 --problem M=1 --problem M=16 --quiet --time-cap 0.5 2>&1 | tail -1
  $k --db $OUT/decode.db best search_spaces/$s.yaml > $OUT/best-$s.txt
done
