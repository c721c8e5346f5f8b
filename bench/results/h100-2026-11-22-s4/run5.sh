#!/usr/bin/env bash
# Session 4, device run 5 (carry as run1 plus .gpu-data/s4-ops-b.db, run 3's database): the rest of the clean-flush
# peers (--resume), issue 2's cold and resumed rmsnorm tunings, ktune's RMSNorm in the peers script (same harness),
# compute-sanitizer over the new rmsnorm_bwd winners, decode_attention_gqa8 fp16, and a dirty/clean A/B of two
# read-only kernels at fixed configurations.
set -uo pipefail
R=$OUT; export OUT=/tmp/o5; mkdir -p $OUT /tmp/p
finish() { cp /tmp/p/*.json /tmp/p/*.log $OUT/ 2>/dev/null; tar czf $R/run5.tgz -C $OUT --exclude='*.db*' .; ls -la $R; }
trap finish EXIT
cp bench/peers/results/h100-2026-11-22-clean.json /tmp/p/
timeout 270 python3 bench/peers/measure_peers.py --resume --out /tmp/p/h100-2026-11-22-clean.json --time-budget 240 \
  > /tmp/p/peers-clean-run2.log 2>&1; tail -2 /tmp/p/peers-clean-run2.log
timeout 100 bench/gpu_run.sh tune tune2 best
timeout 150 bench/gpu_run.sh same-harness
SANITIZE_DB=/work/main/.gpu-data/s4-ops-b.db SANITIZE_SPACES=rmsnorm_bwd timeout 120 bench/gpu_run.sh sanitize | tail -8
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=/work/main
k=/work/main/build-gpu/ktune
for flush in dirty clean; do
  timeout 30 $k --db $OUT/ab.db tune decode_attention --flush $flush --dtype bf16 --problem B=1,L=8192,U=1 --problem B=1,L=32768,U=1 \
    --config HEAD_DIM=128,GROUP=4,WARPS=8,VEC=8,TOKENS=1,STAGES=2,SPLITS=16,ENGINE=3 --quiet | tail -1
  timeout 30 $k --db $OUT/ab.db tune linear_int4 --flush $flush --dtype bf16 --problem M=1,N=4096 --problem M=1,N=14336 \
    --config WARPS=8,TILES_N=1,UNROLL=4,SPLIT_K=1,M_FRAGS=1,PIPE=1,PREFETCH=1,STAGES=1 --quiet | tail -1
  $k --db $OUT/ab.db best decode_attention > $OUT/ab-attention-$flush.txt; $k --db $OUT/ab.db best linear_int4 > $OUT/ab-int4-$flush.txt
done
timeout 90 $k --db $OUT/gqa8.db tune search_spaces/decode_attention_gqa8.yaml --dtype fp16 --quiet --time-cap 0.5 | tail -1
$k --db $OUT/gqa8.db best search_spaces/decode_attention_gqa8.yaml > $OUT/best-decode_attention_gqa8-fp16.txt
python3 - $OUT/gqa8.db $OUT/ab.db <<'PY'
import sqlite3, sys
for p in sys.argv[1:]:
    q = p[:-3] + ".sqlite"; c = sqlite3.connect(q); sqlite3.connect(p).backup(c)
    c.execute("update measurements set samples = NULL"); c.commit(); c.execute("vacuum"); c.close()
PY
