#!/usr/bin/env python3
"""Training step (issue 26, seed 003): --layers Llama decoder layers of the Llama-3.2-3B shape (random bf16 weights,
HF LlamaModel on inputs_embeds, no embedding or head), forward + backward of a loss at --batch x --seq tokens
(the output's dot product with a fixed random tensor: the gradient of a sum of squares after the final RMSNorm nearly
cancels, and comparing such gradients would compare rounding), tokens/s (batch * seq / mean step time; CUDA events;
--warmup untimed steps, then --iters timed):
  eager     the HF layers as they are
  compile   torch.compile(model) (default mode), fwd and bwd compiled
  liger     Liger-Kernel's apply_liger_kernel_to_llama (RMSNorm, RoPE, SwiGLU MLP replaced; Triton)
  ktune     ktune_torch.llama.patch_model: q, k, v as one projection with ktune's RoPE in place on its output (its
            backward: the same kernel with the sine negated), gate and up as one projection with ktune's SwiGLU
            (backward: ktune::swiglu_backward_halves into one [M, 2I] gradient), RMSNorm and the post-attention residual
            add + RMSNorm from ktune (forward and backward); the matrix products (cuBLAS), attention (torch's SDPA)
            and the MLP's residual add are PyTorch's
  ktune+compile  the ktune variant under torch.compile (default mode): Inductor fuses what is left around ktune's
            ops (custom ops with fake implementations and autograd: no graph break)
  ktune+graph  the ktune variant with its forward and backward each captured in a CUDA graph
            (torch.cuda.make_graphed_callables; the host's launches, most of an eager step's gaps, are replayed)
  compile-ro  torch.compile(model, mode="reduce-overhead"): Inductor's kernels in CUDA graphs (the baseline of
            ktune+graph)
The layers use eps 1e-6 (not Llama 3's 1e-5) in every variant, because rmsnorm/bwd's op spec fixes eps 1e-6 (another
eps runs the torch math).
Each variant's input gradient is compared with eager's (max |diff|, said, not judged).
  python3 bench/e2e/train.py                      (H100)
  python3 bench/e2e/train.py --tiny --device cpu  (smoke run, eager and ktune)
"""

import argparse
import json
import math
import signal
import sys
import time
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))


def config(layers, tiny):
    from transformers import LlamaConfig

    shape = dict(hidden_size=3072, intermediate_size=8192, num_attention_heads=24, num_key_value_heads=8, head_dim=128)
    if tiny:
        shape = dict(hidden_size=128, intermediate_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=32)
    return LlamaConfig(**shape, num_hidden_layers=layers, vocab_size=256, max_position_embeddings=8192,
                       rms_norm_eps=1e-6, hidden_act="silu")


def build(cfg, device, dtype):
    from transformers import LlamaModel

    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaModel(cfg).to(dtype)
    model.config._attn_implementation = "sdpa"
    return model.train()


def patch_ktune(model):
    """ktune's drop-in (ktune_torch.llama.patch_model) on the training model; what it swapped, said."""
    from ktune_torch import llama

    llama.patch_model(model)
    return ("fused qkv projection + RoPE, fused gate_up projection + SwiGLU, RMSNorm, residual add + RMSNorm from "
            "ktune (fwd + bwd)")


def sdpa_backend(name):
    """The SDPA backends every variant may use: torch's choice (default), or the one named."""
    import contextlib

    if name == "default":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel({"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                        "efficient": SDPBackend.EFFICIENT_ATTENTION}[name])


class GraphedStep(torch.nn.Module):
    """The model's step (inputs_embeds -> last_hidden_state, at fixed position ids) with its forward and backward each
    captured in a CUDA graph on the first call (torch.cuda.make_graphed_callables: warm-up runs, then the captures);
    every later call of the same shapes replays them. Returns what the model does (.last_hidden_state)."""

    class _Body(torch.nn.Module):
        def __init__(self, model, position_ids):
            super().__init__()
            self.model = model
            self.position_ids = position_ids

        def forward(self, x):
            return self.model(inputs_embeds=x, position_ids=self.position_ids, use_cache=False).last_hidden_state

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.config = model.config
        self.graphed = None

    def forward(self, inputs_embeds, position_ids, use_cache=False):
        if self.graphed is None:
            self.graphed = torch.cuda.make_graphed_callables(self._Body(self.model, position_ids), (inputs_embeds,),
                                                           allow_unused_input=True)  # embed_tokens: unused
        return types.SimpleNamespace(last_hidden_state=self.graphed(inputs_embeds))


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def measure(model, args, device, dtype):
    torch.manual_seed(1)
    x = torch.randn(args.batch, args.seq, model.config.hidden_size, device=device, dtype=dtype, requires_grad=True)
    pos = torch.arange(args.seq, device=device)[None].expand(args.batch, -1)
    probe = torch.randn(args.batch, args.seq, model.config.hidden_size, device=device)
    cuda = device.type == "cuda"

    def step():
        out = model(inputs_embeds=x, position_ids=pos, use_cache=False).last_hidden_state
        (out.float() * probe).mean().backward()

    times, first_grad = [], None
    for i in range(args.warmup + args.iters):
        x.grad = None
        model.zero_grad(set_to_none=True)
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        else:
            t0 = time.perf_counter()
        step()
        if cuda:
            end.record()
            times.append((start, end))
        else:
            times.append((time.perf_counter() - t0) * 1e3)
        if i == 0:
            first_grad = x.grad.float().clone()
    if cuda:
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in times]
    if args.profile and cuda:  # one more step under the profiler: where the GPU time goes
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=args.profile), flush=True)
    steady = sorted(times[args.warmup:])
    mean = sum(steady) / len(steady)
    return {"p50_ms": steady[len(steady) // 2], "min_ms": steady[0], "max_ms": steady[-1],
            "tokens_per_s": args.batch * args.seq * 1000.0 / mean}, first_grad


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--variants", default="eager,compile,compile-ro,liger,ktune,ktune+compile,ktune+graph")
    p.add_argument("--compile-timeout", type=float, default=240)
    p.add_argument("--sdpa", default="default", choices=["default", "flash", "cudnn", "efficient"],
                   help="SDPA backend for every variant (default: torch's choice, cuDNN on the H100, whose kernels "
                        "ran 3x slower under torch.compile and in CUDA graphs than eagerly there)")
    p.add_argument("--tiny", action="store_true")
    p.add_argument("--profile", type=int, default=0, metavar="ROWS",
                   help="after each variant's timed steps, profile one step and print its ROWS costliest kernels")
    p.add_argument("--device", default="cuda")
    p.add_argument("--json")
    args = p.parse_args()
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if args.tiny:
        args.seq = min(args.seq, 64)
    import ktune_torch

    print(f"ktune_torch library: {ktune_torch.library_status()}", flush=True)
    cfg = config(args.layers, args.tiny)
    rows, notes, ref_grad = [], [], None
    signal.signal(signal.SIGALRM, _alarm)
    variants = args.variants.split(",")
    # Liger patches transformers' module globals (LlamaRMSNorm, LlamaMLP, apply_rotary_pos_emb): every model built
    # after it would carry its kernels, so it runs last.
    variants = [v for v in variants if v != "liger"] + (["liger"] if "liger" in variants else [])
    for v in variants:
        if ("compile" in v or "graph" in v) and device.type != "cuda":
            continue
        model = build(cfg, device, dtype)
        t0 = time.perf_counter()
        try:
            if v == "compile":
                model = torch.compile(model)
                signal.alarm(max(1, int(args.compile_timeout)))
            elif v == "liger":
                from liger_kernel.transformers import apply_liger_kernel_to_llama

                apply_liger_kernel_to_llama(rope=True, rms_norm=True, swiglu=True, cross_entropy=False,
                                            fused_linear_cross_entropy=False, model=model)
            elif v == "ktune":
                notes.append(f"ktune: {patch_ktune(model)}; the rest eager")
            elif v == "compile-ro":
                model = torch.compile(model, mode="reduce-overhead")
                signal.alarm(max(1, int(args.compile_timeout)))
            elif v == "ktune+graph":
                notes.append(f"ktune+graph: {patch_ktune(model)}; forward and backward in CUDA graphs")
                model = GraphedStep(model)
            elif v == "ktune+compile":
                notes.append(f"ktune+compile: {patch_ktune(model)}; the rest compiled by Inductor")
                model = torch.compile(model)
                signal.alarm(max(1, int(args.compile_timeout)))
            with sdpa_backend(args.sdpa):
                r, grad = measure(model, args, device, dtype)
        except Timeout:
            notes.append(f"{v}: dropped, not compiled and measured within {args.compile_timeout:.0f} s")
            continue
        except Exception as e:  # noqa: BLE001  one variant failing (a Liger/transformers mismatch) is said, not fatal
            notes.append(f"{v}: failed: {type(e).__name__}: {str(e)[:300]}")
            print(notes[-1], flush=True)
            continue
        finally:
            signal.alarm(0)
        r["variant"], r["wall_s"] = v, time.perf_counter() - t0
        if v == "eager":
            ref_grad = grad
        elif ref_grad is not None:
            d = (grad - ref_grad).abs().max().item()
            r["grad_vs_eager"] = f"max |diff| {d:.3g} (max |grad| {ref_grad.abs().max().item():.3g})"
        rows.append(r)
        print(f"{v}: {r['tokens_per_s']:.0f} tokens/s, p50 {r['p50_ms']:.2f} ms ({r['wall_s']:.0f} s)", flush=True)
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()
        if "compile" in v:
            torch._dynamo.reset()

    dev = torch.cuda.get_device_name() if device.type == "cuda" else "cpu"
    print(f"\n## Training step, {args.layers} Llama-3.2-3B-shaped layers{' (tiny)' if args.tiny else ''}, batch "
          f"{args.batch} x seq {args.seq}, fwd + bwd ({dev}, torch {torch.__version__}, SDPA backend {args.sdpa})\n")
    print("| variant | tokens/s | p50 ms | min ms | max ms | vs eager | input grad vs eager |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    eager = next((r for r in rows if r["variant"] == "eager"), None)
    for r in rows:
        rel = f"{r['tokens_per_s'] / eager['tokens_per_s']:.2f}x" if eager else ""
        print(f"| {r['variant']} | {r['tokens_per_s']:.0f} | {r['p50_ms']:.2f} | {r['min_ms']:.2f} | {r['max_ms']:.2f} "
              f"| {rel} | {r.get('grad_vs_eager', '')} |")
    print()
    for n in notes:
        print(f"- {n}")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": dev, "results": rows, "notes": notes}, indent=1))
    if not math.isfinite(sum(r["tokens_per_s"] for r in rows)) or not rows:
        sys.exit(1)


if __name__ == "__main__":
    main()
