#!/usr/bin/env bash
# Session 13, one device call: LayerNorm with its rows split over thread-block clusters (CLUSTER, one (sum, M2)
# exchange per row; layernorm-cluster.patch) against the kernels before, both spaces, every dtype, M = 1, 16, 256;
# then, new kernels only, odd shapes at decode sizes (tails, padded and misaligned rows: the scalar path in clusters).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
here=bench/results/h100-2026-11-26-s13
odd=""
for s in M=1,H=2050 M=3,H=1001,S=1003 M=9,H=4100,S=4104 M=16,H=8192,S=8193 M=2,H=8191 M=1,H=40; do odd="$odd:--shape=$s"; done
GPU_TESTS=1 bench/ab_on_device.sh $here/layernorm-cluster.patch 150 420 \
  "layernorm:--problem=M=1:--problem=M=16:--problem=M=256" "layernorm_nobias:--problem=M=1:--problem=M=16:--problem=M=256" \
  -- "layernorm$odd" "layernorm_nobias$odd"
for n in old new; do
  mkdir -p /tmp/ab/$n && tar xzf $OUT/$n.tgz -C /tmp/ab/$n
  for s in layernorm layernorm_nobias; do
    LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=/work/main \
      /work/main/build-gpu/ktune --db /tmp/ab/$n/$n.sqlite best search_spaces/$s.yaml --json > /tmp/ab/$n-$s.json
  done
done
for s in layernorm layernorm_nobias; do
  python3 bench/compare_best.py /tmp/ab/old-$s.json /tmp/ab/new-$s.json | tee $OUT/compare-$s.txt | tail -22
done
python3 - /tmp/ab/new/new.sqlite <<'PY' | tee $OUT/status.txt
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("""select k.variant, m.status, count(*) from measurements m join kernels k on k.id = m.kernel_id
                       group by 1, 2"""):
    print(*r)
for r in db.execute("""select p.key, m.message from measurements m join problems p on p.id = m.problem_id
                       where m.status != 'ok' limit 10"""):
    print(*r)
PY
