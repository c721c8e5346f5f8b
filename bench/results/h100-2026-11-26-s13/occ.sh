#!/usr/bin/env bash
# Session 13, one device call: INT4 M = 1 with 32 warps per SM allowed by the registers (occ32.patch: min_blocks
# 32 / WARPS where TILES_N * M_FRAGS == 1, i.e. at most 64 registers) against the kernel as it is (16 warps per SM),
# over int4_occ.yaml (linear_int4.yaml with WARPS 16 too, bf16 M = 1 at 4096^2 and 14336 x 4096). The read roofline
# (floors/, spread/) reads 4.5 us at 4096^2's bytes with 64 warps per SM and 1-2 loads each, 5.4 us with INT4's shape
# (16 warps per SM, 8 loads each).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
here=bench/results/h100-2026-11-26-s13
rm -rf /tmp/occ-tree && mkdir -p /tmp/occ-tree && cp -r kernels search_spaces bench /tmp/occ-tree/
patch -p1 -d /tmp/occ-tree < $here/occ32.patch
bench/tune_on_device.sh base base.db 140 $here/int4_occ.yaml
KERNEL_TREE=/tmp/occ-tree bench/tune_on_device.sh occ32 occ32.db 140 $here/int4_occ.yaml
for n in base occ32; do
  python3 - /tmp/o/$n/$n.sqlite > $OUT/$n-all.txt <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("""select p.key, c.key, round(m.kernel_us, 3), round(m.p50_us, 2), m.registers, m.spill_store_bytes
    from measurements m join problems p on p.id = m.problem_id join configurations c on c.id = m.configuration_id
    where m.status = 'ok' order by p.key, m.kernel_us"""):
    print(*r)
PY
done
head -12 $OUT/base-all.txt; grep -c . $OUT/base-all.txt; grep "N=4096" $OUT/occ32-all.txt | head -12; grep "N=14336" $OUT/occ32-all.txt | head -5
