#!/usr/bin/env bash
# Session 10, no GPU: the all_aligned helper (kernels/common/ktune_device.cuh) replaced hand-written alignment tests in
# GLU's PATH 2 and the RMSNorm loads-first paths: seven instantiations compared as PTX before (REV, default 6f6572f)
# and after (bench/ptx_compare.sh). Output: ptx-compare.txt.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../../ptx_compare.sh" "$here/instantiations.cu" "${1:-6f6572f}"
