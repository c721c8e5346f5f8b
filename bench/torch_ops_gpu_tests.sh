#!/usr/bin/env bash
# On the GPU host, after an op's GPU script has tuned it into a database: builds ktune_torch's op library from that
# database (scripts/build_torch_ops.sh) and runs the GPU tests of python/ktune_torch that -k selects against it.
#   bench/torch_ops_gpu_tests.sh DB OUT_DIR PYTEST_K
# Writes OUT_DIR/lib/, OUT_DIR/build_lib.log and OUT_DIR/gpu_tests.log. Exits 1 when the library does not build or a
# test fails; without torch or pytest here it says so and exits 0 (nothing to run them with).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
(($# == 3)) || { echo "usage: $0 DB OUT_DIR PYTEST_K" >&2; exit 2; }
db=$1 out=$2 select=$3
if ! python3 -c "import torch, pytest" 2>/dev/null; then
  echo "no torch/pytest here: the GPU tests were not run"
  exit 0
fi
"$root/scripts/build_torch_ops.sh" --db "$db" --ktune "$root/build-gpu/ktune" --out "$out/lib" \
  > "$out/build_lib.log" 2>&1 || { tail -20 "$out/build_lib.log"; echo "building the op library failed" >&2; exit 1; }
if ! KTUNE_TORCH_LIB=$out/lib/libktune_torch_ops.so python3 -m pytest -q -p no:cacheprovider -rs \
    "$root/tests/python_torch/test_ops_gpu.py" -k "$select" > "$out/gpu_tests.log" 2>&1; then
  tail -30 "$out/gpu_tests.log"; echo "the GPU tests FAILED ($out/gpu_tests.log)" >&2; exit 1
fi
tail -3 "$out/gpu_tests.log"
