#!/usr/bin/env bash
# Multi-GPU tuning against one GPU (issue 24): tunes the same spaces with `ktune tune --gpus all` and with GPU 0 alone,
# each from a cold compile cache of its own and into a database of its own, then prints the throughput ratio
# (measurements per second, and wall time when both runs completed) and whether every problem's best agrees within
# 2 %, and writes a compact summary to $OUT (multi_gpu_summary.json, .txt, and each run's logs).
# Usage (on a GPU host, from the repository root; builds build-gpu/ when its binaries are missing):
#   bench/multi_gpu.sh
# Environment:
#   SPACES="rmsnorm:--dtype=bf16 softmax"  the spaces, each with ktune tune's own narrowing after ':' (default below)
#   ALL=1                                  every space under search_spaces/ (the whole default space of every op:
#                                          about 50 000 configurations, hours on one GPU)
#   RUN_S=200                              wall-time limit of each run; a run that hits it is compared by throughput
#   WARM=1                                 then both runs again, each on its now warm compile cache (fresh databases):
#                                          the ratio without compiling tells GPU-bound from compile-bound
#   OUT=DIR                                where the summary goes (default out/multi_gpu)
# Needs: CUDA toolkit and driver, cmake + ninja (for the build), python3.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/out/multi_gpu}
mkdir -p "$out"
run_s=${RUN_S:-200}

if [ ! -x build-gpu/ktune ] || [ ! -x build-gpu/ktune-worker ]; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$root/.gpu-deps/usr" \
    -DKTUNE_BUILD_BENCH=OFF >/dev/null
  cmake --build build-gpu --target ktune ktune-worker
fi
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:$root/build-gpu/lib:/usr/local/cuda/lib64
# The worker links cuBLAS (library baselines): the toolkit's, else the one PyTorch's wheels carry.
if ! ls /usr/local/cuda/lib64/libcublasLt.so.* >/dev/null 2>&1; then
  LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import glob, os, site
print(':'.join(sorted({os.path.dirname(p) for s in site.getsitepackages()
                       for p in glob.glob(s + '/nvidia/**/libcublasLt.so.*', recursive=True)})))" 2>/dev/null || true)
fi
export KTUNE_ROOT=$root
ktune=$root/build-gpu/ktune

# Default: three memory-bound ops at bf16, every problem, their whole default space (exhaustive): about 2 300
# configurations, a few minutes on one H100.
if [ -n "${ALL:-}" ]; then
  read -ra spaces <<<"$(ls search_spaces | sed 's/\.yaml$//' | tr '\n' ' ')"
else
  read -ra spaces <<<"${SPACES:-rmsnorm:--dtype=bf16 softmax:--dtype=bf16 rope_neox:--dtype=bf16}"
fi
gpus=$(nvidia-smi -L | wc -l)
echo "multi_gpu: $gpus GPUs; spaces: ${spaces[*]}; each run at most ${run_s} s" | tee "$out/multi_gpu_summary.txt"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# run NAME TUNE-OPTIONS...: every space in turn into a database of its own; the compile cache is NAME's, cold, or for
# NAME-warm the one NAME left; prints the wall seconds.
run() {
  local name=$1 cache=${1%-warm}
  shift
  mkdir -p "$work/$name" "$out/$name"
  local start end left
  start=$(date +%s.%N)
  for spec in "${spaces[@]}"; do
    IFS=: read -ra parts <<<"$spec"
    left=$(python3 -c "import time; print(int($run_s - (time.time() - $start)))")
    # Past the limit, stop: a space started with a second left still starts its workers and calibrates (seconds each;
    # with ALL=1 that alone overran a 400 s call on 2026-11-27).
    ((left >= 5)) || break
    KTUNE_CACHE_DIR=$work/$cache/cache "$ktune" --db "$work/$name/results.db" tune "${parts[0]}" "${parts[@]:1}" \
      "$@" --time "$left" --quiet >"$out/$name/${parts[0]}.txt" 2>"$out/$name/${parts[0]}.log" || true
  done
  end=$(date +%s.%N)
  python3 -c "print($end - $start)"
}
# compare ALL_DB ONE_DB ALL_S ONE_S LABEL: the throughput ratio and the best configurations' agreement, appended to
# the summary (.txt) and written to multi_gpu_summary[_LABEL].json (cold: no suffix).
compare() {
python3 - "$1" "$2" "$3" "$4" "$gpus" "$out" "$5" <<'PY'
import json, sqlite3, sys
multi_db, single_db, multi_s, single_s, gpus, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
label = sys.argv[7]

def load(path):
    c = sqlite3.connect(path)
    rank = "CASE WHEN m.ranked_by = 'kernel' AND m.kernel_us > 0 THEN m.kernel_us ELSE m.p50_us END"
    best = {}
    for op, variant, problem, config, t in c.execute(
            f"SELECT k.op, k.variant, p.key, cf.key, {rank} FROM measurements m JOIN kernels k ON k.id = m.kernel_id "
            "JOIN problems p ON p.id = m.problem_id JOIN configurations cf ON cf.id = m.configuration_id "
            "WHERE m.status = 'ok' AND m.p50_us > 0"):
        key = (op, variant, problem)
        if key not in best or t < best[key][1]:
            best[key] = (config, t)
    measured = c.execute("SELECT count(*) FROM measurements").fetchone()[0]
    limited = c.execute("SELECT count(*) FROM runs WHERE status = 'time_limit'").fetchone()[0]
    devices = [r[0] for r in c.execute("SELECT DISTINCT device_key FROM runs")]
    return best, measured, limited, devices

m_best, m_n, m_limited, m_devices = load(multi_db)
s_best, s_n, s_limited, s_devices = load(single_db)
common = sorted(set(m_best) & set(s_best))
disagree = []
for k in common:
    (mc, mt), (sc, st) = m_best[k], s_best[k]
    rel = abs(mt - st) / st
    if rel > 0.02:
        disagree.append({"problem": "/".join(k), "all_gpus": [mc, mt], "one_gpu": [sc, st], "rel": round(rel, 4)})
worst = max((abs(m_best[k][1] - s_best[k][1]) / s_best[k][1] for k in common), default=0.0)
complete = m_limited == 0 and s_limited == 0
summary = {
    "gpus": gpus,
    "all_gpus": {"seconds": round(multi_s, 1), "measurements": m_n, "per_s": round(m_n / multi_s, 2),
                 "hit_time_limit": m_limited > 0, "devices": m_devices},
    "one_gpu": {"seconds": round(single_s, 1), "measurements": s_n, "per_s": round(s_n / single_s, 2),
                "hit_time_limit": s_limited > 0, "devices": s_devices},
    "throughput_ratio": round((m_n / multi_s) / (s_n / single_s), 3),
    "wall_ratio": round(single_s / multi_s, 3) if complete else None,
    "problems_compared": len(common),
    "same_best_config": sum(m_best[k][0] == s_best[k][0] for k in common),
    "best_within_2pct": len(common) - len(disagree),
    "worst_best_difference": round(worst, 4),
    "disagreements": disagree[:20],
}
suffix = "" if label == "cold" else "_" + label
json.dump(summary, open(f"{out}/multi_gpu_summary{suffix}.json", "w"), indent=1)
target = 3.5 if gpus >= 4 else 1.8 if gpus >= 2 else 1.0
lines = [
    f"{label} compile caches:",
    f"all GPUs: {m_n} measurements in {multi_s:.1f} s ({m_n / multi_s:.2f}/s){' (time limit hit)' if m_limited else ''}",
    f"one GPU:  {s_n} measurements in {single_s:.1f} s ({s_n / single_s:.2f}/s){' (time limit hit)' if s_limited else ''}",
    f"throughput ratio {summary['throughput_ratio']:.2f}x on {gpus} GPUs (target >= {target}x)"
    + (f", wall-time ratio {summary['wall_ratio']:.2f}x" if complete else ""),
    f"best configurations: {summary['best_within_2pct']} of {len(common)} problems within 2 % "
    f"(worst {100 * worst:.2f} %), {summary['same_best_config']} the same configuration",
]
for d in disagree[:5]:
    lines.append(f"  {d['problem']}: all GPUs {d['all_gpus']}, one GPU {d['one_gpu']} ({100 * d['rel']:.1f} %)")
with open(f"{out}/multi_gpu_summary.txt", "a") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
}
multi_s=$(run all_gpus --gpus all)
single_s=$(run one_gpu --device 0)
compare "$work/all_gpus/results.db" "$work/one_gpu/results.db" "$multi_s" "$single_s" cold
if [ -n "${WARM:-}" ]; then
  multi_s=$(run all_gpus-warm --gpus all)
  single_s=$(run one_gpu-warm --device 0)
  compare "$work/all_gpus-warm/results.db" "$work/one_gpu-warm/results.db" "$multi_s" "$single_s" warm
fi
