#!/usr/bin/env bash
# Session 11, one device call: loads first in RMSNorm backward's node path (ROWS_IN_FLIGHT > 1: the M = 16 best
# configurations) and in add + RMSNorm's one-group path (ab-norms/norms-loads-first.patch) against the kernels
# before, same binary, same call: the decode problems first (M = 1 and 16, every variant), then the whole default
# spaces of rmsnorm_bwd and add_rmsnorm (register counts moved for some large configurations). Then the new kernels
# only: odd, padded and misaligned rows, M not a multiple of the rows per block.
# Run at 6407779 (the patch reverses there; later commits moved its helpers into kernels/common).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
f=":--problem=M=1:--problem=M=16"
odd=":--shape=M=3,H=1001:--shape=M=17,H=4100,S=4104:--shape=M=2,H=4096,S=4097:--shape=M=9,H=2048:--shape=M=1,H=40:--shape=M=16,H=8192,S=8200"
bwd=":--shape=M=1,H=2050:--shape=M=1,H=4097,S=4099:--shape=M=9,H=2048:--shape=M=16,H=4100,S=4104:--shape=M=17,H=8192,S=8193:--shape=M=16,H=4096,S=4104"
"$root/bench/ab_on_device.sh" "$root/bench/results/h100-2026-11-26-s11/ab-norms/norms-loads-first.patch" 250 320 \
  rmsnorm_bwd$f add_rmsnorm$f add_rmsnorm_inplace$f add_rmsnorm_gemma$f rmsnorm_bwd add_rmsnorm \
  -- rmsnorm_bwd$bwd add_rmsnorm$odd add_rmsnorm_inplace$odd
