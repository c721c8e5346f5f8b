#!/usr/bin/env bash
# On a GPU host: the exported header of a kernel with TMA descriptors (kernel.tensor_maps) runs and matches the
# reference. For gemm_act/none and ffn_gated/swiglu it tunes only the wgmma_tma kernel (a few random configurations,
# bf16) at a tile-aligned shape and one whose M is not a multiple of any row tile (the descriptors' zero fill), exports
# the header with build-gpu/ktune, compiles bench/export_check.cu against it (-arch=sm_90a) and runs it: at every tuned
# problem the dispatcher must encode the descriptors, pick the stored best (its own bucket) and match the reference
# kernel within the space's tolerances. About 2 minutes on an H100.
#   OUT=/tmp/o bench/export/tma_export_gpu.sh
#   TUNE_FLAGS="--config TPB=0" ...     # configurations of a kind only (here: one block per SM, the grid reading SMS)
# Needs build-gpu/ (ktune, ktune-worker) built from this tree, nvcc and a Hopper GPU. Writes ${OUT}/tma_export/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${OUT:-/tmp/out}/tma_export
mkdir -p "$work"
export PATH=/usr/local/cuda/bin:$PATH KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache}
k=$root/build-gpu/ktune
[ -x "$k" ] || { echo "tma_export: $k not built" >&2; exit 1; }
command -v nvcc >/dev/null || { echo "tma_export: nvcc not found" >&2; exit 1; }
db=$work/tma_export.db
rm -f "$db"
read -ra tune_flags <<< "${TUNE_FLAGS:-}"
quick=(--kernel wgmma_tma --dtype bf16 --strategy random --budget "${BUDGET:-3}" --min-samples 6 --max-samples 40
       --quiet "${tune_flags[@]}")

# name|space|shapes (--shape: tuned at exactly these, whatever the space's problem list)
cases=(
  "gemm_act_none|gemm_act_none|--shape M=2048,N=4096,K=4096 --shape M=100,N=4096,K=4096"
  "ffn_gated_swiglu|ffn_gated_swiglu|--shape M=2048,I=8192,K=3072 --shape M=300,I=8192,K=3072"
)
rows=()
fail=0
for entry in "${cases[@]}"; do
  IFS='|' read -r name space shapes <<< "$entry"
  dir=$work/$name; mkdir -p "$dir"
  echo "=== $name ($(date -u +%H:%M:%S))"
  # shellcheck disable=SC2086  # the shapes are words
  if ! KTUNE_ROOT="$root" "$k" --db "$db" tune "$root/search_spaces/$space.yaml" "${quick[@]}" $shapes \
      > "$dir/tune.log" 2>&1; then
    echo "$name: tuning failed"; tail -5 "$dir/tune.log"; rows+=("| $name | tune failed | - |"); fail=1; continue
  fi
  if ! KTUNE_ROOT="$root" "$k" --db "$db" export-header --op "$root/search_spaces/$space.yaml" --out "$dir" \
      > "$dir/export.log" 2>&1; then
    echo "$name: export failed"; tail -5 "$dir/export.log"; rows+=("| $name | export failed | - |"); fail=1; continue
  fi
  header=$(basename "$(ls "$dir"/ktune_tuned_*.hpp)")
  stem=${header#ktune_tuned_}; stem=${stem%.hpp}
  if ! grep -q "encode_tensor_map(&ktune_maps\[0\]" "$dir/$header"; then
    echo "$name: the header launches no kernel with tensor maps"; rows+=("| $name | no tensor maps | - |"); fail=1
    continue
  fi
  if ! nvcc -std=c++17 -O3 -arch=sm_90a -I"$root" -I"$dir" -DKTUNE_CHECK_HEADER="\"$header\"" \
      -DKTUNE_CHECK_STEM="$stem" -o "$dir/check" "$root/bench/export_check.cu" > "$dir/nvcc.log" 2>&1; then
    echo "$name: nvcc failed"; tail -5 "$dir/nvcc.log"; rows+=("| $name | nvcc failed | - |"); fail=1; continue
  fi
  ok=ok
  "$dir/check" > "$dir/check.txt" 2>&1 || ok=FAIL
  if grep -Eq "nearest bucket|level=(same architecture|default|none)" "$dir/check.txt" ||
     ! grep -q " ok level=" "$dir/check.txt"; then ok=FAIL; fi
  [ "$ok" = ok ] || fail=1
  cat "$dir/check.txt"
  rows+=("| $name | $ok | $(wc -l < "$dir/check.txt") problems: $(tr '\n' ';' < "$dir/check.txt" | cut -c1-300) |")
done

echo
echo "| op (wgmma_tma only) | exported header vs reference | check output |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
[ "$fail" = 0 ] || { echo "tma_export: FAILED (logs under $work)" >&2; exit 1; }
