#!/usr/bin/env bash
# Session 11, one device call: softmax's PATH 1 with its first row's loads issued before the launch checks
# (ab-softmax/softmax-loads-first.patch) against the kernel before, same binary, same call: the decode problems first
# (M = 1 and 16, the 3 us target), then the whole default space (M = 256 and 4096 too: the change moves register
# counts, a fifth of the configurations fit fewer blocks per SM). Then the new kernel only: odd, padded, misaligned and
# long rows, and several rows per cluster (softmax_rounds.yaml: exchange rounds > 0, the later rows' own loads),
# random 40 configurations per problem. GPU tests first.
# Run at 7658ec1 (the patch reverses there; later commits moved its helpers into kernels/common).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=bench/results/h100-2026-11-26-s11/ab-softmax
odd=":--shape=M=3,N=1001,S=1003:--shape=M=5,N=32771,S=32775:--shape=M=2,N=262144:--shape=M=3,N=262147,S=262150:--shape=M=1,N=32768,S=32769"
GPU_TESTS=1 "$root/bench/ab_on_device.sh" "$root/$here/softmax-loads-first.patch" 250 330 \
  softmax:--problem=M=1:--problem=M=16 softmax \
  -- softmax$odd:--strategy=random:--budget=40 $here/softmax_rounds.yaml:--strategy=random:--budget=40
