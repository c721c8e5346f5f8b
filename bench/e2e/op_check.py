#!/usr/bin/env python3
"""Each ktune op a patched Llama calls, checked against the op's torch math at the very calls the model makes.

Runs a Llama-3.2-3B-shaped model (random bf16 weights, --layers of them) patched by ktune_torch.llama.patch_model:
a prefill of --prompt tokens and --steps decode steps (ktune_torch.llama.decode_step), at each --batch. Every call of
ktune_torch.ops' rms_norm, add_rms_norm, rope_neox_, rope_neox_cache_, swiglu, decode_attention and dense_linear runs
as the model runs it and again as the op's torch math (fp32, one rounding: the semantics the kernels are validated
against), on copies of the same inputs; prints, per op and shape, the largest difference against the largest output.
The op whose kernel disagrees is the one to look at when a model's outputs drift.

  KTUNE_TORCH_LIB=.../libktune_torch_ops.so python3 bench/e2e/op_check.py --batch 1 8
"""
import argparse
import sys
from collections import defaultdict
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--cache", type=int, default=0, help="StaticCache length (default prompt + steps + 1)")
    p.add_argument("--tiny", action="store_true")
    p.add_argument("--device", default="cuda")
    p.add_argument("--vs-eager", action="store_true",
                   help="also run each prefill through an unpatched twin (the same weights) and print, per layer, "
                        "how far the patched model's attention and MLP outputs are from the twin's")
    a = p.parse_args()

    import decode as bench
    from ktune_torch import llama, ops
    from transformers import StaticCache

    stats = defaultdict(lambda: [0.0, 0.0, 0])  # (op, shape) -> max |diff|, max |ref|, calls

    def record(name, shape, got, ref):
        got, ref = [t.float() for t in got], [t.float() for t in ref]
        s = stats[(name, shape)]
        s[0] = max([s[0]] + [(g - r).abs().max().item() for g, r in zip(got, ref)])
        s[1] = max([s[1]] + [r.abs().max().item() for r in ref])
        s[2] += 1

    orig = {n: getattr(ops, n) for n in ("rms_norm", "add_rms_norm", "rope_neox_", "rope_neox_cache_", "swiglu",
                                         "decode_attention", "dense_linear")}

    def rms_norm(x, w, eps):
        y = orig["rms_norm"](x, w, eps)
        record("rms_norm", tuple(x.shape), [y], [ops._rms_norm_math(x, w, eps)])
        return y

    def add_rms_norm(x, r, w, eps):
        y, ro = orig["add_rms_norm"](x, r, w, eps)
        s = x.float() + r.float()
        ref = (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)
        record("add_rms_norm", tuple(x.shape), [y, ro], [ref, s.to(x.dtype)])
        return y, ro

    def rope_neox_(q, k, pos, cos, sin):
        qr, kr = q.clone(), k.clone()
        ops._rope_neox_math(qr, kr, pos, cos, sin)
        # q and k are views of one projection's rows (patch_model's qkv): what lies beside them (v) must stay
        rows = torch.as_strided(q, (q.shape[0], q.stride(0)), (q.stride(0), 1))
        before = rows.clone()
        orig["rope_neox_"](q, k, pos, cos, sin)
        record("rope_neox_", (tuple(q.shape), tuple(k.shape), q.stride(0)), [q, k], [qr, kr])
        koff = k.storage_offset() - q.storage_offset()
        if k.untyped_storage().data_ptr() == q.untyped_storage().data_ptr() and 0 < koff < q.stride(0):
            keep = torch.ones(q.stride(0), dtype=torch.bool, device=q.device)
            keep[:q.shape[1] * q.shape[2]] = False
            keep[koff:koff + k.shape[1] * k.shape[2]] = False
            record("rope_neox_ (beside q, k)", (tuple(q.shape), q.stride(0)), [rows[:, keep]], [before[:, keep]])

    def rope_neox_cache_(q, k, v, kc, vc, pos, cos, sin):
        # the whole caches compared: the token's rows written, every other row as it was; k itself not rotated
        qr, kcr, vcr, k_before = q.clone(), kc.clone(), vc.clone(), k.clone()
        ops._rope_neox_cache_math(qr, k, v, kcr, vcr, pos, cos, sin)
        orig["rope_neox_cache_"](q, k, v, kc, vc, pos, cos, sin)
        record("rope_neox_cache_", (tuple(q.shape), tuple(kc.shape), q.stride(0)), [q, kc, vc, k],
               [qr, kcr, vcr, k_before])

    def swiglu(g, u):
        y = orig["swiglu"](g, u)
        record("swiglu", tuple(g.shape), [y], [ops._swiglu_math(g, u)])
        return y

    def decode_attention(q, kc, vc, seq_lens, scratch):
        y = orig["decode_attention"](q, kc, vc, seq_lens, scratch)
        record("decode_attention", (tuple(q.shape), tuple(kc.shape), tuple(seq_lens.tolist())[:2]), [y],
               [ops._decode_attention_math(q, kc, vc, seq_lens)])
        return y

    def dense_linear(x, w, b=None):
        y = orig["dense_linear"](x, w, b)
        if x.numel() // x.shape[-1] <= 64:
            record("dense_linear", (tuple(x.shape), tuple(w.shape)), [y],
                   [F.linear(x.float(), w.float(), None if b is None else b.float()).to(x.dtype)])
        return y

    for n, f in dict(rms_norm=rms_norm, add_rms_norm=add_rms_norm, rope_neox_=rope_neox_,
                     rope_neox_cache_=rope_neox_cache_, swiglu=swiglu, decode_attention=decode_attention,
                     dense_linear=dense_linear).items():
        setattr(ops, n, f)

    cfg = bench.llama_3b_config(tiny=a.tiny)
    cfg.num_hidden_layers = a.layers
    model = bench.build_model(cfg, a.device, torch.bfloat16)
    llama.patch_model(model, weights="bf16", max_batch=max(a.batch))
    twin = bench.build_model(cfg, a.device, torch.bfloat16) if a.vs_eager else None  # the same seed and weights
    layer_rows = []
    with torch.no_grad():
        for b in a.batch:
            cache = StaticCache(config=model.config, max_cache_len=a.cache or a.prompt + a.steps + 1)
            ids = torch.randint(0, cfg.vocab_size, (b, a.prompt), device=a.device)
            if twin is not None:
                layer_rows += layers_vs_twin(model, twin, ids, b, a.cache or a.prompt + a.steps + 1)
            logits = model(input_ids=ids, past_key_values=cache, use_cache=True).logits
            tok = logits[:, -1:].argmax(-1)
            for s in range(a.steps):
                pos = torch.full((b, 1), a.prompt + s, dtype=torch.long, device=a.device)
                tok = llama.decode_step(model, tok, pos, cache)[:, -1:].argmax(-1)
            if a.device.startswith("cuda"):
                torch.cuda.synchronize()
    print("| op | shape | calls | max abs diff | max abs ref | diff / ref |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for (name, shape), (d, r, n) in sorted(stats.items(), key=lambda kv: -kv[1][0] / max(kv[1][1], 1e-30)):
        print(f"| {name} | {shape} | {n} | {d:.3g} | {r:.3g} | {d / max(r, 1e-30):.3g} |")
    if layer_rows:
        print("\n| batch | module | max abs diff vs unpatched | max abs unpatched |")
        print("| ---: | --- | ---: | ---: |")
        for row in layer_rows:
            print("| %d | %s | %.3g | %.3g |" % row)


def layers_vs_twin(model, twin, ids, b, cache_len):
    """Prefill `ids` through the patched model and its unpatched twin; (batch, module, max |diff|, max |twin|) per
    attention and MLP output of each layer, then the logits. The first large difference is where they part."""
    from transformers import StaticCache

    outs = {}

    def hook(key):
        def f(module, inputs, out):
            outs[key] = (out[0] if isinstance(out, tuple) else out).detach().float().clone()
        return f

    handles = []
    for tag, m in (("patched", model), ("twin", twin)):
        for i, layer in enumerate(m.model.layers):
            handles.append(layer.self_attn.register_forward_hook(hook((tag, i, "attention"))))
            handles.append(layer.mlp.register_forward_hook(hook((tag, i, "mlp"))))
    try:
        pos = torch.arange(ids.shape[1], device=ids.device)[None].expand(b, -1)  # as bench/e2e/decode.py passes them
        logits = {tag: m(input_ids=ids, position_ids=pos, use_cache=True,
                         past_key_values=StaticCache(config=m.config, max_cache_len=cache_len)).logits.float()
                  for tag, m in (("patched", model), ("twin", twin))}
    finally:
        for h in handles:
            h.remove()
    rows = []
    for i in range(len(model.model.layers)):
        for part in ("attention", "mlp"):
            got, want = outs[("patched", i, part)], outs[("twin", i, part)]
            rows.append((b, f"layer {i} {part}", (got - want).abs().max().item(), want.abs().max().item()))
    rows.append((b, "logits", (logits["patched"] - logits["twin"]).abs().max().item(),
                 logits["twin"].abs().max().item()))
    return rows


if __name__ == "__main__":
    main()
