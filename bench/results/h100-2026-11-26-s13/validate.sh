#!/usr/bin/env bash
# Session 13, one device call: GPU tests; every WARPS = 16 configuration of the weight-only linear tails spaces (K not
# a multiple of G, G 64, odd M/N/K) in both dtypes and of the main spaces in fp16 at M = 1 and 16, validated and
# timed; the read roofline's default space with SPREAD (every size).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
R=$OUT
GPU_TESTS=1 bench/tune_on_device.sh validate validate.db 480 copy_read \
  linear_int4_tails:--config=WARPS=16 linear_int8_tails:--config=WARPS=16 \
  linear_int4:--config=WARPS=16:--dtype=fp16:--problem=M=1:--problem=M=16 \
  linear_int8:--config=WARPS=16:--dtype=fp16:--problem=M=1:--problem=M=16
python3 - /tmp/o/validate/validate.sqlite <<'PY' | tee $R/status.txt
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("""select k.op, k.variant, m.status, count(*) from measurements m join kernels k on k.id = m.kernel_id
                       group by 1, 2, 3"""):
    print(*r)
PY
