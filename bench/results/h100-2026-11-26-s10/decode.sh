#!/usr/bin/env bash
# Session 10, one device call: GPU tests, then both decode attention spaces with ENGINE 4 (the cluster merge) among
# their engines, every problem and dtype (bf16 first), for issue 4's bandwidth targets and the SDPA comparison.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
GPU_TESTS=1 "$root/bench/tune_on_device.sh" decode decode.db 560 decode_attention:--dtype=bf16 \
  decode_attention_gqa8:--dtype=bf16 decode_attention:--dtype=fp16 decode_attention_gqa8:--dtype=fp16
