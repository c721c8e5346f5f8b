#!/usr/bin/env bash
# Session 7: GPU tests with this session's binary (ties on the event p50 ranked by kernel time), then the memory-bound
# ops at decode sizes (M = 1 and 16, all dtypes) for issue 3's comparison with the peers; tiebreak.py over the
# database shows which problems the new rule picked another configuration for.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
f=":--problem=M=1:--problem=M=16"
GPU_TESTS=1 "$root/bench/tune_on_device.sh" decode decode.db 500 glu_swiglu$f glu_geglu$f rmsnorm_bwd$f \
  add_rmsnorm$f rmsnorm$f
