#!/usr/bin/env python3
"""Same-configuration A/B of two tunings (bench/ab_on_device.sh's old and new databases): for every configuration and
problem measured ok in both, the ratio of kernel times (CUPTI p50) and of event p50s; geometric means per op and
problem. Less noisy than comparing the best of each side (bench/compare_best.py), whose configurations may differ.
Usage: same_configs.py OLD.sqlite NEW.sqlite [OP...]"""
import collections
import math
import sqlite3
import sys


def load(path):
    db = sqlite3.connect(path)
    rows = db.execute("select k.op, c.key, p.key, m.cupti_p50_us, m.p50_us from measurements m "
                      "join kernels k on k.id = m.kernel_id join problems p on p.id = m.problem_id "
                      "join configurations c on c.id = m.configuration_id where m.status = 'ok'")
    return {(op, c, p): (t, e) for op, c, p, t, e in rows}


def gm(xs):
    return 100 * (math.exp(sum(xs) / len(xs)) - 1) if xs else float("nan")


a, b = load(sys.argv[1]), load(sys.argv[2])
ops = set(sys.argv[3:])
per = collections.defaultdict(lambda: ([], []))
for k in a.keys() & b.keys():
    if ops and k[0] not in ops:
        continue
    (ta, ea), (tb, eb) = a[k], b[k]
    if ta and tb:
        per[(k[0], k[2])][0].append(math.log(tb / ta))
    per[(k[0], k[2])][1].append(math.log(eb / ea))
print(f"{'op':<14} {'problem':<36} {'configs':>7} {'kernel time':>12} {'events':>8}  (geomean new/old)")
by_op = collections.defaultdict(lambda: ([], []))
for (op, p), (t, e) in sorted(per.items()):
    print(f"{op:<14} {p:<36} {len(e):7d} {gm(t):+11.2f}% {gm(e):+7.2f}%")
    by_op[op][0].extend(t)
    by_op[op][1].extend(e)
for op, (t, e) in sorted(by_op.items()):
    print(f"{op:<14} {'all problems':<36} {len(e):7d} {gm(t):+11.2f}% {gm(e):+7.2f}%")
