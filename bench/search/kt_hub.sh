#!/usr/bin/env bash
# Kernel Tuner's strategies beside ktune's on the four benchmark-hub spaces (docs/search.md, "Kernel Tuner's
# strategies on the same spaces"): Kernel Tuner in simulation mode writes traces (kt_replay.py), `ktune replay
# --traces` scores them with ktune's strategies over the same runs and budget, kt_table.py prints the table.
#   bench/search/kt_hub.sh [OUT_DIR]     (default /tmp/kt-hub; about 45 min on 2 busy cores)
# Needs build/ktune and a Python with kernel_tuner (PYTHON, default /tmp/ktvenv/bin/python):
#   python3 -m venv /tmp/ktvenv && /tmp/ktvenv/bin/pip install kernel_tuner==1.5.0
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/kt-hub}
py=${PYTHON:-/tmp/ktvenv/bin/python}
hub=${HUB:-../shared/benchmark_hub}
mkdir -p "$out"
strategies=(random_sample simulated_annealing genetic_algorithm diff_evo greedy_ils pso firefly_algorithm
            dual_annealing mls greedy_mls)
traces=()
for space in convolution_milo-A4000 dedispersion_milo-A4000 convolution_milo-A100 dedispersion_milo-A100; do
  "$py" -W ignore bench/search/kt_replay.py "$hub/${space}_T4.json.gz" --runs 20 \
    $(printf -- '--strategy %s ' "${strategies[@]}") --out "$out/$space.json"
  traces+=(--traces "$out/$space.json")
done
# bayes_opt only where the budget is about 700 evaluations: 10-20 s a run there, far longer at 4200-5564.
for space in convolution_milo-A4000 dedispersion_milo-A4000; do
  "$py" -W ignore bench/search/kt_replay.py "$hub/${space}_T4.json.gz" --runs 20 --strategy bayes_opt \
    --out "$out/$space-bayes_opt.json"
  traces+=(--traces "$out/$space-bayes_opt.json")
done
build/ktune replay "$hub"/*_T4.json.gz "${traces[@]}" --strategy random --strategy annealing --strategy genetic \
  --strategy pattern --strategy forest --runs 20 --json > "$out/table.json"
python3 bench/search/kt_table.py "$out/table.json"
