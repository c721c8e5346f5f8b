"""ktune_torch on a GPU (label gpu): each op's CUDA kernel (from the library KTUNE_TORCH_LIB names, built from a
tuned database) against its CPU implementation, in bf16, at Llama-3.2-3B's decode shapes; and a patched Llama (2 layers of
Llama-3.2-3B's shape) decode step (llama.decode_step) captured in a CUDA graph against the same step run eagerly. Ops missing from the library are skipped."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import ktune_torch  # noqa: E402
from ktune_torch import _lib, ops, packing  # noqa: E402

if not torch.cuda.is_available():
    pytest.skip("ktune_torch tests skipped: no CUDA device", allow_module_level=True)
if _lib.load() is None:
    pytest.skip(f"ktune_torch tests skipped: {_lib.load_error()}", allow_module_level=True)

BF16 = dict(rtol=1.6e-2, atol=1.6e-2)
dev = torch.device("cuda")


def need(op):
    if not _lib.has_op(op):
        pytest.skip(f"{op} is not in the library")


@pytest.mark.parametrize("m", [1, 8, 512])
def test_rms_norm(m):
    need("rms_norm")
    x = torch.randn(m, 3072, device=dev, dtype=torch.bfloat16)
    w = torch.rand(3072, device=dev, dtype=torch.bfloat16) + 0.5
    torch.testing.assert_close(ops.rms_norm(x, w, 1e-5), ops.rms_norm(x.cpu(), w.cpu(), 1e-5).to(dev), **BF16)


@pytest.mark.parametrize("m", [1, 8])
def test_swiglu(m):
    need("swiglu")
    g, u = torch.randn(2, m, 8192, device=dev, dtype=torch.bfloat16), torch.randn(2, m, 8192, device=dev,
                                                                                  dtype=torch.bfloat16)
    torch.testing.assert_close(ops.swiglu(g, u), ops.swiglu(g.cpu(), u.cpu()).to(dev), **BF16)
    gu = torch.randn(m, 16384, device=dev, dtype=torch.bfloat16)  # a fused gate_up output: halves read in place
    torch.testing.assert_close(ops.swiglu(gu[:, :8192], gu[:, 8192:]),
                               ops.swiglu(gu[:, :8192].cpu(), gu[:, 8192:].cpu()).to(dev), **BF16)


@pytest.mark.parametrize("m", [1, 8, 512])
def test_swiglu_backward(m):
    need("swiglu_bwd")
    g, u, dy = (torch.randn(2, m, 8192, device=dev, dtype=torch.bfloat16) for _ in range(3))
    _lib.trace(True)
    got = ops.swiglu_backward(dy, g, u)
    ran = _lib.trace(False)
    assert all(kernel != "torch math" for (_, kernel, _) in ran), ran
    for a, b in zip(got, ops.swiglu_backward(dy.cpu(), g.cpu(), u.cpu())):
        torch.testing.assert_close(a, b.to(dev), **BF16)
    # autograd of swiglu on a fused gate_up output's halves: both gradients from one launch into one [M, 2I] tensor
    gu = torch.randn(m, 16384, device=dev, dtype=torch.bfloat16, requires_grad=True)
    dy = dy[0]
    _lib.trace(True)
    (got,) = torch.autograd.grad(ops.swiglu(gu[:, :8192], gu[:, 8192:]), gu, dy)
    ran = _lib.trace(False)
    backward = {(op, kernel) for (op, kernel, _) in ran if op.startswith("swiglu_backward")}
    assert len(backward) == 1 and next(iter(backward))[0] == "swiglu_backward_halves", ran
    assert next(iter(backward))[1] != "torch math", ran
    want = torch.cat(ops.swiglu_backward(dy.cpu(), gu[:, :8192].detach().cpu(), gu[:, 8192:].detach().cpu()), dim=-1)
    torch.testing.assert_close(got, want.to(dev), **BF16)


@pytest.mark.parametrize("m", [1, 8])
def test_rope(m):
    need("rope_neox")
    q = torch.randn(m, 24, 128, device=dev, dtype=torch.bfloat16)
    k = torch.randn(m, 8, 128, device=dev, dtype=torch.bfloat16)
    inv_freq = 1.0 / (500000 ** (torch.arange(0, 128, 2, dtype=torch.float32, device=dev) / 128))
    cos, sin = ops.rope_cache(inv_freq, 131072)
    pos = torch.randint(0, 4096, (m,), device=dev, dtype=torch.int32)
    qc, kc = q.cpu(), k.cpu()
    ops.rope_neox_(q, k, pos, cos, sin)
    ops.rope_neox_(qc, kc, pos.cpu(), cos.cpu(), sin.cpu())
    torch.testing.assert_close(q.cpu(), qc, **BF16)
    torch.testing.assert_close(k.cpu(), kc, **BF16)


@pytest.mark.parametrize("m,r,pad", [(1, 128, 0), (8, 128, 0), (8, 64, 0), (3, 128, 1)])
def test_rope_neox_cache(m, r, pad):
    """q, k, v as views of the fused qkv projection's rows (token stride 5120, or 5121: the kernel's element path, as
    partial rotary r = 64 takes k's dims r.. into the cache unrotated), caches [M, 8, 641, 128]."""
    need("rope_neox_cache")
    qkv = torch.randn(m, 5120 + pad, device=dev, dtype=torch.bfloat16)
    q, k, v = qkv[:, :3072].view(m, 24, 128), qkv[:, 3072:4096].view(m, 8, 128), qkv[:, 4096:5120].view(m, 8, 128)
    kc = torch.randn(m, 8, 641, 128, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    inv_freq = 1.0 / (500000 ** (torch.arange(0, r, 2, dtype=torch.float32, device=dev) / r))
    cos, sin = ops.rope_cache(inv_freq, 131072)
    pos = torch.randint(0, 641, (m,), device=dev, dtype=torch.int32)
    want = [t.cpu() for t in (q, k, v, kc, vc)]
    k_before = k.clone()
    ops.rope_neox_cache_(*want, pos.cpu(), cos.cpu(), sin.cpu())
    _lib.trace(True)
    ops.rope_neox_cache_(q, k, v, kc, vc, pos, cos, sin)
    ran = _lib.trace(False)
    assert all(kernel != "torch math" for (_, kernel, _) in ran), ran
    torch.testing.assert_close(q.cpu(), want[0], **BF16)
    assert torch.equal(k, k_before)
    torch.testing.assert_close(kc.cpu(), want[3], **BF16)  # the token's rows, and every other row untouched
    assert torch.equal(vc.cpu(), want[4])  # v is copied exactly


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("b,length,uneven", [(1, 512, False), (2, 1000, True)])
def test_prefill_attention(causal, b, length, uneven):
    # Against its torch math in fp32 on the GPU; uneven: lengths below L (no multiple of a tile) and NaN past them.
    need("prefill_attention_causal" if causal else "prefill_attention_full")
    q = torch.randn(b, length, 32, 128, device=dev, dtype=torch.bfloat16)
    k, v = torch.randn(2, b, length, 8, 128, device=dev, dtype=torch.bfloat16)
    lens = None
    if uneven:
        lens = torch.tensor([length - 3, length // 2 + 1][:b], device=dev, dtype=torch.int32)
        for t in (q, k, v):
            for i in range(b):
                t[i, int(lens[i]):] = float("nan")
    _lib.trace(True)
    got = ops.prefill_attention(q, k, v, lens, causal)
    launched = _lib.trace(False)
    assert [kernel for _, kernel, _ in launched] != ["torch math"], launched  # the library's kernel ran
    want = ops._prefill_attention_math(q, k, v, lens, causal)
    torch.testing.assert_close(got, want, **BF16)


@pytest.mark.parametrize("activation", ["none", "gelu", "silu"])
@pytest.mark.parametrize("m,n,k,bias", [(2048, 4096, 4096, True), (300, 1032, 4104, False), (16, 4096, 4096, True)])
def test_linear_act(activation, m, n, k, bias):
    # Against its torch math in fp32; 300 x 1032 x 4104: no multiple of a tile (the nearest tuned bucket's kernel).
    need(f"gemm_act_{activation}")
    x = torch.empty(m, k, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
    w = torch.empty(n, k, device=dev, dtype=torch.bfloat16).uniform_(-0.05, 0.05)
    b = torch.empty(n, device=dev, dtype=torch.bfloat16).uniform_(-0.5, 0.5) if bias else None
    _lib.trace(True)
    got = ops.linear_act(x, w, b, activation)
    launched = _lib.trace(False)
    assert [kernel for _, kernel, _ in launched] != ["torch math"], launched  # the library's kernel ran
    torch.testing.assert_close(got, ops._linear_act_math(x, w, b, activation), **BF16)


@pytest.mark.parametrize("activation", ["silu", "gelu"])
@pytest.mark.parametrize("m,i,k", [(2048, 14336, 4096), (300, 1032, 4104), (16, 4096, 4096)])
def test_ffn_gated(activation, m, i, k):
    # Against its torch math in fp32; 300 x 1032 x 4104: no multiple of a tile (the nearest tuned bucket's kernel).
    need({"silu": "ffn_gated_swiglu", "gelu": "ffn_gated_geglu"}[activation])
    x = torch.empty(m, k, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
    w = torch.empty(2 * i, k, device=dev, dtype=torch.bfloat16).uniform_(-0.05, 0.05)
    _lib.trace(True)
    got = ops.ffn_gated(x, w, activation)
    launched = _lib.trace(False)
    assert [kernel for _, kernel, _ in launched] != ["torch math"], launched  # the library's kernel ran
    torch.testing.assert_close(got, ops._ffn_gated_math(x, w, activation), **BF16)


@pytest.mark.parametrize("b", [1, 8])
def test_decode_attention_on_a_static_cache(b):
    need("decode_attention")
    length = 641
    q = torch.randn(b, 24, 128, device=dev, dtype=torch.bfloat16)
    kc = torch.randn(b, 8, length, 128, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    lens = torch.randint(1, length + 1, (b,), device=dev, dtype=torch.int32)
    scratch = torch.zeros(ops.decode_attention_scratch_elements(torch.bfloat16, b, 24, 8, 128), device=dev)
    got = ops.decode_attention(q, kc, vc, lens, scratch)
    want = ops.decode_attention(q.cpu(), kc.cpu(), vc.cpu(), lens.cpu(), scratch.cpu())
    torch.testing.assert_close(got.cpu(), want, **BF16)
    assert int(scratch[: (b * 8 + 3) // 4 * 4].abs().sum()) == 0  # the arrival counters are left at zero


def test_decode_attention_keeps_a_scratch_per_batch_size():
    # Batch 1, 8, 1, 8 as a model's decode runs them: one scratch shared by every batch size broke batch 8 (the
    # partials batch 1 left behind lay where batch 8's arrival counters are).
    need("decode_attention")
    length = 577
    for b in (1, 8, 1, 8):
        q = torch.randn(b, 24, 128, device=dev, dtype=torch.bfloat16)
        kc = torch.randn(b, 8, length, 128, device=dev, dtype=torch.bfloat16)
        vc = torch.randn_like(kc)
        lens = torch.randint(1, length + 1, (b,), device=dev, dtype=torch.int32)
        got = ops.decode_attention(q, kc, vc, lens, ops.decode_attention_scratch(q, kc))
        want = ops._decode_attention_math(q.cpu(), kc.cpu(), vc.cpu(), lens.cpu())
        torch.testing.assert_close(got.cpu(), want, **BF16)


def test_linear_int4_keeps_a_scratch_per_shape():
    # The shapes of a patched layer one after another (qkv, o, gate_up, down), twice, at M = 1 then 8.
    need("linear_int4")
    for m in (1, 8):
        for n, k in ((5120, 3072), (3072, 3072), (16384, 3072), (3072, 8192)) * 2:
            w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02
            pw, ps, pz = packing.pack_int4(*_int4_parts(w))
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            got = ops.linear_int4(x, pw, ps, pz, ops.quant_scratch(4, x, n, k), n, k, 128)
            want = x.float() @ packing.dequantize_int4(pw, ps, pz, n, k, 128).t()
            torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)


def _int4_parts(w):
    q, s, z = packing.quantize_int4(w, 128)
    return q, 128, s, z


@pytest.mark.parametrize("m,n,k", [(1, 3072, 3072), (8, 8192, 3072), (1, 3072, 8192)])
def test_linear_int4(m, n, k):
    need("linear_int4")
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02
    q, s, z = packing.quantize_int4(w, 128)
    pw, ps, pz = packing.pack_int4(q, 128, s, z)
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    scratch = torch.zeros(ops.quant_scratch_elements(4, torch.bfloat16, m, n, k), device=dev)
    got = ops.linear_int4(x, pw, ps, pz, scratch, n, k, 128)
    want = (x.float() @ packing.dequantize_int4(pw, ps, pz, n, k, 128).t())
    torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)


def test_rms_norm_backward():
    need("rms_norm_bwd")
    x = torch.randn(4096, 3072, device=dev, dtype=torch.bfloat16)
    w = torch.randn(3072, device=dev, dtype=torch.bfloat16)
    dy = torch.randn_like(x)
    dx, dw = ops.rms_norm_backward(dy, x, w, ops.SPEC_EPS)  # the kernel's eps
    want_dx, want_dw = ops._rms_norm_backward_math(dy.cpu().double(), x.cpu().double(), w.cpu().double(), ops.SPEC_EPS)
    torch.testing.assert_close(dx.cpu().double(), want_dx, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(dw.cpu().double(), want_dw, rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("m,n,k", [(1, 5120, 3072), (8, 3072, 8192), (1, 128256, 3072), (16, 3072, 3072)])
def test_linear_skinny(m, n, k):
    need("linear_skinny")
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    scratch = torch.zeros(ops.skinny_scratch_elements(torch.bfloat16, m, n, k), device=dev)
    want = x.float() @ w.float().t()
    for _ in range(2):  # the second call checks that the kernel left its scratch zeroed
        got = ops.linear_skinny(x, w, scratch)
        torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)
    # dense_linear: the kernel where this shape was tuned, else cuBLAS; the same result either way
    torch.testing.assert_close(ops.dense_linear(x, w).float(), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("m,n,k", [(1, 3072, 8192), (8, 3072, 8192), (16, 4096, 14336)])
def test_swiglu_linear(m, n, k):
    need("swiglu_linear")
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02
    gate_up = torch.randn(m, 2 * k, device=dev, dtype=torch.bfloat16) * 2
    scratch = torch.zeros(max(ops.swiglu_linear_scratch_elements(torch.bfloat16, m, n, k), 1), device=dev)
    # the unfused pair: ktune::swiglu on the halves in place, then the product in fp32
    a = ops.swiglu(gate_up[:, :k], gate_up[:, k:])
    want = a.float() @ w.float().t()
    for _ in range(2):  # the second call checks that the kernel left its scratch zeroed
        got = ops.swiglu_linear(gate_up, w, scratch)
        torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)
    # swiglu_dense_linear: the fused kernel where this shape was tuned, else swiglu + dense_linear; the same either way
    torch.testing.assert_close(ops.swiglu_dense_linear(gate_up, w).float(), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("m,n,k", [(1, 5120, 3072), (8, 16384, 3072), (16, 6144, 4096), (3, 200, 72)])
def test_add_rms_norm_linear(m, n, k):
    need("add_rms_norm_linear")
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16) * 0.02
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    residual = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    nw = (torch.rand(k, device=dev) + 0.5).to(torch.bfloat16)
    scratch = torch.zeros(max(ops.add_rms_norm_linear_scratch_elements(torch.bfloat16, m, n, k, 1e-5), 1), device=dev)
    # the unfused pair: add + RMSNorm in fp32 (the op's math), rounded to bf16, then the product in fp32
    s = x.float() + residual.float()
    h = (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-5) * nw.float()).to(torch.bfloat16)
    want = h.float() @ w.float().t()
    for _ in range(2):  # the second call checks that the kernel left its scratch zeroed
        got, r_out = ops.add_rms_norm_linear(x, residual, nw, w, scratch, 1e-5)
        torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)
        assert torch.equal(r_out, s.to(torch.bfloat16))
    # the dispatcher: the fused kernel where this shape was tuned, else add_rms_norm + dense_linear; the same either way
    got, r_out = ops.add_rms_norm_dense_linear(x, residual, nw, 1e-5, w)
    torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(r_out.float(), s, rtol=1e-2, atol=1e-2)


def test_patched_decode_step_captures_in_a_cuda_graph():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=3072, intermediate_size=8192, num_hidden_layers=2,
                                   num_attention_heads=24, num_key_value_heads=8, head_dim=128, vocab_size=1000,
                                   max_position_embeddings=4096, rms_norm_eps=1e-5)
    torch.manual_seed(0)
    with torch.device(dev):
        model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    ktune_torch.llama.patch_model(model)
    cache = transformers.StaticCache(config=cfg, max_cache_len=64)
    ids = torch.randint(0, 1000, (1, 16), device=dev)
    with torch.no_grad():
        model(input_ids=ids, position_ids=torch.arange(16, device=dev)[None], past_key_values=cache, use_cache=True)
        tok = torch.zeros(1, 1, dtype=torch.long, device=dev)
        pos = torch.full((1, 1), 16, dtype=torch.long, device=dev)

        def step():
            return ktune_torch.llama.decode_step(model, tok, pos, cache)

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            eager = step().clone()  # writes position 16
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            out = step()
        graph.replay()  # the same token at position 16 again: the same attention, the same logits
        torch.cuda.synchronize()
    torch.testing.assert_close(out, eager, **BF16)
