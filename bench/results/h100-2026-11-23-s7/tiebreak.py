#!/usr/bin/env python3
"""The best configuration per problem under two rules on the same measurements: ties on the event p50 to the earlier
row (before 2026-11-23, session 7) and to the lower CUPTI kernel time (Store::best since). Prints the problems where
the two differ, with both kernel times. Usage: tiebreak.py DB (the newest kernel source of each op/variant)."""
import sqlite3, sys
from collections import defaultdict

db = sqlite3.connect(sys.argv[1])
rows = db.execute("""select k.op || '/' || k.variant, k.source_hash, p.key, c.key, m.p50_us, m.cupti_p50_us, m.id,
                            m.measured_at
                     from measurements m join kernels k on k.id = m.kernel_id join problems p on p.id = m.problem_id
                     join configurations c on c.id = m.configuration_id where m.status = 'ok' and m.p50_us > 0""").fetchall()
newest = {}
for op, h, *_, t in rows:
    if op not in newest or t > newest[op][1]:
        newest[op] = (h, t)
old, new = {}, {}
for op, h, pk, ck, p50, cupti, mid, _ in rows:
    if newest[op][0] != h:
        continue
    k = (op, pk)
    r_old = (p50, mid)
    r_new = (p50, not (cupti and cupti > 0), cupti or 0.0, mid)
    if k not in old or r_old < old[k][0]:
        old[k] = (r_old, ck, cupti)
    if k not in new or r_new < new[k][0]:
        new[k] = (r_new, ck, cupti)
n = changed = 0
for k in sorted(old):
    n += 1
    if old[k][1] != new[k][1]:
        changed += 1
        print(f"{k[0]:16s} {k[1]:34s} p50 {old[k][0][0]:6.2f} us: kernel {old[k][2]:.3f} -> {new[k][2]:.3f} us "
              f"({100 * (new[k][2] / old[k][2] - 1):+.1f} %)")
print(f"{changed} of {n} problems pick another configuration")
