#!/usr/bin/env bash
# On a GPU host: every built-in op and the user op of examples/user_op, exported as a header and run against what the
# tuner validated. For each op it tunes two small problems quickly (random search, a few configurations; or reads
# DB), exports the op's header, compiles bench/export_check.cu against it with nvcc, and runs it: at every tuned
# problem the header's dispatcher must pick the configuration the JIT run stored as best (its device's own bucket)
# and its output must match the op's reference kernel within the tolerances that validated the JIT run (same
# generator ranges, same reference, same comparison kernel). Then it builds and runs examples/user_op's program
# against the user op's header. About 5 minutes on an H100. Every check program is compiled with -arch=sm_90a, which
# the tensor-core ops' headers need.
#
#   OUT=/tmp/o bench/export_vs_jit.sh              tune, export, check every op
#   DB=results/ktune.db OUT=/tmp/o bench/export_vs_jit.sh   use that database instead of tuning
#   ONLY="rmsnorm softmax" ...                     only these search spaces (file stems under search_spaces/)
# Needs: CUDA (nvcc, a GPU, its driver), CMake and Ninja; the ktune build is done here (build-gpu/, Release, with
# .gpu-deps/ when the tree carries it). Writes $OUT/export_vs_jit.txt (the summary), a log per op under
# $OUT/export_vs_jit/, and the database it tuned into. Exit status 0 when every op passed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/out}
work=$out/export_vs_jit
mkdir -p "$work"
summary=$out/export_vs_jit.txt
export PATH=/usr/local/cuda/bin:$PATH KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache}
command -v nvcc >/dev/null || { echo "export_vs_jit: nvcc not found (CUDA toolkit under /usr/local/cuda?)" >&2; exit 1; }
nvidia-smi -L > /dev/null 2>&1 || { echo "export_vs_jit: no NVIDIA GPU or driver here (nvidia-smi -L failed)" >&2; exit 3; }
start=$SECONDS

# Each search space and the problems it is tuned at here: two per op, one dtype, small enough to tune in seconds.
spaces=(
  "rmsnorm|--dtype bf16 --problem M=16,H=4096 --problem M=4096,H=4096"
  "rmsnorm_gemma|--dtype bf16 --problem M=16,H=4096 --problem M=4096,H=4096"
  "rmsnorm_bwd|--dtype bf16 --problem M=16,H=4096 --problem M=4096,H=4096"
  "add_rmsnorm|--dtype bf16 --problem M=16,H=4096 --problem M=4096,H=4096"
  "add_rmsnorm_gemma|--dtype bf16 --problem M=16,H=4096 --problem M=4096,H=4096"
  "add_rmsnorm_inplace|--dtype bf16 --problem M=16,H=4096 --problem M=4096,H=4096"
  "layernorm|--dtype bf16 --problem M=16,H=4096 --problem M=4096,H=4096"
  "layernorm_nobias|--dtype bf16 --problem M=16,H=4096 --problem M=4096,H=4096"
  "softmax|--dtype bf16 --problem M=16,N=4096 --problem M=256,N=32768"
  "rope_gptj|--dtype bf16 --problem M=16,D=128 --problem M=4096,D=64"
  "rope_neox|--dtype bf16 --problem M=16,D=128 --problem M=4096,D=64"
  "glu_swiglu|--dtype bf16 --problem M=16,I=8192 --problem M=4096,I=8192"
  "glu_geglu|--dtype bf16 --problem M=16,I=8192 --problem M=4096,I=8192"
  "glu_swiglu_cat|--dtype bf16 --problem M=16,I=8192 --problem M=4096,I=8192"
  "glu_geglu_cat|--dtype bf16 --problem M=16,I=8192 --problem M=4096,I=8192"
  "copy|--dtype bf16 --problem N=1048576 --problem N=16777216"
  "copy_read|--dtype bf16 --problem N=2097152 --problem N=4390912"
  "decode_attention|--dtype bf16 --problem B=1,L=1024,U=1 --problem B=8,L=8192,U=16"
  "linear_int4|--dtype bf16 --problem M=1,N=4096 --problem M=16,N=4096"
  "linear_int8|--dtype bf16 --problem M=1,N=4096 --problem M=16,N=4096"
  "linear_skinny|--dtype bf16 --problem M=1,N=4096,K=4096 --problem M=16,N=14336,K=4096"
  "gemm_act_gelu|--dtype bf16 --problem M=16,N=4096,K=4096 --problem M=2048,N=4096,K=4096"
  "gemm_act_silu|--dtype bf16 --problem M=16,N=4096,K=4096 --problem M=2048,N=4096,K=4096"
  "ffn_gated_swiglu|--dtype bf16 --problem M=256,I=14336,K=4096 --problem M=2048,I=8192,K=3072"
  "prefill_attention|--dtype bf16 --problem B=1,L=2048,U=1 --problem B=4,L=2048,U=2"
  "prefill_attention_full|--dtype bf16 --problem B=1,L=2048,U=1 --problem B=4,L=2048,U=2"
)
# Quick tuning: a few random configurations per problem, short adaptive sampling.
quick=(--strategy random --budget "${BUDGET:-6}" --min-samples 6 --max-samples 40 --quiet)

echo "=== build ($(date -u +%H:%M:%S))"
deps=(); [ -d "$root/.gpu-deps/usr" ] && deps=(-DCMAKE_PREFIX_PATH="$root/.gpu-deps/usr")
cmake -S "$root" -B "$root/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release "${deps[@]}" -DKTUNE_BUILD_BENCH=OFF \
  > "$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; echo "export_vs_jit: configure failed" >&2; exit 1; }
cmake --build "$root/build-gpu" --target ktune ktune-worker > "$work/build.log" 2>&1 ||
  { grep -m5 -A5 error "$work/build.log"; echo "export_vs_jit: build failed ($work/build.log)" >&2; exit 1; }
k=$root/build-gpu/ktune
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 > "$work/gpu.txt" || true
cat "$work/gpu.txt"
db=${DB:-$out/export_vs_jit.db}

# The user op, as a user keeps it: outside the repository.
user=/tmp/ktune_user_op
rm -rf "$user" && cp -r "$root/examples/user_op" "$user"

# tune_and_export NAME SPACE_FILE INCLUDE_DIR ARGS...: tunes (unless DB), exports into $work/NAME/, writes the
# compile command of its check program to $work/NAME/compile.sh.
tune_and_export() {
  local name=$1 file=$2 inc=$3; shift 3
  local dir=$work/$name; mkdir -p "$dir"
  if [ -z "${DB:-}" ]; then
    (cd "$(dirname "$file")" && KTUNE_ROOT="$root" "$k" --db "$db" tune "$file" "${quick[@]}" "$@") \
      > "$dir/tune.log" 2>&1 || { echo "$name: tuning failed ($dir/tune.log: $(tail -1 "$dir/tune.log"))"; return 1; }
  fi
  KTUNE_ROOT="$root" "$k" --db "$db" export-header --op "$file" --out "$dir" > "$dir/export.log" 2>&1 ||
    { echo "$name: export failed: $(tail -1 "$dir/export.log")"; return 1; }
  local header stem
  header=$(basename "$(ls "$dir"/ktune_tuned_*.hpp)")
  stem=${header#ktune_tuned_}; stem=${stem%.hpp}
  echo "nvcc -std=c++17 -O3 -arch=sm_90a -I'$root' -I'$inc' -I'$dir' -DKTUNE_CHECK_HEADER='\"$header\"'" \
       "-DKTUNE_CHECK_STEM=$stem -o '$dir/check' '$root/bench/export_check.cu' > '$dir/nvcc.log' 2>&1" > "$dir/compile.sh"
}

echo "=== tune and export ($(date -u +%H:%M:%S))"
names=()
: > "$work/failures.txt"
for entry in "${spaces[@]}"; do
  name=${entry%%|*}; args=${entry#*|}
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
  # shellcheck disable=SC2086  # the problem filters are words
  if tune_and_export "$name" "$root/search_spaces/$name.yaml" "$root" $args; then names+=("$name");
  else echo "$name" >> "$work/failures.txt"; fi
done
if [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" bias_gelu "* ]]; then
  if tune_and_export bias_gelu "$user/bias_gelu.yaml" "$user" --dtype fp16 --problem M=16,N=4096 \
      --problem M=256,N=14336; then names+=(bias_gelu); else echo bias_gelu >> "$work/failures.txt"; fi
fi
echo "tuned and exported ${#names[@]} ops in $((SECONDS - start)) s"

echo "=== compile the check programs ($(date -u +%H:%M:%S))"
# shellcheck disable=SC2016  # $1 expands in the inner shell
for n in "${names[@]}"; do echo "$work/$n/compile.sh"; done |
  xargs -P "$(nproc)" -I{} bash -c 'bash "$1" || { echo "$(basename "$(dirname "$1")"): nvcc failed"; tail -5 "$(dirname "$1")/nvcc.log"; }' _ {}
echo "compiled in $((SECONDS - start)) s"

echo "=== run them ($(date -u +%H:%M:%S))"
: > "$summary"
pass=0; fail=0
for n in "${names[@]}"; do
  dir=$work/$n
  ok=1
  if [ ! -x "$dir/check" ]; then
    echo "$n FAIL: the check program did not compile ($dir/nvcc.log)" | tee -a "$summary"; fail=$((fail + 1)); continue
  fi
  "$dir/check" > "$dir/check.txt" 2>&1 || ok=0
  # At a tuned problem the header must launch what the JIT run stored as best: this device's (or chip's) table, the
  # problem's own bucket.
  if grep -Eq "nearest bucket|level=(same architecture|default|none)" "$dir/check.txt" ||
     ! grep -q " ok level=" "$dir/check.txt"; then ok=0; fi
  problems=$(wc -l < "$dir/check.txt")
  if [ $ok = 1 ]; then
    pass=$((pass + 1)); echo "$n ok: $problems tuned problems within tolerance, each its own bucket" >> "$summary"
  else
    fail=$((fail + 1)); echo "$n FAIL:" >> "$summary"
  fi
  sed 's/^/    /' "$dir/check.txt" >> "$summary"
done
while read -r n; do [ -n "$n" ] && { echo "$n FAIL: tuning or export ($work/$n/)" >> "$summary"; fail=$((fail + 1)); }; done \
  < "$work/failures.txt"

echo "=== examples/user_op ($(date -u +%H:%M:%S))"
if [ -f "$work/bias_gelu/ktune_tuned_bias_gelu_fwd.hpp" ] &&
   nvcc -std=c++17 -O3 -arch=sm_90 -I"$user" -I"$work/bias_gelu" -o "$work/bias_gelu_example" "$user/main.cu" \
     > "$work/user_example_nvcc.log" 2>&1 &&
   "$work/bias_gelu_example" > "$work/user_example.txt" 2>&1; then
  pass=$((pass + 1)); echo "examples/user_op ok: $(tail -1 "$work/user_example.txt")" >> "$summary"
else
  fail=$((fail + 1)); echo "examples/user_op FAIL ($work/user_example*.{txt,log})" >> "$summary"
fi
sed 's/^/    /' "$work/user_example.txt" >> "$summary" 2>/dev/null || true

{
  echo "GPU: $(cat "$work/gpu.txt"); database: $db; $((SECONDS - start)) s"
  echo "export_vs_jit: $pass passed, $fail failed"
} >> "$summary"
cat "$summary"
[ "$fail" = 0 ]
