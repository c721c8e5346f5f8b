#!/usr/bin/env bash
# Session 13, one device call: the clustered LayerNorm with its pivot (review fix: elements taken relative to the
# row's first element so that the (sum, M2) combination does not cancel), decode sizes M = 1, 16 in every dtype and
# the odd shapes of odd-layernorm.sh, every configuration validated and timed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
odd=""
for s in M=1,H=2050 M=3,H=1001,S=1003 M=9,H=4100,S=4104 M=16,H=8192,S=8193 M=2,H=8191; do odd="$odd:--shape=$s"; done
bench/tune_on_device.sh pivot pivot.db 420 "layernorm:--problem=M=1:--problem=M=16" \
  "layernorm_nobias:--problem=M=1:--problem=M=16" "layernorm$odd" "layernorm_nobias$odd"
python3 bench/targets.py /tmp/o/pivot/pivot.sqlite --detail > $OUT/targets.txt 2>&1
grep -E "H=8192 |^layernorm|decode" $OUT/targets.txt
python3 - /tmp/o/pivot/pivot.sqlite <<'PY' | tee $OUT/status.txt
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("""select k.variant, m.status, count(*) from measurements m join kernels k on k.id = m.kernel_id
                       group by 1, 2"""):
    print(*r)
PY
