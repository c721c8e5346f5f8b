#!/usr/bin/env bash
# Session 10, one device call: RMSNorm backward's dx/dw arithmetic shared by the partial and one-row paths
# (ab-bwd-refactor/dx-and-dw.patch, a refactor) against the kernels before it, bf16 at M = 1, 16, 256, 4096, same binary,
# same call; then the new kernels at odd shapes, every dtype.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
f=":--dtype=bf16:--problem=M=1:--problem=M=16:--problem=M=256:--problem=M=4096"
odd=":--shape=M=1,H=2050:--shape=M=3,H=4100,S=4104:--shape=M=300,H=1001,S=1003:--shape=M=1,H=2048,S=2050"
"$root/bench/ab_on_device.sh" "$root/bench/results/h100-2026-11-26-s10/ab-bwd-refactor/dx-and-dw.patch" 150 250 \
  rmsnorm_bwd$f -- rmsnorm_bwd$odd
