#!/usr/bin/env bash
# Session 13: issue 3's decode sizes (M = 1 and 16, every dtype) of the final kernels, one call per half of the ops:
#   decode-all.sh NAME SPACE...   (each space narrowed to M = 1 and 16)
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
name=$1; shift
args=()
for s in "$@"; do args+=("$s:--problem=M=1:--problem=M=16"); done
bench/tune_on_device.sh $name $name.db 540 "${args[@]}"
python3 bench/targets.py /tmp/o/$name/$name.sqlite > $OUT/targets-$name.txt 2>&1
grep -E "^[a-z_]+/|decode" $OUT/targets-$name.txt
