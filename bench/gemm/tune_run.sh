# shellcheck shell=bash disable=SC2154,SC2034  # ktune, root, db, out come from the sourcing script; it reads failed
# Sourced by the GEMM bench scripts (gemm_gpu.sh, ffn_two_step_gpu.sh), which set ktune, root, db and out:
#   run TAG SPACE [ktune tune flags...]
# tunes search_spaces/SPACE.yaml in bf16 into $db, writing $out/tune-TAG.json (--json) and $out/tune-TAG.log; prints
# its time and exit code, and on a failure the log's tail, setting failed=1.
failed=0
run() {
  local tag=$1 space=$2
  shift 2
  local t0=$SECONDS rc=0
  "$ktune" --root "$root" --db "$db" tune "$root/search_spaces/$space.yaml" --dtype bf16 --json --quiet "$@" \
    > "$out/tune-$tag.json" 2> "$out/tune-$tag.log" || rc=$?
  echo "$tag: $((SECONDS - t0)) s, rc $rc"
  if [ "$rc" != 0 ]; then
    tail -20 "$out/tune-$tag.log"
    failed=1
  fi
}
