#!/usr/bin/env bash
# Session 13, one device call: softmax's resident and streaming paths with the block's (max, sum) merged in one
# barrier (softmax-one-barrier.patch: thread (m, s) pairs, warp butterflies, one shared-memory round) against the
# kernels before, M = 1, 16, 256, every dtype; then, new kernels only, odd shapes (tails, strided, 262144 columns).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
here=bench/results/h100-2026-11-26-s13
odd=""
for s in M=1,N=1001 M=3,N=32771,S=32780 M=1,N=262144 M=2,N=262147,S=262150 M=16,N=128257; do odd="$odd:--shape=$s"; done
bench/ab_on_device.sh $here/softmax-one-barrier.patch 200 380 "softmax:--problem=M=1:--problem=M=16:--problem=M=256" \
  -- "softmax$odd:--dtype=bf16:--dtype=fp32"
for n in old new; do
  mkdir -p /tmp/ab/$n && tar xzf $OUT/$n.tgz -C /tmp/ab/$n
  LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=/work/main \
    /work/main/build-gpu/ktune --db /tmp/ab/$n/$n.sqlite best search_spaces/softmax.yaml --json > /tmp/ab/$n-softmax.json
done
python3 bench/compare_best.py /tmp/ab/old-softmax.json /tmp/ab/new-softmax.json | tee $OUT/compare-softmax.txt | tail -30
python3 bench/compare_configs.py /tmp/ab/old/old.sqlite /tmp/ab/new/new.sqlite > $OUT/compare-configs.txt 2>&1
tail -4 $OUT/compare-configs.txt
python3 - /tmp/ab/new/new.sqlite <<'PY' | tee $OUT/status.txt
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("select m.status, count(*) from measurements m group by 1"):
    print(*r)
for r in db.execute("""select p.key, c.key, m.message from measurements m join problems p on p.id = m.problem_id
                       join configurations c on c.id = m.configuration_id where m.status != 'ok' limit 10"""):
    print(*r)
PY
