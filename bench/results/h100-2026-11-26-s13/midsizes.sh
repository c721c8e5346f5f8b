#!/usr/bin/env bash
# Session 13, one device call: issue 3's softmax at M = 1, 16, 256 (every dtype; the mid-size problems, 4 to 64 MB
# moved, and the decode sizes) beside the copy roofline in one database, so that bench/targets.py prints each
# mid-size problem against a copy of the same bytes, same method.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
R=$OUT
bench/tune_on_device.sh midsizes midsizes.db 500 copy \
  "copy:--shape=N=128256:--shape=N=256512:--shape=N=2052096:--shape=N=4104192:--shape=N=8208384:--shape=N=16416768" \
  "softmax:--problem=M=1:--problem=M=16:--problem=M=256"
python3 bench/targets.py /tmp/o/midsizes/midsizes.sqlite --detail > $R/targets.txt 2>&1
grep -A3 "^softmax" $R/targets.txt; grep "softmax/fwd" $R/targets.txt | head -30
