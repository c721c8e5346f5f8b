#!/usr/bin/env bash
# Session 11, no GPU: the loads-first helpers (opaque, log2_of, load_words_if) moved from the softmax, add + RMSNorm
# and RMSNorm backward kernels into kernels/common/ktune_device.cuh: nine instantiations compared as PTX before (REV,
# default 6407779, the commit before ed78519) and after (bench/ptx_compare.sh). Output: ptx-compare.txt.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../../../ptx_compare.sh" "$here/instantiations.cu" "${1:-6407779}"
