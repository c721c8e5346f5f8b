#!/usr/bin/env bash
# Session 11, one device call: the quant linear kernels with a shorter path to their first loads (the grid checked
# before the first write, not before the first load; unsigned index arithmetic; no division on the fast path) and
# GLU's PATH 2 storing its output as one access (ab-quant-glu/quant-glu.patch) against the kernels before, same binary,
# same call: INT4/INT8 bf16 at M = 1 and 16, the four GLU spaces at M = 1 and 16. Then the new kernels only: the
# GLU's odd, padded and misaligned rows, and the quant linear tails spaces (K not a
# multiple of the group, odd N, misaligned rows: the plain path; 25 random configurations per problem).
# Run at edb248a (the patch reverses there; later commits moved its helpers into kernels/common).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
q=":--dtype=bf16:--problem=M=1:--problem=M=16"
f=":--problem=M=1:--problem=M=16"
odd=":--shape=M=3,I=1001:--shape=M=17,I=4100,S=4104,SO=4101:--shape=M=2,I=4096,S=4097,SO=4099:--shape=M=16,I=4104,S=8211,SO=4104:--shape=M=1,I=40,S=41,SO=40"
cat=":--shape=M=3,I=1001:--shape=M=17,I=4100,S=8210,SO=4101:--shape=M=2,I=4096,S=8193,SO=4099:--shape=M=16,I=4104,S=8211,SO=4104:--shape=M=1,I=40,S=81,SO=40"
"$root/bench/ab_on_device.sh" "$root/bench/results/h100-2026-11-26-s11/ab-quant-glu/quant-glu.patch" 190 330 \
  linear_int4$q linear_int4_k14336$q linear_int8$q glu_swiglu$f glu_geglu$f glu_swiglu_cat$f glu_geglu_cat$f \
  -- glu_swiglu$odd glu_swiglu_cat$cat linear_int4_tails:--dtype=bf16:--strategy=random:--budget=25 \
  linear_int8_tails:--dtype=bf16:--strategy=random:--budget=25
