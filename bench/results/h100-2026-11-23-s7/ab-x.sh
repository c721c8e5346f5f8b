#!/usr/bin/env bash
# Session 7: x loads of the quant linear kernels. Four kernel trees in one device call, same binary (the tuner fills
# the packed weights with random bytes and the reference kernel reads them through the tree's own layout):
#   old    this session's HEAD kernels (experiments/xpf-xcoal.patch reversed)
#   xpf    + an L1 prefetch of the next step's x lines (experiments/xpf.patch)
#   xcoal  + INT4 x read as 16-byte vectors side by side across a row's four lanes (the k order of the packed layout)
#   both   both (this tree)
# INT4 bf16 at M = 1 and 16, both K.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
spaces="linear_int4:--dtype=bf16:--problem=M=1:--problem=M=16 linear_int4_k14336:--dtype=bf16:--problem=M=1:--problem=M=16"
mk() { rm -rf /tmp/$1 && cp -r "$root" /tmp/$1 && (cd /tmp/$1 && patch -s -R -p1 < "$here/experiments/xpf-xcoal.patch" && shift && for p in "$@"; do patch -s -p1 < "$here/experiments/$p" || exit 1; done); }
mk old || exit 1
mk xpf xpf.patch || exit 1
cp -r "$root" /tmp/xcoal && (cd /tmp/xcoal && patch -s -R -p1 < "$here/experiments/xpf.patch") || exit 1
for v in old xpf xcoal; do KERNEL_TREE=/tmp/$v "$root/bench/tune_on_device.sh" $v $v.db 130 $spaces; done
GPU_TESTS=${GPU_TESTS:-} "$root/bench/tune_on_device.sh" both both.db 130 $spaces
