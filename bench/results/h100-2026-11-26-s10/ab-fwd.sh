#!/usr/bin/env bash
# Session 10, one device call: RMSNorm forward's one-group path (ab-fwd/one-group.patch: loads first when each block
# has one row group) against the kernel before it over the whole default space (every M, H, dtype) and Gemma's at
# decode sizes, same binary, same call; then the new kernel at odd shapes, padded and misaligned rows.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
odd=":--shape=M=3,H=1001:--shape=M=17,H=4100,S=4104:--shape=M=2,H=4096,S=4097:--shape=M=300,H=2048,S=2056:--shape=M=1,H=8200"
"$root/bench/ab_on_device.sh" "$root/bench/results/h100-2026-11-26-s10/ab-fwd/one-group.patch" 170 250 \
  rmsnorm rmsnorm_gemma:--problem=M=1:--problem=M=16 -- rmsnorm$odd
