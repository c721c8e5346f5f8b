#!/usr/bin/env bash
# Session 12, device call 9: issue 3's decode sizes (M = 1, 16) of the two ops still over 3 us (softmax, RMSNorm
# backward) re-tuned with the kernel-time ranking: does choosing by kernel time find faster kernels than session 11's
# event-ranked choice? Every dtype; `ktune best` prints the kernel time.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export KTUNE_ROOT=/work/main KTUNE_CACHE_DIR=/tmp/kc
k=/work/main/build-gpu/ktune
for op in softmax rmsnorm_bwd; do
  /usr/bin/time -f "$op: %e s wall" $k --db $OUT/decode.db tune $op --problem M=1 --problem M=16 --time-cap 0.5 --quiet 2>&1 | tail -2
  $k --db $OUT/decode.db best $op | tee $OUT/best-$op.txt
done
$k --db $OUT/decode.db best softmax --json > $OUT/best-softmax.json
$k --db $OUT/decode.db best rmsnorm_bwd --json > $OUT/best-rmsnorm_bwd.json
tar czf $R/decode.tgz -C /tmp/o --exclude='*.db*' .
