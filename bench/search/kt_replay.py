#!/usr/bin/env python3
"""Kernel Tuner's own strategies replayed on brute-forced T4 spaces, as traces that `ktune replay --traces` scores.

Runs Kernel Tuner (PyPI `kernel_tuner`, simulation mode) on a Kernel Tuner T4 result file (such as the benchmark
hub's, ../shared/benchmark_hub/): the T4 file becomes a Kernel Tuner cache file (every configuration with its time, or
its failure, and its compile, verification and benchmark times), each strategy runs `--runs` times with seeds
`--seed`, `--seed + 1`, ... (Python's `random` and NumPy's global generator are seeded before each run; Kernel Tuner
1.5 has no seed of its own for these strategies) and at most `--budget` unique evaluations, and each run's unique
evaluations are written in order with the strategy's own time (Kernel Tuner's `strategy_time`, in seconds) before each.
`ktune replay FILE --traces OUT.json` then charges every evaluation what ktune's own replay charges it (the T4 file's
recorded compile, framework, search-algorithm, validation and benchmark times) plus that own time, and scores the runs
with ktune's implementation of the methodology (tuner/replay/methodology.cpp), beside ktune's strategies.

The budget defaults to ktune replay's: twice the evaluations in which random search closes 96 % of the gap between the
space's median and its optimum (at least 100), computed here as tuner/replay/methodology.cpp computes it.

    python3 -m venv /tmp/ktvenv && /tmp/ktvenv/bin/pip install kernel_tuner==1.5.0
    /tmp/ktvenv/bin/python bench/search/kt_replay.py ../shared/benchmark_hub/convolution_milo-A100_T4.json.gz \
        --runs 20 --out /tmp/kt-conv-a100.json
    build/ktune replay ../shared/benchmark_hub/convolution_milo-A100_T4.json.gz --traces /tmp/kt-conv-a100.json \
        --strategy forest --runs 20

Traces format (JSON): {"space": T4 file name, "tool": "kernel_tuner 1.5.0", "parameters": [names],
"strategies": [{"strategy": "kt:NAME", "runs": [{"seed": 1, "configs": [[values in parameters' order], ...],
"own_time_s": [seconds, ...], "wall_s": seconds}]}]}.
"""
import argparse
import gzip
import json
import math
import os
import random
import sys
import tempfile
import time
import warnings

import numpy as np

DEFAULT_STRATEGIES = ["random_sample", "simulated_annealing", "genetic_algorithm", "diff_evo", "greedy_ils", "pso",
                      "firefly_algorithm", "dual_annealing", "mls", "greedy_mls", "bayes_opt"]


def read_t4(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def methodology_budget(results, percentile=0.96):
    """ktune replay's default evaluations per run: max(100, 2 x the budget's end), as methodology.cpp cutoff()."""
    values = sorted(r["measurements"][0]["value"] for r in results if r["invalidity"] == "correct")
    n = len(values)
    median = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    target = values[0] + (median - values[0]) * (1 - percentile)
    i = 0
    while i < n and values[n - 1 - i] > target:
        i += 1
    end = n if i >= n else math.ceil((i + 1) / (n - i))
    return min(max(100, 2 * max(end, 1)), len(results))


def write_cache(t4, path, name):
    """The T4 file as a Kernel Tuner cache file; returns (tune_params, the set of configurations)."""
    results = [r for r in t4["results"] if r["invalidity"] != "constraints"]
    keys = list(results[0]["configuration"].keys())
    tune_params = {k: sorted({r["configuration"][k] for r in results}) for k in keys}
    failure = {"compile": "CompilationFailedConfig", "runtime": "RuntimeFailedConfig",
               "correctness": "RuntimeFailedConfig"}
    cache = {}
    for r in results:
        cfg = [r["configuration"][k] for k in keys]
        t = r["times"]
        entry = dict(r["configuration"])
        entry["time"] = (r["measurements"][0]["value"] if r["invalidity"] == "correct"
                         else failure.get(r["invalidity"], "RuntimeFailedConfig"))
        entry["compile_time"] = t.get("compilation", 0) or 0
        entry["verification_time"] = t.get("validation", 0) or 0
        entry["benchmark_time"] = sum(t.get("runtimes", []) or [])
        entry["strategy_time"] = 0
        entry["framework_time"] = 0
        entry["timestamp"] = r.get("timestamp", "")
        cache[",".join(str(v) for v in cfg)] = entry
    with open(path, "w") as f:
        json.dump({"device_name": name, "kernel_name": "replayed", "problem_size": [1, 1, 1],
                   "tune_params_keys": keys, "tune_params": tune_params, "objective": "time", "cache": cache}, f)
    return tune_params, {tuple(r["configuration"][k] for k in keys) for r in results}


def run_once(kt, cachefile, name, tune_params, valid, strategy, budget, seed):
    random.seed(seed)
    np.random.seed(seed)
    keys = list(tune_params)

    def in_space(p):  # the restriction: the T4 file's configurations
        return tuple(p[k] for k in keys) in valid

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = kt.tune_kernel("replayed", "/* simulated */", (1, 1, 1), [], tune_params,
                                    restrictions=[in_space], strategy=strategy,
                                    strategy_options={"max_fevals": budget}, cache=cachefile,
                                    simulation_mode=True, quiet=True)
    wall = time.perf_counter() - start
    seen, configs, own = set(), [], []
    pending = 0.0
    for r in results:
        pending += (r.get("strategy_time", 0) or 0) / 1000
        cfg = tuple(r[k] for k in keys)
        if cfg in seen:
            continue  # a revisit, served from the cache: no evaluation, its strategy time carries over
        seen.add(cfg)
        configs.append([int(v) if float(v).is_integer() else v for v in cfg])
        own.append(pending)
        pending = 0.0
    return {"seed": seed, "configs": configs[:budget], "own_time_s": own[:budget], "wall_s": round(wall, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("t4", help="a brute-forced Kernel Tuner T4 file (.json or .json.gz)")
    ap.add_argument("--strategy", action="append", help=f"repeatable (default: {' '.join(DEFAULT_STRATEGIES)})")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget", type=int, help="unique evaluations per run (default: ktune replay's)")
    ap.add_argument("--out", required=True, help="the traces (JSON)")
    a = ap.parse_args()

    import kernel_tuner as kt
    from importlib.metadata import version

    t4 = read_t4(a.t4)
    name = os.path.basename(a.t4)
    budget = a.budget or methodology_budget(t4["results"])
    out = {"space": name, "tool": f"kernel_tuner {version('kernel_tuner')}", "budget": budget, "strategies": []}
    with tempfile.TemporaryDirectory() as tmp:
        cachefile = os.path.join(tmp, "cache.json")
        tune_params, valid = write_cache(t4, cachefile, name)
        out["parameters"] = list(tune_params)
        for s in a.strategy or DEFAULT_STRATEGIES:
            runs = []
            t0 = time.perf_counter()
            for r in range(a.runs):
                runs.append(run_once(kt, cachefile, name, tune_params, valid, s, budget, a.seed + r))
            lengths = [len(r["configs"]) for r in runs]
            print(f"{name} {s}: {a.runs} runs, {min(lengths)}..{max(lengths)} evaluations of {budget}, "
                  f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            out["strategies"].append({"strategy": "kt:" + s, "runs": runs})
            with open(a.out, "w") as f:  # after every strategy, so that a long run can be stopped
                json.dump(out, f)


if __name__ == "__main__":
    main()
