#!/usr/bin/env bash
# The INT4 GEMV's main loops in SASS for one configuration, compiled by ktune's own NVRTC path for sm_90 (no GPU
# needed), for the kernels of a git revision. Usage: sass.sh REV PROBLEM CONFIG (CONFIG without GROUP_CHUNKS for
# revisions before it); NVDISASM names nvdisasm (default: the CUDA toolkit's). sass.txt: the best configurations of
# bf16 4096^2 at M = 1 and 16 at 0130642 (session 6's kernels), 618535f and f432f0d.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
tree=$(mktemp -d); cache=$(mktemp -d)
git -C "$root" worktree add -f --detach "$tree" "$1" >/dev/null 2>&1
(cd "$tree" && KTUNE_ROOT=$tree "$root/build-main/ktune" --db "$cache/x.db" tune search_spaces/linear_int4.yaml \
  --compile-only --cache-dir "$cache" --dtype bf16 --problem "$2" --config "$3" --quiet >/dev/null)
f=$(grep -l '"linear_int4_fwd<' "$cache"/*.json)
echo "$1 $2 $3: $(grep -o '"registers": [0-9]*' "$f")"
"${NVDISASM:-/usr/local/cuda/bin/nvdisasm}" -c "${f%.json}.cubin" > "$cache/k.sass"
python3 "$root/bench/results/h100-2026-11-23-s6/sass_loops.py" "$cache/k.sass" | sed 's/^/  /'
git -C "$root" worktree remove --force "$tree"
