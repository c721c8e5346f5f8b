#!/usr/bin/env bash
# On a GPU host: ktune's tuned prefill attention and SDPA's backends timed by one harness. Builds ktune_torch's op
# library from a tuned database (scripts/build_torch_ops.sh: the exported headers, compiled ahead of time with nvcc),
# then times ktune_torch.ops.prefill_attention and each SDPA backend in one Python process with ktune's method
# (bench/attention/prefill_sdpa.py: cold L2, events, p50), every impl in turn, ROUNDS times, and prints the table.
# The worker's rank time and SDPA's come from different harnesses (C++ worker, Python loop); this compares the
# kernels with everything else equal.
#   OUT=/tmp/o bench/attention/prefill_same_harness.sh DB
# Env: PROBLEMS (default "B=1,L=512 B=16,L=512 B=1,L=2048 B=4,L=2048 B=1,L=8192"; 32 q / 8 kv heads, D 128, bf16),
# SAMPLES (default 200), ROUNDS (default 2), KTUNE (default build-gpu/ktune). Writes $OUT/same_harness/ (the library,
# sdpa.json, table.md). Fails when ktune's op failed or any impl's output is off the first impl's (ktune's) by more
# than 0.05 (bf16 outputs of magnitude <= 1).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
db=${1:?usage: prefill_same_harness.sh DB (a database holding prefill_attention results)}
dir=${OUT:-/tmp/out}/same_harness
mkdir -p "$dir"
problems=${PROBLEMS:-"B=1,L=512 B=16,L=512 B=1,L=2048 B=4,L=2048 B=1,L=8192"}
"$root/scripts/build_torch_ops.sh" --db "$db" --ktune "${KTUNE:-$root/build-gpu/ktune}" --out "$dir/lib" \
  > "$dir/build.log" 2>&1 || { tail -20 "$dir/build.log"; exit 1; }
ls "$dir"/lib/include/ktune_tuned_prefill_attention_* > /dev/null 2>&1 ||
  { echo "same_harness: no prefill_attention results in $db" >&2; exit 1; }
# shellcheck disable=SC2086  # the problems are words
KTUNE_TORCH_LIB=$dir/lib/libktune_torch_ops.so python3 "$root/bench/attention/prefill_sdpa.py" "$dir/sdpa.json" \
  $problems --ktune-torch --rounds "${ROUNDS:-2}" --samples "${SAMPLES:-200}" > "$dir/sdpa.log" 2>&1 ||
  { tail -20 "$dir/sdpa.log"; exit 1; }
python3 - "$dir" <<'PY'
import json, re, sys
d = sys.argv[1]
rows = json.load(open(f"{d}/sdpa.json"))["rows"]
impls = ["ktune_torch", "sdpa_cudnn", "sdpa_flash", "sdpa_efficient"]
rounds = sorted({r["round"] for r in rows})
keys = []
for r in rows:
    if (r["causal"], r["problem"]) not in keys:
        keys.append((r["causal"], r["problem"]))
t = {(r["causal"], r["problem"], r["impl"], r["round"]): r.get("p50_us") for r in rows}
head = " | ".join(f"{i} r{n}" for n in rounds for i in impls)
lines = [f"| variant | problem | {head} | ktune TFLOP/s | best SDPA / ktune |",
         "|---|---|" + "---|" * (len(rounds) * len(impls) + 2)]
for causal, problem in keys:
    m = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", problem)}
    flops = 4 * m["B"] * m["HQ"] * m["L"] ** 2 * m["D"] * (0.5 if causal else 1.0)
    cells = [t.get((causal, problem, i, n)) for n in rounds for i in impls]
    ours = [t.get((causal, problem, "ktune_torch", n)) for n in rounds]
    theirs = [t.get((causal, problem, i, n)) for n in rounds for i in impls[1:]]
    ours = [x for x in ours if x is not None]
    theirs = [x for x in theirs if x is not None]
    # Each side at its best round: a drifting clock then costs neither more than the other.
    ratio = f"{min(theirs) / min(ours):.2f}x" if ours and theirs else "-"
    tf = f"{flops / (min(ours) * 1e-6) / 1e12:.0f}" if ours else "-"
    lines.append(f"| {'causal' if causal else 'full'} | {problem} | "
                 + " | ".join("-" if x is None else f"{x:.1f}" for x in cells) + f" | {tf} | {ratio} |")
bad = [r for r in rows if "error" in r or r.get("max_abs_diff_vs_first", 0) > 0.05]
lines.append("Event p50s (us) of one harness and process; rN: the Nth round (every impl in turn). best SDPA / ktune: "
             "the fastest backend's best round over ktune's best round; > 1: ktune faster.")
for r in rows:
    if "error" in r:
        lines.append(f"{r['impl']} {'causal' if r['causal'] else 'full'} {r['problem']} round {r['round']}: {r['error']}")
    elif r.get("max_abs_diff_vs_first", 0) > 0.05:
        lines.append(f"CHECK {r['impl']} {r['problem']}: max |diff| {r['max_abs_diff_vs_first']:.3g} against "
                     "the first impl")
text = "\n".join(lines)
open(f"{d}/table.md", "w").write(text + "\n")
print(text)
sys.exit(1 if any(r["impl"] == "ktune_torch" or r.get("max_abs_diff_vs_first", 0) > 0.05 for r in bad) else 0)
PY
