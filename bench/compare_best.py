#!/usr/bin/env python3
"""Compares the best times per problem of two `ktune best --json` files: the repeatability check of two tunings, or
an A/B of two kernel versions (each file may hold several spaces' entries; problems are matched by op and key).

Three measures of the chosen configuration are compared: the time it was ranked by (`rank_us`: the CUPTI kernel time,
trimmed mean, at decode sizes, the event p50 elsewhere; `ranked_by` says which), the event p50 (which includes the GPU
front end's launch of the kernel, ~2.4 us on an H100) and the CUPTI kernel-duration p50 (the kernel alone, in 32 ns
ticks). Files written before `rank_us` existed are compared by their event p50."""
import json
import math
import sys


def best(path):
    return {f'{e.get("op", "")} {r["problem"]}': r for e in json.load(open(path)) for r in e["best"]}


def rel(a, b):
    return (b - a) / a * 100 if a and b else None


def geomean(v):
    return (math.exp(sum(v) / len(v)) - 1) * 100 if v else 0.0


a, b = best(sys.argv[1]), best(sys.argv[2])
measures = {"rank": lambda r: r.get("rank_us", r["p50_us"]), "events": lambda r: r["p50_us"],
            "CUPTI p50": lambda r: r.get("cupti_p50_us") or 0}
worst = {k: 0.0 for k in measures}
logs = {k: [] for k in measures}
over_2 = 0
print(f"{'problem':<40} {'by':>6} " + "  ".join(f"{n + ' a':>8} {n + ' b':>8} {'diff':>7}" for n in ("rank", "p50", "cupti"))
      + "  same config")
for key, ra in a.items():
    rb = b.get(key)
    if rb is None:
        print(f"{key:<40} missing in {sys.argv[2]}")
        continue
    cells = []
    for name, get in measures.items():
        va, vb = get(ra), get(rb)
        d = rel(va, vb)
        if d is None:
            cells.append(f"{'-':>8} {'-':>8} {'-':>7}")
            continue
        worst[name] = max(worst[name], abs(d))
        logs[name].append(math.log(vb / va))
        if name == "rank" and abs(d) > 2:
            over_2 += 1
        cells.append(f"{va:8.3f} {vb:8.3f} {d:+6.2f}%")
    by = ra.get("ranked_by", "event") if ra.get("ranked_by") == rb.get("ranked_by") else "mixed"
    print(f"{key:<40} {by:>6} {'  '.join(cells)}  {ra['config'] == rb['config']}")
print("largest difference: " + ", ".join(f"{worst[k]:.2f}% ({k})" for k in measures))
print(f"problems over 2 % by rank time: {over_2} of {len(logs['rank'])}")
print(f"b against a, geometric mean over {len(logs['rank'])} problems: " +
      ", ".join(f"{geomean(logs[k]):+.2f}% ({k})" for k in measures))
