#!/usr/bin/env bash
# Session 10, one device call: experiments/glu_min.yaml (GLU kernels as short as torch.compile's) beside the tuned
# glu_fwd at the same decode sizes (SwiGLU, M = 1 and 16, bf16 and fp32), same binary, same call.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
f=":--dtype=bf16:--dtype=fp32:--problem=M=1:--problem=M=16"
"$root/bench/tune_on_device.sh" glumin glumin.db 300 bench/results/h100-2026-11-26-s10/experiments/glu_min.yaml \
  glu_swiglu$f
