#!/usr/bin/env bash
# Session 10, one device call: RMSNorm backward's one-row path (ab-bwd/one-row.patch) against the kernels before it at
# M = 1 (every dtype and H), same binary, same call; then the new kernels at odd one-row shapes (H not a multiple of
# the access, padded rows) and at M = 2, 3 (the general paths behind the same configurations).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
odd=":--shape=M=1,H=2050:--shape=M=1,H=4097,S=4099:--shape=M=1,H=1000,S=1008:--shape=M=2,H=2048:--shape=M=3,H=4100,S=4104"
"$root/bench/ab_on_device.sh" "$root/bench/results/h100-2026-11-26-s10/ab-bwd/one-row.patch" 120 250 \
  rmsnorm_bwd:--problem=M=1 -- rmsnorm_bwd$odd
