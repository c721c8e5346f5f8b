#!/usr/bin/env bash
# Session 8: Nsight Compute over small decode-size kernels (session 5's ncu.sh over cases.txt, then its
# ncu-source.sh's per-instruction stall samples for the RMSNorm backward case).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
s5=$here/../h100-2026-11-23-s5
bash $s5/ncu.sh $here/ncu/cases.txt
bash $s5/ncu-source.sh bwd-m1-full rmsnorm_bwd rmsnorm_bwd bf16 M=1,H=2048 BLOCK=256,VEC=4,UNROLL=2,ROWS_PER_BLOCK=1,ROWS_IN_FLIGHT=1,CLUSTER=1
