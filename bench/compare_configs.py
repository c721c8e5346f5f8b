#!/usr/bin/env python3
"""Same-configuration comparison of two databases (two kernel versions, two worker settings): for every op and problem,
the configurations measured ok in both, the geometric mean of B/A by kernel time (CUPTI p50) and by events (p50), and
each side's fastest configuration by kernel time; then per op over all its problems. Usage: compare_configs.py A.sqlite B.sqlite"""
import collections
import math
import sqlite3
import sys


def load(path):
    db = sqlite3.connect(path)
    rows = db.execute("select k.op || '/' || k.variant, c.key, p.key, m.cupti_p50_us, m.p50_us from measurements m "
                      "join problems p on p.id = m.problem_id join configurations c on c.id = m.configuration_id "
                      "join kernels k on k.id = m.kernel_id where m.status = 'ok' and m.cupti_p50_us > 0")
    return {(op, c, p): (t, e) for op, c, p, t, e in rows}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = load(sys.argv[1]), load(sys.argv[2])
    ratios = collections.defaultdict(lambda: ([], []))
    best = {}
    for k in a.keys() & b.keys():
        group = (k[0], k[2])
        ratios[group][0].append(math.log(b[k][0] / a[k][0]))
        ratios[group][1].append(math.log(b[k][1] / a[k][1]))
        for side, d in (("A", a), ("B", b)):
            cur = best.get(group + (side,))
            if cur is None or d[k][0] < cur[1]:
                best[group + (side,)] = (k[1], d[k][0], d[k][1])
    print("op               problem                configs  B/A kernel  B/A events   fastest kernel us A -> B (events)")
    for g in sorted(ratios):
        kern, ev = ratios[g]
        n = len(kern)
        ba, bb = best[g + ("A",)], best[g + ("B",)]
        gk, ge = (100 * (math.exp(sum(r) / n) - 1) for r in (kern, ev))
        print(f"{g[0]:16s} {g[1]:22s} {n:7d} {gk:+9.2f} % {ge:+9.2f} %"
              f"   {ba[1]:.3f} -> {bb[1]:.3f} ({ba[2]:.2f} -> {bb[2]:.2f})")
    for op in sorted({g[0] for g in ratios}):  # every configuration and problem of the op
        kern = [r for g in ratios if g[0] == op for r in ratios[g][0]]
        ev = [r for g in ratios if g[0] == op for r in ratios[g][1]]
        gk, ge = (100 * (math.exp(sum(r) / len(r)) - 1) for r in (kern, ev))
        print(f"{op:16s} {'all problems':22s} {len(kern):7d} {gk:+9.2f} % {ge:+9.2f} %")


if __name__ == "__main__":
    main()
