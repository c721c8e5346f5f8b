#!/usr/bin/env bash
# Session 10, one device call: RMSNorm backward before the one-row path (ab-bwd-large/one-row-all.patch reversed:
# the kernel and space of 1b4f771) against the final kernel at M > 1 (the one-row path's loads are predicated on
# rows == 1 after review), bf16 and fp32, same binary, same call; then GLU's final PATH 2 (64-bit column index) at
# decode sizes and odd shapes.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
f=":--dtype=bf16:--dtype=fp32:--problem=M=16:--problem=M=256:--problem=M=4096"
odd=":--shape=M=3,I=1001:--shape=M=2,I=4096,S=4097,SO=4099:--shape=M=1,I=40,S=41,SO=40"
"$root/bench/ab_on_device.sh" "$root/bench/results/h100-2026-11-26-s10/ab-bwd-large/one-row-all.patch" 170 230 \
  rmsnorm_bwd$f -- glu_swiglu:--problem=M=1:--problem=M=16 glu_swiglu$odd
