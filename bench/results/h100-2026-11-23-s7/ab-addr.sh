#!/usr/bin/env bash
# Session 7: the quant linear kernels' fast path with loop-invariant lane addresses and loads predicated inside the
# instruction (618535f) against the kernels before (experiments/addr.patch reversed); bf16 default spaces, then the
# tails spaces (odd shapes, every dtype) on the new kernels. Run at 618535f (the patch reverses there).
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../ab_on_device.sh" "$here/experiments/addr.patch" 200 330 linear_int4:--dtype=bf16 \
  linear_int4_k14336:--dtype=bf16 linear_int8:--dtype=bf16 linear_int8_k14336:--dtype=bf16 -- linear_int4_tails \
  linear_int8_tails
