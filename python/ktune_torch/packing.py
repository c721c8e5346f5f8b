"""INT4 / INT8 weight-only quantization and the kernels' packed layout, in torch.

The layout is kernels/quant_linear/quant_linear_layout.cuh's (tiles of 16 rows by one k chunk, 512 bytes each, a
lane's 16 bytes its mma fragments); this is a vectorized port of its int4_position(), int8_position() and
int4_param_index(), checked byte for byte against the C++ packing functions (quant_linear_packing.hpp, exposed by the
op library) in tests/python. Quantization:
  INT4: asymmetric per (group of G along k, row n): scale = (max - min) / 15, zero = round(-min / scale) in [0, 15],
        q = clamp(round(w / scale) + zero, 0, 15); w ~ (q - zero) * scale.
  INT8: symmetric per row: scale = max|w| / 127, q = clamp(round(w / scale), -128, 127); w ~ q * scale.
"""

import torch

TILE_N = 16
INT4_CHUNK_K = 64
INT8_CHUNK_K = 32


def _ceil_div(a, b):
    return (a + b - 1) // b


def int4_weight_bytes(n, k):
    return _ceil_div(n, TILE_N) * TILE_N * _ceil_div(k, INT4_CHUNK_K) * INT4_CHUNK_K // 2


def int8_weight_bytes(n, k):
    return _ceil_div(n, TILE_N) * TILE_N * _ceil_div(k, INT8_CHUNK_K) * INT8_CHUNK_K


def int4_params(n, k, group):
    return _ceil_div(n, TILE_N) * TILE_N * _ceil_div(k, group)


def _grid(n, k, device):
    rows = torch.arange(n, device=device, dtype=torch.int64)[:, None].expand(n, k)
    cols = torch.arange(k, device=device, dtype=torch.int64)[None, :].expand(n, k)
    return rows, cols


def _lane_offset(tile, chunk, chunks_per_row, lane):
    return ((tile * chunks_per_row + chunk) * 32 + lane) * 16


def int4_positions(n, k, device="cpu"):
    """(byte, shift) of every weight (row, col) of an N x K INT4 matrix: int64 tensors [N, K]."""
    r_all, c_all = _grid(n, k, device)
    tile, chunk = r_all // TILE_N, c_all // INT4_CHUNK_K
    r, kk = r_all % TILE_N, c_all % INT4_CHUNK_K
    g, upper = r % 8, r // 8
    t, j, e = kk // 16, (kk % 16) // 4, kk % 4
    nibble = (e // 2) * 2 + upper + (e % 2) * 4
    word = _lane_offset(tile, chunk, _ceil_div(k, INT4_CHUNK_K), 4 * g + t) + 4 * j
    return word + nibble // 2, (nibble % 2) * 4


def int8_positions(n, k, device="cpu"):
    """Byte of every weight (row, col) of an N x K INT8 matrix: int64 tensor [N, K]."""
    r_all, c_all = _grid(n, k, device)
    tile, chunk = r_all // TILE_N, c_all // INT8_CHUNK_K
    r, kk = r_all % TILE_N, c_all % INT8_CHUNK_K
    g, upper = r % 8, r // 8
    t, j, e = kk // 8, (kk % 8) // 4, kk % 4
    word, byte = 2 * j + e // 2, upper * 2 + e % 2
    return _lane_offset(tile, chunk, _ceil_div(k, INT8_CHUNK_K), 4 * g + t) + 4 * word + byte


def int4_param_indices(n, k, group, device="cpu"):
    """Packed index of the scale (and zero point) of every (group, row): int64 tensor [ceil(K / G), N]."""
    groups = _ceil_div(k, group)
    grp = torch.arange(groups, device=device, dtype=torch.int64)[:, None].expand(groups, n)
    row = torch.arange(n, device=device, dtype=torch.int64)[None, :].expand(groups, n)
    r = row % TILE_N
    return ((row // TILE_N) * groups + grp) * TILE_N + 2 * (r % 8) + r // 8


def pack_int4(q, group, scales, zeros):
    """Packs q [N, K] (uint8 values 0..15), scales [ceil(K / G), N] (fp16/bf16) and zeros [ceil(K / G), N] (uint8)
    into the kernel's layout: (w uint8 [int4_weight_bytes], scales [int4_params], zeros uint8 [int4_params])."""
    n, k = q.shape
    byte, shift = int4_positions(n, k, q.device)
    packed = torch.zeros(int4_weight_bytes(n, k), dtype=torch.int32, device=q.device)
    packed.index_add_(0, byte.reshape(-1), (q.to(torch.int32) << shift.to(torch.int32)).reshape(-1))
    idx = int4_param_indices(n, k, group, q.device).reshape(-1)
    s = torch.zeros(int4_params(n, k, group), dtype=scales.dtype, device=q.device)
    z = torch.zeros(int4_params(n, k, group), dtype=torch.uint8, device=q.device)
    s[idx] = scales.reshape(-1)
    z[idx] = zeros.reshape(-1).to(torch.uint8)
    return packed.to(torch.uint8), s, z


def pack_int8(q):
    """Packs q [N, K] (int8) into the kernel's layout: int8 [int8_weight_bytes]."""
    n, k = q.shape
    packed = torch.zeros(int8_weight_bytes(n, k), dtype=torch.int8, device=q.device)
    packed[int8_positions(n, k, q.device).reshape(-1)] = q.reshape(-1)
    return packed


def unpack_int4(w, n, k):
    byte, shift = int4_positions(n, k, w.device)
    return (w.to(torch.int32)[byte] >> shift.to(torch.int32)) & 0xF


def dequantize_int4(w, scales, zeros, n, k, group):
    """fp32 [N, K] weights from the packed INT4 buffers."""
    q = unpack_int4(w, n, k).float()
    idx = int4_param_indices(n, k, group, w.device)  # [G, N]
    s = scales[idx].float().t().repeat_interleave(group, dim=1)[:, :k]  # [N, K]
    z = zeros[idx].float().t().repeat_interleave(group, dim=1)[:, :k]
    return (q - z) * s


def dequantize_int8(w, scales, n, k):
    q = w[int8_positions(n, k, w.device)].float()
    return q * scales.float()[:, None]


def quantize_int4(weight, group=128):
    """weight [N, K] -> (q uint8 [N, K], scales [ceil(K/G), N] in weight's dtype, zeros uint8 [ceil(K/G), N])."""
    n, k = weight.shape
    groups = _ceil_div(k, group)
    wf = weight.float()
    pad = groups * group - k
    if pad:
        wf = torch.nn.functional.pad(wf, (0, pad), value=0.0)
    wg = wf.view(n, groups, group)
    if pad:  # the padding of a partial last group must not widen its range: repeat the group's first value
        wg = wg.clone()
        wg[:, -1, group - pad:] = wg[:, -1, :1]
    lo = wg.amin(-1).clamp(max=0.0)
    hi = wg.amax(-1).clamp(min=0.0)
    scale = ((hi - lo) / 15.0).clamp(min=1e-8)
    scale_t = scale.to(weight.dtype).float()  # the kernel reads the rounded scale: quantize against it
    zero = torch.round(-lo / scale_t).clamp(0, 15)
    q = torch.clamp(torch.round(wg / scale_t[..., None]) + zero[..., None], 0, 15)
    q = q.view(n, groups * group)[:, :k].to(torch.uint8)
    return q, scale_t.to(weight.dtype).t().contiguous(), zero.to(torch.uint8).t().contiguous()


def quantize_int8(weight):
    """weight [N, K] -> (q int8 [N, K], scales [N] in weight's dtype)."""
    wf = weight.float()
    scale = (wf.abs().amax(-1) / 127.0).clamp(min=1e-8).to(weight.dtype)
    q = torch.clamp(torch.round(wf / scale.float()[:, None]), -128, 127).to(torch.int8)
    return q, scale


def dequantized(weight, bits, group=128):
    """weight [N, K] as the weight-only kernels see it after quantization (INT4 group-wise or INT8 per row), in
    weight's dtype: the weights of an eager model that computes what a quantized patched model should."""
    n, k = weight.shape
    if bits == 4:
        q, scales, zeros = quantize_int4(weight, group)
        w = dequantize_int4(*pack_int4(q, group, scales, zeros), n, k, group)
    elif bits == 8:
        q, scales = quantize_int8(weight)
        w = dequantize_int8(pack_int8(q), scales, n, k)
    else:
        raise ValueError(f"bits must be 4 or 8, not {bits}")
    return w.to(weight.dtype)
