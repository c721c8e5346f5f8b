#!/usr/bin/env bash
# Session 13, one device call: the clustered LayerNorm at odd decode shapes, every valid configuration, every dtype:
# a tail (H=2050, 8191), padded rows (S > H), misaligned rows (S=8193: the scalar path, in clusters too), M = 2..16.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
odd=""
for s in M=1,H=2050 M=3,H=1001,S=1003 M=9,H=4100,S=4104 M=16,H=8192,S=8193 M=2,H=8191; do odd="$odd:--shape=$s"; done
bench/tune_on_device.sh odd odd.db 400 "layernorm$odd" "layernorm_nobias$odd"
python3 - /tmp/o/odd/odd.sqlite <<'PY' | tee $OUT/status.txt
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("""select k.variant, m.status, count(*), sum(c.key like '%CLUSTER=1') from measurements m
                       join kernels k on k.id = m.kernel_id join configurations c on c.id = m.configuration_id
                       group by 1, 2"""):
    print(*r)
for r in db.execute("""select p.key, c.key, m.message from measurements m join problems p on p.id = m.problem_id
                       join configurations c on c.id = m.configuration_id where m.status != 'ok' limit 10"""):
    print(*r)
PY
