#!/usr/bin/env bash
# The INT4 GEMV's main loop in SASS for the best configuration of bf16 M=1 N=K=4096 (WARPS 8, UNROLL 4, INTERLEAVE 2),
# compiled by ktune's own NVRTC path for sm_90 (no GPU needed), for the kernels of a git revision (and an optional
# patch on top). Usage: sass.sh REV [PATCH]; NVDISASM names nvdisasm (default: the CUDA toolkit's). Output: sass.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
tree=$(mktemp -d); cache=$(mktemp -d)
git -C "$root" worktree add -f --detach "$tree" "$1" >/dev/null
[ -n "${2:-}" ] && (cd "$tree" && patch -s -p1 < "$2")
(cd "$tree" && KTUNE_ROOT=$tree "$root/build-main/ktune" --db "$cache/x.db" tune search_spaces/linear_int4.yaml \
  --compile-only --cache-dir "$cache" --dtype bf16 --problem M=1,N=4096,K=4096 \
  --config WARPS=8,TILES_N=1,UNROLL=4,SPLIT_K=1,M_FRAGS=1,PIPE=1,PREFETCH=1,STAGES=1,INTERLEAVE=2 --quiet)
f=$(grep -l '"linear_int4_fwd<' "$cache"/*.json)
echo "$1 ${2:++ $(basename "$2")}: $(grep -o '"registers": [0-9]*' "$f")"
"${NVDISASM:-/usr/local/cuda/bin/nvdisasm}" -c "${f%.json}.cubin" > "$cache/k.sass"
python3 "$here/sass_loops.py" "$cache/k.sass"
git -C "$root" worktree remove --force "$tree"
