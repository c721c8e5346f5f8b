#!/usr/bin/env bash
# Issue 24: a timing baseline recorded on one GPU host and checked on another. Two steps, run on two hosts (each from
# the repository root of a tree that carries build-gpu/, see bench/gpu_run.sh):
# results/baselines/nvidia-h100-80gb-hbm3-sm_90.json is one that `record` wrote (H100 host, 2026-11-27).
#   bench/cross_host_check.sh record            # host A: tune a few rmsnorm problems (decode sizes, where check
#                                                # compares kernel time, and large ones, compared by events) and
#                                                # save baseline.json
#   bench/cross_host_check.sh check BASELINE    # host B: check BASELINE (must pass), then the same baseline
#                                                # with a slow configuration named at one decode-size and one large
#                                                # problem (must fail on exactly those two cases)
# Results under $OUT/cross_host (host, calibration, check outputs).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/out}/cross_host
mkdir -p "$out"
export KTUNE_ROOT=$root KTUNE_CACHE_DIR=${KTUNE_CACHE_DIR:-/tmp/ktune-cache}
k=$root/build-gpu/ktune
hostname > "$out/host-$1.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >> "$out/host-$1.txt"
case $1 in
  record)
    db=/tmp/cross_host_record.db
    rm -f "$db"*
    $k --db "$db" tune rmsnorm --dtype bf16 --problem M=1,H=4096 --problem M=16,H=4096 --problem M=4096,H=8192 \
      --problem M=32768,H=4096 --quiet | tail -2
    $k --db "$db" devices --json > "$out/devices-record.json"
    $k --db "$db" baseline save --out "$out/baseline.json" 2>&1 | tail -2
    ;;
  check)
    src=$2
    db=/tmp/cross_host_check.db
    rm -f "$db"*
    $k --db "$db" devices --json > "$out/devices-check.json"
    # The slower baseline is host A's, with the slowest configuration that validates here named at one decode-size
    # and one large problem: the recorded samples stay the best's, as if a change had made the kernel slower there.
    $k --db "$db" tune rmsnorm --dtype bf16 --problem M=16,H=4096 --problem M=4096,H=8192 --strategy random \
      --budget 30 --quiet | tail -1
    python3 - "$src" "$out/baseline-slower.json" "$db" <<'PY'
import json, sqlite3, sys
b = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[3])
for key in ("bf16:M=16,H=4096", "bf16:M=4096,H=8192"):
    case = next(c for c in b["cases"] if c["problem"]["key"] == key)
    slow = db.execute("""select c.key, m.p50_us from measurements m join configurations c on c.id = m.configuration_id
      join problems p on p.id = m.problem_id where p.key = ? and m.status = 'ok'
      order by m.p50_us desc limit 1""", (key,)).fetchone()
    print(f"{key}: substituted {slow[0]} (p50 {slow[1]:.2f} us here) for {case['config']} (timer {case.get('timer', 'events')})")
    case["config"] = slow[0]
json.dump(b, open(sys.argv[2], "w"), indent=1)
PY
    cp "$src" "$out/baseline.json"
    for name in baseline baseline-slower; do
      $k --db "$db" check --baseline "$out/$name.json" --markdown "$out/check-$name.md" \
        > "$out/check-$name.txt" 2>&1
      rc=$?
      echo "check $name: exit $rc"
      tail -25 "$out/check-$name.txt"
      if [ "$rc" -ne 0 ] && grep -q -- "--force" "$out/check-$name.txt"; then
        echo "(calibration differs: checking again with --force)"
        $k --db "$db" check --force --baseline "$out/$name.json" --markdown "$out/check-$name-forced.md" \
          > "$out/check-$name-forced.txt" 2>&1
        echo "check $name --force: exit $?"
        tail -25 "$out/check-$name-forced.txt"
      fi
    done
    ;;
  *) echo "usage: $0 record | check BASELINE.json" >&2; exit 2 ;;
esac
