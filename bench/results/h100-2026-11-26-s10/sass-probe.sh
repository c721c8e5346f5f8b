#!/usr/bin/env bash
# Session 10, one device call: what torch.compile's Triton kernels do at the decode sizes where they lead ktune by
# kernel time (SwiGLU bf16 M=1 I=8192, RMSNorm backward bf16 M=1 H=2048): their generated source and SASS, beside the
# SASS of ktune's best configurations there (compiled by ktune's own NVRTC path for sm_90).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind TRITON_CACHE_DIR=/tmp/tri
PYTHONUNBUFFERED=1 python3 bench/peers/measure_peers.py --ops glu_swiglu,rmsnorm_bwd --axis M=1 --dtypes bf16 \
  --impls compile --samples 10 --cupti-samples 10 --out /tmp/p.json 2>&1 | grep -E "I=8192|H=2048"
dis() { cuobjdump -sass "$1" 2>/dev/null || nvdisasm -c "$1"; }
for f in $(find /tmp/tri -name "*.cubin"); do echo "=== $f"; dis "$f"; done > $OUT/triton-sass.txt
find /tmp/ind -name "*.py" | xargs grep -l "@triton.jit" | while read -r f; do echo "=== $f"; cat "$f"; done > $OUT/triton-src.txt
export LD_LIBRARY_PATH=$root/build-gpu/lib:/usr/local/cuda/lib64
k=$root/build-gpu/ktune
$k --db /tmp/kc.db tune glu_swiglu --compile-only --cache-dir /tmp/kc --dtype bf16 --problem M=1,I=8192 \
  --config BLOCK=128,VEC=4,UNROLL=2,PATH=2 --quiet
$k --db /tmp/kc.db tune rmsnorm_bwd --compile-only --cache-dir /tmp/kc --dtype bf16 --problem M=1,H=2048 \
  --config BLOCK=64,VEC=4,UNROLL=1,ROWS_PER_BLOCK=1,ROWS_IN_FLIGHT=8,CLUSTER=8 --quiet
for f in /tmp/kc/*.cubin; do echo "=== $(grep -o '"name_expression": "[^"]*"' ${f%.cubin}.json)"; dis "$f"; done > $OUT/ktune-sass.txt
wc -l $OUT/*
