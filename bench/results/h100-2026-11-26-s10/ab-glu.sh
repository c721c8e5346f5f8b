#!/usr/bin/env bash
# Session 10, one device call: GLU's PATH 2 with its loads first (ab-glu/glu-path2.patch) against the PATH 2 before
# it, at decode sizes (M = 1 and 16, every dtype, all four GLU spaces), same binary, same call; then the new kernels
# at odd shapes, padded and misaligned rows (the fallback), every valid configuration.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
f=":--problem=M=1:--problem=M=16"
odd=":--shape=M=3,I=1001:--shape=M=17,I=4100,S=4104,SO=4101:--shape=M=2,I=4096,S=4097,SO=4099:--shape=M=16,I=4104,S=8211,SO=4104:--shape=M=1,I=40,S=41,SO=40"
cat=":--shape=M=3,I=1001:--shape=M=17,I=4100,S=8210,SO=4101:--shape=M=2,I=4096,S=8193,SO=4099:--shape=M=16,I=4104,S=8211,SO=4104:--shape=M=1,I=40,S=81,SO=40"
"$root/bench/ab_on_device.sh" "$root/bench/results/h100-2026-11-26-s10/ab-glu/glu-path2.patch" 150 290 \
  glu_swiglu$f glu_geglu$f glu_swiglu_cat$f glu_geglu_cat$f -- glu_swiglu$odd glu_geglu$odd glu_swiglu_cat$cat glu_geglu_cat$cat
