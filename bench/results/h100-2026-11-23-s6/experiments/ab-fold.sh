#!/usr/bin/env bash
# Session 6: INT4 with the magic and zero point taken off after the mma (x summed per chunk by an mma against ones)
# and unpredicated weight loads (this tree) against the committed kernels (fold.patch reversed): bf16 default INT4
# spaces, old then new, then the INT4 tails (every dtype) on the new kernels for validation.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../../.." && pwd)
spaces="linear_int4:--dtype=bf16 linear_int4_k14336:--dtype=bf16"
rm -rf /tmp/old && cp -r "$root" /tmp/old && (cd /tmp/old && patch -s -R -p1 < "$here/${PATCH:-fold.patch}") || exit 1
KERNEL_TREE=/tmp/old "$root/bench/tune_on_device.sh" old old.db 120 $spaces
"$root/bench/tune_on_device.sh" new new.db 240 $spaces linear_int4_tails linear_int8_tails
