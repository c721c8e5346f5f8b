#!/usr/bin/env python3
"""Times PyTorch peers of ktune's kernels with ktune's method and writes a peer file for `ktune import-peers`.

Run on the GPU host (PyTorch 2.11, Triton 3.6): python3 bench/peers/measure_peers.py --out peers.json
The file format is reports/PEERS_FORMAT.md; how to run, what each impl means and the method's limits: README.md here.

Method, as harness/worker/worker.cpp times ktune's kernels:
  cold_l2_events    before each sample a buffer of 2x the L2 is written twice (with the evict_last policy, then
                    fill_; a new value each time: --flush), a sleep kernel holds the stream while the host enqueues
                    the flush and the call, and CUDA events bracket the call alone: the GPU time of everything the
                    call launches, cold, launch latency hidden. A sample whose hold ran out before the host finished
                    enqueuing is thrown away and taken again with a longer hold.
  cupti_kernel_sum  the PyTorch profiler (CUPTI) over the same held flush + call: the sum of the device durations of
                    the kernels (and memsets/memcpys) the call launched, gaps between them left out. Small cases only
                    (--cupti-max-us), as ktune's worker records CUPTI durations beside its event times. (Before
                    2026-11-22 evening the profiled samples were not held: the call could start after an idle gap.)
With --flush protected or plain the two methods are named cold_l2_events.protected_flush, ... .plain_flush (and
cupti_kernel_sum likewise): only the default, clean flush is ktune's method, and the names keep the others apart.
"""

import argparse
import datetime
import gc
import itertools
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import torch
import torch.nn.functional as F

# ---------------------------------------------------------------------------------------------------------------------
# Names. Everything that must match ktune (op, variant, axis names and their order, impl and method names) is here.
# ---------------------------------------------------------------------------------------------------------------------


def grid(**axes):
    """The problems of a cartesian product of axis values, axes in the order given (the YAML `problems` order)."""
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*axes.values())]


M5 = [1, 16, 256, 4096, 32768]
LINEAR_NK = [(4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096)]
LINEAR_M = [1, 4, 16, 64]

# One entry per measured family. op/variant: ktune's names (search_spaces/*.yaml; decode_attention and linear_* are
# provisional). problems: axis sizes in the order of ktune's YAML `problems`, since the stored key reads like ktune's.
# quick: the subset --quick takes (a problem is in it when each listed axis has one of the listed values). impls: keys
# of IMPLS below, in the order they are measured; the first is the reference the others' outputs are checked against.
FAMILIES = {
    "rmsnorm_fwd": dict(
        op="rmsnorm", variant="fwd", problems=grid(M=M5, H=[2048, 4096, 8192]),
        dtypes=["bf16", "fp16", "fp32"], impls=["eager", "fused", "compile"], quick=dict(M=[16, 4096], H=[4096])),
    "add_rmsnorm_fwd": dict(
        op="add_rmsnorm", variant="fwd", problems=grid(M=M5, H=[2048, 4096, 8192]),
        dtypes=["bf16", "fp16", "fp32"], impls=["eager", "fused", "compile"], quick=dict(M=[4096], H=[4096])),
    "layernorm_fwd": dict(
        op="layernorm", variant="fwd", problems=grid(M=M5, H=[2048, 4096, 8192]),
        dtypes=["bf16", "fp16", "fp32"], impls=["eager", "compile"], quick=dict(M=[4096], H=[4096])),
    "rmsnorm_bwd": dict(
        op="rmsnorm", variant="bwd", problems=grid(M=M5, H=[2048, 4096, 8192]),
        dtypes=["bf16", "fp16", "fp32"], impls=["eager", "fused", "compile"], quick=dict(M=[4096], H=[4096])),
    # ktune's rope problems have no R axis (R defaults to D): an R here would keep the peers from matching.
    "rope_neox": dict(
        op="rope", variant="neox", problems=grid(M=M5, HQ=[32], HK=[8], D=[128]),
        dtypes=["bf16", "fp16", "fp32"], impls=["eager", "compile"], quick=dict(M=[16, 4096])),
    "glu_swiglu": dict(
        op="glu", variant="swiglu", problems=grid(M=M5, I=[8192, 14336]),
        dtypes=["bf16", "fp16", "fp32"], impls=["eager", "compile"], quick=dict(M=[4096], I=[14336])),
    "glu_geglu": dict(
        op="glu", variant="geglu", problems=grid(M=M5, I=[8192, 14336]),
        dtypes=["bf16", "fp16", "fp32"], impls=["eager", "compile"], quick=dict(M=[4096], I=[14336])),
    "softmax_fwd": dict(
        op="softmax", variant="fwd", problems=grid(M=[1, 16, 256, 4096], N=[4096, 32768, 128256]),
        dtypes=["bf16", "fp16", "fp32"], impls=["eager", "compile"], quick=dict(M=[16, 4096], N=[32768])),
    "decode_attention_fwd": dict(
        op="decode_attention", variant="fwd",
        # U=1: every sequence of the batch has L tokens (ktune's U axis; SDPA takes no per-sequence lengths).
        problems=grid(B=[1, 8, 64], L=[1024, 8192, 32768], HQ=[32], HK=[8], D=[128], U=[1]),
        dtypes=["bf16", "fp16"], impls=["attn_eager", "sdpa", "sdpa_flash", "sdpa_cudnn", "compile"],
        quick=dict(B=[8], L=[8192])),
    "linear_int4_fwd": dict(
        op="linear_int4", variant="fwd", problems=[dict(M=m, N=n, K=k, G=128) for m in LINEAR_M for n, k in LINEAR_NK],
        dtypes=["bf16"], impls=["cublas", "int4pack"], quick=dict(M=[1, 16], N=[14336])),
    "linear_int8_fwd": dict(
        op="linear_int8", variant="fwd", problems=[dict(M=m, N=n, K=k) for m in LINEAR_M for n, k in LINEAR_NK],
        dtypes=["bf16"], impls=["cublas", "int8pack", "int8_compile"], quick=dict(M=[1, 16], N=[14336])),
}

# Impl keys -> the names stored (report columns). torch_compile gets the mode appended unless it is the default.
IMPLS = {
    "eager": "torch_eager",          # plain PyTorch as models write it (for layernorm and softmax: the fused op itself)
    "fused": "torch_fused",          # PyTorch's one fused op: F.rms_norm
    "compile": "torch_compile",      # torch.compile of the eager function, one specialised compile per shape
    "attn_eager": "torch_eager",     # decode attention as two matmuls and a softmax, grouped heads, no repeat of k/v
    "sdpa": "torch_fused",           # F.scaled_dot_product_attention(enable_gqa=True), PyTorch's backend choice
    "sdpa_flash": "torch_sdpa_flash",  # the same with one backend forced (the efficient one refuses HQ != HK)
    "sdpa_cudnn": "torch_sdpa_cudnn",
    "cublas": "cublas_bf16",         # y = x W^T with W in bf16 (F.linear: cuBLAS), the baseline of weight-only kernels
    "int4pack": "torch_int4pack",    # torch._weight_int4pack_mm (tinygemm), group size G, inner k tiles 8
    "int8pack": "torch_int8pack",    # torch._weight_int8pack_mm, per-channel scales
    "int8_compile": "torch_compile",  # torch.compile of F.linear(x, W8.to(bf16)) * scales
    "ktune_aot": "ktune_aot",        # ktune's own tuned kernel (--ktune-aot-lib), timed by this harness: same method
}
METHOD_EVENTS = "cold_l2_events"
METHOD_CUPTI = "cupti_kernel_sum"
# A script that measures its own families with this one's method (gemm_peers.py) names itself and adds what it
# learned to the file's environment.
SCRIPT = "bench/peers/measure_peers.py"
EXTRA_ENVIRONMENT = {}


def name_methods_for_flush(flush):
    """The method names say the flush when it is not ktune's default (clean), so that a file measured another way
    never shares an identity with, and replaces, clean-flush rows on import (reports/PEERS_FORMAT.md)."""
    global METHOD_EVENTS, METHOD_CUPTI
    suffix = "" if flush == "clean" else f".{flush}_flush"
    METHOD_EVENTS, METHOD_CUPTI = "cold_l2_events" + suffix, "cupti_kernel_sum" + suffix

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
# Output check against the family's first impl: relative Frobenius error. A miss is reported, the timing kept.
CHECK_RTOL = {"bf16": 3e-2, "fp16": 5e-3, "fp32": 2e-4}

RMSNORM_EPS = 1e-6   # the eps argument of kernels/rmsnorm/*.op.yaml, kernels/add_rmsnorm/*.op.yaml
LAYERNORM_EPS = 1e-5  # the eps argument of kernels/layernorm/*.op.yaml
ROPE_POSITIONS = 8192  # kernels/rope/*.op.yaml: P, the rows of the cos/sin caches
INT4_INNER_K_TILES = 8

# ---------------------------------------------------------------------------------------------------------------------
# The peers: eager functions (torch.compile compiles these same functions).
# ---------------------------------------------------------------------------------------------------------------------


def rmsnorm_eager(x, w):
    # Hugging Face LlamaRMSNorm.
    h = x.float()
    var = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + RMSNORM_EPS)
    return w * h.to(x.dtype)


def rmsnorm_fused(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, RMSNORM_EPS)


def add_rmsnorm_eager(x, residual, w):
    # Hugging Face decoder layer: the residual add in the activation dtype, then LlamaRMSNorm.
    r = x + residual
    return rmsnorm_eager(r, w), r


def add_rmsnorm_fused(x, residual, w):
    r = x + residual
    return rmsnorm_fused(r, w), r


def layernorm_eager(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, LAYERNORM_EPS)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_eager(q, k, positions, cos_cache, sin_cache):
    # Hugging Face apply_rotary_pos_emb with the cos/sin rows looked up by position (ktune's kernel does the look-up
    # too). Out of place, as Hugging Face does; ktune rotates in place (the same bytes move either way).
    cos = cos_cache[positions]
    sin = sin_cache[positions]
    cos = torch.cat((cos, cos), dim=-1).to(q.dtype).unsqueeze(1)
    sin = torch.cat((sin, sin), dim=-1).to(q.dtype).unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def swiglu_eager(gate, up):
    return F.silu(gate) * up


def geglu_eager(gate, up):
    return F.gelu(gate, approximate="tanh") * up


def softmax_eager(x):
    return torch.softmax(x, dim=-1)


def decode_attention_eager(q, k, v, scale):
    # One query token per sequence: q [B, HQ, 1, D], k/v [B, HK, L, D]. The HQ/HK query heads of a group share one
    # matmul with their k/v head, so k and v are read once (no repeat_kv copy).
    b, hq, _, d = q.shape
    hk = k.shape[1]
    qg = q.view(b, hk, hq // hk, d)
    s = torch.matmul(qg, k.transpose(-1, -2)).float() * scale
    p = torch.softmax(s, dim=-1).to(q.dtype)
    return torch.matmul(p, v).view(b, hq, 1, d)


def decode_attention_sdpa(q, k, v, scale):
    return F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=True)


def int8_linear_eager(x, w8, scales):
    return F.linear(x, w8.to(x.dtype)) * scales


# ---------------------------------------------------------------------------------------------------------------------
# Cases: for one problem and dtype, a setup per impl that returns the zero-argument call to time.
# ---------------------------------------------------------------------------------------------------------------------

_compiled = {}


def compiled(fn):
    """One torch.compile wrapper per function: every shape compiles its own specialised graph (dynamic=False)."""
    if fn not in _compiled:
        mode = None if ARGS.compile_mode == "default" else ARGS.compile_mode
        _compiled[fn] = torch.compile(fn, dynamic=False, mode=mode)
    return _compiled[fn]


def randn(shape, dtype, dev, scale=1.0):
    return torch.randn(shape, dtype=torch.float32, device=dev).mul_(scale).to(dtype)


KTUNE_DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}  # ktune_tuned::Dtype
_ktune_aot = {}


def load_ktune_aot(path):
    """The C entry point of bench/peers/ktune_aot/ktune_aot_peer.cu in the shared library at path (loaded once)."""
    if path not in _ktune_aot:
        import ctypes
        f = ctypes.CDLL(path).ktune_aot_rmsnorm_fwd
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                      ctypes.c_int, ctypes.c_float, ctypes.c_void_p]
        _ktune_aot[path] = f
    return _ktune_aot[path]


def ktune_aot_rmsnorm_fwd(x, w):
    """ktune's tuned RMSNorm forward (--ktune-aot-lib) on PyTorch's current stream."""
    y = torch.empty_like(x)
    status = load_ktune_aot(ARGS.ktune_aot_lib)(
        x.device.index or 0, KTUNE_DTYPE_CODES[x.dtype], y.data_ptr(), x.data_ptr(), w.data_ptr(), x.shape[0],
        x.shape[1], RMSNORM_EPS, torch.cuda.current_stream().cuda_stream)
    if status != 0:
        raise RuntimeError(f"ktune_aot_rmsnorm_fwd returned status {status}")
    return y


def case_rmsnorm_fwd(p, dtype, dev):
    x = randn((p["M"], p["H"]), dtype, dev)
    w = randn((p["H"],), dtype, dev, 0.5).add_(1)
    return {
        "eager": lambda: lambda: rmsnorm_eager(x, w),
        "fused": lambda: lambda: rmsnorm_fused(x, w),
        "compile": lambda: (lambda f: lambda: f(x, w))(compiled(rmsnorm_eager)),
        "ktune_aot": lambda: lambda: ktune_aot_rmsnorm_fwd(x, w),
    }


def case_add_rmsnorm_fwd(p, dtype, dev):
    x = randn((p["M"], p["H"]), dtype, dev)
    r = randn((p["M"], p["H"]), dtype, dev)
    w = randn((p["H"],), dtype, dev, 0.5).add_(1)
    return {
        "eager": lambda: lambda: add_rmsnorm_eager(x, r, w),
        "fused": lambda: lambda: add_rmsnorm_fused(x, r, w),
        "compile": lambda: (lambda f: lambda: f(x, r, w))(compiled(add_rmsnorm_eager)),
    }


def case_layernorm_fwd(p, dtype, dev):
    x = randn((p["M"], p["H"]), dtype, dev)
    w = randn((p["H"],), dtype, dev, 0.5).add_(1)
    b = randn((p["H"],), dtype, dev, 0.5)
    return {
        "eager": lambda: lambda: layernorm_eager(x, w, b),
        "compile": lambda: (lambda f: lambda: f(x, w, b))(compiled(layernorm_eager)),
    }


def _rmsnorm_fwd_for_bwd(x, w):
    return rmsnorm_eager(x, w)  # its own code object, so its compiled graphs (with grad) stay apart from the forward's


def case_rmsnorm_bwd(p, dtype, dev):
    # The backward alone: the graph is built once in setup; each call is autograd.grad over it (dx, dw).
    x = randn((p["M"], p["H"]), dtype, dev).requires_grad_(True)
    w = randn((p["H"],), dtype, dev, 0.5).add_(1).requires_grad_(True)
    dy = randn((p["M"], p["H"]), dtype, dev)

    def backward_of(forward):
        def setup():
            y = forward(x, w)
            return lambda: torch.autograd.grad(y, (x, w), dy, retain_graph=True)
        return setup

    return {
        "eager": backward_of(rmsnorm_eager),
        "fused": backward_of(rmsnorm_fused),
        "compile": lambda: backward_of(compiled(_rmsnorm_fwd_for_bwd))(),
    }


def case_rope_neox(p, dtype, dev):
    m, hq, hk, d = p["M"], p["HQ"], p["HK"], p["D"]
    q = randn((m, hq, d), dtype, dev)
    k = randn((m, hk, d), dtype, dev)
    positions = torch.randint(0, ROPE_POSITIONS, (m,), device=dev)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d))
    angles = torch.arange(ROPE_POSITIONS, device=dev, dtype=torch.float32)[:, None] * inv_freq[None, :]
    cos_cache, sin_cache = angles.cos().contiguous(), angles.sin().contiguous()  # fp32 [P, D/2], as ktune's
    args = (q, k, positions, cos_cache, sin_cache)
    return {
        "eager": lambda: lambda: rope_eager(*args),
        "compile": lambda: (lambda f: lambda: f(*args))(compiled(rope_eager)),
    }


def _case_glu(fn):
    def case(p, dtype, dev):
        gate = randn((p["M"], p["I"]), dtype, dev)
        up = randn((p["M"], p["I"]), dtype, dev)
        return {
            "eager": lambda: lambda: fn(gate, up),
            "compile": lambda: (lambda f: lambda: f(gate, up))(compiled(fn)),
        }
    return case


def case_softmax_fwd(p, dtype, dev):
    x = randn((p["M"], p["N"]), dtype, dev, 2.0)
    return {
        "eager": lambda: lambda: softmax_eager(x),
        "compile": lambda: (lambda f: lambda: f(x))(compiled(softmax_eager)),
    }


def case_decode_attention_fwd(p, dtype, dev):
    b, length, hq, hk, d = p["B"], p["L"], p["HQ"], p["HK"], p["D"]
    q = randn((b, hq, 1, d), dtype, dev)
    k = randn((b, hk, length, d), dtype, dev)
    v = randn((b, hk, length, d), dtype, dev)
    scale = 1.0 / math.sqrt(d)

    def with_backend(name):
        def setup():
            from torch.nn.attention import SDPBackend, sdpa_kernel
            backend = getattr(SDPBackend, name)

            def call():
                with sdpa_kernel([backend]):
                    return decode_attention_sdpa(q, k, v, scale)
            return call
        return setup

    return {
        "attn_eager": lambda: lambda: decode_attention_eager(q, k, v, scale),
        "sdpa": lambda: lambda: decode_attention_sdpa(q, k, v, scale),
        "sdpa_flash": with_backend("FLASH_ATTENTION"),
        "sdpa_cudnn": with_backend("CUDNN_ATTENTION"),
        "compile": lambda: (lambda f: lambda: f(q, k, v, scale))(compiled(decode_attention_eager)),
    }


def case_linear_int4_fwd(p, dtype, dev):
    m, n, k, g = p["M"], p["N"], p["K"], p["G"]
    x = randn((m, k), dtype, dev)
    w = randn((n, k), dtype, dev, 0.02)

    def int4_setup():
        # tinygemm: 4-bit values q in [0, 16), w = (q - 8) * scale + zero per group of G along K; PyTorch >= 2.5 takes
        # the weight as uint8 [N, K/2], two values a byte, the even k in the high nibble.
        q4 = torch.randint(0, 16, (n, k), dtype=torch.int32, device=dev)
        packed = torch._convert_weight_to_int4pack(((q4[:, ::2] << 4) | q4[:, 1::2]).to(torch.uint8),
                                                   INT4_INNER_K_TILES)
        scales = torch.rand((k // g, n), device=dev) * 0.002 + 0.001
        zeros = torch.randn((k // g, n), device=dev) * 0.001
        sz = torch.stack([scales, zeros], dim=2).to(torch.bfloat16).contiguous()  # [K/G, N, 2]
        xb = x.to(torch.bfloat16)

        def reference():
            s = sz[..., 0].float().t().repeat_interleave(g, dim=1)
            z = sz[..., 1].float().t().repeat_interleave(g, dim=1)
            return xb.float() @ ((q4.float() - 8) * s + z).t()

        call = lambda: torch._weight_int4pack_mm(xb, packed, g, sz)  # noqa: E731
        call.reference = reference  # checked against dequantised weights, not against cuBLAS
        return call

    return {"cublas": lambda: lambda: F.linear(x, w), "int4pack": int4_setup}


def case_linear_int8_fwd(p, dtype, dev):
    m, n, k = p["M"], p["N"], p["K"]
    x = randn((m, k), dtype, dev)
    w = randn((n, k), dtype, dev, 0.02)
    w8 = torch.randint(-128, 128, (n, k), dtype=torch.int8, device=dev)
    scales = (torch.rand((n,), device=dev) * 0.002 + 0.001).to(dtype)

    def reference():
        return x.float() @ w8.float().t() * scales.float()

    def int8_setup():
        call = lambda: torch._weight_int8pack_mm(x, w8, scales)  # noqa: E731
        call.reference = reference  # checked against dequantised weights, not against cuBLAS
        return call

    def int8_compile_setup():
        f = compiled(int8_linear_eager)
        call = lambda: f(x, w8, scales)  # noqa: E731
        call.reference = reference  # checked against dequantised weights, not against cuBLAS
        return call

    return {"cublas": lambda: lambda: F.linear(x, w), "int8pack": int8_setup, "int8_compile": int8_compile_setup}


CASES = {
    "rmsnorm_fwd": case_rmsnorm_fwd,
    "add_rmsnorm_fwd": case_add_rmsnorm_fwd,
    "layernorm_fwd": case_layernorm_fwd,
    "rmsnorm_bwd": case_rmsnorm_bwd,
    "rope_neox": case_rope_neox,
    "glu_swiglu": _case_glu(swiglu_eager),
    "glu_geglu": _case_glu(geglu_eager),
    "softmax_fwd": case_softmax_fwd,
    "decode_attention_fwd": case_decode_attention_fwd,
    "linear_int4_fwd": case_linear_int4_fwd,
    "linear_int8_fwd": case_linear_int8_fwd,
}

# ---------------------------------------------------------------------------------------------------------------------
# Timing.
# ---------------------------------------------------------------------------------------------------------------------


def percentile(sorted_values, q):
    """Linear interpolation between closest ranks, as core/stats.cpp."""
    pos = min(max(q, 0.0), 1.0) * (len(sorted_values) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (pos - lo) * (sorted_values[hi] - sorted_values[lo])


def summarize(samples):
    s = sorted(samples)
    return {"p50_us": percentile(s, 0.5), "p95_us": percentile(s, 0.95), "p99_us": percentile(s, 0.99),
            "mean_us": sum(s) / len(s)}


_fill_evict_last_kernel = None
_discard_l2_kernel = None


def _fill_evict_last():
    """A Triton kernel writing a value over an int32 buffer with the L2 evict_last policy."""
    global _fill_evict_last_kernel
    if _fill_evict_last_kernel is None:
        import triton
        import triton.language as tl

        @triton.jit
        def fill_evict_last(p_ptr, n, value, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(p_ptr + offs, tl.full([BLOCK], value, tl.int32), mask=offs < n, eviction_policy="evict_last")

        _fill_evict_last_kernel = fill_evict_last
    return _fill_evict_last_kernel


def _discard_l2():
    """A Triton kernel dropping the 128-byte lines of an int32 buffer from the L2 without writing them back (PTX
    discard.global.L2, sm_80 and later), as the worker's ktune_discard_l2."""
    global _discard_l2_kernel
    if _discard_l2_kernel is None:
        import triton
        import triton.language as tl

        @triton.jit
        def discard_l2(p_ptr, n_lines, BLOCK: tl.constexpr):
            line = tl.minimum(tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), n_lines - 1)  # the last line again
            tl.inline_asm_elementwise("discard.global.L2 [$1], 128;\n\tmov.u32 $0, 0;", "=r,l",
                                      [p_ptr + line.to(tl.int64) * 32], dtype=tl.int32, is_pure=False, pack=1)

        _discard_l2_kernel = discard_l2
    return _discard_l2_kernel


class CudaTimer:
    """ktune's timing in PyTorch: cold L2, a sleep kernel holding the stream while the host enqueues, events."""

    def __init__(self, dev):
        self.dev = dev
        props = torch.cuda.get_device_properties(dev)
        self.l2_bytes = int(getattr(props, "L2_cache_size", 50 << 20))
        self.flush_bytes = max(2 * self.l2_bytes, 16 << 20)  # as the worker: 2x L2, at least 16 MiB
        self.flush_buffer = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=dev)
        self.flush_count = 0
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)
        self.held = torch.cuda.Event()
        self.flush()  # compiles the protected flush's Triton kernel now, not inside a timed or profiled sample
        torch.cuda.synchronize()
        self.cycles_per_us = self._calibrate_sleep()
        self.retries = 0  # samples taken again because the hold ran out first
        self.flush_to_call_gaps_us = []  # under the profiler: from the flush's end to the call's first kernel
        self.cupti_error = None
        self.marker_name, self.flush_names = None, None
        try:
            self._learn_profiler_names()
        except Exception as e:  # noqa: BLE001 - the profiler is optional: the events method stands alone
            self.cupti_error = f"{type(e).__name__}: {e}"

    def flush(self):
        # A different value each time, so nothing can skip the writes (the worker's flush kernel does the same).
        self.flush_count = (self.flush_count + 1) % (1 << 30)
        mode = getattr(ARGS, "flush", "clean")
        n = self.flush_buffer.numel()
        if mode in ("clean", "protected"):
            # Lines loaded with an evict_last hint (torch.compile's Triton kernels load reused inputs so) survive a
            # flush of ordinary writes: on an H100 a kernel whose inputs were read once with evict_last ran 0.3-0.9 us
            # faster after the plain flush than cold (bench/peers/harness_probe.py). Writing the buffer with
            # evict_last first evicts them; the ordinary writes after it leave the L2 as the worker's flush does.
            _fill_evict_last()[(-(-n // 4096),)](self.flush_buffer, n, self.flush_count, BLOCK=4096)
        self.flush_buffer.fill_(self.flush_count)
        if mode == "clean":
            # The flush's own lines leave the L2 without being written back, so the timed call does not pay for
            # writing back the dirty lines it displaces (kernels/common/harness_kernels.cuh, ktune_flush_l2).
            lines = n // 32
            _discard_l2()[(-(-lines // 1024),)](self.flush_buffer, lines, BLOCK=1024)

    def _calibrate_sleep(self):
        # torch.cuda._sleep counts clock64 cycles. The fastest clock seen gives the shortest hold per cycle, so the
        # hold computed from it is never shorter than asked.
        torch.cuda._sleep(1_000_000)
        best = 0.0
        for _ in range(3):
            self.start.record()
            torch.cuda._sleep(10_000_000)
            self.stop.record()
            self.stop.synchronize()
            best = max(best, 10_000_000 / (self.start.elapsed_time(self.stop) * 1e3))
        return best

    def _enqueue_us(self, fn):
        """The host's time to enqueue one sample (flush, events, call): how long the sleep kernel must hold."""
        worst = 0.0
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            self.flush()
            self.start.record()
            fn()
            self.stop.record()
            worst = max(worst, (time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
        return worst

    def events(self, fn, samples):
        hold_us = 2 * self._enqueue_us(fn) + 50
        out = []
        gc.collect()
        gc.disable()
        try:
            while len(out) < samples:
                torch.cuda._sleep(int(hold_us * self.cycles_per_us))
                self.held.record()
                self.flush()
                self.start.record()
                fn()
                self.stop.record()
                exposed = self.held.query()  # the hold already over: a host gap may sit inside the bracket
                self.stop.synchronize()
                if exposed:
                    self.retries += 1
                    hold_us *= 2
                    if hold_us > 1e6:
                        raise RuntimeError("the host needs over 1 s to enqueue one call: cannot hide its launches")
                    continue
                out.append(self.start.elapsed_time(self.stop) * 1e3)
        finally:
            gc.enable()
        return out

    # ---- cupti_kernel_sum ----------------------------------------------------------------------------------------

    def _device_events(self, body):
        """Device activities (kernels, memsets, memcpys) of body(), in GPU order, as (name, start_us, dur_us)."""
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            body()
            torch.cuda.synchronize()
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            prof.export_chrome_trace(path)
            with open(path) as f:
                trace = json.load(f)
        finally:
            os.remove(path)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        device = [(e["name"], float(e["ts"]), float(e["dur"])) for e in events
                  if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")]
        device.sort(key=lambda e: e[1])
        return device

    def _learn_profiler_names(self):
        # The marker (a short sleep kernel) separates samples; the flush's kernels open each sample.
        def body():
            torch.cuda._sleep(1000)
            self.flush()
            torch.cuda._sleep(1000)
        ev = self._device_events(body)
        if len(ev) < 3 or ev[0][0] != ev[-1][0]:
            raise RuntimeError(f"the profiler saw {[e[0] for e in ev]} for sleep, flush, sleep")
        self.marker_name = ev[0][0]
        self.flush_names = [e[0] for e in ev[1:-1]]

    def kernel_sums(self, fn, samples):
        """A sleep kernel holds the stream while the host enqueues each sample's flush and call, as in the events
        method, so the host's enqueue time never sits between the flush and the call (under the profiler the GPU
        still leaves a few us between kernels: profiled_flush_to_call_gap_us_p50 in the environment). The sleep
        kernels also mark where each sample starts in the profile."""
        if self.cupti_error:
            raise RuntimeError(f"the profiler is unavailable: {self.cupti_error}")
        hold_cycles = int((4 * self._enqueue_us(fn) + 100) * self.cycles_per_us)  # the profiler slows the enqueue

        def body():
            for _ in range(samples + 1):  # the first sample is a warm-up under the profiler and is dropped
                torch.cuda._sleep(hold_cycles)
                self.flush()
                fn()
            torch.cuda._sleep(1000)
        ev = self._device_events(body)
        segments, current = [], None
        for name, start, dur in ev:
            if name == self.marker_name:
                if current is not None:
                    segments.append(current)
                current = []
            elif current is not None:
                current.append((name, start, dur))
        if len(segments) != samples + 1:
            raise RuntimeError(f"expected {samples + 1} samples between markers in the profile, found {len(segments)}")
        out = []
        nf = len(self.flush_names)
        for seg in segments[1:]:
            if [s[0] for s in seg[:nf]] != self.flush_names:
                raise RuntimeError(f"a sample does not start with the flush: {[s[0] for s in seg[:nf + 2]]}")
            call = seg[nf:]
            if not call:
                raise RuntimeError("the call launched no kernel the profiler saw")
            flush_end = seg[nf - 1][1] + seg[nf - 1][2]
            self.flush_to_call_gaps_us.append(call[0][1] - flush_end)
            out.append(sum(dur for _, _, dur in call))
        return out

    def environment(self):
        gaps = sorted(self.flush_to_call_gaps_us)
        return {"l2_bytes": self.l2_bytes, "l2_flush_bytes": self.flush_bytes,
                "l2_flush": getattr(ARGS, "flush", "clean"),
                "sleep_cycles_per_us": round(self.cycles_per_us, 1),
                "profiled_flush_to_call_gap_us_p50": round(percentile(gaps, 50), 3) if gaps else None}


class WallTimer:
    """--device cpu: host wall time, only to try the script where there is no GPU. Never import its numbers."""

    cupti_error = "no GPU"

    def events(self, fn, samples):
        out = []
        for _ in range(samples):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1e6)
        return out

    def kernel_sums(self, fn, samples):
        raise RuntimeError("no GPU")

    def environment(self):
        return {}


def synchronize():
    if ARGS.device != "cpu":
        torch.cuda.synchronize()


def warm_up(fn):
    """The first call (compiles, loads modules, creates handles); then two more. Returns the first call's seconds and
    the last call's output (a CUDA-graph replay overwrites the outputs of the calls before it)."""
    t0 = time.perf_counter()
    fn()
    synchronize()
    first = time.perf_counter() - t0
    fn()
    out = fn()
    synchronize()
    return first, out


def as_tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for t in out if isinstance(t, torch.Tensor)]


def relative_error(out, ref):
    a, b = as_tensors(out), as_tensors(ref)
    if len(a) != len(b):
        return float("inf")
    worst = 0.0
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return float("inf")
        x, y = x.float(), y.float()
        d = (x - y).norm().item()
        n = y.norm().item()
        worst = max(worst, d / n if n > 0 else d)
    return worst


# ---------------------------------------------------------------------------------------------------------------------
# The run.
# ---------------------------------------------------------------------------------------------------------------------


def impl_name(key):
    name = IMPLS[key]
    if name == "torch_compile" and ARGS.compile_mode != "default":
        name += "_" + ARGS.compile_mode.replace("-", "_")
    return name


def selected_families():
    if not ARGS.ops:
        return list(FAMILIES)
    out = []
    for want in ARGS.ops.split(","):
        want = want.strip()
        hits = [f for f, d in FAMILIES.items() if want in (f, d["op"], f'{d["op"]}/{d["variant"]}')]
        if not hits:
            sys.exit(f"--ops: unknown {want!r}; families: {', '.join(FAMILIES)}")
        out += [h for h in hits if h not in out]
    return out


def in_quick(problem, quick):
    return all(problem[a] in values for a, values in quick.items())


def shape_text(shape):
    return ",".join(f"{k}={v}" for k, v in shape.items())


class Run:
    def __init__(self, out_path, timer, device_name, environment):
        self.out_path = out_path
        self.failures_path = os.path.splitext(out_path)[0] + ".failures.json"
        self.timer = timer
        self.device_name = device_name
        self.environment = environment
        self.results = {}  # identity -> result, so a result measured again replaces the old one
        self.failures = []
        self.checks = []
        self.first_calls = []  # the first call's seconds of each case: torch.compile's compile time
        self.last_write = 0.0
        if (ARGS.merge or ARGS.resume) and os.path.exists(out_path):
            with open(out_path) as f:
                old = json.load(f)
            if old.get("device", {}).get("name") != device_name:
                sys.exit(f"--merge: {out_path} was measured on {old.get('device')}, this is {device_name}")
            old_flush = old.get("environment", {}).get("l2_flush", "plain")
            if old_flush != environment.get("l2_flush"):
                sys.exit(f"--merge/--resume: {out_path} was measured with --flush {old_flush}, this run uses "
                         f"{environment.get('l2_flush')}")
            for r in old["results"]:
                r.setdefault("method", old.get("method"))
                self.results[self.identity(r)] = r
            earlier = old.get("environment", {})
            if "date" in earlier:  # the file now holds more than one run
                self.environment["first_date"] = earlier.get("first_date", earlier["date"])

    @staticmethod
    def identity(r):
        return (r["op"], r["variant"], r["dtype"], shape_text(r["shape"]), r["impl"], r.get("method", METHOD_EVENTS))

    def has_events(self, family, dtype, problem, impl):
        fam = FAMILIES[family]
        return (fam["op"], fam["variant"], dtype, shape_text(problem), impl_name(impl), METHOD_EVENTS) in self.results

    def add(self, family, dtype, problem, impl, method, samples):
        if any(not (s > 0 and math.isfinite(s)) for s in samples):
            raise RuntimeError(f"a sample is not a positive time: {min(samples)}")
        fam = FAMILIES[family]
        r = {"op": fam["op"], "variant": fam["variant"], "dtype": dtype, "shape": dict(problem),
             "impl": impl_name(impl), "method": method}
        r.update({k: round(v, 4) for k, v in summarize(samples).items()})
        r["n"] = len(samples)
        r["samples_us"] = [round(s, 4) for s in samples]
        self.results[self.identity(r)] = r
        print(f'  {fam["op"] + "/" + fam["variant"]:<22} {dtype:<4} {shape_text(problem):<34} {r["impl"]:<22} '
              f'{method:<16} p50 {r["p50_us"]:>10.2f}  p95 {r["p95_us"]:>10.2f} us', flush=True)
        return r

    def fail(self, family, dtype, problem, impl, stage, error):
        fam = FAMILIES[family]
        f = {"op": fam["op"], "variant": fam["variant"], "dtype": dtype, "shape": dict(problem),
             "impl": IMPLS.get(impl, impl), "stage": stage, "error": f"{type(error).__name__}: {error}"[:2000]}
        self.failures.append(f)
        print(f'  FAILED {fam["op"]}/{fam["variant"]} {dtype} {shape_text(problem)} {f["impl"]} ({stage}): '
              f'{f["error"][:300]}', flush=True)

    def write(self, force=False):
        if not force and time.time() - self.last_write < 10:
            return
        self.last_write = time.time()
        results = []
        for r in self.results.values():
            r = dict(r)
            if r.get("method") == METHOD_EVENTS:
                del r["method"]  # the file's method
            results.append(r)
        env = dict(self.environment)
        env.update(self.timer.environment())  # what the timer learned during the run (profiled gaps)
        env["failed_cases"] = len(self.failures)
        # One result a line: small enough to commit, and a re-run shows as a readable diff.
        head = {"format_version": 1, "device": {"name": self.device_name}, "method": METHOD_EVENTS,
                "environment": env}
        tmp = self.out_path + ".tmp"
        with open(tmp, "w") as f:
            f.write("{\n")
            for key, value in head.items():
                f.write(f" {json.dumps(key)}: {json.dumps(value)},\n")
            f.write(' "results": [\n')
            f.write(",\n".join("  " + json.dumps(r) for r in results))
            f.write("\n ]\n}\n")
        os.replace(tmp, self.out_path)
        with open(self.failures_path + ".tmp", "w") as f:
            json.dump({"failures": self.failures, "checks": self.checks, "first_calls": self.first_calls}, f, indent=1)
        os.replace(self.failures_path + ".tmp", self.failures_path)


def context_is_alive():
    if ARGS.device == "cpu":
        return True
    try:
        torch.cuda.synchronize()
        return True
    except Exception:  # noqa: BLE001 - a sticky CUDA error: nothing more can run in this process
        return False


def measure_problem(run, family, dtype, problem, impls):
    dev = ARGS.device
    if ARGS.resume:
        impls = [i for i in impls if not run.has_events(family, dtype, problem, i)]
        if not impls:
            return
    try:
        setups = CASES[family](problem, DTYPES[dtype], dev)
    except Exception as e:  # noqa: BLE001
        for impl in impls:
            run.fail(family, dtype, problem, impl, "inputs", e)
        return
    reference = None
    for impl in impls:
        stage = "setup"
        fn = None
        try:
            fn = setups[impl]()
            stage = "warm-up"
            first_s, out = warm_up(fn)
            run.first_calls.append({"op": FAMILIES[family]["op"], "variant": FAMILIES[family]["variant"],
                                    "dtype": dtype, "shape": dict(problem), "impl": impl_name(impl),
                                    "seconds": round(first_s, 3)})
            if first_s > 1.0:
                print(f"    ({IMPLS[impl]}: first call {first_s:.1f} s)", flush=True)
            stage = "check"
            own_ref = getattr(fn, "reference", None)
            ref = own_ref() if own_ref is not None else reference
            if ref is None:
                reference = out
            else:
                err = relative_error(out, ref)
                if not err <= CHECK_RTOL[dtype]:
                    fam = FAMILIES[family]
                    note = {"op": fam["op"], "variant": fam["variant"], "dtype": dtype, "shape": dict(problem),
                            "impl": IMPLS[impl], "relative_error": err, "tolerance": CHECK_RTOL[dtype]}
                    run.checks.append(note)
                    print(f"    CHECK {IMPLS[impl]}: relative error {err:.3g} > {CHECK_RTOL[dtype]} (timed anyway)",
                          flush=True)
            del out, ref
            stage = METHOD_EVENTS
            r = run.add(family, dtype, problem, impl, METHOD_EVENTS, run.timer.events(fn, ARGS.samples))
            if ARGS.cupti_samples > 0 and r["p50_us"] <= ARGS.cupti_max_us and run.timer.cupti_error is None:
                stage = METHOD_CUPTI
                run.add(family, dtype, problem, impl, METHOD_CUPTI, run.timer.kernel_sums(fn, ARGS.cupti_samples))
        except KeyboardInterrupt:
            raise
        except Exception as e:  # noqa: BLE001 - one failing case is recorded and the run goes on
            run.fail(family, dtype, problem, impl, stage, e)
            if ARGS.verbose:
                traceback.print_exc()
            if not context_is_alive():
                raise SystemExit("the CUDA context is broken (sticky error): stopping; the results so far are written")
        finally:
            del fn
            run.write()
    del setups, reference


def driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
    except Exception:  # noqa: BLE001
        return None


def build_environment(timer):
    env = {"torch": torch.__version__, "python": platform.python_version()}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception:  # noqa: BLE001
        pass
    if ARGS.device != "cpu":
        env["cuda"] = torch.version.cuda
        env["cudnn"] = torch.backends.cudnn.version()
        env["driver"] = driver_version()
    env.update({"torch_compile_mode": ARGS.compile_mode, "torch_compile_dynamic": False,
                "samples": ARGS.samples, "cupti_samples": ARGS.cupti_samples, "cupti_max_us": ARGS.cupti_max_us,
                "script": SCRIPT,
                "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")})
    env.update(timer.environment())
    env.update(EXTRA_ENVIRONMENT)
    if timer.cupti_error:
        env["cupti"] = f"unavailable: {timer.cupti_error}"
    return {k: v for k, v in env.items() if v is not None}


def configure_compile():
    import torch._dynamo.config as dc
    # Every shape compiles its own graph; past the recompile limit dynamo would silently run eager code: raise it,
    # and fail loudly should it be hit anyway.
    for key, value in (("recompile_limit", 100000), ("cache_size_limit", 100000),
                       ("accumulated_recompile_limit", 1000000), ("accumulated_cache_size_limit", 1000000),
                       ("fail_on_recompile_limit_hit", True)):
        try:
            setattr(dc, key, value)
        except Exception:  # noqa: BLE001 - a name this PyTorch does not have
            pass


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="families: " + ", ".join(FAMILIES))
    ap.add_argument("--ops", help="comma-separated families, ops or op/variant (default: all)")
    ap.add_argument("--dtypes", default="bf16,fp16,fp32", help="comma-separated, measured in this order "
                    "(default bf16,fp16,fp32; each family keeps only the dtypes it supports)")
    ap.add_argument("--impls", help="comma-separated impl keys or stored names (default: all of each family)")
    ap.add_argument("--samples", type=int, default=60, help="event samples per case (default 60)")
    ap.add_argument("--cupti-samples", type=int, default=20, help="profiler samples per case; 0: none (default 20)")
    ap.add_argument("--cupti-max-us", type=float, default=100.0,
                    help="profile only cases whose event p50 is at most this (default 100 us)")
    ap.add_argument("--compile-mode", default="default",
                    choices=["default", "max-autotune-no-cudagraphs", "max-autotune"],
                    help="torch.compile mode (default: default; other modes store impl torch_compile_<mode>)")
    ap.add_argument("--quick", action="store_true", help="a small subset of the problems (FAMILIES' quick)")
    ap.add_argument("--axis", action="append", default=[], type=axis_values, metavar="AXIS=V,V..",
                    help="only problems whose AXIS is one of the values (repeatable; families without that axis keep "
                    "all their problems), e.g. --axis M=1,16,256")
    ap.add_argument("--max-problems", type=int, default=0, help="at most this many problems per family and dtype")
    ap.add_argument("--time-budget", type=float, default=0, help="start no new problem after this many seconds")
    ap.add_argument("--out", default="peers.json", help="the peer file to write (default peers.json); failures and "
                    "output-check misses go to <out>.failures.json")
    ap.add_argument("--merge", action="store_true", help="keep the results already in --out that this run does not "
                    "measure again")
    ap.add_argument("--resume", action="store_true", help="--merge, and skip the cases --out already has an event "
                    "timing of (to go on after a run cut short)")
    ap.add_argument("--ktune-aot-lib", help="a shared library built from bench/peers/ktune_aot/ktune_aot_peer.cu: "
                    "adds ktune's own tuned RMSNorm forward as impl ktune_aot, timed by this script's method")
    ap.add_argument("--flush", choices=["clean", "protected", "plain"], default="clean",
                    help="clean (default, as ktune's worker): 2x L2 written with the evict_last policy (lines a peer "
                    "loaded with evict_last do not survive it), then with ordinary writes, then its lines discarded "
                    "from the L2 so the timed call writes none of them back; protected: the same without the "
                    "discard (ktune tune --flush dirty; the files of 2026-11-22 evening); plain: ordinary writes only "
                    "(the files before)")
    ap.add_argument("--device", default="cuda", help="cuda (default), or cpu to try the script without a GPU")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--verbose", action="store_true", help="print tracebacks of failures")
    return ap.parse_args(argv)


def axis_values(text):
    name, _, values = text.partition("=")
    try:
        return name.strip(), [int(v) for v in values.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not AXIS=V,V.. with integer values") from None


def plan():
    dtypes = [d.strip() for d in ARGS.dtypes.split(",") if d.strip()]
    for d in dtypes:
        if d not in DTYPES:
            sys.exit(f"--dtypes: unknown {d!r} (fp32, fp16, bf16)")
    wanted_impls = set(ARGS.impls.split(",")) if ARGS.impls else None
    families = selected_families()
    out = []
    for dtype in dtypes:  # bf16 first: a run cut short by --time-budget still covers every op in it
        for family in families:
            fam = FAMILIES[family]
            if dtype not in fam["dtypes"]:
                continue
            family_impls = fam["impls"] + (["ktune_aot"] if ARGS.ktune_aot_lib and family == "rmsnorm_fwd" else [])
            impls = [i for i in family_impls if wanted_impls is None or i in wanted_impls or IMPLS[i] in wanted_impls]
            if not impls:
                continue
            problems = [p for p in fam["problems"] if (not ARGS.quick or in_quick(p, fam["quick"])) and
                        all(axis not in p or p[axis] in v for axis, v in ARGS.axis)]
            if ARGS.max_problems:
                problems = problems[:ARGS.max_problems]
            out += [(family, dtype, p, impls) for p in problems]
    return out


def main():
    global ARGS
    ARGS = parse_args()
    name_methods_for_flush(ARGS.flush)
    cases = plan()
    if ARGS.list:
        for family, dtype, p, impls in cases:
            print(family, dtype, shape_text(p), " ".join(IMPLS[i] for i in impls))
        print(f"{len(cases)} problems, {sum(len(c[3]) for c in cases)} cases")
        return 0
    # SIGTERM (a `timeout` around the run) ends it like Ctrl-C: what was measured is written.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    configure_compile()
    torch.manual_seed(0)
    if ARGS.device == "cpu":
        timer, device_name = WallTimer(), "cpu (test run, not a GPU)"
    else:
        if ":" in ARGS.device:
            torch.cuda.set_device(torch.device(ARGS.device))
        timer, device_name = CudaTimer(ARGS.device), torch.cuda.get_device_name()
    env = build_environment(timer)
    if ARGS.device != "cpu":
        # The floor under every cold_l2_events number: an empty event pair timed the same way.
        floor = summarize(timer.events(lambda: None, 100))
        env["event_floor_us"] = round(floor["p50_us"], 3)
    print(f"{device_name}: torch {env.get('torch')}, triton {env.get('triton')}, compile mode {ARGS.compile_mode}; "
          f"{len(cases)} problems; event floor {env.get('event_floor_us')} us; cupti: {timer.cupti_error or 'on'}",
          flush=True)
    run = Run(ARGS.out, timer, device_name, env)
    begin = time.time()
    status = 0
    try:
        for i, (family, dtype, problem, impls) in enumerate(cases):
            if ARGS.time_budget and time.time() - begin > ARGS.time_budget:
                print(f"time budget spent: {len(cases) - i} problems left unmeasured", flush=True)
                status = 3
                break
            print(f"[{i + 1}/{len(cases)} {time.time() - begin:.0f}s] {family} {dtype} {shape_text(problem)}",
                  flush=True)
            measure_problem(run, family, dtype, problem, impls)
            if ARGS.device != "cpu":
                torch.cuda.empty_cache()
    except KeyboardInterrupt:
        print("interrupted: writing what was measured", flush=True)
        status = 130
    except SystemExit as e:
        print(e, flush=True)
        status = 2
    finally:
        if hasattr(timer, "retries"):
            run.environment["samples_retaken"] = timer.retries
        run.write(force=True)
    print(f"{len(run.results)} results -> {ARGS.out}; {len(run.failures)} failures, {len(run.checks)} check misses "
          f"-> {run.failures_path}; {time.time() - begin:.0f} s", flush=True)
    return status


ARGS = None

if __name__ == "__main__":
    sys.exit(main())
