#!/usr/bin/env bash
# Session 5: Nsight Compute's full set over one configuration (args: label regex space dtype problem config), then
# its per-instruction SASS table (stall samples per instruction) and every section with details, as text in $OUT.
set -uo pipefail
label=$1 regex=$2 space=$3 dtype=$4 problem=$5 config=$6
root=$(cd "$(dirname "$0")/../../.." && pwd)
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=/work/main KTUNE_CACHE_DIR=/tmp/ktune-cache
cd /work/main
timeout 300 ncu --clock-control none --target-processes all --kernel-name-base demangled -k "regex:$regex<" \
  --launch-skip 3 --launch-count 1 --set full --import-source no -o /tmp/$label \
  build-gpu/ktune --db /tmp/ncu-$label.db tune search_spaces/$space.yaml --dtype $dtype --problem $problem \
  --config $config --force --no-cupti --min-samples 8 --max-samples 8 --quiet > $OUT/ncu-$label-run.txt 2>&1
echo "ncu rc $?"
ncu -i /tmp/$label.ncu-rep --page details --print-details all > $OUT/ncu-$label-details.txt 2>&1
ncu -i /tmp/$label.ncu-rep --page source --print-source sass --csv > $OUT/ncu-$label-sass.csv 2>&1
ncu -i /tmp/$label.ncu-rep --page raw --csv > $OUT/ncu-$label-raw.csv 2>&1
ls -la $OUT
