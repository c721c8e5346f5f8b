#!/usr/bin/env bash
# Session 7: linear_int4 with GROUP_CHUNKS (a step's chunk pairs sharing their group; f432f0d) against the kernels
# before (experiments/group-chunks.patch reversed); bf16 default spaces, then the tails spaces on the new kernels.
# ab-gc-onechain/ and ab-gc/ are two versions of the change (one accumulation chain per pair, or one per chunk), each
# run with the patch of its own version. Run at f432f0d (the patch reverses there).
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../ab_on_device.sh" "$here/experiments/group-chunks.patch" 200 330 linear_int4:--dtype=bf16 \
  linear_int4_k14336:--dtype=bf16 -- linear_int4_tails
