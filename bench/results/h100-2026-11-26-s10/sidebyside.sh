#!/usr/bin/env bash
# Session 10, one device call: PyTorch's decode attention peers at B = 64 (where the imported peers file of
# 2026-11-22 had cuDNN's SDPA 0.3-0.5 % ahead at the DRAM ceiling) measured beside ktune's own tuning of the same
# problems on the same machine; then the linear spaces (bf16) with the cuBLAS library baseline in the same database,
# for issue 4's ratios over cuBLAS at every shape.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
PYTHONUNBUFFERED=1 timeout 260 python3 bench/peers/measure_peers.py --ops decode_attention --axis B=64 \
  --time-budget 200 --out $OUT/peers-decode-b64.json 2>&1 | tail -4
"$root/bench/tune_on_device.sh" side side.db 300 decode_attention:--problem=B=64,U=1 \
  linear_cublas:--dtype=bf16 linear_cublas_k14336:--dtype=bf16 linear_int4:--dtype=bf16 linear_int8:--dtype=bf16 \
  linear_int4_k14336:--dtype=bf16 linear_int8_k14336:--dtype=bf16
