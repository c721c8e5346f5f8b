#!/usr/bin/env bash
# CTest driver of the ktune_torch Python tests (tests/python_torch/test_*.py, pytest):
#   run.sh cpu    the tests that need no GPU (label python)
#   run.sh gpu    the GPU tests (label gpu; needs the op library built from a tuned database: KTUNE_TORCH_LIB)
# Uses the first Python among $KTUNE_TORCH_PYTHON, the venv scripts/test.sh makes (~/.cache/ktune/torch-venv, or
# $KTUNE_TORCH_VENV) and python3 that imports torch, transformers and pytest; with none it says so and skips.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
which=${1:-cpu}
py=""
venv=${KTUNE_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/ktune/torch-venv}
for c in "${KTUNE_TORCH_PYTHON:-}" "$venv/bin/python" python3; do
  [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 || continue
  if "$c" -c "import torch, transformers, pytest" >/dev/null 2>&1; then py=$c; break; fi
done
if [ -z "$py" ]; then
  echo "ktune_torch tests skipped: no Python with torch, transformers and pytest here" \
       "(scripts/test.sh installs them into $venv unless KTUNE_TORCH_TESTS=0)"
  exit 0
fi
# The library the synthetic build test made, for the packing comparison (unless the caller names one).
if [ -z "${KTUNE_TORCH_LIB:-}" ] && [ -f "${KTUNE_BUILD_DIR:-/nonexistent}/ktune_torch_synthetic/libktune_torch_ops.so" ]; then
  export KTUNE_TORCH_LIB=$KTUNE_BUILD_DIR/ktune_torch_synthetic/libktune_torch_ops.so
fi
echo "ktune_torch tests with $py (torch $("$py" -c 'import torch; print(torch.__version__)')), library: ${KTUNE_TORCH_LIB:-default}"
cd "$here"
if [ "$which" = gpu ]; then
  exec "$py" -m pytest -q -rs -p no:cacheprovider test_ops_gpu.py
fi
exec "$py" -m pytest -q -p no:cacheprovider test_ops_cpu.py test_bench_cpu.py
