#!/usr/bin/env bash
# Nsight Compute (clocks not locked) on one wgmma_ws configuration of prefill attention and on cuDNN's SDPA kernel at
# the same problem, bf16, 32 q / 8 kv heads, D 128, U 1: the profiles behind docs/performance.md's tags s25c and s25e.
#   bench/attention/prefill_ncu.sh VARIANT B L CONFIG
#   bench/attention/prefill_ncu.sh full 1 8192 \
#     BLOCK_M=128,BLOCK_N=192,STAGES=2,OVERLAP=true,PINGPONG=1,CTAS_PER_SM=1,PERSISTENT=0,Q_STAGES=1
# VARIANT causal or full. Ours: the fourth launch of the kernel while ktune tunes that one configuration (inputs as the
# op spec draws them); cuDNN's: the third of five calls of SDPA on randn inputs. Writes $OUT/prefill_ncu/{ours,cudnn}-
# VARIANT-B-L.txt and prints their main lines. Needs ncu, ktune built in build-gpu/, python3 with torch.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -eq 4 ] || { sed -n 2,9p "$0" >&2; exit 2; }
variant=$1 b=$2 l=$3 config=$4
case $variant in causal) space=prefill_attention ;; full) space=prefill_attention_full ;;
  *) echo "prefill_ncu: VARIANT is causal or full, not '$variant'" >&2; exit 2 ;; esac
dir=${OUT:-/tmp/out}/prefill_ncu
mkdir -p "$dir"
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats
  --section SchedulerStats --section Occupancy)
show() { grep -E "Duration|Throughput|Busy|Issue Slots|Executed Ipc|Eligible|Active Warps|Executed Instructions" "$1"; }

ncu --clock-control none --target-processes all -k "regex:prefill_attention_wgmma_ws" --launch-skip 3 \
  --launch-count 1 "${sections[@]}" "$root/build-gpu/ktune" --root "$root" --db "$dir/ncu.db" tune "$space" \
  --kernel wgmma_ws --config "$config" --shape "B=$b,L=$l,HQ=32,HK=8,D=128,U=1" --dtype bf16 --min-samples 6 \
  --max-samples 6 --quiet > "$dir/ours-$variant-$b-$l.txt" 2>&1
echo "== ours ($config)"; show "$dir/ours-$variant-$b-$l.txt"

sdpa='
import sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
b, l, causal = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "causal"
q = torch.randn(b, l, 32, 128, device="cuda", dtype=torch.bfloat16)
k = torch.randn(b, l, 8, 128, device="cuda", dtype=torch.bfloat16)
v = torch.randn(b, l, 8, 128, device="cuda", dtype=torch.bfloat16)
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(5):
        F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal,
                                       enable_gqa=True)
torch.cuda.synchronize()
'
ncu --clock-control none -k "regex:cudnn|sdpa|fmha|flash|fprop" --launch-skip 2 --launch-count 1 "${sections[@]}" \
  python3 -c "$sdpa" "$b" "$l" "$variant" > "$dir/cudnn-$variant-$b-$l.txt" 2>&1
echo "== cuDNN ($(grep -m1 -oE '^  [a-z_][a-zA-Z0-9_]+' "$dir/cudnn-$variant-$b-$l.txt" | tr -d ' '))"
show "$dir/cudnn-$variant-$b-$l.txt"
