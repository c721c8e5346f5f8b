#!/usr/bin/env bash
# Session 10, one device call: the memory-bound ops that trailed torch.compile at decode sizes against the peers file
# of 2026-11-22 (RMSNorm backward, add + RMSNorm, SwiGLU, GeGLU; M = 1 and 16, every dtype), measured side by side:
# the peers script first, then ktune's tuning of the same problems, on the same machine.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
PYTHONUNBUFFERED=1 timeout 330 python3 bench/peers/measure_peers.py --ops rmsnorm_bwd,add_rmsnorm_fwd,glu_swiglu,glu_geglu \
  --axis M=1,16 --time-budget 300 --out $OUT/peers-decode-sizes.json 2>&1 | tail -3
f=":--problem=M=1:--problem=M=16"
"$root/bench/tune_on_device.sh" decsizes decsizes.db 230 rmsnorm_bwd$f add_rmsnorm$f glu_swiglu$f glu_geglu$f
