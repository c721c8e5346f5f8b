#!/usr/bin/env bash
# Session 7, one device call: GPU tests; decode attention at B = 1 (both spaces, both dtypes) with SPLITS 33 and 66
# added; then every linear space in both dtypes on this tree's kernels (validation of every configuration and the
# numbers of bench/RESULTS.md).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
GPU_TESTS=1 "$root/bench/tune_on_device.sh" final final.db 570 decode_attention:--problem=B=1 \
  decode_attention_gqa8:--problem=B=1 linear_int4 linear_int4_k14336 linear_int8 linear_int8_k14336 \
  linear_int4_tails linear_int8_tails
