#!/usr/bin/env bash
# Formats the tree's C++ with .clang-format, or with --check says which files differ and fails.
# Generated headers (golden/, generated/) are left as the generator writes them, and JIT-compiled kernel templates
# (kernels/, examples/user_op/, tests/data/) as their authors wrote them: a kernel's source hash is the identity of its
# stored tunings, so reformatting one would orphan every database's results for it.
#   scripts/format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "ktune format: clang-format is not installed (apt install clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' \
  ':!:kernels/**.cu' ':!:kernels/**.cuh' ':!:examples/user_op/**.cu' ':!:examples/user_op/**.cuh' ':!:tests/data/**' ':!:**/golden/**' ':!:**/generated/**')
if [ "${1:-}" = --check ]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    echo "ktune format: ${#bad[@]} of ${#files[@]} files differ from .clang-format (run scripts/format.sh):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "ktune format: ${#files[@]} files follow .clang-format"
else
  clang-format -i "${files[@]}"
fi
