#!/usr/bin/env bash
# Session 13, one device call: RMSNorm backward's large shapes (M = 4096, 32768; every dtype), the one op session 4
# left under issue 3's 93 % of copy at >= 256 MB (fp32 M=4096 H=8192, 92.5 %), with the device's copy ceiling.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
R=$OUT
bench/gpu_run.sh devices > $R/devices.txt 2>&1
bench/tune_on_device.sh bwdlarge bwdlarge.db 500 "rmsnorm_bwd:--problem=M=4096:--problem=M=32768"
python3 bench/targets.py /tmp/o/bwdlarge/bwdlarge.sqlite --detail > $R/targets.txt 2>&1
cat $R/targets.txt
