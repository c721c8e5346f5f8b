#!/usr/bin/env bash
# Session 9 had no GPU lent. What its changes need first on the H100, in one device call (carry build-gpu's ktune,
# ktune-worker, lib/ and tests/ktune_gpu_tests): the GPU tests (the cuBLAS baseline's test among them); the cuBLAS
# library baseline at issue 4's shapes (bf16) beside INT4 in the same database, for
# `bench/targets.py DB --detail --baseline linear/fwd`; decode attention's ENGINE 4 (cluster merge) against ENGINE 3 at
# B = 1, every configuration validated.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
e=bench/results/h100-2026-11-23-s9/experiments
GPU_TESTS=1 "$root/bench/tune_on_device.sh" s9 s9.db 570 linear_cublas:--dtype=bf16 linear_cublas_k14336:--dtype=bf16 \
  linear_int4:--dtype=bf16:--problem=N=4096,K=4096 $e/decode_cluster.yaml $e/decode_cluster_gqa8.yaml
