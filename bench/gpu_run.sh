#!/usr/bin/env bash
# Runs on the GPU host over a copy of the working tree that carries build-gpu/ (built here by bench/gpu_bundle.sh).
# Everything it measures goes under $OUT (default ./out). Usage: bench/gpu_run.sh STEP... where STEP is one of
#   info devices tests tune tune2 best stability
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/out}; mkdir -p "$out"
# The build's absolute paths (ctest files, compiled-in source root) point at /work/main: make them valid here.
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KTUNE_ROOT=/work/main KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache}
k=/work/main/build-gpu/ktune
db=$out/ktune.db
for step in "$@"; do
  echo "=== $step ($(date -u +%H:%M:%S))"
  case $step in
    info) nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv ;;
    devices) $k --db "$db" devices && $k --db "$db" devices --json > "$out/devices.json" ;;
    tests) (cd /work/main/build-gpu && ctest --output-on-failure -j 4 -L gpu 2>&1 | tee "$out/ctest-gpu.log") ;;
    tune) /usr/bin/time -f "%e s wall" $k --db "$db" tune rmsnorm 2>&1 | tee "$out/tune1.log" | grep -v '^measure \[' ;;
    tune2) /usr/bin/time -f "%e s wall" $k --db "$db" tune rmsnorm 2>&1 | tee "$out/tune2.log" | grep -v '^measure \[' ;;
    best) $k --db "$db" best rmsnorm | tee "$out/best.txt"; $k --db "$db" best rmsnorm --json > "$out/best.json" ;;
    stability) # an independent second tuning in a fresh database and cache, to compare best times per problem
      KTUNE_CACHE_DIR=/tmp/ktune-cache-2 $k --db "$out/ktune-2.db" tune rmsnorm --quiet > "$out/tune-independent.txt" 2>&1
      $k --db "$out/ktune-2.db" best rmsnorm --json > "$out/best-2.json" ;;
    *) echo "unknown step $step" ;;
  esac
done
