#!/usr/bin/env bash
# Session 13, one device call: the read roofline (copy/read, new) and the copy roofline at every default size and at
# the byte counts of issue 3's and issue 4's open decode-size problems, beside the INT4/INT8 kernels and the cuBLAS
# baseline at 4096^2 and 14336 x 4096 (M = 1, 16), all in one database: how far each open problem is from the time
# any kernel needs to move its bytes, same method.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
R=$OUT
bench/gpu_run.sh info devices > $R/devices.txt 2>&1
bench/tune_on_device.sh floors floors.db 470 copy_read "copy_read:--shape=N=1001:--shape=N=4390913" copy \
  "copy:--shape=N=128256:--shape=N=256512:--shape=N=2052096:--shape=N=4104192" \
  "linear_int4:--dtype=bf16:--problem=M=1,N=4096:--problem=M=16,N=4096:--problem=M=1,N=14336:--problem=M=16,N=14336" \
  "linear_int8:--dtype=bf16:--problem=M=1,N=4096:--problem=M=1,N=14336" \
  "linear_cublas:--dtype=bf16:--problem=M=1,N=4096:--problem=M=16,N=4096:--problem=M=1,N=14336:--problem=M=16,N=14336"
python3 bench/targets.py /tmp/o/floors/floors.sqlite --detail --baseline linear/fwd > $R/targets.txt 2>&1
tail -40 $R/targets.txt
