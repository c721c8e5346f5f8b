#!/usr/bin/env bash
# The main job: set up (packages, build), measure this machine's GPUs, and tune an op (default: rmsnorm) into the
# SQLite results database (results/ktune.db unless --db/KTUNE_DB says otherwise). Without a GPU it says so and runs
# a compile-only sweep of the whole search space, which fails (exit 1) when a kernel does not compile.
#   scripts/tune.sh [OP] [ktune tune options...]      e.g. scripts/tune.sh rmsnorm --dtype bf16
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" "$root/build"
ktune="$root/build/ktune"
export KTUNE_ROOT=${KTUNE_ROOT:-$root}  # this checkout's kernels and spaces, from whatever folder the script runs in
op=${1:-rmsnorm}; shift || true
if "$ktune" devices; then
  exec "$ktune" tune "$op" "$@"
else
  rc=$?
  if [ "$rc" -eq 3 ]; then
    echo "ktune: no NVIDIA GPU here, so this is a compile-only sweep of $op (nothing is timed)." >&2
    exec "$ktune" tune "$op" --compile-only "$@"
  fi
  exit "$rc"
fi
