#!/usr/bin/env bash
# Builds ktune's host code with AddressSanitizer and UndefinedBehaviorSanitizer (-DKTUNE_SANITIZE=ON) in its own
# build folder, then runs the tests that need no GPU (labels unit; nvrtc on request). Any sanitizer report fails the
# test it happens in: UBSan halts on the first error, ASan on memory errors, LeakSanitizer at exit. The CLI tests run
# the sanitized ktune binary itself, so bad input through the command line is covered too.
#   scripts/sanitize.sh [ctest options...]      e.g. scripts/sanitize.sh -R cli
#   SANITIZE_BUILD=dir     build folder (default: build-asan)
#   SANITIZE_NVRTC=1       also run the NVRTC compile tests (label nvrtc: slow, minutes)
# Needs what scripts/setup.sh needs (it installs the Debian packages); no GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SANITIZE_BUILD:-$root/build-asan}
# --as-needed: Debian's gcc drops it from its default link options under -fsanitize, and then every binary linked with
# NVRTC records a dependency on the driver stub (libcuda.so.1) it never calls, so nothing would start without a GPU.
KTUNE_CMAKE_ARGS="-DKTUNE_SANITIZE=ON -DKTUNE_BUILD_BENCH=OFF -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed ${KTUNE_CMAKE_ARGS:-}" \
  "$root/scripts/setup.sh" "$build"

# Leaks inside libraries we do not own and cannot fix (NVRTC keeps process-lifetime allocations).
suppressions="$build/lsan.supp"
cat >"$suppressions" <<'EOF'
leak:libnvrtc
leak:libnvrtc-builtins
leak:libcuda
EOF
# protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap would be (GPU hosts only; harmless here).
export ASAN_OPTIONS="detect_leaks=1:protect_shadow_gap=0:check_initialization_order=1:strict_init_order=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$suppressions:${LSAN_OPTIONS:-}"

exclude="gpu|nvrtc"
[ "${SANITIZE_NVRTC:-0}" = 1 ] && exclude="gpu"
cd "$build"
echo "ktune sanitize: running the tests (excluding labels: $exclude) under ASan + UBSan"
ctest --output-on-failure -j "$(nproc)" -LE "$exclude" "$@"
echo "ktune sanitize: no sanitizer findings in the tests run"
