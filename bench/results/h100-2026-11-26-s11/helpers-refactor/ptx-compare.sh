#!/usr/bin/env bash
# Session 11, no GPU: the loads-first helpers (opaque, log2_of, load_words_if) moved from the softmax, add + RMSNorm
# and RMSNorm backward kernels into kernels/common/ktune_device.cuh. Compiles nine instantiations (instantiations.cu)
# to PTX with nvcc from a revision before it (REV, default HEAD) and from the working tree, and compares them per
# kernel with register numbers and labels masked. Output: ptx-compare.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../../.." && pwd); rev=${1:-HEAD}
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
