#!/usr/bin/env python3
"""The per-problem criterion of issue 23 on ktune's own spaces, from exhaustive tunings in a database, replayed.

For each op, `ktune replay --op OP --runs 20 --json` runs once per transfer mode: none; in-run (the problems in the
tuning's order, each starting from the fastest its strategy found at the problems before it, over the replay's default
run: up to 100 evaluations or the whole space); in-run at a 10 % budget (`--budget 10%`: each problem searched for a
tenth of its space, handing on what it found there, as a tuning with that budget would); history (each problem
starting from the fastest of all the other problems in the database, never its own). A problem meets the criterion for a strategy when at least 18 of
its 20 runs came within 2 % of the exhaustive optimum after evaluating at most 10 % of its space (of a space of
alternative kernels, every kernel's configurations: each kernel searched on its own, as `ktune tune` does, the best of
them against the optimum of them all; docs/search.md, Replay). Prints a Markdown
table (problems meeting it, per op, strategy and mode) and, with --misses, the problems each strategy missed.

Usage: bench/search/transfer_table.py --db exhaustive.db [--ktune build/ktune] [--ops softmax,...] [--runs 20]
       [--seed 1] [--misses] [--json-dir DIR] [--device-key KEY ...]
Needs: a built ktune and Python 3 (standard library only).
"""
import argparse
import json
import os
import subprocess
import sys

OPS = ["softmax", "decode_attention", "linear_int8", "linear_int4"]
MODES = [("none", ["--no-transfer"]), ("run", []), ("run10", ["--budget", "10%"]), ("history", ["--history"])]
MODE_NAMES = {"none": "no transfer", "run": "in-run", "run10": "in-run at a 10 % budget", "history": "history"}


def replay(ktune, db, op, runs, seed, device_keys, flags):
    cmd = [ktune, "--db", db, "replay", "--op", op, "--runs", str(runs), "--seed", str(seed), "--json",
           "--no-strategy-time"] + [x for key in device_keys for x in ("--device-key", key)] + flags
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def meets(strategy, runs):
    # share_within_small is a fraction of the runs; 18 of 20 is 0.9 (the same test as ktune replay's summary).
    return strategy["within"]["2%"]["share_within_small_fraction"] * runs >= 0.9 * runs - 1e-9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--ktune", default="build/ktune")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1,
                    help="the first run's seed, the others' counting up from it (another set of runs: the seeds' noise)")
    ap.add_argument("--misses", action="store_true", help="list the problems each strategy missed")
    ap.add_argument("--json-dir", help="also keep each replay's JSON here")
    ap.add_argument("--device-key", action="append", default=[],
                    help="the device to replay (default: the only one); repeatable, as `ktune replay --device-key`")
    a = ap.parse_args()
    ops = a.ops.split(",")
    counts = {}  # (op, mode, strategy) -> problems meeting the criterion
    sizes, strategies, misses = {}, [], {}
    for op in ops:
        for mode, flags in MODES:
            data = replay(a.ktune, a.db, op, a.runs, a.seed, a.device_key, flags)
            if a.json_dir:
                os.makedirs(a.json_dir, exist_ok=True)
                with open(os.path.join(a.json_dir, f"{op}-{mode}.json"), "w") as f:
                    json.dump(data, f)
            sizes[op] = (len(data), min(d["configurations"] for d in data), max(d["configurations"] for d in data))
            for d in data:
                problem = d["space"].split(" on ")[0]
                for s in d["strategies"]:
                    name = s["strategy"]
                    if name not in strategies:
                        strategies.append(name)
                    ok = meets(s, a.runs)
                    counts[(op, mode, name)] = counts.get((op, mode, name), 0) + ok
                    if not ok:
                        share = s["within"]["2%"]["share_within_small_fraction"]
                        misses.setdefault((op, mode, name), []).append(
                            f"{problem} ({round(share * a.runs)}/{a.runs}, {d['configurations']} configurations)")
    print(f"Problems where a strategy came within 2 % of the optimum after at most 10 % of the space in at least "
          f"{int(0.9 * a.runs)} of {a.runs} runs ({' / '.join(MODE_NAMES[m] for m, _ in MODES)}):\n")
    print("| space (problems, configurations each) | " + " | ".join(strategies) + " |")
    print("| --- | " + " | ".join("---" for _ in strategies) + " |")
    total = {}
    for op in ops:
        n, lo, hi = sizes[op]
        cells = []
        for name in strategies:
            vals = [counts.get((op, mode, name), 0) for mode, _ in MODES]
            for mode, v in zip([m for m, _ in MODES], vals):
                total[(mode, name)] = total.get((mode, name), 0) + v
            cells.append(" / ".join(str(v) for v in vals))
        print(f"| {op} ({n}, {lo}-{hi}) | " + " | ".join(cells) + " |")
    all_problems = sum(sizes[op][0] for op in ops)
    cells = [" / ".join(str(total.get((mode, name), 0)) for mode, _ in MODES) for name in strategies]
    print(f"| all ({all_problems}) | " + " | ".join(cells) + " |")
    if a.misses:
        for (op, mode, name), ps in sorted(misses.items()):
            print(f"\n{op}, {MODE_NAMES[mode]}, {name}: " + "; ".join(ps), file=sys.stdout)


if __name__ == "__main__":
    main()
