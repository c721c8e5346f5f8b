#!/usr/bin/env bash
# Session 7: the quant linear kernels' fast path with a step's chunk pairs sharing their group (GROUP_CHUNKS 2 at G = 128)
# (this tree) against the kernels before (experiments/group-chunks.patch reversed; same binary, other JIT
# sources). bf16 default spaces, old then new; then the tails spaces (odd shapes, every dtype) on the new kernels.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
spaces="linear_int4:--dtype=bf16 linear_int4_k14336:--dtype=bf16 "
rm -rf /tmp/old && cp -r "$root" /tmp/old && (cd /tmp/old && patch -s -R -p1 < "$here/experiments/group-chunks.patch") || exit 1
KERNEL_TREE=/tmp/old "$root/bench/tune_on_device.sh" old old.db 200 $spaces
GPU_TESTS=${GPU_TESTS:-} "$root/bench/tune_on_device.sh" new new.db 330 $spaces linear_int4_tails
