#!/usr/bin/env bash
# Checks without a GPU that a kernel refactor changed no code: compiles the explicit instantiations in a .cu file
# (INSTANTIATIONS, which includes kernels/... headers from the repository root) to PTX with nvcc, once against the
# kernels/ of revision REV (default HEAD) and once against the working tree, and prints per kernel how many PTX lines
# differ with register numbers and labels masked (0: the same code). Usage: bench/ptx_compare.sh INSTANTIATIONS [REV]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd); file=$(realpath "$1"); rev=${2:-HEAD}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/old"; git -C "$root" archive "$rev" kernels | tar x -C "$tmp/old"
for side in old new; do
  inc=$root; [ $side = old ] && inc=$tmp/old
  nvcc -std=c++17 -arch=sm_90 -ptx -DKTUNE_NVRTC=1 -I"$inc" "$file" -o "$tmp/$side.ptx"
  awk '/^\.visible \.entry/{f=$3} f{print f"\t"$0}' "$tmp/$side.ptx" | sed -E 's/%(r|rd|p|f|rs)[0-9]+/%\1N/g; s/BB[0-9_]+/BB/g' \
    | grep -v "\.reg " > "$tmp/$side.txt"
done
for k in $(cut -f1 "$tmp/old.txt" | sort -u); do
  d=$(diff <(grep -F "$k" "$tmp/old.txt" | cut -f2) <(grep -F "$k" "$tmp/new.txt" | cut -f2) | grep -c '^[<>]' || true)
  echo "$k  lines differing: $d"
done
