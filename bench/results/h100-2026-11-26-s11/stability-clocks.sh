#!/usr/bin/env bash
# Session 11, one device call: is the per-run shift of small problems' event times (issue 2's "two tunings within
# 2 %", missed at 4-6 us problems since session 2) the GPU's clock? Six independent tunings of the RMSNorm problems at
# M = 1, 16, 256 (bench/gpu_run.sh stability-small: fresh process, database and compile cache each), with
# nvidia-smi sampling the SM and memory clocks, power, temperature and throttle reasons every 100 ms throughout.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,pstate,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 100 > $OUT/smi.csv 2>&1 &
smi=$!
for r in a b c d e f; do
  echo "run $r start $(date -u +%H:%M:%S.%N)" >> $OUT/runs.txt
  STABILITY_RUNS="$r" "$root/bench/gpu_run.sh" stability-small
  echo "run $r end $(date -u +%H:%M:%S.%N)" >> $OUT/runs.txt
done
kill $smi
for r in b c d e f; do python3 "$root/bench/compare_best.py" $OUT/small-a.json $OUT/small-$r.json > $OUT/small-a-$r.txt; done
tail -n 2 $OUT/small-a-*.txt
python3 - <<'PY'
import csv, datetime
runs = {}
for line in open('/tmp/o/runs.txt'):
    r, what, t = line.split()[1:4]
    runs.setdefault(r, {})[what] = t[:15]
rows = [row for row in csv.reader(open('/tmp/o/smi.csv')) if len(row) >= 7]
for r, v in runs.items():
    sel = [row for row in rows if v['start'] <= row[0].split()[1][:15] <= v['end']]
    sm = [float(x[1].split()[0]) for x in sel]; mem = [float(x[2].split()[0]) for x in sel]
    pw = [float(x[3].split()[0]) for x in sel if x[3].strip()[0].isdigit()]
    thr = sorted({x[6].strip() for x in sel})
    if sm:
        print(f"run {r}: {len(sm)} samples, SM clock min/mean/max {min(sm):.0f}/{sum(sm)/len(sm):.0f}/{max(sm):.0f} MHz, "
              f"memory {min(mem):.0f}-{max(mem):.0f} MHz, power {min(pw):.0f}-{max(pw):.0f} W, throttle {thr}")
PY
tar czf $R/stability-clocks.tgz -C /tmp/o --exclude='*.db*' .
