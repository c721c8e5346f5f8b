#!/usr/bin/env bash
# Session 11, one device call: add + RMSNorm's in-place and Gemma variants (loads first, 6407779) at odd, padded and
# misaligned rows and M not a multiple of the rows per block, every dtype, 60 random configurations per problem (the
# plain variant was validated at the same shapes, every configuration, in final.sh).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
odd=":--shape=M=3,H=1001:--shape=M=17,H=4100,S=4104:--shape=M=2,H=4096,S=4097:--shape=M=9,H=2048:--shape=M=16,H=8192,S=8200:--shape=M=1,H=2050:--strategy=random:--budget=60"
"$root/bench/tune_on_device.sh" oddnorms oddnorms.db 250 add_rmsnorm_inplace$odd add_rmsnorm_gemma$odd
