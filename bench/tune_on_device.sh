#!/usr/bin/env bash
# Tunes search spaces on the GPU host inside one device call, optionally narrowed, and brings the results back.
# Usage (on the GPU host, from the device tool; carry build-gpu's ktune, ktune-worker and lib/):
#   bench/tune_on_device.sh NAME DB SECONDS SPACE[:FILTER...]...
# SPACE is a space's name (search_spaces/NAME.yaml) or a YAML file's path relative to the tree's root.
# FILTER is ktune tune's own narrowing, ':' for a space (linear_int4:--dtype=bf16:--problem=M=1); only a word's first
# '=' is the option's. SECONDS bounds the whole call (each space gets what is left). The database comes back without
# raw samples as $OUT/NAME.tgz, with the logs and a `ktune best` table per space.
# Environment: GPU_TESTS=1 runs the GPU test binary first; KERNEL_TREE=DIR tunes the kernels and spaces of another
# copy of the tree (an A/B against an older kernel: the same binary, other JIT sources).
set -uo pipefail
name=$1 db=$2 seconds=$3; shift 3
R=$OUT; export OUT=/tmp/o/$name; mkdir -p $OUT
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
tree=${KERNEL_TREE:-/work/main}
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=$tree
# The worker links cuBLAS (library baselines): the toolkit's, else the one PyTorch's wheels carry.
if [ ! -e /usr/local/cuda/lib64/libcublasLt.so.13 ]; then
  LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import glob, os, site
print(':'.join(sorted({os.path.dirname(p) for s in site.getsitepackages()
                       for p in glob.glob(s + '/nvidia/**/libcublasLt.so.*', recursive=True)})))" 2>/dev/null)
fi
export KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache-$name}
k=/work/main/build-gpu/ktune
deadline=$(( $(date +%s) + seconds ))
finish() {
  python3 - $OUT/$db <<'PY'
import os, sqlite3, sys
for p in sys.argv[1:]:  # the backup API also takes what is still in the WAL
    if not os.path.exists(p): continue  # nothing was tuned: no empty database comes back
    q = p[:-3] + ".sqlite"; c = sqlite3.connect(q); sqlite3.connect(p).backup(c)
    c.execute("update measurements set samples = NULL"); c.commit(); c.execute("vacuum"); c.close()
PY
  tar czf $R/$name.tgz -C $OUT --exclude='*.db*' .; ls -la $R
}
trap finish EXIT
if [ -n "${GPU_TESTS:-}" ]; then
  (cd /work/main/build-gpu && timeout 300 tests/ktune_gpu_tests 2>&1 | tee $OUT/gpu-tests.log | grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) ")
fi
cd $tree
for arg in "$@"; do
  s=${arg%%:*}
  f=search_spaces/$s.yaml; [[ $s == *.yaml ]] && f=$s  # a space by name, or a YAML file's path from the tree's root
  filter=$(for w in $(echo "${arg#$s}" | tr ':' ' '); do echo -n "${w%%=*} ${w#*=} "; done)
  left=$(( deadline - $(date +%s) )); [ $left -gt 5 ] || { echo "deadline: $arg not tuned"; continue; }
  echo "=== $name: $s $filter($left s left)"
  /usr/bin/time -f "%e s wall" $k --db $OUT/$db tune $f $filter --quiet --time-cap 0.5 --time $left 2>&1 | tail -2
  $k --db $OUT/$db best $f > $OUT/best-$(basename $s .yaml).txt 2>&1
done
