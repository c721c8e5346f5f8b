#!/usr/bin/env bash
# Session 8, one device call on the final kernels: GPU tests; the memory-bound ops changed this session at decode sizes
# (M = 1 and 16, every dtype: RMSNorm backward, softmax, add + RMSNorm and its in-place and Gemma variants) for the
# targets against the peers file; softmax's large rows (M = 4096, bf16) for the bandwidth targets; INT4 at 4096^2.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
f=":--problem=M=1:--problem=M=16"
GPU_TESTS=1 "$root/bench/tune_on_device.sh" final final.db 560 rmsnorm_bwd$f softmax$f add_rmsnorm$f \
  add_rmsnorm_inplace$f add_rmsnorm_gemma$f softmax:--problem=M=4096:--dtype=bf16 \
  linear_int4:--dtype=bf16:--problem=N=4096,K=4096
