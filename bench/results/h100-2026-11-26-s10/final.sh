#!/usr/bin/env bash
# Session 10's final kernels, one device call: GPU tests; PyTorch's peers of the ops changed this session at decode
# sizes (SwiGLU, GeGLU, RMSNorm backward; M = 1 and 16, every dtype), then ktune's tuning of the same problems on the
# same machine (side by side), the concatenated GLU layouts too; RMSNorm backward's one-row path at odd shapes.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
PYTHONUNBUFFERED=1 timeout 200 python3 bench/peers/measure_peers.py --ops glu_swiglu,glu_geglu,rmsnorm_bwd \
  --axis M=1,16 --time-budget 170 --out $OUT/peers-final.json 2>&1 | tail -2
f=":--problem=M=1:--problem=M=16"
odd=":--shape=M=1,H=2050:--shape=M=1,H=1001:--shape=M=1,H=4097,S=4099:--shape=M=1,H=2048,S=2050"
GPU_TESTS=1 "$root/bench/tune_on_device.sh" final final.db 330 rmsnorm_bwd$f glu_swiglu$f glu_geglu$f \
  glu_swiglu_cat$f glu_geglu_cat$f rmsnorm_bwd$odd
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
