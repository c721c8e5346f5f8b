"""ktune's kernels as torch.library custom ops (namespace `ktune`).

Each op has a CPU implementation in plain torch math (the reference semantics, and what CPU tests run), a CUDA
implementation that calls the op library (_lib.py) on torch.cuda.current_stream(), and a fake implementation so that
torch.compile and CUDA graphs take it. CUDA calls allocate nothing but their outputs and never synchronize.
"""

import ctypes
from typing import Optional

import torch

from . import _lib

_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
# The eps that rmsnorm/bwd and add_rmsnorm/fwd's op specs fix (their exported dispatchers take no eps).
SPEC_EPS = 1e-6


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr())


def _stream():
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def _dtype(t):
    if t.dtype not in _DTYPES:
        raise TypeError(f"ktune_torch: dtype {t.dtype} is not one of fp32, fp16, bf16")
    return _DTYPES[t.dtype]


def _f(t):
    """t in the CPU implementations' compute type: fp32, or fp64 for fp64 inputs (gradcheck)."""
    return t if t.dtype == torch.float64 else t.float()


# A scratch serves one shape. The kernels reset their arrival counters, but their fp32 partials stay behind, and the
# layouts put the counters first, sized by the shape: another shape's counters would land on this shape's partials.
# So one zeroed scratch per (op, dtype, shape) and device, made on the shape's first call (an eager step before any
# CUDA graph capture) and reused by every later call, every layer of a model included.
_scratch_pool = {}


def shape_scratch(key, elements, device):
    """The zeroed fp32 scratch of `elements` (at least 1) for `key` (op, dtype and shape) on `device`, made once."""
    full = (torch.device(device), *key)
    s = _scratch_pool.get(full)
    if s is None:
        s = _scratch_pool[full] = torch.zeros(max(int(elements), 1), dtype=torch.float32, device=device)
    return s


def set_programmatic_launch(on):
    """Programmatic dependent launch of the kernels that allow it (on by default; Hopper and later): such a kernel may
    start, and prefetch its weights, while the one before it finishes. Off: every launch waits for the one before.
    Launches read it when they are made: a CUDA graph keeps what was set while it was captured."""
    lib = _lib.load()
    if lib is not None:
        lib.ktune_torch_set_programmatic_launch(1 if on else 0)


def _rows(x):
    """x as a [M, H] contiguous view (the kernels take unit-stride rows)."""
    x = x.contiguous()
    return x.view(-1, x.shape[-1])


# ---------------------------------------------------------------------------------------------------------- rms_norm
def _rms_norm_math(x, weight, eps):
    xf = _f(x)
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * _f(weight)).to(x.dtype)


@torch.library.custom_op("ktune::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """y = x * rsqrt(mean(x^2) + eps) * weight over the last dimension (fp32 math, one rounding)."""
    return _rms_norm_math(x, weight, eps)


@rms_norm.register_kernel("cuda")
def _(x, weight, eps):
    lib = _lib.get("rms_norm")
    if lib is not None:
        x2 = _rows(x)
        y = torch.empty_like(x2)
        if _lib.launched(lib.ktune_torch_rms_norm(_dtype(x2), _ptr(y), _ptr(x2), _ptr(weight.contiguous()),
                                                  x2.shape[0], x2.shape[1], x2.shape[1], x2.shape[1], eps,
                                                  _stream()), "rms_norm"):
            return y.view(x.shape)
    return _rms_norm_math(x, weight, eps)


# Fakes return contiguous tensors, as the CUDA implementations do (empty_like would keep a view's strides).
@rms_norm.register_fake
def _(x, weight, eps):
    return x.new_empty(x.shape)


@torch.library.custom_op("ktune::rms_norm_backward", mutates_args=())
def rms_norm_backward(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor,
                                                                                                    torch.Tensor]:
    """dx (x's dtype) and dw (fp32) of rms_norm, rstd recomputed (the CUDA kernel's eps is the spec's 1e-6; another
    eps runs this math on the GPU)."""
    return _rms_norm_backward_math(dy, x, weight, eps)


@rms_norm_backward.register_kernel("cuda")
def _(dy, x, weight, eps):
    if eps != SPEC_EPS or not _lib.has_op("rms_norm_bwd"):
        return _rms_norm_backward_math(dy, x, weight, eps)
    x2, dy2 = _rows(x), _rows(dy)
    lib = _lib.get("rms_norm_backward")
    m, h = x2.shape
    scratch = torch.zeros(lib.ktune_torch_rms_norm_bwd_scratch(_dtype(x2), m, h), dtype=torch.float32, device=x.device)
    dx = torch.empty_like(x2)
    dw = torch.empty(h, dtype=torch.float32, device=x.device)
    if _lib.launched(lib.ktune_torch_rms_norm_bwd(_dtype(x2), _ptr(dx), _ptr(dw), _ptr(scratch), _ptr(x2), _ptr(dy2),
                                                  _ptr(weight.contiguous()), m, h, _stream()), "rms_norm_backward"):
        return dx.view(x.shape), dw
    return _rms_norm_backward_math(dy, x, weight, eps)


def _rms_norm_backward_math(dy, x, weight, eps):
    xf, dyf, wf = _f(x), _f(dy), _f(weight)
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    g = dyf * wf
    dx = rstd * g - rstd.pow(3) * (g * xf).mean(-1, keepdim=True) * xf
    return dx.to(x.dtype), (dyf * xf * rstd).reshape(-1, x.shape[-1]).sum(0)


@rms_norm_backward.register_fake
def _(dy, x, weight, eps):
    return x.new_empty(x.shape), x.new_empty(x.shape[-1], dtype=torch.float32)


def _rms_norm_setup(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _rms_norm_bwd(ctx, dy):
    x, weight = ctx.saved_tensors
    dx, dw = rms_norm_backward(dy, x, weight, ctx.eps)
    return dx, dw.to(weight.dtype), None


rms_norm.register_autograd(_rms_norm_bwd, setup_context=_rms_norm_setup)


# ------------------------------------------------------------------------------------------------------ add_rms_norm
@torch.library.custom_op("ktune::add_rms_norm", mutates_args=())
def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor,
                                                                                                    torch.Tensor]:
    """(y, residual_out): s = x + residual in fp32, residual_out = s rounded, y = rms_norm of the fp32 s."""
    s = _f(x) + _f(residual)
    y = (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * _f(weight)).to(x.dtype)
    return y, s.to(x.dtype)


@add_rms_norm.register_kernel("cuda")
def _(x, residual, weight, eps):
    lib = _lib.get("add_rms_norm")
    eps_e9 = round(eps * 1e9)
    if lib is not None and _lib.has_op("add_rms_norm_eps") and abs(eps_e9 - eps * 1e9) < 1e-6 * max(1.0, eps * 1e9):
        x2, r2 = _rows(x), _rows(residual)
        y, r_out = torch.empty_like(x2), torch.empty_like(x2)
        if _lib.launched(lib.ktune_torch_add_rms_norm_eps(_dtype(x2), _ptr(y), _ptr(r_out), _ptr(x2), _ptr(r2),
                                                          _ptr(weight.contiguous()), x2.shape[0], x2.shape[1], eps_e9,
                                                          _stream()), "add_rms_norm"):
            return y.view(x.shape), r_out.view(x.shape)
    elif lib is not None and eps == SPEC_EPS and _lib.has_op("add_rms_norm"):
        x2, r2 = _rows(x), _rows(residual)
        y, r_out = torch.empty_like(x2), torch.empty_like(x2)
        if _lib.launched(lib.ktune_torch_add_rms_norm(_dtype(x2), _ptr(y), _ptr(r_out), _ptr(x2), _ptr(r2),
                                                      _ptr(weight.contiguous()), x2.shape[0], x2.shape[1], _stream()),
                         "add_rms_norm"):
            return y.view(x.shape), r_out.view(x.shape)
    # Without a fused kernel for this eps (add_rmsnorm/fwd's spec fixes 1e-6; ktune_torch_add_rmsnorm/fwd takes eps
    # in units of 1e-9): the add (rounded to the dtype, as HF's residual add), then the rms_norm kernel.
    r_out = x + residual
    return rms_norm(r_out, weight, eps), r_out


@add_rms_norm.register_fake
def _(x, residual, weight, eps):
    return x.new_empty(x.shape), x.new_empty(x.shape)


def _add_rms_norm_setup(ctx, inputs, output):
    _, _, weight, eps = inputs
    ctx.save_for_backward(output[1], weight)
    ctx.eps = eps


def _add_rms_norm_bwd(ctx, dy, dresidual_out):
    # x and residual both receive d(s): rms_norm's backward at the rounded sum (as HF's add then norm would) plus what
    # flows back into residual_out.
    s, weight = ctx.saved_tensors
    ds, dw = rms_norm_backward(dy, s, weight, ctx.eps)
    if dresidual_out is not None:
        ds = ds + dresidual_out
    return ds, ds, dw.to(weight.dtype), None


add_rms_norm.register_autograd(_add_rms_norm_bwd, setup_context=_add_rms_norm_setup)


# -------------------------------------------------------------------------------------------------------------- rope
@torch.library.custom_op("ktune::rope_neox_", mutates_args=("q", "k"))
def rope_neox_(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, cos_cache: torch.Tensor,
               sin_cache: torch.Tensor) -> None:
    """NeoX (rotate-half, HF Llama) RoPE in place on q [M, HQ, D] and k [M, HK, D] (unit-stride heads, any token
    stride); positions int32 [M]; cos_cache, sin_cache fp32 [P, R / 2] (R rotary dims, dims R.. untouched)."""
    _rope_neox_math(q, k, positions, cos_cache, sin_cache)


def _rope_neox_math(q, k, positions, cos_cache, sin_cache):
    half = cos_cache.shape[1]
    pos = positions.long()
    c = cos_cache[pos].unsqueeze(1)  # [M, 1, R/2]
    s = sin_cache[pos].unsqueeze(1)
    for t in (q, k):
        a = _f(t[..., :half])
        b = _f(t[..., half:2 * half])
        ra, rb = a * c - b * s, b * c + a * s
        t[..., :half] = ra.to(t.dtype)
        t[..., half:2 * half] = rb.to(t.dtype)


@rope_neox_.register_kernel("cuda")
def _(q, k, positions, cos_cache, sin_cache):
    lib = _lib.get("rope_neox_")
    m, hq, d = q.shape
    hk = k.shape[1]
    if q.stride(2) != 1 or q.stride(1) != d or k.stride(2) != 1 or k.stride(1) != d:
        raise ValueError("ktune_torch.rope_neox_: q and k need unit-stride heads ([M, H, D] with any token stride)")
    if lib is not None and _lib.launched(
            lib.ktune_torch_rope_neox(_dtype(q), _ptr(q), _ptr(k), _ptr(positions.contiguous()), _ptr(cos_cache),
                                      _ptr(sin_cache), m, hq, hk, d, 2 * cos_cache.shape[1], cos_cache.shape[0],
                                      q.stride(0), k.stride(0), _stream()), "rope_neox_"):
        return
    _rope_neox_math(q, k, positions, cos_cache, sin_cache)


@rope_neox_.register_fake
def _(q, k, positions, cos_cache, sin_cache):
    return None


@torch.library.custom_op("ktune::rope_neox_cache_", mutates_args=("q", "k_cache", "v_cache"))
def rope_neox_cache_(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                     positions: torch.Tensor, cos_cache: torch.Tensor, sin_cache: torch.Tensor) -> None:
    """A decode step's RoPE and KV-cache write: token m of q [M, HQ, D], k and v [M, HK, D] (unit-stride heads, any
    token stride) is sequence m's new token, at position positions[m] (int32 [M]). q is rotated in place as rope_neox_
    does; k rotated and v as it is are written into row positions[m] of k_cache and v_cache [M, HK, L, D] (HF
    StaticCache's layout); k is left as it was. cos_cache, sin_cache fp32 [P, R / 2]."""
    _rope_neox_cache_math(q, k, v, k_cache, v_cache, positions, cos_cache, sin_cache)


def _rope_neox_cache_math(q, k, v, k_cache, v_cache, positions, cos_cache, sin_cache):
    kr = k.clone()
    _rope_neox_math(q, kr, positions, cos_cache, sin_cache)
    rows = torch.arange(q.shape[0], device=q.device)
    pos = positions.long()
    k_cache[rows, :, pos] = kr.to(k_cache.dtype)  # [M, HK, D] into [M, HK, L, D] at (m, :, positions[m])
    v_cache[rows, :, pos] = v.to(v_cache.dtype)


@rope_neox_cache_.register_kernel("cuda")
def _(q, k, v, k_cache, v_cache, positions, cos_cache, sin_cache):
    lib = _lib.get("rope_neox_cache_")
    m, hq, d = q.shape
    hk, length = k_cache.shape[1], k_cache.shape[2]
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.stride(2) != 1 or t.stride(1) != d:
            raise ValueError(f"ktune_torch.rope_neox_cache_: {name} needs unit-stride heads ([M, H, D] with any token "
                             "stride)")
    if k_cache.shape != (m, hk, length, d) or v_cache.shape != k_cache.shape:
        raise ValueError(f"ktune_torch.rope_neox_cache_: the caches must be [M, HK, L, D] = [{m}, {hk}, L, {d}], not "
                         f"{tuple(k_cache.shape)} and {tuple(v_cache.shape)}")
    same_dtype = all(t.dtype == q.dtype for t in (k, v, k_cache, v_cache))
    if (lib is not None and same_dtype and k_cache.is_contiguous() and v_cache.is_contiguous() and _lib.launched(
            lib.ktune_torch_rope_neox_cache(_dtype(q), _ptr(q), _ptr(k), _ptr(v), _ptr(k_cache), _ptr(v_cache),
                                            _ptr(positions.contiguous()), _ptr(cos_cache), _ptr(sin_cache), m, hq, hk,
                                            d, 2 * cos_cache.shape[1], cos_cache.shape[0], length, q.stride(0),
                                            k.stride(0), v.stride(0), _stream()), "rope_neox_cache_")):
        return
    _rope_neox_cache_math(q, k, v, k_cache, v_cache, positions, cos_cache, sin_cache)


@rope_neox_cache_.register_fake
def _(q, k, v, k_cache, v_cache, positions, cos_cache, sin_cache):
    return None


def rope_cache(inv_freq, max_positions, scaling=1.0):
    """fp32 cos and sin caches [max_positions, len(inv_freq)] as HF's rotary embedding computes them."""
    t = torch.arange(max_positions, dtype=torch.float32, device=inv_freq.device)
    freqs = torch.outer(t, inv_freq.float())
    return (freqs.cos() * scaling).contiguous(), (freqs.sin() * scaling).contiguous()


# ------------------------------------------------------------------------------------------------------------ swiglu
@torch.library.custom_op("ktune::swiglu", mutates_args=())
def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """silu(gate) * up (fp32 math, one rounding)."""
    return _swiglu_math(gate, up)


def _swiglu_math(gate, up):
    g = _f(gate)
    return (g * torch.sigmoid(g) * _f(up)).to(gate.dtype)


@swiglu.register_kernel("cuda")
def _(gate, up):
    lib = _lib.get("swiglu")
    if lib is not None:
        # Strided rows are read in place (the halves of a fused gate_up projection: row stride 2I).
        cols = gate.shape[-1]
        g2, u2 = gate.reshape(-1, cols), up.reshape(-1, cols)
        if g2.stride(-1) != 1 or u2.stride(-1) != 1 or g2.stride(0) != u2.stride(0) or g2.stride(0) < cols:
            g2, u2 = g2.contiguous(), u2.contiguous()
        out = g2.new_empty(g2.shape[0], cols)
        if _lib.launched(lib.ktune_torch_swiglu(_dtype(g2), _ptr(out), _ptr(g2), _ptr(u2), g2.shape[0], cols,
                                                g2.stride(0), cols, _stream()), "swiglu"):
            return out.view(gate.shape)
    return _swiglu_math(gate, up)


@swiglu.register_fake
def _(gate, up):
    return gate.new_empty(gate.shape)


@torch.library.custom_op("ktune::swiglu_backward", mutates_args=())
def swiglu_backward(dy: torch.Tensor, gate: torch.Tensor, up: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(dgate, dup) of swiglu from dy = dL/dout: with s = sigmoid(gate), dup = dy * gate * s and dgate = dy * up * s *
    (1 + gate * (1 - s)) (fp32 math, each rounded once to its input's dtype)."""
    return _swiglu_backward_math(dy, gate, up)


def _swiglu_backward_math(dy, gate, up):
    g, u, d = _f(gate), _f(up), _f(dy)
    s = torch.sigmoid(g)
    ds = d * s
    return (ds * u * (1 + g * (1 - s))).to(gate.dtype), (ds * g).to(up.dtype)


def _rows_in_place(t, cols):
    """t as [M, cols] rows (a view where t's rows are unit-stride and evenly spaced at least cols apart, else a
    contiguous copy) and the elements between rows (cols for one row)."""
    t2 = t.reshape(-1, cols)
    if t2.stride(-1) != 1 or (t2.shape[0] > 1 and t2.stride(0) < cols):
        t2 = t2.contiguous()
    return t2, (t2.stride(0) if t2.shape[0] > 1 else cols)


def _swiglu_backward_launch(what, dy2, g2, u2, dgate, dup, s, so):
    """glu/swiglu_bwd on [M, I] rows: gate, up, dgate and dup rows s elements apart, dy's so; True if it ran."""
    lib = _lib.get(what)
    return lib is not None and _lib.launched(
        lib.ktune_torch_swiglu_backward(_dtype(g2), _ptr(dgate), _ptr(dup), _ptr(g2), _ptr(u2), _ptr(dy2), g2.shape[0],
                                        g2.shape[1], s, so, _stream()), what)


def _swiglu_backward_launchable(dy, gate, up):
    return gate.numel() > 0 and gate.shape == up.shape == dy.shape and gate.dtype == up.dtype == dy.dtype


@swiglu_backward.register_kernel("cuda")
def _(dy, gate, up):
    if _swiglu_backward_launchable(dy, gate, up):
        cols = gate.shape[-1]
        # dgate and dup are new [M, I] tensors, rows I apart, and the kernel gives gate and up their row stride: gate
        # and up are read in place where theirs is I too (else copied); dy in place at any row stride.
        g2, s = _rows_in_place(gate, cols)
        u2, su = _rows_in_place(up, cols)
        if s != cols or su != cols:
            g2, u2 = g2.contiguous(), u2.contiguous()
        dy2, so = _rows_in_place(dy, cols)
        dgate, dup = g2.new_empty(g2.shape), g2.new_empty(g2.shape)
        if _swiglu_backward_launch("swiglu_backward", dy2, g2, u2, dgate, dup, cols, so):
            return dgate.view(gate.shape), dup.view(gate.shape)
    return _swiglu_backward_math(dy, gate, up)


@swiglu_backward.register_fake
def _(dy, gate, up):
    return gate.new_empty(gate.shape), up.new_empty(up.shape)


# swiglu's autograd. Where gate and up are the two halves of one tensor's rows (gate_up[..., :I], gate_up[..., I:], as
# the fused projection's output is split), the gradients are the two halves of one new [..., 2I] tensor, written by
# one launch at row stride 2I. A custom op may not return two views of one tensor (torch checks that its outputs alias
# nothing), so that tensor comes whole from its own op, ktune::swiglu_backward_halves, and is split here.
@torch.library.custom_op("ktune::swiglu_backward_halves", mutates_args=())
def swiglu_backward_halves(dy: torch.Tensor, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """swiglu_backward's dgate and dup side by side in one [..., 2I] tensor: dgate the first I columns, dup the rest."""
    return torch.cat(_swiglu_backward_math(dy, gate, up), dim=-1)


@swiglu_backward_halves.register_kernel("cuda")
def _(dy, gate, up):
    if _swiglu_backward_launchable(dy, gate, up):
        cols = gate.shape[-1]
        g2, s = _rows_in_place(gate, cols)
        u2, su = _rows_in_place(up, cols)
        dy2, so = _rows_in_place(dy, cols)
        # gate and up in place at row stride 2I (the halves of gate_up): the kernel gives the gradients their stride.
        if g2.shape[0] == 1 or s == su == 2 * cols:
            dgate_up = g2.new_empty(g2.shape[0], 2 * cols)
            if _swiglu_backward_launch("swiglu_backward_halves", dy2, g2, u2, dgate_up, dgate_up[:, cols:], 2 * cols,
                                       so):
                return dgate_up.view(*gate.shape[:-1], 2 * cols)
    return torch.cat(swiglu_backward(dy, gate, up), dim=-1)


@swiglu_backward_halves.register_fake
def _(dy, gate, up):
    return gate.new_empty(*gate.shape[:-1], 2 * gate.shape[-1])


def _halves_of_one(gate, up):
    """Whether gate and up are gate_up[..., :I] and gate_up[..., I:] of one tensor with unit-stride rows 2I apart."""
    cols = gate.shape[-1]
    if gate.shape != up.shape or gate.dtype != up.dtype or gate.numel() == 0 or not torch._C._is_alias_of(gate, up):
        return False
    g2, u2 = gate.reshape(-1, cols), up.reshape(-1, cols)  # views, unless the rows are not evenly spaced (copies)
    return (torch._C._is_alias_of(g2, gate) and torch._C._is_alias_of(u2, up) and g2.stride(-1) == 1 and
            u2.stride(-1) == 1 and u2.storage_offset() == g2.storage_offset() + cols and
            (g2.shape[0] == 1 or g2.stride(0) == u2.stride(0) == 2 * cols))


def _swiglu_setup(ctx, inputs, output):
    gate, up = inputs
    ctx.save_for_backward(gate, up)


def _swiglu_bwd(ctx, dy):
    gate, up = ctx.saved_tensors
    if _halves_of_one(gate, up):
        cols = gate.shape[-1]
        dgate_up = swiglu_backward_halves(dy, gate, up)
        return dgate_up[..., :cols], dgate_up[..., cols:]
    return swiglu_backward(dy, gate, up)


swiglu.register_autograd(_swiglu_bwd, setup_context=_swiglu_setup)


# -------------------------------------------------------------------------------------------------- decode attention
@torch.library.custom_op("ktune::decode_attention", mutates_args=("scratch",))
def decode_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, seq_lens: torch.Tensor,
                     scratch: torch.Tensor) -> torch.Tensor:
    """out [B, HQ, D] = softmax(q k^T / sqrt(D)) v over the first seq_lens[b] tokens of the caches [B, HK, L, D] (HF
    StaticCache's layout, read in place); grouped-query heads (head h reads kv head h / (HQ / HK)). scratch: fp32, one
    per shape, zero-filled once (decode_attention_scratch() keeps one)."""
    return _decode_attention_math(q, k_cache, v_cache, seq_lens)


def _decode_attention_math(q, k_cache, v_cache, seq_lens):
    b, hq, d = q.shape
    hk, length = k_cache.shape[1], k_cache.shape[2]
    group = hq // hk
    kf = _f(k_cache).repeat_interleave(group, dim=1)  # [B, HQ, L, D]
    vf = _f(v_cache).repeat_interleave(group, dim=1)
    scores = torch.einsum("bhd,bhld->bhl", _f(q), kf) / d ** 0.5
    mask = torch.arange(length, device=q.device)[None, :] >= seq_lens.long()[:, None]  # [B, L]
    scores = scores.masked_fill(mask[:, None, :], float("-inf"))
    return torch.einsum("bhl,bhld->bhd", scores.softmax(-1), vf).to(q.dtype)


@decode_attention.register_kernel("cuda")
def _(q, k_cache, v_cache, seq_lens, scratch):
    lib = _lib.get("decode_attention")
    b, hq, d = q.shape
    hk, length = k_cache.shape[1], k_cache.shape[2]
    if not (k_cache.is_contiguous() and v_cache.is_contiguous()):
        raise ValueError("ktune_torch.decode_attention: the caches must be contiguous [B, HK, L, D]")
    if lib is not None:
        qc = q.contiguous()
        out = torch.empty_like(qc)
        if _lib.launched(lib.ktune_torch_decode_attention(_dtype(qc), _ptr(out), _ptr(qc), _ptr(k_cache),
                                                          _ptr(v_cache), _ptr(seq_lens.contiguous()), _ptr(scratch),
                                                          b, length, hq, hk, d, _stream()), "decode_attention"):
            return out
    return _decode_attention_math(q, k_cache, v_cache, seq_lens)


@decode_attention.register_fake
def _(q, k_cache, v_cache, seq_lens, scratch):
    return q.new_empty(q.shape)


def decode_attention_scratch_elements(dtype, batch, heads_q, heads_k, head_dim):
    """fp32 elements of decode_attention's scratch at this batch size (1 without the library); the cache length
    does not size it."""
    lib = _lib.load()
    if lib is None or not _lib.has_op("decode_attention"):
        return 1
    return lib.ktune_torch_decode_attention_scratch(_DTYPES[dtype], batch, 1, heads_q, heads_k, head_dim)


def decode_attention_scratch(q, k_cache):
    """decode_attention's scratch for q [B, HQ, D] against k_cache [B, HK, L, D], one per shape (shape_scratch)."""
    b, hq, d = q.shape
    hk = k_cache.shape[1]
    return shape_scratch(("decode_attention", q.dtype, b, hq, hk, d),
                         decode_attention_scratch_elements(q.dtype, b, hq, hk, d), q.device)


# ------------------------------------------------------------------------------------------------- prefill attention
@torch.library.custom_op("ktune::prefill_attention", mutates_args=())
def prefill_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, seq_lens: Optional[torch.Tensor],
                      causal: bool) -> torch.Tensor:
    """Flash attention of a prefill: out [B, L, HQ, D] = softmax(q k^T / sqrt(D)) v per sequence, q [B, L, HQ, D], k
    and v [B, L, HK, D] (flash_attn_func's layout, as the projections give them; SDPA's [B, H, L, D] is its transpose),
    grouped-query heads (head h reads kv head h / (HQ / HK)), causal (query i attends keys j <= i) or not. seq_lens
    (int32 [B], optional): sequence b is its first seq_lens[b] tokens, and its rows past that are 0 in out; what the
    inputs hold there is never read. Forward only (no autograd)."""
    return _prefill_attention_math(q, k, v, seq_lens, causal)


def _prefill_attention_math(q, k, v, seq_lens, causal):
    b, length, hq, d = q.shape
    group = hq // k.shape[2]
    tokens = torch.arange(length, device=q.device)
    lens = torch.full((b,), length, device=q.device) if seq_lens is None else seq_lens.long().clamp(max=length)
    valid = tokens[None, :] < lens[:, None]  # [B, L]
    # Tokens past a length may hold anything (NaN included): zeroed before the products, so that none reaches out.
    kf = torch.where(valid[:, :, None, None], _f(k), 0).repeat_interleave(group, dim=2)  # [B, L, HQ, D]
    vf = torch.where(valid[:, :, None, None], _f(v), 0).repeat_interleave(group, dim=2)
    qf = torch.where(valid[:, :, None, None], _f(q), 0)
    scores = torch.einsum("bihd,bjhd->bhij", qf, kf) / d ** 0.5
    masked = ~valid[:, None, None, :]  # keys past the length
    if causal:
        masked = masked | (tokens[None, :] > tokens[:, None])[None, None]
    scores = scores.masked_fill(masked, float("-inf"))
    out = torch.einsum("bhij,bjhd->bihd", scores.softmax(-1).nan_to_num(0.0), vf)
    return torch.where(valid[:, :, None, None], out, 0).to(q.dtype).contiguous()


# Each shape's lengths when the call gives none (every sequence L tokens), made once: CUDA graphs capture them.
_full_lengths = {}


@prefill_attention.register_kernel("cuda")
def _(q, k, v, seq_lens, causal):
    lib = _lib.get("prefill_attention")
    b, length, hq, d = q.shape
    hk = k.shape[2]
    if k.shape != v.shape or k.shape[:2] != q.shape[:2] or k.shape[3] != d or hq % hk != 0:
        raise ValueError(f"ktune_torch.prefill_attention: q {tuple(q.shape)}, k {tuple(k.shape)} and v "
                         f"{tuple(v.shape)} are not [B, L, HQ, D], [B, L, HK, D] with HK dividing HQ")
    if lib is not None:
        qc, kc, vc = q.contiguous(), k.contiguous(), v.contiguous()
        if seq_lens is None:
            key = (q.device, b, length)
            lens = _full_lengths.get(key)
            if lens is None:
                lens = _full_lengths[key] = torch.full((b,), length, dtype=torch.int32, device=q.device)
            out = torch.empty_like(qc)
        else:
            lens = seq_lens.to(torch.int32).contiguous()
            out = torch.zeros_like(qc)  # the kernels leave rows past a length unwritten
        if _lib.launched(lib.ktune_torch_prefill_attention(_dtype(qc), 1 if causal else 0, _ptr(out), _ptr(qc),
                                                           _ptr(kc), _ptr(vc), _ptr(lens), b, length, hq, hk, d,
                                                           0 if seq_lens is None else 1, _stream()),
                         "prefill_attention"):
            return out
    return _prefill_attention_math(q, k, v, seq_lens, causal)


@prefill_attention.register_fake
def _(q, k, v, seq_lens, causal):
    return q.new_empty(q.shape)


# -------------------------------------------------------------------------------------------------- GEMM + activation
# gemm_act's variants by the activation's name, and the index ktune_torch_linear_act takes.
LINEAR_ACTIVATIONS = {"none": 0, "gelu": 1, "silu": 2}


@torch.library.custom_op("ktune::linear_act", mutates_args=())
def linear_act(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], activation: str) -> torch.Tensor:
    """y = act(x W^T + b): F.linear then the activation in one kernel (the gemm_act op: ktune's warp-specialized
    Hopper GEMMs, the dense decode kernel at small M), products summed in fp32 and rounded once to x's dtype.
    activation: "none", "gelu" (the tanh form, F.gelu(approximate="tanh")) or "silu"; W [N, K] (F.linear's layout),
    bias [N] or None, K a multiple of 8. Forward only (no autograd)."""
    return _linear_act_math(x, weight, bias, activation)


def _activation_index(activation, table=LINEAR_ACTIVATIONS, op="linear_act"):
    """The index the library takes for `activation` among op's (`table`); ValueError naming the choices otherwise."""
    if activation not in table:
        raise ValueError(f"ktune_torch.{op}: activation {activation!r} is none of {sorted(table)}")
    return table[activation]


def _linear_act_math(x, weight, bias, activation):
    _activation_index(activation)
    z = torch.nn.functional.linear(_f(x), _f(weight), None if bias is None else _f(bias))
    if activation == "gelu":
        z = torch.nn.functional.gelu(z, approximate="tanh")
    elif activation == "silu":
        z = torch.nn.functional.silu(z)
    return z.to(x.dtype)


# Zeros for the kernels' bias where the call has none, one per (device, dtype, N): CUDA graphs capture them.
_no_bias = {}


@linear_act.register_kernel("cuda")
def _(x, weight, bias, activation):
    act = _activation_index(activation)
    lib = _lib.get("linear_act")
    n, k = weight.shape
    same = weight.dtype == x.dtype and (bias is None or bias.dtype == x.dtype)
    if lib is not None and same and x.shape[-1] == k and k % 8 == 0 and x.numel() > 0:
        x2 = _rows(x)
        w = weight.contiguous()
        if bias is None:
            key = (x.device, x.dtype, n)
            b = _no_bias.get(key)
            if b is None:
                b = _no_bias[key] = torch.zeros(n, dtype=x.dtype, device=x.device)
        else:
            b = bias.contiguous()
        y = x2.new_empty(x2.shape[0], n)
        if _lib.launched(lib.ktune_torch_linear_act(_dtype(x2), act, _ptr(y), _ptr(x2), _ptr(w), _ptr(b), x2.shape[0],
                                                    n, k, _stream()), f"linear_act ({activation})"):
            return y.view(*x.shape[:-1], n)
    return _linear_act_math(x, weight, bias, activation)


@linear_act.register_fake
def _(x, weight, bias, activation):
    return x.new_empty(*x.shape[:-1], weight.shape[0])


# ------------------------------------------------------------------------------------------------------ gated FFN
# ffn_gated's variants by the gate's activation, and the index ktune_torch_ffn_gated takes.
FFN_ACTIVATIONS = {"silu": 0, "gelu": 1}


@torch.library.custom_op("ktune::ffn_gated", mutates_args=())
def ffn_gated(x: torch.Tensor, weight: torch.Tensor, activation: str) -> torch.Tensor:
    """y = act(x Wg^T) * (x Wu^T) from one weight [Wg; Wu] [2I, K] (a fused gate_up projection's, no bias) in one
    kernel (the ffn_gated op: ktune's warp-specialized Hopper GEMMs computing the gate and up tiles side by side; the
    [M, 2I] product is never written), both summed in fp32 and y rounded once to x's dtype. activation: "silu"
    (SwiGLU) or "gelu" (GeGLU, the tanh form); K a multiple of 8. Forward only (no autograd)."""
    return _ffn_gated_math(x, weight, activation)


def _ffn_gated_math(x, weight, activation):
    _activation_index(activation, FFN_ACTIVATIONS, "ffn_gated")
    if weight.shape[0] % 2:
        raise ValueError(f"ktune_torch.ffn_gated: weight has {weight.shape[0]} rows, not [Wg; Wu] (2I rows)")
    g, u = torch.nn.functional.linear(_f(x), _f(weight)).chunk(2, dim=-1)
    act = torch.nn.functional.silu(g) if activation == "silu" else torch.nn.functional.gelu(g, approximate="tanh")
    return (act * u).to(x.dtype)


@ffn_gated.register_kernel("cuda")
def _(x, weight, activation):
    act = _activation_index(activation, FFN_ACTIVATIONS, "ffn_gated")
    lib = _lib.get("ffn_gated")
    two_i, k = weight.shape
    if lib is not None and weight.dtype == x.dtype and two_i % 2 == 0 and x.shape[-1] == k and k % 8 == 0 \
            and x.numel() > 0:
        x2, w = _rows(x), weight.contiguous()
        y = x2.new_empty(x2.shape[0], two_i // 2)
        if _lib.launched(lib.ktune_torch_ffn_gated(_dtype(x2), act, _ptr(y), _ptr(x2), _ptr(w), x2.shape[0], two_i // 2,
                                                   k, _stream()), f"ffn_gated ({activation})"):
            return y.view(*x.shape[:-1], two_i // 2)
    return _ffn_gated_math(x, weight, activation)


@ffn_gated.register_fake
def _(x, weight, activation):
    return x.new_empty(*x.shape[:-1], weight.shape[0] // 2)


# ----------------------------------------------------------------------------------------------- weight-only linears
@torch.library.custom_op("ktune::linear_int4", mutates_args=("scratch",))
def linear_int4(x: torch.Tensor, w: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor, scratch: torch.Tensor,
                n: int, k: int, group: int) -> torch.Tensor:
    """y = x W^T, W INT4 in the packed layout (packing.pack_int4): w = (q - zero) * scale per (group, row); scratch:
    fp32, one per shape, zero-filled once (quant_scratch() keeps one)."""
    return _linear_int4_math(x, w, scales, zeros, n, k, group)


def _linear_int4_math(x, w, scales, zeros, n, k, group):
    from . import packing
    wd = packing.dequantize_int4(w, scales, zeros, n, k, group)  # fp32 [N, K]
    return (_f(x) @ wd.t()).to(x.dtype)


@linear_int4.register_kernel("cuda")
def _(x, w, scales, zeros, scratch, n, k, group):
    lib = _lib.get("linear_int4")
    if lib is not None:
        x2 = _rows(x)
        y = x2.new_empty(x2.shape[0], n)
        if _lib.launched(lib.ktune_torch_linear_int4(_dtype(x2), _ptr(y), _ptr(x2), _ptr(w), _ptr(scales),
                                                     _ptr(zeros), _ptr(scratch), x2.shape[0], n, k, group, _stream()),
                         "linear_int4"):
            return y.view(*x.shape[:-1], n)
    return _linear_int4_math(x, w, scales, zeros, n, k, group)


@linear_int4.register_fake
def _(x, w, scales, zeros, scratch, n, k, group):
    return x.new_empty(*x.shape[:-1], n)


@torch.library.custom_op("ktune::linear_int8", mutates_args=("scratch",))
def linear_int8(x: torch.Tensor, w: torch.Tensor, scales: torch.Tensor, scratch: torch.Tensor, n: int,
                k: int) -> torch.Tensor:
    """y = x W^T, W INT8 in the packed layout (packing.pack_int8): w = q * scale[row]; scratch: fp32, one per shape,
    zero-filled once (quant_scratch() keeps one)."""
    return _linear_int8_math(x, w, scales, n, k)


def _linear_int8_math(x, w, scales, n, k):
    from . import packing
    wd = packing.dequantize_int8(w, scales, n, k)
    return (_f(x) @ wd.t()).to(x.dtype)


@linear_int8.register_kernel("cuda")
def _(x, w, scales, scratch, n, k):
    lib = _lib.get("linear_int8")
    if lib is not None:
        x2 = _rows(x)
        y = x2.new_empty(x2.shape[0], n)
        if _lib.launched(lib.ktune_torch_linear_int8(_dtype(x2), _ptr(y), _ptr(x2), _ptr(w), _ptr(scales),
                                                     _ptr(scratch), x2.shape[0], n, k, _stream()), "linear_int8"):
            return y.view(*x.shape[:-1], n)
    return _linear_int8_math(x, w, scales, n, k)


@linear_int8.register_fake
def _(x, w, scales, scratch, n, k):
    return x.new_empty(*x.shape[:-1], n)


def quant_scratch_elements(bits, dtype, m, n, k, group=128):
    """fp32 elements of a weight-only linear's scratch at M x N x K (1 without the library)."""
    lib = _lib.load()
    if lib is None or not _lib.has_op("linear_int4" if bits == 4 else "linear_int8"):
        return 1
    if bits == 4:
        return lib.ktune_torch_linear_int4_scratch(_DTYPES[dtype], m, n, k, group)
    return lib.ktune_torch_linear_int8_scratch(_DTYPES[dtype], m, n, k)


def quant_scratch(bits, x, n, k, group=128):
    """The weight-only linear's scratch for x's rows against an N x K weight, one per shape (shape_scratch)."""
    m = x.numel() // x.shape[-1]
    return shape_scratch((f"linear_int{bits}", x.dtype, m, n, k, group if bits == 4 else 0),
                         quant_scratch_elements(bits, x.dtype, m, n, k, group), x.device)


# ------------------------------------------------------------------------------------------------------ dense linear
@torch.library.custom_op("ktune::linear_skinny", mutates_args=("scratch",))
def linear_skinny(x: torch.Tensor, weight: torch.Tensor, scratch: torch.Tensor) -> torch.Tensor:
    """y = x W^T (no bias), W dense [N, K] in x's dtype (F.linear's layout), for decode-sized M (<= 64); scratch fp32,
    skinny_scratch_elements() long, one per shape, zero-filled once (dense_linear keeps one)."""
    return torch.nn.functional.linear(x, weight)


@linear_skinny.register_kernel("cuda")
def _(x, weight, scratch):
    lib = _lib.get("linear_skinny")
    n, k = weight.shape
    if lib is not None and weight.is_contiguous() and weight.dtype == x.dtype:
        x2 = _rows(x)
        y = x2.new_empty(x2.shape[0], n)
        if _lib.launched(lib.ktune_torch_linear_skinny(_dtype(x2), _ptr(y), _ptr(x2), _ptr(weight), _ptr(scratch),
                                                       x2.shape[0], n, k, _stream()), "linear_skinny"):
            return y.view(*x.shape[:-1], n)
    return torch.nn.functional.linear(x, weight)


@linear_skinny.register_fake
def _(x, weight, scratch):
    return x.new_empty(*x.shape[:-1], weight.shape[0])


# The skinny kernel serves M <= SKINNY_MAX_M: on the H100 at M <= 16 it ran 0.99-1.12x cuBLAS's speed (behind only at
# M = 16 N = 14336, by 1 %), at M 32-64 slower (docs/performance.md, tag k27). Above, and at shapes not tuned on this
# chip, cuBLAS (F.linear).
SKINNY_MAX_M = 16
# Per (op, device, dtype, M, N, K): the scratch's elements, or 0 where the op's skinny kernel is not used. Asked on a
# shape's first call (an eager warm-up step before any CUDA graph capture), never per call: a captured step reuses it.
_skinny_plan = {}


def _skinny_scratch_size(op, dtype, m, n, k):
    """fp32 elements of the scratch of `op` (linear_skinny, swiglu_linear: the library's ktune_torch_<op>_scratch) for
    M x N x K (-1 without the op in the library)."""
    lib = _lib.load()
    if lib is None or not _lib.has_op(op):
        return -1
    return getattr(lib, f"ktune_torch_{op}_scratch")(_DTYPES[dtype], m, n, k)


def skinny_scratch_elements(dtype, m, n, k):
    """fp32 elements of the skinny linear's scratch for M x N x K (-1 without the op in the library)."""
    return _skinny_scratch_size("linear_skinny", dtype, m, n, k)


def _skinny_scratch(op, x, weight, m):
    """The shape's scratch for `op` where the library tuned it at (M, N, K) on this chip, else None (the caller's
    fallback runs)."""
    n, k = weight.shape
    key = (op, x.device, x.dtype, m, n, k)
    if key not in _skinny_plan:
        lib = _lib.load()
        tuned = lib is not None and _lib.has_op(op) and \
            getattr(lib, f"ktune_torch_{op}_tuned")(_DTYPES[x.dtype], m, n, k)
        _skinny_plan[key] = max(_skinny_scratch_size(op, x.dtype, m, n, k), 0) if tuned else 0
    elements = _skinny_plan[key]
    return shape_scratch((op, x.dtype, m, n, k), elements, x.device) if elements else None


def _records_grad(*tensors):
    """Whether autograd records this call (the skinny kernels have no backward: F.linear takes such calls)."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def skinny_eligible(x, weight):
    """M (rows of x) when the skinny kernel could take this call by shape and dtype alone, else 0."""
    m = x.numel() // x.shape[-1] if x.dim() and x.shape[-1] else 0
    if (1 <= m <= SKINNY_MAX_M and x.dtype in (torch.float16, torch.bfloat16) and weight.dtype == x.dtype
            and weight.dim() == 2 and weight.shape[1] == x.shape[-1] and weight.is_contiguous()):
        return m
    return 0


def dense_linear(x, weight, bias=None):
    """The dense linear F.linear computes: ktune::linear_skinny on CUDA for M <= SKINNY_MAX_M at shapes tuned on this
    chip (fp16/bf16, contiguous weight of x's dtype); F.linear (cuBLAS) everywhere else."""
    m = skinny_eligible(x, weight) if x.is_cuda and not _records_grad(x, weight) else 0
    if m:
        scratch = _skinny_scratch("linear_skinny", x, weight, m)
        if scratch is not None:
            y = linear_skinny(x, weight, scratch)
            return y if bias is None else y + bias
    return torch.nn.functional.linear(x, weight, bias)


# --------------------------------------------------------------------------------------- SwiGLU + down projection
@torch.library.custom_op("ktune::swiglu_linear", mutates_args=("scratch",))
def swiglu_linear(gate_up: torch.Tensor, weight: torch.Tensor, scratch: torch.Tensor) -> torch.Tensor:
    """y = (silu(gate) * up) W^T (no bias) from gate_up [..., 2K] (gate the first K columns, up the last K), W dense
    [N, K] in gate_up's dtype, for decode-sized M (<= 64): ktune::swiglu then ktune::linear_skinny in one kernel, the
    product rounded to the dtype first as the pair does; scratch fp32, swiglu_linear_scratch_elements() long, one per
    shape, zero-filled once (swiglu_dense_linear keeps one)."""
    return _swiglu_linear_math(gate_up, weight)


def _swiglu_linear_math(gate_up, weight):
    k = gate_up.shape[-1] // 2
    return torch.nn.functional.linear(_swiglu_math(gate_up[..., :k], gate_up[..., k:]), weight)


@swiglu_linear.register_kernel("cuda")
def _(gate_up, weight, scratch):
    lib = _lib.get("swiglu_linear")
    n, k = weight.shape
    if lib is not None and weight.is_contiguous() and weight.dtype == gate_up.dtype and gate_up.shape[-1] == 2 * k:
        g2 = _rows(gate_up)
        y = g2.new_empty(g2.shape[0], n)
        if _lib.launched(lib.ktune_torch_swiglu_linear(_dtype(g2), _ptr(y), _ptr(g2), _ptr(weight), _ptr(scratch),
                                                       g2.shape[0], n, k, _stream()), "swiglu_linear"):
            return y.view(*gate_up.shape[:-1], n)
    return _swiglu_linear_math(gate_up, weight)


@swiglu_linear.register_fake
def _(gate_up, weight, scratch):
    return gate_up.new_empty(*gate_up.shape[:-1], weight.shape[0])


def swiglu_linear_scratch_elements(dtype, m, n, k):
    """fp32 elements of the fused SwiGLU down projection's scratch for M x N x K (-1 without the op in the library)."""
    return _skinny_scratch_size("swiglu_linear", dtype, m, n, k)


def swiglu_dense_linear(gate_up, weight, bias=None):
    """down_proj(swiglu(gate, up)) of a fused gate_up [..., 2K] and a dense W [N, K]: ktune::swiglu_linear on CUDA for
    M <= SKINNY_MAX_M at shapes it was tuned at on this chip (fp16/bf16, contiguous weight of gate_up's dtype); else
    ops.swiglu on the two halves in place, then dense_linear."""
    k = gate_up.shape[-1] // 2
    gate, up = gate_up[..., :k], gate_up[..., k:]
    m = (skinny_eligible(gate, weight) if gate_up.is_cuda and gate_up.shape[-1] == 2 * k
         and not _records_grad(gate_up, weight) else 0)
    if m:
        scratch = _skinny_scratch("swiglu_linear", gate_up, weight, m)
        if scratch is not None:
            y = swiglu_linear(gate_up, weight, scratch)
            return y if bias is None else y + bias
    return dense_linear(swiglu(gate, up), weight, bias)


# ------------------------------------------------------------------------ residual add + RMSNorm + projection
def _add_rms_norm_linear_math(x, residual, norm_weight, weight, eps):
    s = _f(x) + _f(residual)
    h = (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * _f(norm_weight)).to(x.dtype)
    return torch.nn.functional.linear(h, weight), s.to(x.dtype)


def _eps_e9(eps):
    """eps in units of 1e-9 when it is a whole number of them (the library takes eps so), else None."""
    e = round(eps * 1e9)
    return e if e >= 0 and abs(e - eps * 1e9) < 1e-6 * max(1.0, eps * 1e9) else None


@torch.library.custom_op("ktune::add_rms_norm_linear", mutates_args=("scratch",))
def add_rms_norm_linear(x: torch.Tensor, residual: torch.Tensor, norm_weight: torch.Tensor, weight: torch.Tensor,
                        scratch: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, residual_out): residual_out = x + residual, y = add_rms_norm's normalised output times W^T (no bias), for
    x, residual [..., K], norm_weight [K], W dense [N, K] in x's dtype, decode-sized M (<= 64): ktune::add_rms_norm
    then ktune::linear_skinny in one kernel (linear_skinny/fwd_add_rmsnorm), the normalised x rounded to the dtype
    first as the pair does; scratch fp32, add_rms_norm_linear_scratch_elements() long, one per shape, zero-filled
    once (add_rms_norm_dense_linear keeps one)."""
    return _add_rms_norm_linear_math(x, residual, norm_weight, weight, eps)


@add_rms_norm_linear.register_kernel("cuda")
def _(x, residual, norm_weight, weight, scratch, eps):
    lib = _lib.get("add_rms_norm_linear")
    n, k = weight.shape
    eps_e9 = _eps_e9(eps)
    if (lib is not None and eps_e9 is not None and weight.is_contiguous() and weight.dtype == x.dtype
            and residual.dtype == x.dtype and norm_weight.dtype == x.dtype and x.shape[-1] == k
            and residual.shape == x.shape and norm_weight.shape == (k,)):
        x2, r2 = _rows(x), _rows(residual)
        y, r_out = x2.new_empty(x2.shape[0], n), torch.empty_like(x2)  # r_out new: the kernel needs no alias
        if _lib.launched(lib.ktune_torch_add_rms_norm_linear(_dtype(x2), _ptr(y), _ptr(r_out), _ptr(x2), _ptr(r2),
                                                             _ptr(norm_weight.contiguous()), _ptr(weight),
                                                             _ptr(scratch), x2.shape[0], n, k, eps_e9, _stream()),
                         "add_rms_norm_linear"):
            return y.view(*x.shape[:-1], n), r_out.view(x.shape)
    return _add_rms_norm_linear_math(x, residual, norm_weight, weight, eps)


@add_rms_norm_linear.register_fake
def _(x, residual, norm_weight, weight, scratch, eps):
    return x.new_empty(*x.shape[:-1], weight.shape[0]), x.new_empty(x.shape)


def add_rms_norm_linear_scratch_elements(dtype, m, n, k, eps):
    """fp32 elements of the fused add + RMSNorm + projection's scratch for M x N x K at eps (-1 without the op in the
    library or for an eps that is no whole number of 1e-9)."""
    lib = _lib.load()
    eps_e9 = _eps_e9(eps)
    if lib is None or not _lib.has_op("add_rms_norm_linear") or eps_e9 is None:
        return -1
    return lib.ktune_torch_add_rms_norm_linear_scratch(_DTYPES[dtype], m, n, k, eps_e9)


def _add_rms_norm_linear_scratch(x, weight, m, eps):
    """The shape's scratch where the library tuned linear_skinny/fwd_add_rmsnorm at (M, N, K, eps) on this chip, else
    None (as _skinny_scratch; asked on a shape's first call, never per call)."""
    n, k = weight.shape
    key = ("add_rms_norm_linear", x.device, x.dtype, m, n, k, eps)
    if key not in _skinny_plan:
        lib = _lib.load()
        eps_e9 = _eps_e9(eps)
        tuned = lib is not None and _lib.has_op("add_rms_norm_linear") and eps_e9 is not None and \
            lib.ktune_torch_add_rms_norm_linear_tuned(_DTYPES[x.dtype], m, n, k, eps_e9)
        _skinny_plan[key] = max(add_rms_norm_linear_scratch_elements(x.dtype, m, n, k, eps), 0) if tuned else 0
    elements = _skinny_plan[key]
    return shape_scratch(("add_rms_norm_linear", x.dtype, m, n, k, eps), elements, x.device) if elements else None


def add_rms_norm_dense_linear(x, residual, norm_weight, eps, weight):
    """(y, residual_out) of a residual add + RMSNorm and the dense projection W [N, K] after it: ktune::
    add_rms_norm_linear on CUDA for M <= SKINNY_MAX_M at shapes (and eps) it was tuned at on this chip, no gradient
    recorded (fp16/bf16, contiguous weight of x's dtype); else ops.add_rms_norm then dense_linear."""
    m = (skinny_eligible(x, weight) if x.is_cuda and residual.shape == x.shape and norm_weight.dtype == x.dtype
         and not _records_grad(x, residual, norm_weight, weight) else 0)
    if m:
        scratch = _add_rms_norm_linear_scratch(x, weight, m, eps)
        if scratch is not None:
            return add_rms_norm_linear(x, residual, norm_weight, weight, scratch, eps)
    h, residual_out = add_rms_norm(x, residual, norm_weight, eps)
    return dense_linear(h, weight), residual_out
