#!/usr/bin/env bash
# Session 13, one device call: the weight-only linear kernels with their first step's loads (weights, scales, zero
# points, x) issued before the launch checks (int4-loads-first.patch) against the kernels before, bf16 M = 1 and 16 at
# 4096^2 and 14336 x 4096, INT4 and INT8; then, new kernels only, the tails spaces (odd shapes, the plain path) in both
# dtypes for validation.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
here=bench/results/h100-2026-11-26-s13
bench/ab_on_device.sh $here/int4-loads-first.patch 120 300 \
  "linear_int4:--dtype=bf16:--problem=M=1:--problem=M=16" "linear_int8:--dtype=bf16:--problem=M=1:--problem=M=16" \
  -- linear_int4_tails linear_int8_tails
for n in old new; do
  mkdir -p /tmp/ab/$n && tar xzf $OUT/$n.tgz -C /tmp/ab/$n
  for s in linear_int4 linear_int8; do
    LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=/work/main \
      /work/main/build-gpu/ktune --db /tmp/ab/$n/$n.sqlite best search_spaces/$s.yaml --json > /tmp/ab/$n-$s.json
  done
done
for s in linear_int4 linear_int8; do
  python3 bench/compare_best.py /tmp/ab/old-$s.json /tmp/ab/new-$s.json | tee $OUT/compare-$s.txt | tail -12
done
python3 bench/compare_configs.py /tmp/ab/old/old.sqlite /tmp/ab/new/new.sqlite > $OUT/compare-configs.txt 2>&1
tail -15 $OUT/compare-configs.txt
python3 - /tmp/ab/new/new.sqlite <<'PY' | tee $OUT/status.txt
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("""select k.op, p.dtype, m.status, count(*) from measurements m join kernels k on k.id = m.kernel_id
                       join problems p on p.id = m.problem_id group by 1, 2, 3"""):
    print(*r)
PY
