"""ktune_torch without a GPU: the ops are registered, their fake (meta) shapes, the CPU implementations against plain
math, torch.library.opcheck, RMSNorm's autograd, the INT4/INT8 packing, and patch_model on a tiny random Llama on CPU
(same logits as unpatched, prefill and StaticCache decode). Run by tests/python_torch/run.sh (CTest label python)."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import ktune_torch  # noqa: E402
from ktune_torch import ops, packing  # noqa: E402

torch.manual_seed(0)


def test_ops_are_registered():
    for name in ("rms_norm", "rms_norm_backward", "add_rms_norm", "rope_neox_", "rope_neox_cache_", "swiglu",
                 "decode_attention", "linear_int4", "linear_int8", "linear_skinny", "swiglu_linear", "swiglu_backward",
                 "swiglu_backward_halves", "add_rms_norm_linear", "prefill_attention", "linear_act",
                 "ffn_gated"):
        assert hasattr(torch.ops.ktune, name), name


def test_fake_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(3, 5, 64, dtype=torch.bfloat16)
        w = torch.empty(64, dtype=torch.bfloat16)
        assert ops.rms_norm(x, w, 1e-5).shape == x.shape
        y, r = ops.add_rms_norm(x, x, w, 1e-5)
        assert y.shape == x.shape and r.shape == x.shape
        assert ops.swiglu(x, x).shape == x.shape
        q = torch.empty(2, 8, 32, dtype=torch.bfloat16)
        kc = torch.empty(2, 2, 100, 32, dtype=torch.bfloat16)
        out = ops.decode_attention(q, kc, kc, torch.empty(2, dtype=torch.int32), torch.empty(4))
        assert out.shape == q.shape
        qp, kp = torch.empty(2, 50, 8, 32, dtype=torch.bfloat16), torch.empty(2, 50, 2, 32, dtype=torch.bfloat16)
        assert ops.prefill_attention(qp, kp, kp, None, True).shape == qp.shape
        assert ops.linear_act(x, torch.empty(24, 64, dtype=torch.bfloat16), None, "gelu").shape == (3, 5, 24)
        assert ops.ffn_gated(x, torch.empty(48, 64, dtype=torch.bfloat16), "silu").shape == (3, 5, 24)
        assert ops.rope_neox_cache_(q, kc[:, :, 0], kc[:, :, 1], kc, kc, torch.empty(2, dtype=torch.int32),
                                    torch.empty(16, 16), torch.empty(16, 16)) is None
        x2 = torch.empty(4, 128, dtype=torch.bfloat16)
        y4 = ops.linear_int4(x2, torch.empty(10, dtype=torch.uint8), torch.empty(10, dtype=torch.bfloat16),
                             torch.empty(10, dtype=torch.uint8), torch.empty(4), 48, 128, 64)
        assert y4.shape == (4, 48)
        y8 = ops.linear_int8(x2, torch.empty(10, dtype=torch.int8), torch.empty(48, dtype=torch.bfloat16),
                             torch.empty(4), 48, 128)
        assert y8.shape == (4, 48)


def test_rms_norm_matches_math_and_hf_form():
    x = torch.randn(7, 96, dtype=torch.float64)
    w = torch.rand(96, dtype=torch.float64) + 0.5
    want = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w
    torch.testing.assert_close(ops.rms_norm(x, w, 1e-5), want.to(x.dtype), rtol=1e-6, atol=1e-6)


def test_rms_norm_autograd():
    x = torch.randn(5, 32, dtype=torch.float64, requires_grad=True)
    w = (torch.rand(32, dtype=torch.float64) + 0.5).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: ops.rms_norm(a, b, 1e-6), (x, w))
    # and against autograd of the plain math
    y = ops.rms_norm(x, w, 1e-6)
    g = torch.randn_like(y)
    dx, dw = torch.autograd.grad(y, (x, w), g)
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    y2 = x2 * torch.rsqrt(x2.pow(2).mean(-1, keepdim=True) + 1e-6) * w2
    dx2, dw2 = torch.autograd.grad(y2, (x2, w2), g)
    torch.testing.assert_close(dx, dx2)
    torch.testing.assert_close(dw, dw2)


def test_add_rms_norm():
    x, r = torch.randn(4, 64), torch.randn(4, 64)
    w = torch.rand(64) + 0.5
    y, r_out = ops.add_rms_norm(x, r, w, 1e-6)
    s = x + r
    torch.testing.assert_close(r_out, s)
    torch.testing.assert_close(y, s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6) * w)


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def test_rope_neox_matches_hf_formula():
    m, hq, hk, d = 6, 4, 2, 16
    q, k = torch.randn(m, hq, d, dtype=torch.float64), torch.randn(m, hk, d, dtype=torch.float64)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    cos, sin = ops.rope_cache(inv_freq, 64)
    pos = torch.tensor([0, 3, 5, 63, 1, 2], dtype=torch.int32)
    emb = torch.cat([pos.double()[:, None] * inv_freq[None]] * 2, dim=-1)  # HF: cat(freqs, freqs)
    c, s = emb.cos()[:, None], emb.sin()[:, None]
    want_q, want_k = q * c + _rotate_half(q) * s, k * c + _rotate_half(k) * s
    ops.rope_neox_(q, k, pos, cos.double(), sin.double())
    torch.testing.assert_close(q, want_q, rtol=1e-5, atol=1e-5)  # the caches are fp32
    torch.testing.assert_close(k, want_k, rtol=1e-5, atol=1e-5)


def _qkv_views(m, hq, hk, d, dtype, strided):
    """q [M, HQ, D], k and v [M, HK, D]: views of one fused projection's rows (strided), or tensors of their own."""
    if strided:
        qkv = torch.randn(m, (hq + 2 * hk) * d + 3, dtype=dtype)  # 3 elements of padding per row
        return (qkv[:, :hq * d].view(m, hq, d), qkv[:, hq * d:(hq + hk) * d].view(m, hk, d),
                qkv[:, (hq + hk) * d:(hq + 2 * hk) * d].view(m, hk, d))
    return torch.randn(m, hq, d, dtype=dtype), torch.randn(m, hk, d, dtype=dtype), torch.randn(m, hk, d, dtype=dtype)


@pytest.mark.parametrize("m,hq,hk,d,r,strided,dtype", [
    (1, 4, 2, 16, 16, False, torch.float32),
    (3, 4, 2, 16, 16, True, torch.float32),
    (5, 6, 2, 32, 16, True, torch.float32),  # partial rotary: k's dims R.. go into the cache unrotated
    (4, 2, 1, 8, 4, False, torch.bfloat16),
    (2, 8, 8, 64, 64, True, torch.float16),
])
def test_rope_neox_cache_is_rope_neox_then_index_copy(m, hq, hk, d, r, strided, dtype):
    length = 11
    q, k, v = _qkv_views(m, hq, hk, d, dtype, strided)
    k_before = k.clone()
    kc, vc = torch.randn(m, hk, length, d, dtype=dtype), torch.randn(m, hk, length, d, dtype=dtype)
    cos, sin = ops.rope_cache(torch.rand(r // 2), 16)
    pos = torch.tensor([10, 0, 3, 7, 1][:m], dtype=torch.int32)
    want_q, want_k, want_kc, want_vc = q.clone(), k.clone(), kc.clone(), vc.clone()
    ops.rope_neox_(want_q, want_k, pos, cos, sin)
    for i in range(m):  # sequence i's token into row pos[i] of its own cache
        want_kc[i].index_copy_(1, pos[i:i + 1].long(), want_k[i].unsqueeze(1))
        want_vc[i].index_copy_(1, pos[i:i + 1].long(), v[i].unsqueeze(1))
    ops.rope_neox_cache_(q, k, v, kc, vc, pos, cos, sin)
    assert torch.equal(q, want_q)
    assert torch.equal(kc, want_kc)
    assert torch.equal(vc, want_vc)
    assert torch.equal(k, k_before)  # k itself is not rotated
    if r < d:
        assert torch.equal(kc[0, :, pos[0], r:], k_before[0, :, r:])


def test_swiglu():
    g, u = torch.randn(3, 40), torch.randn(3, 40)
    torch.testing.assert_close(ops.swiglu(g, u), torch.nn.functional.silu(g) * u)


def test_swiglu_backward_by_hand():
    # s(1) = 0.7310585786300049, silu'(1) = s (1 + 1 - s) = 0.9276705118714869; s(0) = 1/2
    dgate, dup = ops.swiglu_backward(torch.tensor([3.0, 0.25], dtype=torch.float64),
                                     torch.tensor([1.0, 0.0], dtype=torch.float64),
                                     torch.tensor([2.0, 4.0], dtype=torch.float64))
    torch.testing.assert_close(dgate, torch.tensor([6 * 0.9276705118714869, 0.5], dtype=torch.float64))
    torch.testing.assert_close(dup, torch.tensor([3 * 0.7310585786300049, 0.0], dtype=torch.float64))
    # bf16: fp32 math, each gradient rounded once
    g, u, dy = (torch.randn(4, 24, dtype=torch.bfloat16) for _ in range(3))
    dgate, dup = ops.swiglu_backward(dy, g, u)
    s = torch.sigmoid(g.float())
    assert dgate.dtype == dup.dtype == torch.bfloat16
    assert torch.equal(dup, (dy.float() * s * g.float()).bfloat16())
    torch.testing.assert_close(dgate, (dy.float() * u.float() * s * (1 + g.float() * (1 - s))).bfloat16(), rtol=0,
                               atol=0)


@pytest.mark.parametrize("halves", [False, True])
def test_swiglu_autograd_is_torch_autograd_of_silu_times_up(halves, monkeypatch):
    """float64 on CPU against autograd of F.silu(g) * u: gate and up two tensors, or the two halves of one gate_up (the
    gradient then one [..., 2I] tensor from ktune::swiglu_backward_halves)."""
    i = 24
    if halves:
        leaves = ((torch.randn(2, 5, 2 * i, dtype=torch.float64) * 2).requires_grad_(),)
    else:
        leaves = ((torch.randn(2, 5, i, dtype=torch.float64) * 2).requires_grad_(),
                  torch.randn(2, 5, i, dtype=torch.float64).requires_grad_())

    def split(t):
        return (t[0][..., :i], t[0][..., i:]) if halves else t

    calls = []

    def halves_op(*args):
        calls.append(1)
        return torch.ops.ktune.swiglu_backward_halves(*args)

    monkeypatch.setattr(ops, "swiglu_backward_halves", halves_op)
    dy = torch.randn(2, 5, i, dtype=torch.float64)
    got = torch.autograd.grad(ops.swiglu(*split(leaves)), leaves, dy)
    assert len(calls) == (1 if halves else 0)
    plain = tuple(t.detach().clone().requires_grad_() for t in leaves)
    g, u = split(plain)
    want = torch.autograd.grad(torch.nn.functional.silu(g) * u, plain, dy)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda *t: ops.swiglu(*split(t)), leaves)


def test_torch_compile_traces_swiglus_backward():
    """fullgraph, forward and backward (AOTAutograd traces the backward through the fakes): the eager gradients."""

    def mlp(gate_up, gate, up):
        i = gate.shape[-1]
        return (ops.swiglu(gate_up[..., :i], gate_up[..., i:]) * ops.swiglu(gate, up)).sum()

    args = [torch.randn(3, 64, requires_grad=True), torch.randn(3, 32, requires_grad=True),
            torch.randn(3, 32, requires_grad=True)]
    torch._dynamo.reset()
    compiled = torch.compile(mlp, backend="aot_eager", fullgraph=True)
    got = torch.autograd.grad(compiled(*args), args)
    want = torch.autograd.grad(mlp(*args), args)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)


def test_swiglu_backward_halves_is_the_two_gradients_side_by_side():
    gate_up, dy = torch.randn(3, 64, dtype=torch.bfloat16), torch.randn(3, 32, dtype=torch.bfloat16)
    both = ops.swiglu_backward_halves(dy, gate_up[:, :32], gate_up[:, 32:])
    dgate, dup = ops.swiglu_backward(dy, gate_up[:, :32], gate_up[:, 32:])
    assert both.shape == (3, 64) and both.is_contiguous()
    assert torch.equal(both[:, :32], dgate) and torch.equal(both[:, 32:], dup)


def test_halves_of_one_only_where_up_is_gate_plus_i_in_one_tensor():
    gu = torch.randn(2, 5, 16)
    assert ops._halves_of_one(gu[..., :8], gu[..., 8:])
    assert not ops._halves_of_one(gu[:, :1, :8], gu[:, :1, 8:])  # rows 5 * 16 apart, not 2I
    assert not ops._halves_of_one(gu[..., 8:], gu[..., :8])  # swapped
    assert not ops._halves_of_one(gu[..., :8], gu[..., :8].clone())  # two tensors
    wide = torch.randn(4, 24)
    assert not ops._halves_of_one(wide[:, :8], wide[:, 8:16])  # rows 3I apart
    assert ops._halves_of_one(wide[:1, :8], wide[:1, 8:16])  # one row: no row stride
    t = torch.randn(16, 4).t()
    assert not ops._halves_of_one(t[:, :2], t[:, 2:])  # columns not unit-stride


@pytest.mark.parametrize("causal", [True, False])
def test_prefill_attention_matches_sdpa_per_sequence(causal):
    b, length, hq, hk, d = 3, 19, 8, 2, 16
    q, k, v = torch.randn(b, length, hq, d), torch.randn(b, length, hk, d), torch.randn(b, length, hk, d)
    lens = torch.tensor([19, 7, 1], dtype=torch.int32)
    for t in (q, k, v):  # what a padded batch holds past a length must not reach out
        for i in range(b):
            t[i, int(lens[i]):] = float("nan")
    out = ops.prefill_attention(q, k, v, lens, causal)
    for i in range(b):
        n = int(lens[i])
        qq = q[i, :n].transpose(0, 1)  # [HQ, n, D]
        kk = k[i, :n].transpose(0, 1).repeat_interleave(hq // hk, 0)
        vv = v[i, :n].transpose(0, 1).repeat_interleave(hq // hk, 0)
        want = torch.nn.functional.scaled_dot_product_attention(qq, kk, vv, is_causal=causal).transpose(0, 1)
        torch.testing.assert_close(out[i, :n], want, rtol=1e-5, atol=1e-5)
        assert torch.equal(out[i, n:], torch.zeros_like(out[i, n:]))
    # Without lengths every sequence is L tokens.
    torch.testing.assert_close(ops.prefill_attention(q[:1], k[:1], v[:1], None, causal), out[:1])


@pytest.mark.parametrize("activation", ["none", "gelu", "silu"])
def test_linear_act_is_the_activation_of_f_linear(activation):
    x, w, b = torch.randn(2, 3, 64), torch.randn(24, 64), torch.randn(24)
    z = torch.nn.functional.linear(x, w, b)
    want = {"none": z, "gelu": torch.nn.functional.gelu(z, approximate="tanh"), "silu": torch.nn.functional.silu(z)}
    torch.testing.assert_close(ops.linear_act(x, w, b, activation), want[activation])
    torch.testing.assert_close(ops.linear_act(x, w, None, activation)[0, 0, 0],
                               ops.linear_act(x[:1, :1], w, torch.zeros(24), activation)[0, 0, 0])
    # bf16 in and out: summed in fp32, rounded once.
    xb, wb, bb = x.bfloat16(), w.bfloat16(), b.bfloat16()
    z32 = torch.nn.functional.linear(xb.float(), wb.float(), bb.float())
    got = ops.linear_act(xb, wb, bb, activation)
    assert got.dtype == torch.bfloat16
    act = {"none": z32, "gelu": torch.nn.functional.gelu(z32, approximate="tanh"),
           "silu": torch.nn.functional.silu(z32)}[activation]
    assert torch.equal(got, act.bfloat16())
    with pytest.raises(ValueError, match="relu"):
        ops.linear_act(x, w, b, "relu")


@pytest.mark.parametrize("activation", ["silu", "gelu"])
def test_ffn_gated_is_the_gated_product_of_two_linears(activation):
    x, wg, wu = torch.randn(2, 3, 64), torch.randn(24, 64), torch.randn(24, 64)
    act = {"silu": torch.nn.functional.silu,
           "gelu": lambda g: torch.nn.functional.gelu(g, approximate="tanh")}[activation]
    w = torch.cat([wg, wu])  # [Wg; Wu]
    torch.testing.assert_close(ops.ffn_gated(x, w, activation),
                               act(torch.nn.functional.linear(x, wg)) * torch.nn.functional.linear(x, wu))
    # bf16 in and out: gate and up summed in fp32, y rounded once.
    xb, wb = x.bfloat16(), w.bfloat16()
    g, u = torch.nn.functional.linear(xb.float(), wb.float()).chunk(2, dim=-1)
    got = ops.ffn_gated(xb, wb, activation)
    assert got.dtype == torch.bfloat16
    assert torch.equal(got, (act(g) * u).bfloat16())
    with pytest.raises(ValueError, match="relu"):
        ops.ffn_gated(x, w, "relu")
    with pytest.raises(ValueError, match="47 rows"):
        ops.ffn_gated(x, w[:47], activation)


def test_decode_attention_matches_sdpa():
    b, hq, hk, length, d = 3, 8, 2, 20, 16
    q = torch.randn(b, hq, d)
    kc, vc = torch.randn(b, hk, length, d), torch.randn(b, hk, length, d)
    lens = torch.tensor([20, 7, 1], dtype=torch.int32)
    out = ops.decode_attention(q, kc, vc, lens, torch.zeros(4))
    for i in range(b):
        n = int(lens[i])
        kk = kc[i, :, :n].repeat_interleave(hq // hk, 0)
        vv = vc[i, :, :n].repeat_interleave(hq // hk, 0)
        want = torch.nn.functional.scaled_dot_product_attention(q[i][:, None], kk, vv)[:, 0]
        torch.testing.assert_close(out[i], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n,k,group", [(48, 256, 128), (35, 200, 64), (16, 64, 64)])
def test_int4_pack_roundtrip_and_linear(n, k, group):
    w = torch.randn(n, k)
    q, scales, zeros = packing.quantize_int4(w, group)
    assert q.max() <= 15 and zeros.max() <= 15
    pw, ps, pz = packing.pack_int4(q, group, scales, zeros)
    assert pw.numel() == packing.int4_weight_bytes(n, k) and ps.numel() == packing.int4_params(n, k, group)
    torch.testing.assert_close(packing.unpack_int4(pw, n, k), q.to(torch.int32))
    deq = packing.dequantize_int4(pw, ps, pz, n, k, group)
    g_idx = torch.arange(k) // group
    want = (q.float() - zeros.float()[g_idx].t()) * scales.float()[g_idx].t()
    torch.testing.assert_close(deq, want)
    assert (deq - w).abs().max() <= scales.float().max() * 0.51 + 1e-6  # half a quantization step
    x = torch.randn(3, k)
    torch.testing.assert_close(ops.linear_int4(x, pw, ps, pz, torch.zeros(1), n, k, group), x @ want.t(),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n,k", [(48, 256), (35, 100)])
def test_int8_pack_roundtrip_and_linear(n, k):
    w = torch.randn(n, k)
    q, scales = packing.quantize_int8(w)
    pw = packing.pack_int8(q)
    assert pw.numel() == packing.int8_weight_bytes(n, k)
    deq = packing.dequantize_int8(pw, scales, n, k)
    torch.testing.assert_close(deq, q.float() * scales[:, None])
    x = torch.randn(2, k)
    torch.testing.assert_close(ops.linear_int8(x, pw, scales, torch.zeros(1), n, k), x @ deq.t(), rtol=1e-4,
                               atol=1e-4)


def test_packing_matches_the_cpp_packers():
    """The torch port against quant_linear_packing.hpp, byte for byte, through the op library (when built)."""
    from ktune_torch import _lib
    lib = _lib.load()
    if lib is None:
        pytest.skip(_lib.load_error())
    import ctypes
    n, k, group = 40, 320, 128
    q, scales, zeros = packing.quantize_int4(torch.randn(n, k, dtype=torch.bfloat16), group)
    pw, ps, pz = packing.pack_int4(q, group, scales, zeros)
    plain = (q[:, 0::2] | (q[:, 1::2] << 4)).contiguous()  # [N, K/2], low nibble even k
    cw = torch.empty(lib.ktune_torch_int4_weight_bytes(n, k), dtype=torch.uint8)
    cs = torch.empty(lib.ktune_torch_int4_params(n, k, group), dtype=torch.bfloat16)
    cz = torch.empty(cs.numel(), dtype=torch.uint8)
    p = lambda t: ctypes.c_void_p(t.data_ptr())  # noqa: E731
    assert lib.ktune_torch_pack_int4(p(plain), n, k, p(cw)) == 1
    assert lib.ktune_torch_pack_int4_scales(p(scales.contiguous()), n, k, group, p(cs)) == 1
    assert lib.ktune_torch_pack_int4_zeros(p(zeros.contiguous()), n, k, group, p(cz)) == 1
    assert torch.equal(cw, pw) and torch.equal(cs.view(torch.int16), ps.view(torch.int16)) and torch.equal(cz, pz)
    q8, _ = packing.quantize_int8(torch.randn(n, k))
    c8 = torch.empty(lib.ktune_torch_int8_weight_bytes(n, k), dtype=torch.int8)
    assert lib.ktune_torch_pack_int8(p(q8.contiguous()), n, k, p(c8)) == 1
    assert torch.equal(c8, packing.pack_int8(q8))


def test_opcheck():
    x, w = torch.randn(4, 32), torch.rand(32) + 0.5
    torch.library.opcheck(torch.ops.ktune.rms_norm.default, (x, w, 1e-5))
    torch.library.opcheck(torch.ops.ktune.add_rms_norm.default, (x, torch.randn(4, 32), w, 1e-5))
    torch.library.opcheck(torch.ops.ktune.swiglu.default, (x, torch.randn(4, 32)))
    torch.library.opcheck(torch.ops.ktune.swiglu_backward.default, (torch.randn(4, 32), x, torch.randn(4, 32)))
    gate_up = torch.randn(4, 64)
    torch.library.opcheck(torch.ops.ktune.swiglu_backward_halves.default,
                          (torch.randn(4, 32), gate_up[:, :32], gate_up[:, 32:]))
    torch.library.opcheck(torch.ops.ktune.swiglu_linear.default, (torch.randn(4, 64), torch.randn(24, 32),
                                                                  torch.zeros(4)))
    torch.library.opcheck(torch.ops.ktune.add_rms_norm_linear.default,
                          (x, torch.randn(4, 32), w, torch.randn(24, 32), torch.zeros(4), 1e-5))
    cos, sin = ops.rope_cache(torch.rand(8), 16)
    torch.library.opcheck(torch.ops.ktune.rope_neox_.default,
                          (torch.randn(3, 4, 16), torch.randn(3, 2, 16), torch.tensor([1, 2, 3], dtype=torch.int32),
                           cos, sin))
    torch.library.opcheck(torch.ops.ktune.decode_attention.default,
                          (torch.randn(2, 4, 16), torch.randn(2, 2, 9, 16), torch.randn(2, 2, 9, 16),
                           torch.tensor([9, 4], dtype=torch.int32), torch.zeros(4)))
    torch.library.opcheck(torch.ops.ktune.prefill_attention.default,
                          (torch.randn(2, 9, 4, 16), torch.randn(2, 9, 2, 16), torch.randn(2, 9, 2, 16),
                           torch.tensor([9, 4], dtype=torch.int32), True))
    torch.library.opcheck(torch.ops.ktune.prefill_attention.default,
                          (torch.randn(2, 9, 4, 16), torch.randn(2, 9, 2, 16), torch.randn(2, 9, 2, 16), None, False))
    torch.library.opcheck(torch.ops.ktune.linear_act.default, (torch.randn(3, 32), torch.randn(8, 32), None, "gelu"))
    torch.library.opcheck(torch.ops.ktune.linear_act.default,
                          (torch.randn(2, 3, 32), torch.randn(8, 32), torch.randn(8), "silu"))
    torch.library.opcheck(torch.ops.ktune.ffn_gated.default, (torch.randn(2, 3, 32), torch.randn(16, 32), "silu"))
    torch.library.opcheck(torch.ops.ktune.ffn_gated.default, (torch.randn(5, 32), torch.randn(16, 32), "gelu"))
    q, k, v = _qkv_views(3, 4, 2, 16, torch.float32, strided=True)
    torch.library.opcheck(torch.ops.ktune.rope_neox_cache_.default,
                          (q, k, v, torch.randn(3, 2, 9, 16), torch.randn(3, 2, 9, 16),
                           torch.tensor([1, 8, 3], dtype=torch.int32), cos, sin))


def _tiny_llama(seed=0, bias=False):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=97, max_position_embeddings=128,
                                   rms_norm_eps=1e-5, attention_bias=bias, mlp_bias=bias)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(cfg).eval()
    model.config._attn_implementation = "sdpa"
    with torch.no_grad():  # weights large enough that the logits differ visibly between tokens
        for p in model.parameters():
            p.normal_(0, 0.2)
    return model


@pytest.mark.parametrize("bias,fuse", [(False, True), (True, True), (False, False)])
def test_patch_model_gives_the_same_logits_on_cpu(bias, fuse):
    ref, patched = _tiny_llama(bias=bias), _tiny_llama(bias=bias)
    ktune_torch.llama.patch_model(patched, fuse_projections=fuse)
    assert hasattr(patched.model.layers[0].self_attn, "qkv_proj") == fuse
    ids = torch.randint(0, 97, (2, 11))
    with torch.no_grad():
        a = ref(input_ids=ids).logits
        b = patched(input_ids=ids).logits
    torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-4)


def test_patch_model_static_cache_decode_on_cpu():
    from transformers import StaticCache
    ref, patched = _tiny_llama(), _tiny_llama()
    ktune_torch.llama.patch_model(patched)
    ids = torch.randint(0, 97, (2, 9))
    outs = []
    for model in (ref, patched):
        cache = StaticCache(config=model.config, max_cache_len=20)
        tok, logits = ids, []
        with torch.no_grad():
            for step in range(5):
                start = 0 if step == 0 else ids.shape[1] + step - 1
                pos = torch.arange(start, start + tok.shape[1])[None].expand(2, -1)
                out = model(input_ids=tok, position_ids=pos, past_key_values=cache, use_cache=True).logits
                logits.append(out[:, -1])
                tok = out[:, -1].argmax(-1, keepdim=True)
        outs.append(torch.stack(logits))
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("weights", ["int4", "int8"])
def test_patch_model_quantized_on_cpu(weights):
    ref, patched = _tiny_llama(), _tiny_llama()
    ktune_torch.llama.patch_model(patched, weights=weights)
    assert isinstance(patched.model.layers[0].mlp.down_proj, ktune_torch.llama.QuantLinear)
    ids = torch.randint(0, 97, (1, 7))
    with torch.no_grad():
        a, b = ref(input_ids=ids).logits, patched(input_ids=ids).logits
    rel = (a - b).norm() / a.norm()
    # 4 bits over N(0, 0.2) weights err ~10% per layer; a wrong layout or scale gives ~140% (uncorrelated logits)
    assert rel < (0.35 if weights == "int4" else 0.03), float(rel)


@pytest.mark.parametrize("bias", [False, True])
def test_patch_model_trains_with_the_same_gradients_on_cpu(bias):
    """A training step through the patched model (fused qkv with RoPE, fused gate_up with SwiGLU, add + RMSNorm, their
    autograd functions) gives the loss and every gradient of the unpatched one, the fused weights' gradients being
    the parts' concatenated."""
    ref, patched = _tiny_llama(bias=bias), _tiny_llama(bias=bias)
    for m in (ref, patched):
        m.double().train()
    ktune_torch.llama.patch_model(patched)
    assert patched.model.layers[0].self_attn.qkv_proj.weight.requires_grad
    ids = torch.randint(0, 97, (2, 11))
    pos = torch.arange(11)[None].expand(2, -1)
    losses = [m(input_ids=ids, position_ids=pos, use_cache=False).logits.pow(2).mean() for m in (ref, patched)]
    for loss in losses:
        loss.backward()
    # the rope caches are fp32 (as HF's): ~1e-7 relative
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-6, atol=0)
    a_ref, a = ref.model.layers[1].self_attn, patched.model.layers[1].self_attn
    m_ref, m = ref.model.layers[1].mlp, patched.model.layers[1].mlp
    pairs = [(a.qkv_proj.weight, [a_ref.q_proj, a_ref.k_proj, a_ref.v_proj]),
             (m.gate_up_proj.weight, [m_ref.gate_proj, m_ref.up_proj])]
    if bias:
        pairs += [(a.qkv_proj.bias, [a_ref.q_proj, a_ref.k_proj, a_ref.v_proj])]
    for fused, parts in pairs:
        want = torch.cat([getattr(p, "bias" if fused.dim() == 1 else "weight").grad for p in parts], 0)
        torch.testing.assert_close(fused.grad, want, rtol=1e-5, atol=1e-9)
    for name in ("o_proj", ):
        torch.testing.assert_close(getattr(a, name).weight.grad, getattr(a_ref, name).weight.grad, rtol=1e-5,
                                   atol=1e-9)
    for ln in ("input_layernorm", "post_attention_layernorm"):
        torch.testing.assert_close(getattr(patched.model.layers[0], ln).weight.grad,
                                   getattr(ref.model.layers[0], ln).weight.grad, rtol=1e-5, atol=1e-9)
    torch.testing.assert_close(patched.model.embed_tokens.weight.grad, ref.model.embed_tokens.weight.grad, rtol=1e-5,
                               atol=1e-9)


def test_patch_model_training_compiles_in_one_graph():
    """fullgraph through dynamo and AOT autograd (aot_eager: no code generation): the autograd functions, the in-place
    RoPE inside them and the custom ops' fakes trace without a graph break, with eager's gradients."""
    ref, patched = _tiny_llama(), _tiny_llama()
    ktune_torch.llama.patch_model(ref)
    ktune_torch.llama.patch_model(patched)
    for m in (ref, patched):
        m.train()
    compiled = torch.compile(patched, backend="aot_eager", fullgraph=True)
    ids = torch.randint(0, 97, (2, 9))
    pos = torch.arange(9)[None].expand(2, -1)
    for m in (ref, compiled):
        m(input_ids=ids, position_ids=pos, use_cache=False).logits.pow(2).mean().backward()
    for a, b in zip(ref.parameters(), patched.parameters()):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-6)


def test_library_status_says_why_when_absent():
    loaded, detail = ktune_torch.library_status()
    if not loaded:
        assert "build_torch_ops.sh" in detail
    else:
        assert isinstance(detail, list)


def test_torch_compile_traces_the_ops_through_their_fake_implementations():
    """fullgraph: no graph break at any ktune op, the in-place RoPE functionalized; the same values as eager."""

    def step(x, w, q, k, pos, cos, sin, kc, vc, lens):
        h = ops.rms_norm(x, w, 1e-5)
        y, r = ops.add_rms_norm(h, x, w, 1e-5)
        q, k = q.clone(), k.clone()
        ops.rope_neox_(q, k, pos, cos, sin)
        a = ops.decode_attention(q, kc, vc, lens, torch.zeros(4))
        q2, kc2, vc2 = q.clone(), kc.clone(), vc.clone()
        ops.rope_neox_cache_(q2, k, k, kc2, vc2, pos, cos, sin)
        return ops.swiglu(y, r), a, q2, kc2, vc2

    cos, sin = ops.rope_cache(torch.rand(8), 32)
    args = (torch.randn(2, 32), torch.rand(32) + 0.5, torch.randn(2, 4, 16), torch.randn(2, 2, 16),
            torch.tensor([3, 5], dtype=torch.int32), cos, sin, torch.randn(2, 2, 9, 16), torch.randn(2, 2, 9, 16),
            torch.tensor([9, 6], dtype=torch.int32))
    torch._dynamo.reset()
    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    for got, want in zip(compiled(*args), step(*args)):
        torch.testing.assert_close(got, want)


def test_decode_step_matches_the_model_forward_on_cpu():
    """llama.decode_step (residual adds fused across layers) against the unpatched model's decode step."""
    from transformers import StaticCache
    ref, patched = _tiny_llama(), _tiny_llama()
    ktune_torch.llama.patch_model(patched)
    ids = torch.randint(0, 97, (2, 9))
    pos = torch.arange(9)[None].expand(2, -1)
    step_pos = torch.full((2, 1), 9)
    outs = []
    for model, fused in ((ref, False), (patched, True)):
        cache = StaticCache(config=model.config, max_cache_len=16)
        with torch.no_grad():
            tok = model(input_ids=ids, position_ids=pos, past_key_values=cache, use_cache=True).logits[:, -1:].argmax(-1)
            if fused:
                outs.append(ktune_torch.llama.decode_step(model, tok, step_pos, cache))
            else:
                outs.append(model(input_ids=tok, position_ids=step_pos, past_key_values=cache, use_cache=True).logits)
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-4, atol=1e-4)


def test_greedy_tokens_are_argmax_s_first_maximum():
    """The two-pass greedy pick equals argmax, ties (the first maximal index) included, at Llama 3's vocabulary, and
    falls back to argmax where the vocabulary has no divisor to split it by."""
    torch.manual_seed(0)
    for vocab in (128256, 32000, 4099, 1000):
        logits = torch.randn(3, 2, vocab).to(torch.bfloat16)  # bf16: many exact ties among 128k values
        logits[1, -1, vocab // 3] = logits[1, -1, vocab - 5] = 9.0  # two maxima in different chunks
        logits[2, -1, 70:72] = 9.0  # two maxima side by side
        got = ktune_torch.llama.greedy_tokens(logits)
        assert got.shape == (3, 1) and got.dtype == torch.int64
        assert torch.equal(got, logits[:, -1].argmax(-1, keepdim=True)), vocab
    assert ktune_torch.llama._pick_chunk(128256) == 334 and ktune_torch.llama._pick_chunk(4099) is None


def test_decode_steps_leave_the_cache_as_hf_does(monkeypatch):
    """decode_step writes k, v into the static cache itself (ktune::rope_neox_cache_): three steps of it, then one of
    HF's own forward over the same cache, give the logits of four HF steps (the cache's positions and its length
    counter kept as HF keeps them)."""
    from transformers import StaticCache
    ref, patched = _tiny_llama(), _tiny_llama()
    ktune_torch.llama.patch_model(patched)
    calls = []
    fused_op = ops.rope_neox_cache_
    monkeypatch.setattr(ops, "rope_neox_cache_", lambda *a: calls.append(1) or fused_op(*a))
    ids = torch.randint(0, 97, (2, 9))
    pos = torch.arange(9)[None].expand(2, -1)
    toks = torch.randint(0, 97, (2, 4))
    outs, caches = [], []
    for model, fused in ((ref, False), (patched, True)):
        cache = StaticCache(config=model.config, max_cache_len=16)
        with torch.no_grad():
            model(input_ids=ids, position_ids=pos, past_key_values=cache, use_cache=True)
            for s in range(3):
                tok, p = toks[:, s:s + 1], torch.full((2, 1), 9 + s)
                if fused:
                    ktune_torch.llama.decode_step(model, tok, p, cache)
                else:
                    model(input_ids=tok, position_ids=p, past_key_values=cache, use_cache=True)
            outs.append(model(input_ids=toks[:, 3:], position_ids=torch.full((2, 1), 12), past_key_values=cache,
                              use_cache=True).logits)
        caches.append(cache)
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-4, atol=1e-4)
    assert caches[1].get_seq_length() == caches[0].get_seq_length() == 13
    assert ktune_torch.llama._static_layer(caches[1], 0, 2) is not None  # the direct write was what ran
    assert len(calls) == 3 * 2  # every decode step's every layer


def test_linear_skinny_cpu_and_fake():
    x, w = torch.randn(3, 64, dtype=torch.bfloat16), torch.randn(48, 64, dtype=torch.bfloat16)
    torch.testing.assert_close(ops.linear_skinny(x, w, torch.zeros(4)), torch.nn.functional.linear(x, w))
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        y = ops.linear_skinny(torch.empty(2, 1, 64, dtype=torch.bfloat16), torch.empty(48, 64, dtype=torch.bfloat16),
                              torch.empty(4))
        assert y.shape == (2, 1, 48) and y.dtype == torch.bfloat16


@pytest.mark.parametrize("shape,n,k", [((1, 64), 48, 32), ((3, 128), 16, 64), ((2, 5, 40), 8, 20)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_swiglu_linear_is_swiglu_then_linear(shape, n, k, dtype):
    gate_up = torch.randn(*shape, dtype=dtype) * 2
    w = torch.randn(n, k, dtype=dtype)
    want = torch.nn.functional.linear(ops.swiglu(gate_up[..., :k], gate_up[..., k:]), w)
    got = ops.swiglu_linear(gate_up, w, torch.zeros(4))
    assert got.shape == (*shape[:-1], n) and got.dtype == dtype
    assert torch.equal(got, want)
    # the dispatcher: on CPU the unfused pair, bias included
    b = torch.randn(n, dtype=dtype)
    a = ops.swiglu(gate_up[..., :k], gate_up[..., k:])
    assert torch.equal(ops.swiglu_dense_linear(gate_up, w, b), torch.nn.functional.linear(a, w, b))
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        y = ops.swiglu_linear(torch.empty(*shape, dtype=dtype), torch.empty(n, k, dtype=dtype), torch.empty(4))
        assert y.shape == (*shape[:-1], n) and y.dtype == dtype


@pytest.mark.parametrize("shape,n", [((1, 64), 48), ((3, 32), 16), ((2, 5, 40), 8)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_add_rms_norm_linear_is_add_rms_norm_then_linear(shape, n, dtype):
    k = shape[-1]
    x, residual = torch.randn(*shape, dtype=dtype), torch.randn(*shape, dtype=dtype)
    nw, w = (torch.rand(k) + 0.5).to(dtype), torch.randn(n, k, dtype=dtype)
    h, want_r = ops.add_rms_norm(x, residual, nw, 1e-5)
    want = torch.nn.functional.linear(h, w)
    y, r_out = ops.add_rms_norm_linear(x, residual, nw, w, torch.zeros(4), 1e-5)
    assert y.shape == (*shape[:-1], n) and y.dtype == dtype and r_out.shape == shape and r_out.dtype == dtype
    assert torch.equal(y, want) and torch.equal(r_out, want_r)
    # eps matters: the normalised rows differ at another eps (a sanity check that eps reaches the math)
    assert not torch.equal(ops.add_rms_norm_linear(x, residual, nw, w, torch.zeros(4), 0.5)[0], want)
    # the dispatcher: on CPU add_rms_norm then dense_linear
    y2, r2 = ops.add_rms_norm_dense_linear(x, residual, nw, 1e-5, w)
    assert torch.equal(y2, want) and torch.equal(r2, want_r)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        y, r_out = ops.add_rms_norm_linear(torch.empty(*shape, dtype=dtype), torch.empty(*shape, dtype=dtype),
                                           torch.empty(k, dtype=dtype), torch.empty(n, k, dtype=dtype),
                                           torch.empty(4), 1e-5)
        assert y.shape == (*shape[:-1], n) and y.dtype == dtype and r_out.shape == shape


def test_add_rms_norm_dense_linear_keeps_autograd_on_the_unfused_pair():
    x = torch.randn(2, 32, requires_grad=True)
    residual, nw, w = torch.randn(2, 32), torch.rand(32) + 0.5, torch.randn(8, 32)
    y, r_out = ops.add_rms_norm_dense_linear(x, residual, nw, 1e-5, w)
    (y.sum() + r_out.sum()).backward()
    assert x.grad is not None and x.grad.shape == x.shape


def test_dense_linear_takes_the_skinny_kernel_only_where_it_may():
    w = torch.randn(48, 64, dtype=torch.bfloat16)
    assert ops.skinny_eligible(torch.randn(1, 1, 64, dtype=torch.bfloat16), w) == 1
    assert ops.skinny_eligible(torch.randn(2, 8, 64, dtype=torch.bfloat16), w) == 16
    assert ops.skinny_eligible(torch.randn(17, 64, dtype=torch.bfloat16), w) == 0  # M > 16: cuBLAS is faster
    assert ops.skinny_eligible(torch.randn(1, 64), w.float()) == 0  # fp32
    assert ops.skinny_eligible(torch.randn(1, 64, dtype=torch.float16), w) == 0  # dtypes differ
    assert ops.skinny_eligible(torch.randn(1, 64, dtype=torch.bfloat16), w.t().contiguous().t()[:, :64]) == 0
    # on CPU (and wherever the kernel is not taken): F.linear itself, bias included
    x, b = torch.randn(2, 64, dtype=torch.bfloat16), torch.randn(48, dtype=torch.bfloat16)
    assert torch.equal(ops.dense_linear(x, w, b), torch.nn.functional.linear(x, w, b))


def test_shape_scratch_is_one_zeroed_buffer_per_key(monkeypatch):
    monkeypatch.setattr(ops, "_scratch_pool", {})
    a = ops.shape_scratch(("decode_attention", torch.bfloat16, 1, 24, 8, 128), 40, "cpu")
    assert a.numel() == 40 and a.dtype == torch.float32 and not a.any()
    a[3] = 7.0  # what a kernel leaves behind stays with its own shape
    assert ops.shape_scratch(("decode_attention", torch.bfloat16, 1, 24, 8, 128), 40, "cpu") is a
    b = ops.shape_scratch(("decode_attention", torch.bfloat16, 8, 24, 8, 128), 300, "cpu")
    assert b is not a and b.numel() == 300 and not b.any()
    assert ops.shape_scratch(("x",), 0, "cpu").numel() == 1


class _FakeSkinnyLib:
    """Stands in for the op library: linear_skinny built, `tuned` the shapes tuned on this chip."""

    def __init__(self, tuned):
        self.tuned, self.queries = tuned, 0

    def ktune_torch_ops_built(self):
        from ktune_torch import _lib
        return 1 << _lib.OP_BITS["linear_skinny"]

    def ktune_torch_linear_skinny_tuned(self, dtype, m, n, k):
        self.queries += 1
        return int((m, n, k) in self.tuned)

    def ktune_torch_linear_skinny_scratch(self, dtype, m, n, k):
        return 100 + m


def test_skinny_scratch_is_planned_once_per_shape_and_only_for_tuned_shapes(monkeypatch):
    from ktune_torch import _lib

    fake = _FakeSkinnyLib({(1, 48, 64)})
    monkeypatch.setattr(_lib, "load", lambda: fake)
    monkeypatch.setattr(ops, "_skinny_plan", {})
    monkeypatch.setattr(ops, "_scratch_pool", {})
    w = torch.randn(48, 64, dtype=torch.bfloat16)
    s1 = ops._skinny_scratch("linear_skinny", torch.randn(1, 64, dtype=torch.bfloat16), w, 1)
    s2 = ops._skinny_scratch("linear_skinny", torch.randn(1, 1, 64, dtype=torch.bfloat16), w, 1)
    assert s1 is s2 and s1.numel() == 101 and s1.dtype == torch.float32 and not s1.any()  # cached, zeroed
    # M = 8 not tuned: cuBLAS
    assert ops._skinny_scratch("linear_skinny", torch.randn(8, 64, dtype=torch.bfloat16), w, 8) is None
    ops._skinny_scratch("linear_skinny", torch.randn(8, 64, dtype=torch.bfloat16), w, 8)
    assert fake.queries == 2  # one query per shape, none per call
    monkeypatch.setattr(ops, "_skinny_plan", {})
    monkeypatch.setattr(_lib, "load", lambda: None)  # no library: cuBLAS
    assert ops._skinny_scratch("linear_skinny", torch.randn(1, 64, dtype=torch.bfloat16), w, 1) is None


class _FakeSwigluLinearLib:
    """Stands in for the op library: swiglu_linear built, `tuned` the (M, N, K) tuned on this chip."""

    def __init__(self, tuned):
        self.tuned, self.queries = tuned, 0

    def ktune_torch_ops_built(self):
        from ktune_torch import _lib
        return 1 << _lib.OP_BITS["swiglu_linear"]

    def ktune_torch_swiglu_linear_tuned(self, dtype, m, n, k):
        self.queries += 1
        return int((m, n, k) in self.tuned)

    def ktune_torch_swiglu_linear_scratch(self, dtype, m, n, k):
        return 200 + m


def test_swiglu_linear_scratch_is_planned_once_per_shape_and_only_for_tuned_shapes(monkeypatch):
    from ktune_torch import _lib

    fake = _FakeSwigluLinearLib({(1, 48, 32)})
    monkeypatch.setattr(_lib, "load", lambda: fake)
    monkeypatch.setattr(ops, "_skinny_plan", {})
    monkeypatch.setattr(ops, "_scratch_pool", {})
    w = torch.randn(48, 32, dtype=torch.bfloat16)
    s1 = ops._skinny_scratch("swiglu_linear", torch.randn(1, 64, dtype=torch.bfloat16), w, 1)
    s2 = ops._skinny_scratch("swiglu_linear", torch.randn(1, 1, 64, dtype=torch.bfloat16), w, 1)
    assert s1 is s2 and s1.numel() == 201 and not s1.any()  # K is the weight's 32, not gate_up's 64
    # not tuned: unfused
    assert ops._skinny_scratch("swiglu_linear", torch.randn(8, 64, dtype=torch.bfloat16), w, 8) is None
    ops._skinny_scratch("swiglu_linear", torch.randn(8, 64, dtype=torch.bfloat16), w, 8)
    assert fake.queries == 2


def test_patch_model_routes_lm_head_through_dense_linear(monkeypatch):
    calls = []
    real = ops.dense_linear
    monkeypatch.setattr(ops, "dense_linear", lambda x, w, b=None: calls.append(tuple(w.shape)) or real(x, w, b))
    ref, patched = _tiny_llama(), _tiny_llama()
    ktune_torch.llama.patch_model(patched)
    ids = torch.randint(0, patched.config.vocab_size, (1, 5))
    with torch.no_grad():
        torch.testing.assert_close(patched(ids).logits, ref(ids).logits, rtol=1e-4, atol=1e-4)
    assert tuple(patched.lm_head.weight.shape) in calls
