#!/usr/bin/env bash
# Builds ktune here for the GPU host (build-gpu/, Release) and copies beside it the shared libraries that host lacks
# (it has fmt 9 and SQLite but not yaml-cpp 0.7, muParser or Google Benchmark 1.7: see ../shared/gpu/README.md).
# Then send it with the device tool: carry ["build-gpu"], and run bench/gpu_run.sh there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
b=$root/build-gpu
cmake -S "$root" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$b" -j "$(nproc)" --target ktune ktune-worker ${KTUNE_BUNDLE_TARGETS:-ktune_gpu_tests}
mkdir -p "$b/lib"
# The example user project (examples/rmsnorm_aot) is built too, into build-gpu/example, against the generated header.
cmake -S "$root/examples/rmsnorm_aot" -B "$b/example" -G Ninja >/dev/null
cmake --build "$b/example" >/dev/null
for bin in "$b/ktune" "$b/ktune-worker" "$b"/tests/ktune_gpu_tests "$b"/bench/*_bench; do
  [ -x "$bin" ] || continue
  # grep finds nothing for a binary that needs none of them: not an error (set -e, pipefail)
  { ldd "$bin" | awk '/=>/ {print $3}' | grep -E 'yaml-cpp|muparser|benchmark|libfmt|sqlite' || true; } |
    while read -r lib; do cp -L "$lib" "$b/lib/"; done
done
du -sh "$b" --exclude=CMakeFiles
