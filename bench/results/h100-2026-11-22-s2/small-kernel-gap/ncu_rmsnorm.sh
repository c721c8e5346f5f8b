#!/usr/bin/env bash
# One-off: Nsight Compute on ktune's best RMSNorm forward at bf16 M=256 H=4096 and on torch.compile's kernel.
set -u
out=${OUT:-/tmp}
export LD_LIBRARY_PATH=$PWD/build-gpu/lib:/usr/local/cuda/lib64 KTUNE_ROOT=$PWD
mkdir -p /work; ln -sfn "$PWD" /work/main
M=${M:-256}; H=${H:-4096}; CFG=${CFG:-BLOCK=256,VEC=8,UNROLL=2,ROWS_PER_BLOCK=1}
sec="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats"
timeout 150 ncu --clock-control none --target-processes all -k regex:'^rmsnorm_fwd$' -c 2 $sec \
  build-gpu/ktune --db /tmp/n.db tune rmsnorm --dtype bf16 --problem M=$M,H=$H --config $CFG --force --no-cupti \
  --min-samples 6 --max-samples 6 --quiet > $out/ncu-ktune.txt 2>&1
echo "ktune ncu exit $?"
cat > /tmp/tc.py <<PY
import torch
def rmsnorm_eager(x, w):
    h = x.float(); var = h.pow(2).mean(-1, keepdim=True); h = h * torch.rsqrt(var + 1e-6); return w * h.to(x.dtype)
x = torch.randn(($M, $H), device="cuda").to(torch.bfloat16); w = torch.randn(($H,), device="cuda").to(torch.bfloat16)
f = torch.compile(rmsnorm_eager, dynamic=False)
for _ in range(4): f(x, w)
torch.cuda.synchronize()
PY
timeout 200 ncu --clock-control none --target-processes all -k regex:'triton' -c 2 $sec python3 /tmp/tc.py > $out/ncu-torch.txt 2>&1
echo "torch ncu exit $?"
grep -E "Duration|DRAM Throughput|Memory Throughput|Registers Per|Grid Size|Block Size|Achieved Occupancy|Theoretical Occupancy|Waves Per SM|Warp Cycles Per Issued|One or More Eligible|L2 Hit Rate|Mem Busy|Max Bandwidth|Stall" $out/ncu-ktune.txt | head -40
echo ----- torch
grep -E "triton|Duration|DRAM Throughput|Memory Throughput|Registers Per|Grid Size|Block Size|Achieved Occupancy|Theoretical Occupancy|Waves Per SM|Warp Cycles Per Issued|One or More Eligible|L2 Hit Rate|Mem Busy|Max Bandwidth" $out/ncu-torch.txt | head -40
