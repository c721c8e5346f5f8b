#!/usr/bin/env bash
# Session 13, one device call: LayerNorm (with bias) against PyTorch side by side after the cluster change: the peers
# script (eager = F.layer_norm, torch.compile) at every default problem and dtype, then ktune's tuning of the same
# problems, on the same machine. Import and compare here: ktune import-peers, bench/targets.py --detail.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
PYTHONUNBUFFERED=1 timeout 250 python3 bench/peers/measure_peers.py --ops layernorm_fwd --time-budget 220 \
  --out $OUT/peers-layernorm.json 2>&1 | tail -3
"$root/bench/tune_on_device.sh" side side.db 280 layernorm
