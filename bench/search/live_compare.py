#!/usr/bin/env python3
"""Time to within 2 % of the optimum, live: an exhaustive tuning's database against a search's (bench/search/live_gpu.sh).

Per problem: the exhaustive optimum (the smallest ranking time, kernel or event as each measurement was ranked), the
search's best against it, and for each arm the seconds from its run's first measurement to the first measurement within
2 % of that optimum (compilation included: a measurement is stored when its kernel has been compiled and timed).
"""
import sqlite3
import sys
from datetime import datetime


def rows(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    q = """select p.key, m.measured_at, m.status, m.p50_us, m.kernel_us, m.ranked_by
           from measurements m join problems p on p.id = m.problem_id order by m.id"""
    out = []
    for key, at, status, p50, kus, ranked in db.execute(q):
        t = datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()
        v = (kus if ranked == "kernel" and kus else p50) if status == "ok" else None
        out.append((key, t, v))
    return out


def main(exhaustive_db, search_db):
    ex, se = rows(exhaustive_db), rows(search_db)
    optimum = {}
    for key, _, v in ex:
        if v and (key not in optimum or v < optimum[key]):
            optimum[key] = v
    t_ex0, t_se0 = min(t for _, t, _ in ex), min(t for _, t, _ in se)

    def first_within(rs, t0, key):
        for k, t, v in rs:
            if k == key and v and v <= optimum[key] * 1.02:
                return t - t0
        return None

    print(f"{'problem':48} {'optimum us':>10} {'search best':>11} {'exh. s':>7} {'search s':>8}")
    worst_ratio, within, hit_ex, hit_se = 1.0, 0, [], []
    for key in optimum:
        best = min((v for k, _, v in se if k == key and v), default=None)
        ratio = best / optimum[key] if best else float("inf")
        worst_ratio = max(worst_ratio, ratio)
        within += ratio <= 1.02
        a, b = first_within(ex, t_ex0, key), first_within(se, t_se0, key)
        hit_ex.append(a)
        hit_se.append(b)
        print(f"{key:48} {optimum[key]:10.3f} {ratio:10.3f}x {a if a is not None else '-':>7} "
              f"{b if b is not None else '-':>8}")
    span = lambda rs: max(t for _, t, _ in rs) - min(t for _, t, _ in rs)
    print(f"\n{len(optimum)} problems: the search's best within 2 % of the exhaustive optimum at {within}; worst "
          f"{worst_ratio:.3f}x")
    print(f"every problem within 2 %: exhaustive after {max(x for x in hit_ex if x is not None):.0f} s "
          f"(its run {span(ex):.0f} s); search after "
          + (f"{max(hit_se):.0f} s" if all(x is not None for x in hit_se) else "never (see the problems above)")
          + f" (its run {span(se):.0f} s)")


if __name__ == "__main__":
    main(*sys.argv[1:3])
