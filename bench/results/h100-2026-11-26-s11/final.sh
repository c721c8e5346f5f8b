#!/usr/bin/env bash
# Session 11, one device call: first the new add + RMSNorm kernels at odd, padded and misaligned rows and M not a
# multiple of the rows per block (all three variants); then the ops changed this session against PyTorch side by side
# at decode sizes (M = 1 and 16, every dtype): the peers script (eager, fused, torch.compile), then ktune's tuning of
# the same problems, on the same machine.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
odd=":--shape=M=3,H=1001:--shape=M=17,H=4100,S=4104:--shape=M=2,H=4096,S=4097:--shape=M=9,H=2048:--shape=M=16,H=8192,S=8200:--shape=M=1,H=2050"
"$root/bench/tune_on_device.sh" odd odd.db 60 add_rmsnorm$odd add_rmsnorm_inplace$odd add_rmsnorm_gemma$odd
PYTHONUNBUFFERED=1 timeout 280 python3 bench/peers/measure_peers.py \
  --ops add_rmsnorm_fwd,rmsnorm_bwd,softmax_fwd,glu_swiglu,glu_geglu --axis M=1,16 --time-budget 250 \
  --out $OUT/peers-decode.json 2>&1 | tail -3
f=":--problem=M=1:--problem=M=16"
"$root/bench/tune_on_device.sh" decode decode.db 220 add_rmsnorm$f rmsnorm_bwd$f softmax$f glu_swiglu$f glu_geglu$f
