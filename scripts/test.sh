#!/usr/bin/env bash
# Set up (packages, build), then run the tests. GPU tests (label gpu) run when an NVIDIA driver is present and are
# skipped, with a message saying so, when it is not.
#   scripts/test.sh [ctest options...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" "$root/build"
cd "$root/build"
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' || [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ]; then
  ctest --output-on-failure -j "$(nproc)" "$@"
else
  gpu_tests=$(ctest -N -L gpu 2>/dev/null | sed -n 's/^Total Tests: //p')
  echo "ktune: no NVIDIA driver (libcuda.so.1) on this machine: skipping the ${gpu_tests:-0} GPU tests (label gpu)."
  ctest --output-on-failure -j "$(nproc)" -LE gpu "$@"
  echo "ktune: skipped ${gpu_tests:-0} GPU tests: no NVIDIA driver here. Run scripts/test.sh on a GPU host for them."
fi
