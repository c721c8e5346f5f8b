#!/usr/bin/env python3
"""Compares the best times per problem of two `ktune best --json` files: the repeatability check of two tunings, or
an A/B of two kernel versions (each file may hold several spaces' entries; problems are matched by op and key).

Both measures of the chosen configuration are compared: the event p50 (ktune's ranking measure, which includes the
GPU front end's launch of the kernel, ~2.4 us on an H100) and the CUPTI kernel-duration p50 (the kernel alone)."""
import json
import math
import sys


def best(path):
    return {f'{e.get("op", "")} {r["problem"]}': r for e in json.load(open(path)) for r in e["best"]}


def rel(a, b):
    return (b - a) / a * 100 if a and b else None


a, b = best(sys.argv[1]), best(sys.argv[2])
worst, worst_cupti = 0.0, 0.0
logs, logs_cupti = [], []
print(f"{'problem':<40} {'p50 a':>8} {'p50 b':>8} {'diff':>7}  {'cupti a':>8} {'cupti b':>8} {'diff':>7}  same config")
for key, ra in a.items():
    rb = b.get(key)
    if rb is None:
        print(f"{key:<40} missing in {sys.argv[2]}")
        continue
    diff = rel(ra["p50_us"], rb["p50_us"])
    worst = max(worst, abs(diff))
    logs.append(math.log(rb["p50_us"] / ra["p50_us"]))
    ca, cb = ra.get("cupti_p50_us") or 0, rb.get("cupti_p50_us") or 0
    cdiff = rel(ca, cb)
    cupti = f"{ca:8.3f} {cb:8.3f} {cdiff:+6.2f}%" if cdiff is not None else f"{'-':>8} {'-':>8} {'-':>7}"
    if cdiff is not None:
        worst_cupti = max(worst_cupti, abs(cdiff))
        logs_cupti.append(math.log(cb / ca))
    print(f"{key:<40} {ra['p50_us']:8.2f} {rb['p50_us']:8.2f} {diff:+6.2f}%  {cupti}  {ra['config'] == rb['config']}")
print(f"largest difference: {worst:.2f}% (events), {worst_cupti:.2f}% (CUPTI kernel duration)")


def geomean(v):
    return (math.exp(sum(v) / len(v)) - 1) * 100 if v else 0.0


print(f"b against a, geometric mean over {len(logs)} problems: {geomean(logs):+.2f}% (events), "
      f"{geomean(logs_cupti):+.2f}% (CUPTI)")
