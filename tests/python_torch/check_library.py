#!/usr/bin/env python3
"""Loads the op library built from the synthetic database (scripts/build_torch_ops.sh --synthetic) with ctypes, no
torch: the ABI version, the ops exported into it (every op of _lib.OP_BITS), the status of a launch here (no device) and the message
of an op left out, the scratch sizes from the exported tables, and the packing functions on a small matrix.
  check_library.py LIBRARY"""

import ctypes
import importlib.util
import sys
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "ktune_torch_lib", Path(__file__).resolve().parents[2] / "python" / "ktune_torch" / "_lib.py")
_lib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(_lib)

import os  # noqa: E402

os.environ["KTUNE_TORCH_LIB"] = sys.argv[1]
lib = _lib.require()
built = [name for name in _lib.OP_BITS if _lib.has_op(name)]
assert built == list(_lib.OP_BITS), built
# Without a GPU a launcher answers "no device" (101) and says so, touching none of its pointers; with one, null pointers.
status = lib.ktune_torch_swiglu(2, None, None, None, 0, 8, 8, 8, None)
assert status in (101, 1, 2), status  # no device; null pointer or bad size
assert lib.ktune_torch_status_message(status), status
status = lib.ktune_torch_swiglu_backward(2, None, None, None, None, None, 0, 8, 16, 8, None)
assert status in (101, 1, 2), status
status = lib.ktune_torch_prefill_attention(2, 1, None, None, None, None, None, 1, 512, 32, 8, 128, 0, None)
assert status in (101, 1), status
status = lib.ktune_torch_linear_act(2, 1, None, None, None, None, 16, 4096, 4096, None)
assert status in (101, 1), status
assert lib.ktune_torch_linear_act(2, 7, None, None, None, None, 16, 4096, 4096, None) == _lib.NOT_BUILT  # no act 7
status = lib.ktune_torch_ffn_gated(2, 0, None, None, None, 16, 4096, 4096, None)
assert status in (101, 1), status
assert lib.ktune_torch_ffn_gated(2, 2, None, None, None, 16, 4096, 4096, None) == _lib.NOT_BUILT  # no act 2
assert b"not exported" in lib.ktune_torch_status_message(_lib.NOT_BUILT)
# decode_attention's scratch from the exported table: align_up(B*HK, 4) + B*HK*MAX_SPLITS*GROUP*(D+4) (op spec lets)
b, hq, hk, d = 1, 24, 8, 128
max_splits = min(128, max(1, 8192 // (b * hk)))
want = (b * hk + 3) // 4 * 4 + b * hk * max_splits * (hq // hk) * (d + 4)
got = lib.ktune_torch_decode_attention_scratch(2, b, 1024, hq, hk, d)
assert got == want, (got, want)
# linear_skinny's scratch from its op spec's lets: align_up(ceil(N/16) * ceil(M/8), 4) counters, then MAX_SPLIT_K
# (min(16, 2^24 / (M N))) partials of M x N; with no device no shape counts as tuned (dense_linear takes cuBLAS).
m, n, k = 1, 3072, 3072
want = (-(-n // 16) * -(-m // 8) + 3) // 4 * 4 + min(16, (1 << 24) // (m * n)) * m * n
got = lib.ktune_torch_linear_skinny_scratch(2, m, n, k)
assert got == want, (got, want)
assert lib.ktune_torch_linear_skinny_tuned(2, m, n, k) == 0
# The fused SwiGLU down projection's scratch: linear_skinny's layout at the same M, N (K the down projection's).
m, n, k = 1, 3072, 8192
want = (-(-n // 16) * -(-m // 8) + 3) // 4 * 4 + min(16, (1 << 24) // (m * n)) * m * n
got = lib.ktune_torch_swiglu_linear_scratch(2, m, n, k)
assert got == want, (got, want)
assert lib.ktune_torch_swiglu_linear_tuned(2, m, n, k) == 0
# The fused add + RMSNorm + projection's scratch: linear_skinny's layout at the same M, N (eps plays no part).
m, n, k, eps_e9 = 8, 5120, 3072, 10000
want = (-(-n // 16) * -(-m // 8) + 3) // 4 * 4 + min(16, (1 << 24) // (m * n)) * m * n
got = lib.ktune_torch_add_rms_norm_linear_scratch(2, m, n, k, eps_e9)
assert got == want, (got, want)
assert lib.ktune_torch_add_rms_norm_linear_tuned(2, m, n, k, eps_e9) == 0
# Packing: sizes, and an INT8 matrix whose bytes all land somewhere distinct.
n, k = 16, 32
assert lib.ktune_torch_int8_weight_bytes(n, k) == 512
plain = (ctypes.c_int8 * (n * k))(*[(i % 251) - 125 for i in range(n * k)])
packed = (ctypes.c_int8 * 512)()
assert lib.ktune_torch_pack_int8(plain, n, k, packed) == 1
assert sorted(packed) == sorted(plain)
print(f"ktune_torch library ok: {sys.argv[1]} holds {built}")
