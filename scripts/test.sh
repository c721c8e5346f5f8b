#!/usr/bin/env bash
# Set up (packages, build), then run the tests. GPU tests (label gpu) run when an NVIDIA driver is present and are
# skipped, with a message saying so, when it is not.
#   scripts/test.sh [ctest options...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" "$root/build"
# ktune_torch's Python tests need torch, transformers and pytest: a venv outside the build (kept between runs) gets
# them from PyPI unless KTUNE_TORCH_TESTS=0. PyPI's torch is the CUDA build: a 540 MB wheel, about 5.6 GB installed
# with its nvidia-* libraries, about 5 minutes the first time (the CPU-only index is not reachable here). If the
# install fails, those tests skip and say so.
if [ "${KTUNE_TORCH_TESTS:-1}" = 1 ]; then
  venv=${KTUNE_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ktune/torch-venv}
  if ! "$venv/bin/python" -c "import torch, transformers, pytest" >/dev/null 2>&1; then
    echo "ktune: installing torch, transformers and pytest into $venv for the ktune_torch tests (KTUNE_TORCH_TESTS=0 skips)"
    { python3 -m venv "$venv" && "$venv/bin/pip" install -q torch transformers pytest numpy; } ||
      echo "ktune: could not install torch into $venv: the ktune_torch Python tests will skip"
  fi
  export KTUNE_TORCH_PYTHON=$venv/bin/python
fi
cd "$root/build"
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' || [ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ]; then
  ctest --output-on-failure -j "$(nproc)" "$@"
else
  gpu_tests=$(ctest -N -L gpu 2>/dev/null | sed -n 's/^Total Tests: //p')
  echo "ktune: no NVIDIA driver (libcuda.so.1) on this machine: skipping the ${gpu_tests:-0} GPU tests (label gpu)."
  ctest --output-on-failure -j "$(nproc)" -LE gpu "$@"
  echo "ktune: skipped ${gpu_tests:-0} GPU tests: no NVIDIA driver here. Run scripts/test.sh on a GPU host for them."
fi
