#!/usr/bin/env bash
# Session 10, no GPU: the all_aligned helper (kernels/common/ktune_device.cuh) replaced hand-written alignment tests in
# GLU's PATH 2 and the RMSNorm loads-first paths. This compiles seven instantiations (instantiations.cu) to PTX with
# nvcc from a revision before it (REV, default 6f6572f) and from the working tree, and compares them per kernel with
# register numbers and labels masked. Output: ptx-compare.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../../.." && pwd); rev=${1:-6f6572f}
tmp=$(mktemp -d); mkdir -p "$tmp/old"; git -C "$root" archive "$rev" kernels | tar x -C "$tmp/old"
for side in old new; do
  inc=$root; [ $side = old ] && inc=$tmp/old
  nvcc -std=c++17 -arch=sm_90 -ptx -DKTUNE_NVRTC=1 -I"$inc" "$here/instantiations.cu" -o "$tmp/$side.ptx"
  awk '/^\.visible \.entry/{f=$3} f{print f"\t"$0}' "$tmp/$side.ptx" | sed -E 's/%(r|rd|p|f)[0-9]+/%\1N/g; s/BB[0-9_]+/BB/g' \
    | grep -v "\.reg " > "$tmp/$side.txt"
done
for k in $(cut -f1 "$tmp/old.txt" | sort -u); do
  d=$(diff <(grep -F "$k" "$tmp/old.txt" | cut -f2) <(grep -F "$k" "$tmp/new.txt" | cut -f2) | grep -c '^[<>]' || true)
  echo "$k  lines differing: $d"
done
rm -rf "$tmp"
