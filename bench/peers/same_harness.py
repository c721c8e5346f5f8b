#!/usr/bin/env python3
"""One harness for both sides: ktune's tuned RMSNorm (impl ktune_aot, from measure_peers.py --ktune-aot-lib) against
the PyTorch peers, all timed by measure_peers.py, beside what ktune's own worker measured for the same kernel.

Usage: same_harness.py PEERS.json [BEST.json from `ktune best rmsnorm --json`]
Per problem: p50 by events (cold_l2_events) and by CUPTI (cupti_kernel_sum) of every impl; the speedup of ktune_aot
over the fastest PyTorch impl by each method; and the worker's numbers for the same problem when BEST is given.
"""
import json
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    peers = json.load(open(sys.argv[1]))
    worker = {}
    if len(sys.argv) == 3:
        best = json.load(open(sys.argv[2]))
        for entry in (best if isinstance(best, list) else [best]):
            for b in entry["best"]:
                worker[b["problem"]] = b
    table = {}
    for r in peers["results"]:
        key = r["dtype"] + ":" + ",".join(f"{k}={v}" for k, v in r["shape"].items())
        table.setdefault(key, {})[(r["impl"], r.get("method", peers.get("method")))] = r["p50_us"]
    impls = sorted({i for t in table.values() for i, _ in t})
    others = [i for i in impls if i != "ktune_aot"]
    print(f"{'problem':<22} {'method':<17} " + " ".join(f"{i:>14}" for i in impls) +
          f" {'ktune/fastest':>14} {'worker':>8}")
    wins = {"cold_l2_events": [0, 0], "cupti_kernel_sum": [0, 0]}
    for key in sorted(table, key=lambda k: (k.split(":")[0], [int(v.split("=")[1]) for v in k.split(":")[1].split(",")])):
        t = table[key]
        w = worker.get(key)
        for method, wfield in (("cold_l2_events", "p50_us"), ("cupti_kernel_sum", "cupti_p50_us")):
            cells = [t.get((i, method)) for i in impls]
            if all(c is None for c in cells):
                continue
            mine = t.get(("ktune_aot", method))
            fastest = min((t[(i, method)] for i in others if (i, method) in t), default=None)
            ratio = f"{fastest / mine:.2f}x" if mine and fastest else "-"
            if mine and fastest:
                wins[method][0] += fastest >= mine
                wins[method][1] += 1
            wcell = f"{w[wfield]:.2f}" if w and w.get(wfield) else "-"
            print(f"{key:<22} {method:<17} " + " ".join(f"{c:>14.2f}" if c else f"{'-':>14}" for c in cells) +
                  f" {ratio:>14} {wcell:>8}")
    for method, (won, n) in wins.items():
        if n:
            print(f"{method}: ktune_aot at least as fast as the fastest PyTorch impl at {won} of {n} problems")


if __name__ == "__main__":
    main()
