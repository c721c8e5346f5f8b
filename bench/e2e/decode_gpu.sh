#!/usr/bin/env bash
# On the GPU host: the decode-step benchmark of issue 26 (bench/e2e/decode.py) with ktune's kernels from a database.
#   OUT=/tmp/out bench/e2e/decode_gpu.sh                             tune every op the model uses quickly, then run
#   KTUNE_DB=results/tuned.db OUT=/tmp/out bench/e2e/decode_gpu.sh   use that database (tuned at the model's shapes)
# Knobs: BUDGET (configurations per problem when tuning, default 8, random), WEIGHT_BUDGET (the same for the ops that
# read the weights and the cache, default 24, forest search: most of a step's time), TUNE_TIME (seconds per tuning
# call, 60),
# TUNE_BUDGET (seconds for all the tuning, 210),
# BATCH ("1 8"), STEPS (128), PROMPT (512), MODES (eager,compile,ktune,ktune+graph), WEIGHTS (bf16,int4; int4+head:
# lm_head INT4 too),
# COMPILE_TIMEOUT (seconds to compile the baseline at one batch size, 240), DEADLINE (seconds for the whole script,
# 500), DECODE_EXTRA (more decode.py arguments: "--tiny --device cpu" smoke-tests this script's flow).
# Assumes ktune built in build-gpu/ (the lead's command in docs/). Stages: tune (a failed op is reported and left out,
# the run goes on), build the op library (scripts/build_torch_ops.sh), the GPU op tests (a failure is reported, the
# run goes on, the script exits 1 at the end), decode.py (results rewritten to decode.json after every run; cut at
# DEADLINE), then the Markdown table from decode.json. Everything under $OUT/decode/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/out}/decode
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache} KTUNE_ROOT=$root
k=${KTUNE_BIN:-$root/build-gpu/ktune}
[ -x "$k" ] || { echo "decode_gpu: $k not built" >&2; exit 1; }
nvidia-smi -L > /dev/null 2>&1 || { echo "decode_gpu: no NVIDIA GPU here" >&2; exit 3; }
start=$SECONDS
deadline=${DEADLINE:-500}
prompt=${PROMPT:-512} steps=${STEPS:-128}
len=$((prompt + steps + 1))  # the StaticCache capacity decode.py allocates
problems=()                  # what went wrong, repeated at the end
stage() { echo "=== $1 ($(date -u +%H:%M:%S), $((SECONDS - start)) s)"; }

# The torch.compile baseline compiles (CPU, minutes for the whole model per batch size) in the background while ktune
# tunes and builds: it compiles and warms up every batch size, writes compile.ready, then waits for compile.gate
# (made once the ktune runs are done) before its timed steps, so no two timed runs share the GPU.
modes=${MODES:-eager,compile,ktune,ktune+graph}
rm -f "$out/compile.ready" "$out/compile.gate" "$out/decode.json" "$out/decode_compile.json"
bg=""
if [[ ,$modes, == *,compile,* ]]; then
  # shellcheck disable=SC2086  # BATCH is a list
  python3 "$root/bench/e2e/decode.py" --batch ${BATCH:-1 8} --prompt "$prompt" --steps "$steps" \
    --compile-timeout "${COMPILE_TIMEOUT:-240}" --ready "$out/compile.ready" --gate "$out/compile.gate" \
    --json "$out/decode_compile.json" ${DECODE_EXTRA:-} > "$out/decode_compile.txt" 2>&1 &
  bg=$!
  trap '[ -n "$bg" ] && kill "$bg" 2>/dev/null; true' EXIT
fi

db=${KTUNE_DB:-}
if [ -z "$db" ]; then
  db=$out/decode.db
  rm -f "$db"
  quick=(--dtype bf16 --strategy random --budget "${BUDGET:-8}" --min-samples 6 --max-samples 40 --quiet)
  # the ops whose time is the weights' (and the cache's) bytes: a larger budget, forest search from the run's winners
  thorough=(--dtype bf16 --strategy forest --budget "${WEIGHT_BUDGET:-24}" --min-samples 6 --max-samples 40 --quiet)
  search=("${quick[@]}")
  tune_budget=${TUNE_BUDGET:-210}  # seconds for all the tuning: ops past it are reported and left out
  # tune SPACE SHAPE...: SPACE a file stem under search_spaces/, or a path (without .yaml) from the repository root.
  # One call for all shapes first. A space of several kernels fails as a whole when one kernel takes only some of the
  # shapes (glu's loads_first: M <= 16): then each kernel alone, and each (kernel, shape) a kernel fails at alone. A
  # shape no kernel takes, or a failed tuning, is reported and the run goes on (the op's untuned shapes then run on
  # the nearest tuned bucket, or the op is left out of the library and runs its torch math).
  tune() {
    local space=$1 name log t0=$SECONDS; shift; name=$(basename "$space"); [[ $space == */* ]] || space=search_spaces/$space
    log=$out/tune_$name.log
    local shapes=() s left=$((tune_budget - (SECONDS - start)))
    if ((left < 10)); then
      echo "  $name: not tuned (the ${tune_budget} s tuning budget is spent)"
      problems+=("$name not tuned: the tuning budget (TUNE_BUDGET=$tune_budget s) was spent"); return 0
    fi
    for s in "$@"; do shapes+=(--shape "$s"); done
    shapes+=(--time "$((left < ${TUNE_TIME:-60} ? left : ${TUNE_TIME:-60}))")  # seconds of measuring per call
    if "$k" --db "$db" tune "$root/$space.yaml" "${search[@]}" "${shapes[@]}" > "$log" 2>&1; then
      echo "  $name: $# shapes tuned ($((SECONDS - t0)) s)"; return 0
    fi
    local kernels kern ok=0 missed=()
    kernels=$("$k" space "$root/$space.yaml" --show 0 2>/dev/null | sed -n 's/.*): kernel \([A-Za-z0-9_]*\), .*/\1/p')
    [ -n "$kernels" ] || kernels=-  # a space of one kernel: shape by shape
    for kern in $kernels; do
      local sel=(); [ "$kern" = - ] || sel=(--kernel "$kern")
      echo "--- ${kern}: all shapes" >> "$log"
      if "$k" --db "$db" tune "$root/$space.yaml" "${search[@]}" "${sel[@]}" "${shapes[@]}" >> "$log" 2>&1; then
        ok=$((ok + $#)); continue
      fi
      for s in "$@"; do
        echo "--- ${kern}: $s" >> "$log"
        if "$k" --db "$db" tune "$root/$space.yaml" "${search[@]}" "${sel[@]}" --shape "$s" --time 30 >> "$log" 2>&1; then
          ok=$((ok + 1))
        else
          missed+=("$kern@$s")
        fi
      done
    done
    echo "  $name: $ok (kernel, shape) pairs tuned one by one ($((SECONDS - t0)) s); not tuned: ${missed[*]:-none}"
    if ((ok == 0)); then
      tail -3 "$log"; problems+=("tuning $name failed at every shape ($log)")
    elif ((${#missed[@]})); then
      echo "    (a kernel may take only some shapes: glu's loads_first only M <= 16; each shape needs one kernel)"
    fi
    return 0
  }
  stage "tune at the model's shapes"
  # Llama-3.2-3B: hidden 3072, intermediate 8192, 24 q heads, 8 kv heads (GQA group 3), head dim 128, RoPE cache
  # 131072 rows. Decode rows are the batch (1, 8); prefill rows prompt * batch (512, 4096): tuned too, the prefill
  # runs the same ops (not timed).
  rows=(1 8 "$prompt" $((prompt * 8)))
  each() { local fmt=$1 m; for m in "${rows[@]}"; do echo "${fmt//@/$m}"; done; }
  # shellcheck disable=SC2046  # the shapes are words
  tune rmsnorm $(each "M=@,H=3072,S=3072")
  # the fused residual add + RMSNorm at Llama 3's eps (1e-5: EPS_E9=10000), ktune_torch's op declared as data
  # shellcheck disable=SC2046
  tune python/ktune_torch/spaces/add_rmsnorm_eps $(each "M=@,H=3072,S=3072,EPS_E9=10000")
  # the halves of the fused gate_up projection read in place: row stride 2I
  # shellcheck disable=SC2046
  tune glu_swiglu $(each "M=@,I=8192,S=16384,SO=8192")
  # q, k: rows of the fused qkv output (token stride 5120)
  # shellcheck disable=SC2046
  tune rope_neox $(each "M=@,HQ=24,HK=8,D=128,R=128,P=131072,SQ=5120,SK=5120")
  # decode_step's RoPE + KV-cache write: one token per sequence, into the StaticCache of $len rows (decode rows only)
  tune rope_neox_cache "M=1,HQ=24,HK=8,D=128,R=128,P=131072,L=$len,SQ=5120,SK=5120,SV=5120" \
    "M=8,HQ=24,HK=8,D=128,R=128,P=131072,L=$len,SQ=5120,SK=5120,SV=5120"
  search=("${thorough[@]}")
  tune decode_attention "B=1,L=$len,HQ=24,HK=8,D=128,U=1" "B=8,L=$len,HQ=24,HK=8,D=128,U=1"
  # patch_model's fused projections: qkv (3072 + 2 x 1024 rows), o, gate_up (2 x 8192), down; the dense skinny
  # kernel also takes lm_head (the tied embedding, 128256 x 3072)
  dense=() int4=()
  for m in 1 8; do
    for nk in "5120 3072" "3072 3072" "16384 3072" "3072 8192" "128256 3072"; do
      read -r n kk <<< "$nk"
      dense+=("M=$m,N=$n,K=$kk")
      # lm_head stays bf16 with INT4 weights, unless WEIGHTS has int4+head
      if [[ $n != 128256 || ${WEIGHTS:-} == *int4+head* ]]; then int4+=("M=$m,N=$n,K=$kk,G=128"); fi
    done
  done
  tune linear_skinny "${dense[@]}"
  # the MLP's SwiGLU fused into the down projection (bf16 weights): gate_up [M, 2 x 8192] against down [3072, 8192]
  tune linear_skinny_swiglu "M=1,N=3072,K=8192" "M=8,N=3072,K=8192"
  [[ ${WEIGHTS:-bf16,int4} == *int4* ]] && tune linear_int4 "${int4[@]}"
  search=("${quick[@]}")
  # the backwards at bench/e2e/train.py's rows (batch 2 x seq 2048): its library comes from this script
  tune rmsnorm_bwd "M=4096,H=3072"
  # SwiGLU's backward at the same rows, the halves of the fused gate_up gradient (row stride 2I)
  tune glu_swiglu_bwd "M=4096,I=8192,S=16384,SO=8192"
  echo "tuned in $((SECONDS - start)) s: $db"
fi

stage "build the op library"
export KTUNE_TORCH_LIB=$out/lib/libktune_torch_ops.so
rm -f "$KTUNE_TORCH_LIB"
if ! "$root/scripts/build_torch_ops.sh" --db "$db" --ktune "$k" --out "$out/lib" > "$out/build.log" 2>&1; then
  # the baselines still run; the ktune modes run every op's torch math (decode.py says the library did not load)
  tail -20 "$out/build.log" || true
  problems+=("building the op library FAILED ($out/build.log): the ktune rows are torch math, not ktune")
fi
cat "$out/build.log"
for op in rmsnorm add_rmsnorm_eps glu_swiglu rope_neox rope_neox_cache decode_attention linear_skinny linear_skinny_swiglu linear_int4; do
  { grep "left out" "$out/build.log" || true; } | grep -qw "$op" && problems+=("$op is not in the op library: its calls take the torch fallback")
done

stage "GPU op tests"
if python3 -c "import pytest" 2>/dev/null; then
  if ! KTUNE_TORCH_PYTHON=python3 timeout 150 "$root/tests/python_torch/run.sh" gpu > "$out/gpu_tests.txt" 2>&1; then
    { grep -E "^(FAILED|ERROR)|Error|assert" "$out/gpu_tests.txt" || tail -20 "$out/gpu_tests.txt"; } | head -20
    problems+=("the ktune_torch GPU tests FAILED ($out/gpu_tests.txt)")
  fi
  tail -3 "$out/gpu_tests.txt" || true
else
  echo "no pytest here: tests/python_torch/test_ops_gpu.py not run (decode.py still checks outputs against eager)"
fi

stage "decode"
if [ -n "$bg" ]; then
  # Timed runs should not share the CPU with a compilation: wait for the baseline to be compiled, at most until the
  # ktune runs (~2 min) would no longer fit the deadline; past that they run beside it, and the table says so.
  until [ -f "$out/compile.ready" ] || ! kill -0 "$bg" 2>/dev/null || ((SECONDS - start > deadline - 170)); do sleep 1; done
  if ! kill -0 "$bg" 2>/dev/null; then
    bg=""
    problems+=("torch.compile baseline failed ($out/decode_compile.txt)")
    tail -5 "$out/decode_compile.txt" || true
  elif [ ! -f "$out/compile.ready" ]; then
    problems+=("NOTE: the eager and ktune runs were timed while torch.compile was still compiling (CPU shared; eager
    and ktune without graphs are CPU-bound, so their times are pessimistic): rerun with MODES=eager,ktune,ktune+graph")
    echo "${problems[-1]}"
  else
    echo "torch.compile baseline compiled ($(grep -c "compiled and warmed" "$out/decode_compile.txt" || true) batch sizes) at $((SECONDS - start)) s"
  fi
fi
left=$((deadline - (SECONDS - start) - 40))
((left >= 120)) || left=120
ktmodes=$(echo ",$modes," | sed 's/,compile,/,/; s/^,//; s/,$//')
# shellcheck disable=SC2086  # BATCH is a list
if ! timeout --signal=INT --kill-after=15 "$left" python3 "$root/bench/e2e/decode.py" --batch ${BATCH:-1 8} \
    --prompt "$prompt" --steps "$steps" --modes "$ktmodes" --weights "${WEIGHTS:-bf16,int4}" \
    --json "$out/decode.json" ${DECODE_EXTRA:-} > "$out/decode.txt" 2>&1; then
  problems+=("decode.py failed or was cut at ${left} s ($out/decode.txt)")
fi
{ grep -vE "^\||^$|^## |^- |Warning|warnings.warn|return fn" "$out/decode.txt" || true; } | tail -50
if [ -n "$bg" ]; then
  touch "$out/compile.gate"
  left=$((deadline - (SECONDS - start)))
  ((left >= 30)) || left=30
  for ((i = 0; i < left; i++)); do kill -0 "$bg" 2>/dev/null || break; sleep 1; done
  if kill -0 "$bg" 2>/dev/null; then
    kill "$bg" 2>/dev/null || true
    problems+=("torch.compile baseline cut while timing ($out/decode_compile.txt)")
  elif ! wait "$bg"; then
    problems+=("torch.compile baseline failed ($out/decode_compile.txt)")
  fi
  bg=""
  { grep -E "^\[|compile:" "$out/decode_compile.txt" || true; } | { grep -v "^- " || true; } | tail -8
fi
if [ -f "$out/decode.json" ] || [ -f "$out/decode_compile.json" ]; then
  python3 "$root/bench/e2e/decode.py" --table "$out/decode.json" "$out/decode_compile.json" | tee "$out/table.md" || true
  python3 - "$out" <<'PY' || true
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
docs = [json.loads(p.read_text()) for p in (out / "decode.json", out / "decode_compile.json") if p.exists()]
merged = dict(docs[0], results=[r for d in docs for r in d["results"]], outputs=[n for d in docs for n in d["outputs"]])
(out / "decode.json").write_text(json.dumps(merged, indent=1))
PY
else
  tail -30 "$out/decode.txt" || true
fi
echo
echo "decode_gpu: $((SECONDS - start)) s; results in $out/ (decode.json, decode.txt, tune_*.log, build.log)"
if ((${#problems[@]})); then
  printf 'decode_gpu: %s\n' "${problems[@]}" >&2
  # a failed tuning or an op left out is reported, not fatal; failed tests or a failed decode run are
  if printf '%s\n' "${problems[@]}" | grep -qE "FAILED|decode.py failed|baseline failed"; then exit 1; fi
fi
exit 0
