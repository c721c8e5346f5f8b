#!/usr/bin/env bash
# Session 6, issue 2: independent whole-space RMSNorm tunings (each a fresh process, database and compile cache, each
# preceded by `ktune devices`, which measures that process's launch floor), with the GPU's clocks, temperature and
# power sampled every 200 ms throughout (read only: nvidia-smi's query, nothing set). Pairs compared by event p50 and
# by CUPTI kernel duration (bench/compare_best.py). Usage on the GPU host: stability.sh RUN... (default: a b c)
set -uo pipefail
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
root=$(cd "$(dirname "$0")/../../.." && pwd)
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=/work/main
k=/work/main/build-gpu/ktune
runs=(${@:-a b c})
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active \
  --format=csv -lms 200 > $OUT/clocks.csv 2>&1 &
smi=$!
trap 'kill $smi 2>/dev/null; tar czf $R/stability.tgz -C $OUT --exclude="*.db*" .; ls -la $R' EXIT
for i in "${runs[@]}"; do
  echo "=== run $i $(date -u +%T)" | tee -a $OUT/marks.txt
  $k --db $OUT/run-$i.db devices | tee $OUT/devices-$i.txt | tail -3
  /usr/bin/time -f "%e s wall" env KTUNE_CACHE_DIR=/tmp/ktune-cache-$i $k --db $OUT/run-$i.db tune rmsnorm --quiet 2>&1 | tail -2
  $k --db $OUT/run-$i.db best rmsnorm --json > $OUT/run-$i.json
  echo "=== end $i $(date -u +%T)" >> $OUT/marks.txt
done
for x in "${runs[@]}"; do for y in "${runs[@]}"; do
  [[ "$x" < "$y" ]] && python3 $root/bench/compare_best.py $OUT/run-$x.json $OUT/run-$y.json > $OUT/pair-$x-$y.txt
done; done
tail -n1 $OUT/pair-*.txt
