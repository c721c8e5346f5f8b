#!/usr/bin/env bash
# Session 13, one device call: the read roofline with SPREAD (a block's loads contiguous, or a grid apart) at the
# INT4/INT8 weight-byte sizes, and odd sizes for validation. Does the spread of the addresses in flight explain why
# 32 KiB blocks of 8 loads per thread (INT4's shape at 4096^2) read 19 % slower than 4 KiB blocks (floors/)?
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
bench/tune_on_device.sh spread spread.db 200 \
  "copy_read:--problem=N=4390912:--problem=N=8392704:--problem=N=15368192:--problem=N=33554432" \
  "copy_read:--shape=N=1001:--shape=N=4390913"
sqlite3 -column /tmp/o/spread/spread.sqlite "select p.key, c.key, round(m.kernel_us,3) kernel_us, round(m.p50_us,2) ev
  from measurements m join problems p on p.id=m.problem_id join configurations c on c.id=m.configuration_id
  where m.status='ok' order by p.key, m.kernel_us" > $OUT/spread.txt
grep -c . $OUT/spread.txt; head -50 $OUT/spread.txt
