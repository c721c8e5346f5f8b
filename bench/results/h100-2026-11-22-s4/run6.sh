#!/usr/bin/env bash
# Session 4, device run 6 (carry as run 5): the reworked RoPE (ISSUE 2) and GLU (PATH 2) spaces re-tuned with the
# clean flush; compute-sanitizer over the new decode paths (rmsnorm_bwd node path at M=16, RoPE and GLU at M=1);
# every op validated at odd sizes and strided rows (`tune --shape`, every valid configuration, a few samples each).
set -uo pipefail
R=$OUT; export OUT=/tmp/o6; mkdir -p $OUT
root=$(pwd); if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=/work/main KTUNE_CACHE_DIR=/tmp/ktune-cache
k=/work/main/build-gpu/ktune
finish() {
  python3 - $OUT/ops-c.db <<'PY'
import sqlite3, sys
for p in sys.argv[1:]:
    q = p[:-3] + ".sqlite"; c = sqlite3.connect(q); sqlite3.connect(p).backup(c)
    c.execute("update measurements set samples = NULL"); c.commit(); c.execute("vacuum"); c.close()
PY
  tar czf $R/run6.tgz -C $OUT --exclude='*.db*' .; ls -la $R; }
trap finish EXIT
for s in rope_neox rope_gptj glu_swiglu glu_geglu glu_swiglu_cat glu_geglu_cat; do
  timeout 90 $k --db $OUT/ops-c.db tune search_spaces/$s.yaml --quiet --time-cap 0.5 2>&1 | tail -1
  $k --db $OUT/ops-c.db best search_spaces/$s.yaml > $OUT/best-$s.txt 2>&1
done
python3 bench/sanitize_tuned.py --ktune $k --db /work/main/.gpu-data/s4-ops-b.db --out $OUT/sanitizer-bwd \
  --problem M=16,H=4096 rmsnorm_bwd 2>&1 | tail -3 | tee $OUT/sanitize-bwd.txt
python3 bench/sanitize_tuned.py --ktune $k --db $OUT/ops-c.db --out $OUT/sanitizer-c rope_neox rope_gptj glu_swiglu \
  glu_swiglu_cat 2>&1 | tail -5 | tee $OUT/sanitize-c.txt
# Odd sizes (not a multiple of any vector width) and strided rows, every valid configuration of each space.
fast="--hot --no-cupti --min-samples 6 --max-samples 6 --time-cap 0.05 --quiet --json"
odd() { local s=$1; shift; local a=(); for sh in "$@"; do a+=(--shape "$sh"); done
  timeout 120 $k --db $OUT/odd.db tune search_spaces/$s.yaml "${a[@]}" $fast > $OUT/odd-$s.json 2>$OUT/odd-$s.err
  python3 - $s $OUT/odd-$s.json <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[2]))
    print(f"{sys.argv[1]:<22}", "; ".join(f"{p['problem']}: {p['valid_configs']} valid, {p['measured']} measured, "
                                          f"{p['failed']} failed" for p in d["problems"]))
except Exception as e:
    print(sys.argv[1], "no summary:", e, open(sys.argv[2].replace(".json", ".err")).read()[-400:])
PY
}
{
for s in rmsnorm rmsnorm_gemma rmsnorm_bwd add_rmsnorm add_rmsnorm_inplace add_rmsnorm_gemma layernorm layernorm_nobias; do
  odd $s M=3,H=1001,S=1003 M=17,H=4100,S=4104
done
odd softmax M=3,N=1001,S=1003 M=5,N=32771,S=32775 M=2,N=262144 M=3,N=262147,S=262150
for s in glu_swiglu glu_geglu; do odd $s M=3,I=1001,S=1003,SO=1005 M=17,I=4100,S=4104,SO=4112; done
for s in glu_swiglu_cat glu_geglu_cat; do odd $s M=3,I=1001,S=2005,SO=1005 M=17,I=4100,S=8204,SO=4112; done
for s in rope_neox rope_gptj; do
  odd $s M=3,HQ=32,HK=8,D=128,R=96,SQ=4200,SK=1100 M=17,HQ=64,HK=8,D=64,R=32,SQ=4104,SK=520
done
odd decode_attention B=3,L=1001,HQ=32,HK=8,D=128,U=16 B=2,L=777,HQ=32,HK=8,D=128,U=1
odd decode_attention_gqa8 B=3,L=1001,HQ=64,HK=8,D=64,U=16 B=2,L=777,HQ=64,HK=8,D=128,U=1
} 2>&1 | tee $OUT/odd-shapes.txt
