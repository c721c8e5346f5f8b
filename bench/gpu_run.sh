#!/usr/bin/env bash
# Runs on the GPU host over a copy of the working tree that carries build-gpu/ (built here by bench/gpu_bundle.sh).
# Everything it measures goes under $OUT (default ./out). Usage: bench/gpu_run.sh STEP... where STEP is one of
#   info devices tests tune tune2 best stability stability-small stability-runs ops copy sanitize aot same-harness
#   kill-resume check-demo
# Only a few files under the device tool's $OUT come back: run with OUT=/tmp/o and tar what you need into the real
# $OUT (without the large *.db files, or with their samples dropped), e.g.
#   R=$OUT; export OUT=/tmp/o; bench/gpu_run.sh tune stability; tar czf $R/run.tgz -C /tmp/o --exclude='*.db*' .
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/out}; mkdir -p "$out"
# The build's absolute paths (ctest files, compiled-in source root) point at /work/main: make them valid here.
if [ "$root" != /work/main ]; then mkdir -p /work; ln -sfn "$root" /work/main; fi
export LD_LIBRARY_PATH=/work/main/build-gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export KTUNE_ROOT=/work/main KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache}
k=/work/main/build-gpu/ktune
db=$out/ktune.db
for step in "$@"; do
  echo "=== $step ($(date -u +%H:%M:%S))"
  case $step in
    info) nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv ;;
    devices) $k --db "$db" devices && $k --db "$db" devices --json > "$out/devices.json" ;;
    tests) (cd /work/main/build-gpu && ctest --output-on-failure -j 4 -L gpu 2>&1 | tee "$out/ctest-gpu.log") ;;
    tune) /usr/bin/time -f "%e s wall" $k --db "$db" tune rmsnorm 2>&1 | tee "$out/tune1.log" | grep -v '^measure \[' ;;
    tune2) /usr/bin/time -f "%e s wall" $k --db "$db" tune rmsnorm 2>&1 | tee "$out/tune2.log" | grep -v '^measure \[' ;;
    best) $k --db "$db" best rmsnorm | tee "$out/best.txt"; $k --db "$db" best rmsnorm --json > "$out/best.json" ;;
    stability) # an independent second tuning in a fresh database and cache, to compare best times per problem
      KTUNE_CACHE_DIR=/tmp/ktune-cache-2 $k --db "$out/ktune-2.db" tune rmsnorm --quiet > "$out/tune-independent.txt" 2>&1
      $k --db "$out/ktune-2.db" best rmsnorm --json > "$out/best-2.json"
      [ -f "$out/best.json" ] || $k --db "$db" best rmsnorm --json > "$out/best.json"
      python3 "$root/bench/compare_best.py" "$out/best.json" "$out/best-2.json" | tee "$out/stability.txt" ;;
    stability-small|stability-runs) # independent tunings, each in a fresh process, database and cache
      # (STABILITY_RUNS names them: default a b), each compared with the first: stability-small tunes the small
      # (latency-bound) problems M 1, 16, 256, stability-runs the whole default space
      runs=(${STABILITY_RUNS:-a b})
      if [ $step = stability-small ]; then only="--problem M=1 --problem M=16 --problem M=256"; pre=small; else only=""; pre=run; fi
      for i in "${runs[@]}"; do
        KTUNE_CACHE_DIR=/tmp/ktune-cache-$i /usr/bin/time -f "%e s wall (cold compile cache)" \
          $k --db "$out/$pre-$i.db" tune rmsnorm $only --quiet 2>&1 | tail -2
        $k --db "$out/$pre-$i.db" best rmsnorm --json > "$out/$pre-$i.json"
      done
      for i in "${runs[@]:1}"; do
        python3 "$root/bench/compare_best.py" "$out/$pre-${runs[0]}.json" "$out/$pre-$i.json" | tee "$out/$pre-${runs[0]}-$i.txt"
      done ;;
    ops) # every other op's space (OPS_SPACES: names, default all): bf16 exhaustively (OPS_BUDGET=N: a random N per
      # problem instead), then fp16 and fp32 exhaustively (OPS_SMALL_BUDGET=N: a random N per problem instead)
      spaces=${OPS_SPACES:-$(ls "$root"/search_spaces/*.yaml | xargs -n1 basename | sed 's/\.yaml$//' | grep -vx rmsnorm)}
      for name in $spaces; do
        f="$root/search_spaces/$name.yaml"
        if [ -n "${OPS_BUDGET:-}" ]; then strat="--strategy random --budget $OPS_BUDGET"; else strat=""; fi
        $k --db "$db" tune "$f" --dtype bf16 $strat --quiet --time-cap 0.5 2>&1 | tail -1
        if [ -n "${OPS_SMALL_BUDGET:-}" ]; then small="--strategy random --budget $OPS_SMALL_BUDGET"; else small=""; fi
        $k --db "$db" tune "$f" --dtype fp16 --dtype fp32 $small --quiet --time-cap 0.3 2>&1 | tail -1
      done ;;
    sanitize) # issue 7: memcheck and racecheck over every op's tuned configurations (SANITIZE_DB, default $db) at its
      # smallest problems (SANITIZE_SPACES: names, default all)
      python3 "$root/bench/sanitize_tuned.py" --ktune $k --db "${SANITIZE_DB:-$db}" --out "$out/sanitizer" \
        ${SANITIZE_SPACES:-} 2>&1 | tee "$out/sanitize.txt" ;;
    aot) # issue 5: export a header from a rmsnorm tuning on this GPU model (AOT_DB, default $db: run the tune step
      # first), build the example program and the Google Benchmark against it with this host's nvcc, run both
      gen=/tmp/ktune-generated; rm -rf $gen /tmp/build-example /tmp/build-bench
      $k --db "${AOT_DB:-$db}" export-header --op rmsnorm --out $gen && cp $gen/*.hpp "$out/"
      cmake -S "$root/examples/rmsnorm_aot" -B /tmp/build-example -G Ninja -DKTUNE_TUNED_HEADER_DIR=$gen >/dev/null &&
        cmake --build /tmp/build-example >/dev/null &
      cmake -S "$root/bench" -B /tmp/build-bench -G Ninja -DKTUNE_BENCH_TUNED_DIR=$gen >/dev/null &&
        cmake --build /tmp/build-bench >/dev/null; wait
      /tmp/build-example/rmsnorm_aot 2>&1 | tee "$out/aot-example.txt"
      /tmp/build-bench/rmsnorm_aot_bench --samples=${AOT_SAMPLES:-300} --benchmark_format=json \
        --benchmark_out="$out/aot-bench.json" > "$out/aot-bench.txt" 2>&1; echo "bench exit $?"
      tail -45 "$out/aot-bench.txt" ;;
    same-harness) # ktune's tuned RMSNorm forward (exported from SAME_DB, default $db: run tune first) timed by
      # the peers script beside PyTorch, so both sides go through one harness (SAME_DTYPES, default bf16; SAME_ARGS:
      # more measure_peers.py options, e.g. "--axis M=1,16,256")
      gen=/tmp/ktune-same; rm -rf $gen; mkdir -p $gen
      $k --db "${SAME_DB:-$db}" export-header --op rmsnorm --out $gen >/dev/null &&
        nvcc -std=c++17 -arch=sm_90 -O3 -shared -Xcompiler -fPIC -I/work/main -I$gen \
          "$root/bench/peers/ktune_aot/ktune_aot_peer.cu" -o $gen/libktune_aot_peer.so &&
        python3 "$root/bench/peers/measure_peers.py" --ops rmsnorm_fwd --dtypes "${SAME_DTYPES:-bf16}" ${SAME_ARGS:-} \
          --ktune-aot-lib $gen/libktune_aot_peer.so --out "$out/same-harness.json" 2>&1 | tail -5
      # beside the worker's own numbers when the best step has run
      python3 "$root/bench/peers/same_harness.py" "$out/same-harness.json" $([ -f "$out/best.json" ] && echo "$out/best.json") |
        tee "$out/same-harness.txt" ;;
    copy) # the same-method copy roofline at every size (search_spaces/copy.yaml)
      $k --db "$db" tune copy --quiet 2>&1 | tee "$out/copy.txt" ;;
    kill-resume) # issue 7: kill -9 a tuning mid-run, count rows, resume, count again, check integrity
      kdb="$out/kill.db"; rm -f "$kdb"*
      $k --db "$kdb" tune rmsnorm --dtype bf16 --quiet & pid=$!
      sleep ${KILL_AFTER:-12}; kill -9 $pid; wait $pid 2>/dev/null
      python3 - "$kdb" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print("after kill -9: per run", c.execute("select run_id, count(*) from measurements group by run_id").fetchall(),
      "integrity", c.execute("pragma integrity_check").fetchone()[0])
PY
      $k --db "$kdb" tune rmsnorm --dtype bf16 --quiet 2>&1 | tail -1
      python3 - "$kdb" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
n, distinct = c.execute("select count(*), count(distinct kernel_id||'/'||configuration_id||'/'||problem_id||'/'||device_key) from measurements").fetchone()
print("after resume: measurements", n, "distinct identities", distinct, "integrity", c.execute("pragma integrity_check").fetchone()[0])
print("per run (the killed run's rows are kept, none measured again):", c.execute("select run_id, count(*) from measurements group by run_id").fetchall())
PY
      ;;
    check-demo) # issue 6: baseline, two checks on unchanged code, then a slower configuration substituted
      cdb="$out/check.db"
      $k --db "$cdb" tune rmsnorm --dtype bf16 --problem M=4096 --problem M=32768 --problem M=16,H=4096 --quiet | tail -1
      $k --db "$cdb" baseline save --out "$out/baseline.json" 2>&1 | tail -1
      $k --db "$cdb" check --baseline "$out/baseline.json" --junit "$out/check1.xml" > "$out/check1.txt" 2>&1; echo "check 1 exit $?"
      $k --db "$cdb" check --baseline "$out/baseline.json" > "$out/check2.txt" 2>&1; echo "check 2 exit $?"
      # The recorded samples stay those of the best configuration; the case now names a slow one, as if a change had
      # made the kernel at that problem slower.
      python3 - "$out/baseline.json" "$out/baseline-slower.json" "$cdb" <<'PY'
import json, sqlite3, sys
b = json.load(open(sys.argv[1]))
case = next(c for c in b["cases"] if c["problem"]["key"] == "bf16:M=4096,H=8192")
db = sqlite3.connect(sys.argv[3])
slow = db.execute("""select c.key, m.p50_us from measurements m join configurations c on c.id = m.configuration_id
  join problems p on p.id = m.problem_id where p.key = 'bf16:M=4096,H=8192' and m.status = 'ok'
  order by m.p50_us desc limit 1""").fetchone()
print("substituted", slow[0], "p50", slow[1], "for", case["config"])
case["config"] = slow[0]
json.dump(b, open(sys.argv[2], "w"), indent=1)
PY
      $k --db "$cdb" check --baseline "$out/baseline-slower.json" --markdown "$out/check-slower.md" > "$out/check3.txt" 2>&1; echo "check 3 (slower substituted) exit $?"
      cat "$out/check1.txt" "$out/check3.txt" ;;
    *) echo "unknown step $step" ;;
  esac
done
