#!/usr/bin/env bash
# Session 7, after 00ad447: GPU tests, then both decode attention spaces in fp16 (validation of the interleaved
# splits in the other dtype; the bf16 half is ab-interleave/new).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
GPU_TESTS=1 "$root/bench/tune_on_device.sh" fp16 fp16.db 400 decode_attention:--dtype=fp16 decode_attention_gqa8:--dtype=fp16
