#!/usr/bin/env bash
# Session 13, one device call: the weight-only linear spaces with WARPS 16 (and UNROLL 1 there), bf16, every default
# problem, beside the cuBLAS baseline and the read roofline at the weight bytes, in one database: issue 4's ratios.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
R=$OUT
bench/tune_on_device.sh linear linear.db 540 \
  "copy_read:--problem=N=4390912:--problem=N=8392704:--problem=N=15368192:--problem=N=134217728" \
  linear_cublas:--dtype=bf16 linear_cublas_k14336:--dtype=bf16 linear_int4:--dtype=bf16 linear_int4_k14336:--dtype=bf16 \
  linear_int8:--dtype=bf16 linear_int8_k14336:--dtype=bf16
python3 bench/targets.py /tmp/o/linear/linear.sqlite --detail --baseline linear/fwd > $R/targets.txt 2>&1
grep -E "linear_int(4|8)/fwd bf16:M=(1|16)," $R/targets.txt
