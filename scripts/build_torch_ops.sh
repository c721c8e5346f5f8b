#!/usr/bin/env bash
# Builds ktune_torch's op library (python/ktune_torch/csrc/ktune_torch_ops.cu) from a ktune results database: exports
# the header of each op the PyTorch package uses (`ktune export-header`), then compiles them ahead of time with nvcc
# into one shared library with an extern "C" API. No GPU and no torch needed to build it.
#
#   scripts/build_torch_ops.sh --db results/ktune.db [--out DIR] [--ktune build/ktune] [--arch sm_90a]
#   scripts/build_torch_ops.sh --synthetic [--out DIR]   (CI, no GPU: a compile-only database with one configuration
#                                                       of each op marked as tuned, so that the export and nvcc path
#                                                       is exercised; its kernels are not fast, nor checked)
# Writes DIR/include/ktune_tuned_*.hpp and DIR/libktune_torch_ops.so (default DIR: build/ktune_torch); an op without
# results in the database is left out of the library (its calls return status 100) and listed at the end.
# python/ktune_torch finds the library through KTUNE_TORCH_LIB, else DIR's default.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/ktune_torch db="" synthetic=0 ktune=${KTUNE_BIN:-} arch=sm_90a
while (($#)); do
  case $1 in
    --db) db=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --ktune) ktune=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --synthetic) synthetic=1; shift ;;
    *) echo "build_torch_ops: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$ktune" ]; then
  for k in "$root/build-gpu/ktune" "$root/build/ktune"; do [ -x "$k" ] && { ktune=$k; break; }; done
fi
[ -x "$ktune" ] || { echo "build_torch_ops: no ktune binary (build it, or pass --ktune)" >&2; exit 1; }
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
command -v nvcc >/dev/null || { echo "build_torch_ops: nvcc not found" >&2; exit 1; }
mkdir -p "$out/include"
rm -f "$out"/include/ktune_tuned_*.hpp

if [ "$synthetic" = 1 ]; then
  # Compile-only sweeps of one configuration each (no GPU: every proposed configuration is compiled, not timed), then
  # those rows marked as measured, so that export-header has a "tuned" device (sm_90, the same-architecture level).
  db=$out/synthetic.db
  rm -f "$db"
  export KTUNE_ROOT=$root KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-$out/cache}
  # space | problem filter or shape | one configuration valid there (`ktune space SPACE --show 2` lists some)
  picks=(
    "rmsnorm|--shape M=1,H=4096|BLOCK=256,VEC=8,UNROLL=2,ROWS_PER_BLOCK=1"
    "rmsnorm_bwd|--problem M=32768,H=8192|BLOCK=128,VEC=4,UNROLL=8,CLUSTER=2,ROWS_PER_BLOCK=1,ROWS_IN_FLIGHT=1"
    "add_rmsnorm|--problem M=32768,H=8192|BLOCK=256,VEC=4,UNROLL=8,ROWS_PER_BLOCK=1,CLUSTER=1"
    "add_rmsnorm_inplace|--problem M=32768,H=8192|BLOCK=256,VEC=4,UNROLL=8,ROWS_PER_BLOCK=1,CLUSTER=1"
    "rope_neox|--problem M=32768,D=128|BLOCK=64,VEC=4,TOKENS_PER_BLOCK=1,UNROLL=1,ISSUE=1"
    "rope_neox_cache|--problem M=1,HQ=24,D=128|BLOCK=128,VEC=8,UNROLL=1,SPLIT=3"
    "glu_swiglu|--problem M=32768,I=14336|BLOCK=256,VEC=4,UNROLL=1"
    "glu_swiglu_bwd|--problem M=32768,I=14336|BLOCK=256,VEC=4,UNROLL=1"
    "decode_attention|--shape B=1,L=1024,HQ=32,HK=8,D=128,U=1 --kernel mma_l2|HEAD_DIM=128,GROUP=4,WARPS=4,TOKENS=1,STAGES=3,SPLITS=16"
    "linear_int4|--problem M=64,N=128256|WARPS=4,TILES_N=1,UNROLL=1,SPLIT_K=1,M_FRAGS=4,PIPE=1,PREFETCH=1,STAGES=1,INTERLEAVE=1,GROUP_CHUNKS=1"
    "linear_int8|--problem M=64,N=128256|WARPS=4,TILES_N=1,UNROLL=1,SPLIT_K=1,M_FRAGS=4,PIPE=1,PREFETCH=1,STAGES=1,INTERLEAVE=1"
    "linear_skinny|--shape M=1,N=4096,K=4096|WARPS=8,TILES_N=1,UNROLL=2,SPLIT_K=1,M_FRAGS=1,STAGES=1"
    "linear_skinny_swiglu|--shape M=1,N=3072,K=8192|WARPS=8,TILES_N=1,UNROLL=2,SPLIT_K=1,M_FRAGS=1,STAGES=1"
    "linear_skinny_add_rmsnorm|--shape M=1,N=5120,K=3072,EPS_E9=10000|WARPS=8,TILES_N=1,UNROLL=2,SPLIT_K=1,M_FRAGS=1,STAGES=1"
    "python/ktune_torch/spaces/add_rmsnorm_eps|--problem M=4096,H=4096|BLOCK=128,VEC=4,UNROLL=8,ROWS_PER_BLOCK=1,CLUSTER=1"
    "prefill_attention|--shape B=1,L=512,HQ=32,HK=8,D=128,U=1 --kernel fa2|HEAD_DIM=128,BLOCK_M=64,BLOCK_N=64,WARPS=4,STAGES=2,Q_SHARED=false"
    "prefill_attention_full|--shape B=1,L=512,HQ=32,HK=8,D=128,U=1 --kernel fa2|HEAD_DIM=128,BLOCK_M=64,BLOCK_N=64,WARPS=4,STAGES=2,Q_SHARED=false"
    "gemm_act_none|--shape M=16,N=4096,K=4096 --kernel skinny|WARPS=8,TILES_N=1,UNROLL=2,M_FRAGS=1,STAGES=1"
    "gemm_act_gelu|--shape M=16,N=4096,K=4096 --kernel skinny|WARPS=8,TILES_N=1,UNROLL=2,M_FRAGS=1,STAGES=1"
    "gemm_act_silu|--shape M=16,N=4096,K=4096 --kernel skinny|WARPS=8,TILES_N=1,UNROLL=2,M_FRAGS=1,STAGES=1"
    "ffn_gated_swiglu|--shape M=16,I=4096,K=4096 --kernel wgmma|WG=1,MT=1,BN=64,STAGES=3,GROUP_M=1"
    "ffn_gated_geglu|--shape M=16,I=4096,K=4096 --kernel wgmma|WG=1,MT=1,BN=64,STAGES=3,GROUP_M=1"
  )
  : > "$out/synthetic_tune.log"
  for p in "${picks[@]}"; do
    IFS='|' read -r space filter config <<< "$p"
    # shellcheck disable=SC2086  # the filter is words
    [[ $space == */* ]] || space=search_spaces/$space
    "$ktune" --db "$db" tune "$root/$space.yaml" --dtype bf16 $filter --config "$config" --quiet \
      >> "$out/synthetic_tune.log" 2>&1 || { tail -5 "$out/synthetic_tune.log"; echo "build_torch_ops: $space failed" >&2; exit 1; }
  done
  python3 - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = db.execute("UPDATE measurements SET status='ok', p50_us=1.0, n=3 WHERE status='compiled'").rowcount
db.commit()
if n < 22:
    sys.exit(f"build_torch_ops: the synthetic database has {n} compiled configurations, expected one per op (22)")
PY
fi
[ -n "$db" ] && [ -f "$db" ] || { echo "build_torch_ops: pass --db DATABASE (or --synthetic)" >&2; exit 2; }

# The search space of each op the package calls: files under search_spaces/, and ktune_torch's own op declared as
# data (add_rmsnorm/fwd with eps an axis: python/ktune_torch/spaces/).
spaces=(rmsnorm rmsnorm_bwd add_rmsnorm add_rmsnorm_inplace rope_neox rope_neox_cache glu_swiglu glu_swiglu_bwd
        decode_attention linear_int4 linear_int8 linear_skinny linear_skinny_swiglu linear_skinny_add_rmsnorm
        prefill_attention prefill_attention_full gemm_act_none gemm_act_gelu gemm_act_silu ffn_gated_swiglu
        ffn_gated_geglu python/ktune_torch/spaces/add_rmsnorm_eps)
missing=()
for s in "${spaces[@]}"; do
  [[ $s == */* ]] || s=search_spaces/$s
  name=$(basename "$s")
  if ! KTUNE_ROOT=$root "$ktune" --db "$db" export-header --op "$root/$s.yaml" --out "$out/include" \
      > "$out/export_$name.log" 2>&1; then
    missing+=("$name")
  fi
done
echo "build_torch_ops: exported $(ls "$out"/include/ktune_tuned_*.hpp | wc -l) headers from $db"
start=$SECONDS
# --split-compile=0: the device code's optimisation on every core (one translation unit holds every kernel instance)
nvcc -std=c++17 -O3 -arch="$arch" --split-compile=0 -Xcompiler=-fPIC,-Wall -shared -I"$root" -I"$out/include" \
  -o "$out/libktune_torch_ops.so.tmp" "$root/python/ktune_torch/csrc/ktune_torch_ops.cu" > "$out/nvcc.log" 2>&1 ||
  { tail -30 "$out/nvcc.log"; echo "build_torch_ops: nvcc failed ($out/nvcc.log)" >&2; exit 1; }
mv "$out/libktune_torch_ops.so.tmp" "$out/libktune_torch_ops.so"
echo "build_torch_ops: $out/libktune_torch_ops.so ($arch, $((SECONDS - start)) s)"
((${#missing[@]})) && echo "build_torch_ops: left out (no results in the database): ${missing[*]}"
exit 0
