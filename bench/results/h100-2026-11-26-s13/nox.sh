#!/usr/bin/env bash
# Session 13, one device call: what x costs the INT4 kernel. nox.patch replaces the x loads by constants (outputs wrong
# by design; int4_nox.yaml accepts any finite output), the kernel as it is beside it, bf16 M = 1 and 16 at 4096^2.
# If M = 16 without x comes near M = 1, the ~1 us between them is x's traffic (each block reads all of x).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
here=bench/results/h100-2026-11-26-s13
rm -rf /tmp/nox-tree && mkdir -p /tmp/nox-tree && cp -r kernels search_spaces bench /tmp/nox-tree/
patch -p1 -d /tmp/nox-tree < $here/nox.patch
bench/tune_on_device.sh withx withx.db 150 $here/int4_nox.yaml
KERNEL_TREE=/tmp/nox-tree bench/tune_on_device.sh nox nox.db 150 $here/int4_nox.yaml
for n in withx nox; do
  python3 - /tmp/o/$n/$n.sqlite > $OUT/$n-all.txt <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("""select p.key, c.key, round(m.kernel_us, 3), round(m.p50_us, 2), m.registers
    from measurements m join problems p on p.id = m.problem_id join configurations c on c.id = m.configuration_id
    where m.status = 'ok' order by p.key, m.kernel_us"""):
    print(*r)
PY
  python3 - /tmp/o/$n/$n.sqlite <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(sys.argv[1], list(db.execute("select status, count(*) from measurements group by 1")))
PY
done
for n in withx nox; do echo "== $n"; grep "M=1," $OUT/$n-all.txt | head -3; grep "M=16," $OUT/$n-all.txt | head -5; done
