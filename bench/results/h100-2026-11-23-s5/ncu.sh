#!/usr/bin/env bash
# Session 5: Nsight Compute over one configuration per line of the cases below (kernel name regex, space, problem,
# configuration), each the 4th launch of that kernel in a short measurement (so after the validation launch and
# warm-up). Reports as text in $OUT/ncu-<label>.txt.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=/work/main KTUNE_CACHE_DIR=/tmp/ktune-cache
k=/work/main/build-gpu/ktune
cd /work/main
while read -r label regex space dtype problem config; do
  [ -z "$label" ] && continue
  timeout 120 ncu --clock-control none --target-processes all --kernel-name-base demangled -k "regex:$regex<" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats --section SchedulerStats --section SourceCounters \
    $k --db /tmp/ncu-$label.db tune search_spaces/$space.yaml --dtype $dtype --problem $problem --config $config \
    --force --no-cupti --min-samples 8 --max-samples 8 --quiet > $OUT/ncu-$label.txt 2>&1
  echo "$label: rc $? $(grep -E 'Duration|DRAM Throughput' $OUT/ncu-$label.txt | tr -s ' ' | tr '\n' ';')"
done < "${1:-/dev/stdin}"
