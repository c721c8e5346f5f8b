#!/usr/bin/env bash
# On the GPU host (ktune built in build-gpu/): one space tuned live twice, each from a cold compile cache and into a
# database of its own: exhaustively, and by a search that starts every problem from the winners of the problems
# before it (transfer, the default of every search). Prints, per problem and in all, the time to a configuration
# within 2 % of the exhaustive optimum (bench/search/live_compare.py).
#   OUT=/tmp/o SPACE=decode_attention SEARCH="--strategy forest --budget 10" bench/search/live_gpu.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$root/out}; mkdir -p "$out"
space=${SPACE:-decode_attention}
read -ra search <<<"${SEARCH:---strategy forest --budget 10}"
k=$root/build-gpu/ktune
for arm in exhaustive search; do
  rm -rf "/tmp/live-cache-$arm" "$out/live-$arm.db"
  if [ "$arm" = exhaustive ]; then opts=(--strategy exhaustive); else opts=("${search[@]}"); fi
  t=$SECONDS
  KTUNE_CACHE_DIR=/tmp/live-cache-$arm "$k" --db "$out/live-$arm.db" tune "$space" "${opts[@]}" --quiet > /dev/null \
    2>> "$out/live.log"
  echo "$arm (${opts[*]}): exit $?, $((SECONDS - t)) s wall" | tee -a "$out/live.log"
done
python3 "$root/bench/search/live_compare.py" "$out/live-exhaustive.db" "$out/live-search.db" | tee "$out/live.txt"
