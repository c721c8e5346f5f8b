#!/usr/bin/env python3
"""Runs compute-sanitizer (memcheck, racecheck) over every op's tuned configurations at its smallest problems.

For each search space: the best configuration of every problem in the tuning database (`ktune best --json`), each
run at the space's smallest problem shape (fewest elements moved), in every dtype of the space, under each sanitizer
tool, through `ktune tune --config ... --force --hot` into a scratch database. A configuration that the small
problem's constraints refuse is skipped by ktune. Prints one line per (space, tool) with the error summary and the
results' statuses (a wrong result would show as invalid_result), keeps each log.

Usage (on the GPU host, LD_LIBRARY_PATH and KTUNE_ROOT set as bench/gpu_run.sh sets them):
  bench/sanitize_tuned.py --ktune build-gpu/ktune --db tuned.db --out DIR [--tools memcheck,racecheck] [SPACE...]
"""
import argparse
import concurrent.futures
import json
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
ap = argparse.ArgumentParser()
ap.add_argument("--ktune", required=True)
ap.add_argument("--db", required=True, help="the tuning database whose best configurations are checked")
ap.add_argument("--out", required=True)
ap.add_argument("--tools", default="memcheck,racecheck")
ap.add_argument("--jobs", type=int, default=12, help="sanitizer runs at once (its cost is mostly on the CPU)")
ap.add_argument("--timeout", type=float, default=300, help="seconds per (space, tool) run")
ap.add_argument("--problem", help="AXIS=V,...: check at this problem instead of each space's smallest (e.g. the "
                "decode sizes, where other paths of a kernel win); name only spaces that have these axes")
ap.add_argument("spaces", nargs="*", help="search space names (default: every YAML under search_spaces/)")
args = ap.parse_args()
out = pathlib.Path(args.out)
out.mkdir(parents=True, exist_ok=True)
spaces = args.spaces or sorted(p.stem for p in (root / "search_spaces").glob("*.yaml"))



def plan(space):
    """The (space, problem filter, configurations) to check, or a reason there is nothing to check."""
    best = subprocess.run([args.ktune, "--db", args.db, "best", space, "--json"], capture_output=True, text=True)
    if best.returncode != 0:
        return None, (best.stderr.strip().splitlines() or ["exit %d" % best.returncode])[-1]
    # `best` lists the op's results over every space that tunes it (linear_int4 and linear_int4_tails share an op):
    # keep this space's problems.
    space_json = subprocess.run([args.ktune, "space", space, "--json"], capture_output=True, text=True, check=True)
    keys = {p["problem"] for p in json.loads(space_json.stdout)["problems"]}
    rows = [r for r in json.loads(best.stdout)[0]["best"] if r["status"] == "ok" and r["problem"] in keys]
    if not rows:
        return None, "no tuned results"
    smallest = min(rows, key=lambda r: r["gbps"] * r["p50_us"] / ({"fp32": 2, "fp16": 1, "bf16": 1}[r["dtype"]]))
    problem = args.problem or ",".join(f"{k}={v}" for k, v in smallest["shape"].items())
    return (problem, sorted({r["config"] for r in rows})), None


def check(space, tool, problem, configs):
    """Every dtype of the space at `problem`, every tuned configuration the problem admits, under `tool`."""
    cmd = ["compute-sanitizer", f"--tool={tool}", "--target-processes=all", "--error-exitcode=99",
           args.ktune, "--db", str(out / f"sanitize-{space}-{tool}.db"), "tune", space, "--problem", problem,
           "--force", "--hot", "--no-cupti", "--min-samples", "6", "--max-samples", "6", "--quiet", "--json"]
    for c in configs:
        cmd += ["--config", c]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        text, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        text, rc = (e.stdout or b"").decode() + (e.stderr or b"").decode() + "\nTIMEOUT", "timeout"
    (out / f"{space}-{tool}.txt").write_text(" ".join(cmd) + "\n" + text)
    # memcheck ends with "ERROR SUMMARY: N errors", racecheck with "RACECHECK SUMMARY: N hazards displayed (E errors,
    # W warnings)", once per process it instrumented (the worker; ktune itself makes no CUDA call).
    summary = re.findall(r"ERROR SUMMARY: (\d+) error", text) + re.findall(
        r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?", text)
    counts = "?"
    try:
        counts = json.loads(text[text.index("{"):text.rindex("}") + 1])["status_counts"]
    except (ValueError, KeyError):
        pass
    errors = sum(int(n) for n in summary)
    ok = rc == 0 and errors == 0 and bool(summary)
    return ok, (f"{space:<22} {tool:<9} {problem:<34} configs {len(configs):>3}  results {counts}  "
                f"sanitizer errors {errors} (processes {len(summary)})  exit {rc}  {'ok' if ok else 'FAIL'}")


failures = 0
jobs = []
for space in spaces:
    what, why = plan(space)
    if what is None:
        print(f"{space}: {why}")
        failures += 1
        continue
    jobs += [(space, tool, *what) for tool in args.tools.split(",")]
with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
    for ok, line in pool.map(lambda j: check(*j), jobs):
        failures += not ok
        print(line, flush=True)
print(f"{len(jobs) - failures} of {len(jobs)} (space, tool) checks clean")
sys.exit(1 if failures else 0)
