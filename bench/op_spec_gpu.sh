#!/usr/bin/env bash
# On the GPU host, over a copy of the working tree that carries .gpu-deps/ (scripts/gpu-deps.sh): builds ktune there
# with the host's CMake (4.x), runs the GPU tests, tunes a user's op kept outside the repository
# (examples/user_op copied to /tmp: a declared op with a bool, a named choice and two alternative kernels), and, when
# BEFORE names the source tree of an earlier ktune, tunes the same problems with both builds side by side and compares
# the best times per problem (bench/compare_best.py). Results go under $OUT.
#   OUT=/tmp/o BEFORE=.before SPACES="rmsnorm softmax" PROBLEMS="--problem M=16 --dtype bf16" bench/op_spec_gpu.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/out}; mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH KTUNE_CACHE_DIR=/tmp/ktune-cache
build() {  # build SRC DIR: ktune, its worker and the GPU tests, Release
  local t0=$SECONDS
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$root/.gpu-deps/usr" \
    -DKTUNE_BUILD_BENCH=OFF > "$out/configure-$(basename "$2").log" 2>&1 || { tail -20 "$out/configure-$(basename "$2").log"; return 1; }
  cmake --build "$2" -j "$(nproc)" --target ktune ktune-worker ${3:-} > "$out/build-$(basename "$2").log" 2>&1 ||
    { grep -m5 -A5 error "$out/build-$(basename "$2").log"; return 1; }
  echo "built $1 in $((SECONDS - t0)) s with $(cmake --version | head -1)"
}
echo "=== build ($(date -u +%H:%M:%S))"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
build "$root" "$root/build-gpu" ktune_gpu_tests || exit 1
k="$root/build-gpu/ktune"
echo "=== GPU tests ($(date -u +%H:%M:%S))"
(cd "$root/build-gpu" && ctest -L gpu -j 4 --output-on-failure 2>&1 | tail -5)

echo "=== a user's op outside the repository ($(date -u +%H:%M:%S))"
rm -rf /tmp/user_op && cp -r "$root/examples/user_op" /tmp/user_op
(cd /tmp && KTUNE_ROOT="$root" /usr/bin/time -f "%e s wall" "$k" --db "$out/user.db" tune /tmp/user_op/bias_gelu.yaml \
  --quiet 2>&1 | tail -30)
KTUNE_ROOT="$root" "$k" --db "$out/user.db" best /tmp/user_op/bias_gelu.yaml | tee "$out/user-best.txt"
KTUNE_ROOT="$root" "$k" --db "$out/user.db" best /tmp/user_op/bias_gelu.yaml --json > "$out/user-best.json"
if KTUNE_ROOT="$root" "$k" --db "$out/user.db" export-header --op /tmp/user_op/bias_gelu.yaml --out /tmp/user_op/gen \
    > "$out/user-export.log" 2>&1; then
  echo "exported: $(ls /tmp/user_op/gen)"
  if [ -f /tmp/user_op/main.cu ]; then
    nvcc -std=c++17 -arch=sm_90 -I/tmp/user_op -I/tmp/user_op/gen -o /tmp/user_op/app /tmp/user_op/main.cu &&
      /tmp/user_op/app | tee "$out/user-app.txt"
  fi
else
  tail -3 "$out/user-export.log"
fi

if [ -n "${BEFORE:-}" ]; then
  echo "=== the same problems before and after ($(date -u +%H:%M:%S))"
  build "$root/$BEFORE" "$root/build-before" || exit 1
  for s in ${SPACES:-rmsnorm}; do
    for side in before after; do
      bin=$root/build-gpu/ktune; r=$root
      [ $side = before ] && { bin=$root/build-before/ktune; r=$root/$BEFORE; }
      KTUNE_ROOT=$r KTUNE_CACHE_DIR=/tmp/ktune-cache-$side "$bin" --db "$out/$side.db" tune "$s" ${PROBLEMS:-} --quiet \
        > "$out/tune-$side-$s.log" 2>&1 || { echo "$side $s failed:"; tail -5 "$out/tune-$side-$s.log"; }
    done
  done
  for side in before after; do
    bin=$root/build-gpu/ktune; [ $side = before ] && bin=$root/build-before/ktune
    r=$root; [ $side = before ] && r=$root/$BEFORE
    BIN=$bin KTUNE_ROOT=$r python3 - "$side" "$out" ${SPACES:-rmsnorm} <<'PY' > "$out/best-$side.json"
import json, subprocess, sys, os
side, out, spaces = sys.argv[1], sys.argv[2], sys.argv[3:]
bin = os.environ["BIN"]
rows = []
for s in spaces:
    rows += json.loads(subprocess.run([bin, "--db", f"{out}/{side}.db", "best", s, "--json"], capture_output=True,
                                      text=True, check=True).stdout)
print(json.dumps(rows))
PY
  done
  python3 "$root/bench/compare_best.py" "$out/best-before.json" "$out/best-after.json" | tee "$out/before-after.txt"
fi
