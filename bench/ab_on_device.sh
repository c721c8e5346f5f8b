#!/usr/bin/env bash
# An A/B of kernel sources in one device call: the kernels before a change (a copy of this tree with PATCH reversed:
# the same binary, other JIT sources) against this tree's, on the same spaces; then, on this tree's kernels only, the
# spaces after `--` (the odd shapes' validation, say). Usage (on the GPU host, from the device tool; carry as for
# bench/tune_on_device.sh):
#   bench/ab_on_device.sh PATCH OLD_SECONDS NEW_SECONDS SPACE[:FILTER...]... [-- SPACE[:FILTER...]...]
# Results: $OUT/old.tgz and $OUT/new.tgz from bench/tune_on_device.sh; GPU_TESTS=1 runs the GPU tests before the new
# kernels. Compare them with bench/compare_best.py over `ktune best --json` of the two databases.
set -uo pipefail
patch=$(realpath "$1") old_seconds=$2 new_seconds=$3; shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
spaces=() extra=()
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then shift; extra=("$@"); break; fi
  spaces+=("$1"); shift
done
rm -rf /tmp/ab-old && cp -r "$root" /tmp/ab-old && (cd /tmp/ab-old && patch -s -R -p1 < "$patch") || exit 1
KERNEL_TREE=/tmp/ab-old "$root/bench/tune_on_device.sh" old old.db "$old_seconds" "${spaces[@]}"
GPU_TESTS=${GPU_TESTS:-} "$root/bench/tune_on_device.sh" new new.db "$new_seconds" "${spaces[@]}" "${extra[@]}"
