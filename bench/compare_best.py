#!/usr/bin/env python3
"""Compares the best p50 per problem of two `ktune best --json` files: the repeatability check of two tunings."""
import json
import sys


def best(path):
    return {r["problem"]: r for r in json.load(open(path))[0]["best"]}


a, b = best(sys.argv[1]), best(sys.argv[2])
worst = 0.0
print(f"{'problem':<22} {'p50 a':>8} {'p50 b':>8} {'diff':>7}  same config")
for key, ra in a.items():
    rb = b.get(key)
    if rb is None:
        print(f"{key:<22} missing in {sys.argv[2]}")
        continue
    diff = (rb["p50_us"] - ra["p50_us"]) / ra["p50_us"] * 100
    worst = max(worst, abs(diff))
    print(f"{key:<22} {ra['p50_us']:8.2f} {rb['p50_us']:8.2f} {diff:+6.2f}%  {ra['config'] == rb['config']}")
print(f"largest difference: {worst:.2f}%")
