#!/usr/bin/env python3
"""The Markdown table of docs/search.md from `ktune replay ... --traces ... --json` output (stdin or a file).

One row per strategy, one column per space: score over time (the methodology's), over evaluations in brackets, and
the mean evaluations per run where a strategy stopped before the budget. ktune's strategies first, then the traced
ones (Kernel Tuner's, named kt:...); the best of each group per space in bold.
"""
import json
import sys

SHORT = {"convolution_milo-A100_T4.json.gz": "convolution, A100", "convolution_milo-A4000_T4.json.gz":
         "convolution, A4000", "dedispersion_milo-A100_T4.json.gz": "dedispersion, A100",
         "dedispersion_milo-A4000_T4.json.gz": "dedispersion, A4000"}


def main():
    data = json.load(open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin)
    spaces = [d["space"] for d in data]
    names = []
    for d in data:
        for s in d["strategies"]:
            if s["strategy"] not in names:
                names.append(s["strategy"])
    by = {(d["space"], s["strategy"]): (s, d["evaluations_per_run"]) for d in data for s in d["strategies"]}
    best = {}
    for d in data:
        for group in (False, True):
            scores = [s["score_time"] for s in d["strategies"] if s["strategy"].startswith("kt:") == group]
            best[(d["space"], group)] = max(scores) if scores else None
    print("| strategy | " + " | ".join(SHORT.get(s, s) for s in spaces) + " | mean |")
    print("| --- |" + " --- |" * (len(spaces) + 1))
    print("| budget (evaluations / s), evaluations per run | " + " | ".join(
        f"{d['budget']['evaluations'][0]}..{d['budget']['evaluations'][1]} / "
        f"{d['budget']['seconds'][0]:.0f}..{d['budget']['seconds'][1]:.0f}, {d['evaluations_per_run']}"
        for d in data) + " | |")
    for n in names:
        cells, total, count = [], 0.0, 0
        for sp in spaces:
            if (sp, n) not in by:
                cells.append("-")
                continue
            s, budget = by[(sp, n)]
            cell = f"{s['score_time']:.3f} ({s['score_evaluations']:.3f})"
            if s["score_time"] == best[(sp, n.startswith("kt:"))]:
                cell = f"**{s['score_time']:.3f}** ({s['score_evaluations']:.3f})"
            if s["mean_evaluations"] < budget - 0.5:
                cell += f" [{s['mean_evaluations']:.0f}]"
            if s["runs"] != 20:
                cell += f" {{{s['runs']} runs}}"
            cells.append(cell)
            total += s["score_time"]
            count += 1
        mean = f"{total / count:.3f}" if count == len(spaces) else ""
        print(f"| `{n}` | " + " | ".join(cells) + f" | {mean} |")


if __name__ == "__main__":
    main()
