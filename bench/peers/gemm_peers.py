#!/usr/bin/env python3
"""Times PyTorch peers of ktune's GEMM ops (gemm_act, ffn_gated) and SDPA at the prefill_attention problems with
ktune's method, and writes a peer file for `ktune import-peers` plus a Markdown table.

Run on the GPU host (PyTorch 2.11, Triton 3.6):
  python3 bench/peers/gemm_peers.py --out gemm_peers.json                    # everything, bf16 (long: see --help)
  python3 bench/peers/gemm_peers.py --ops gemm_act --impls torch_eager --out f.json
  python3 bench/peers/gemm_peers.py --compile-axis M=2048 --compile-axis N=14336 --out f.json   # compile few shapes

The method, the file format and the options are measure_peers.py's (this script imports it and adds its families;
README.md here): cold L2 (the clean flush), a sleep kernel hiding the host's launches, CUDA events around the call,
p50 of 60 samples, CUPTI kernel sums for short cases. Extra options: --compile-axis (the problems torch.compile is
measured at; the other impls keep all of theirs), --no-gelu-probe, --table FILE (the Markdown table, also printed;
default <out>.md), --ktune-torch (also ktune's own tuned kernels through ktune_torch.ops.linear_act and ffn_gated,
from the library $KTUNE_TORCH_LIB that scripts/build_torch_ops.sh built from a tuned database: impl ktune_torch, timed
first by this same harness and checked against the op's fp32 torch math; for the SwiGLU FFN also impl two_step;
bench/gemm/gemm_same_harness.sh).

Peers:
  gemm_act/none, gelu, silu  y = act(x W^T + b): F.linear(x, W, b) then the activation as its own kernel (eager);
                             torch._addmm_activation(b, x, W^T, use_gelu=True) for gelu (cuBLASLt's GELU_BIAS
                             epilogue through PyTorch); torch.compile of the eager function, mode max-autotune-no-cudagraphs
                             by default (--compile-mode): Inductor's autotuned GEMM templates with the epilogue fused.
  ffn_gated/swiglu, geglu    one F.linear over w = [Wg; Wu] [2I, K], then act(g) * u on its two halves (eager), and
                             torch.compile of the same; with --ktune-torch for swiglu also the issue's two-step path
                             (two_step): the same F.linear, then ktune's SwiGLU kernel (ktune_torch.ops.swiglu) on the
                             halves in place.
  with --ktune-torch, both   gemm_alone: F.linear(x, W) alone (no bias, no activation; the FFN's over [Wg; Wu]), the
                             yardstick of "the activation is free", checked against its own fp32 product.
  prefill_attention/causal, full  F.scaled_dot_product_attention(enable_gqa=True) on [B, L, H, D] tensors (viewed as
                             [B, H, L, D]): PyTorch's choice, and each backend forced (cuDNN, flash, memory-efficient);
                             a backend that refuses a shape is written to <out>.failures.json with its error.
"""

import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_peers as mp  # noqa: E402 - the method and the run loop are measure_peers.py's

# ---------------------------------------------------------------------------------------------------------------------
# Names: ops, variants and axes as ktune's op specs (kernels/gemm/*.op.yaml; kernels/attention/prefill_attention_*.op.yaml), so `ktune report` pairs the peers with ktune's results.
# ---------------------------------------------------------------------------------------------------------------------

GEMM_M = [1, 16, 64, 256, 2048, 8192]
GEMM_NK = [(14336, 4096), (4096, 14336), (4096, 4096), (6144, 4096)]
FFN_IK = [(14336, 4096), (8192, 3072)]
ATTENTION_BS = [(1, 512), (1, 2048), (4, 2048), (1, 8192), (1, 16384), (16, 512)]
ATTENTION_HEADS = dict(HQ=32, HK=8)


def gemm_problems():
    return [dict(M=m, N=n, K=k) for m in GEMM_M for n, k in GEMM_NK]


def ffn_problems():
    return [dict(M=m, I=i, K=k) for m in GEMM_M for i, k in FFN_IK]


def attention_problems():
    # U=1: every sequence of the batch L tokens long (the op's optional axis of per-sequence lengths).
    return [dict(B=b, L=s, HQ=ATTENTION_HEADS["HQ"], HK=ATTENTION_HEADS["HK"], D=d, U=1)
            for d in (128, 64) for b, s in ATTENTION_BS]


SDPA_IMPLS = ["sdpa", "sdpa_cudnn", "sdpa_flash", "sdpa_efficient"]
FAMILIES = {
    "gemm_act_none": dict(op="gemm_act", variant="none", problems=gemm_problems(), dtypes=["bf16", "fp16"],
                          impls=["eager", "compile"], quick=dict(M=[16, 2048], N=[14336])),
    "gemm_act_gelu": dict(op="gemm_act", variant="gelu", problems=gemm_problems(), dtypes=["bf16", "fp16"],
                          impls=["eager", "addmm_gelu", "compile"], quick=dict(M=[16, 2048], N=[14336])),
    "gemm_act_silu": dict(op="gemm_act", variant="silu", problems=gemm_problems(), dtypes=["bf16", "fp16"],
                          impls=["eager", "compile"], quick=dict(M=[16, 2048], N=[14336])),
    "ffn_gated_swiglu": dict(op="ffn_gated", variant="swiglu", problems=ffn_problems(), dtypes=["bf16", "fp16"],
                             impls=["eager", "compile"], quick=dict(M=[16, 2048], I=[14336])),
    "ffn_gated_geglu": dict(op="ffn_gated", variant="geglu", problems=ffn_problems(), dtypes=["bf16", "fp16"],
                            impls=["eager", "compile"], quick=dict(M=[16, 2048], I=[14336])),
    "prefill_attention_causal": dict(op="prefill_attention", variant="causal", problems=attention_problems(),
                                     dtypes=["bf16", "fp16"], impls=SDPA_IMPLS, quick=dict(B=[1], L=[2048], D=[128])),
    "prefill_attention_full": dict(op="prefill_attention", variant="full", problems=attention_problems(),
                                   dtypes=["bf16", "fp16"], impls=SDPA_IMPLS, quick=dict(B=[1], L=[2048], D=[128])),
}
IMPLS = {
    "ktune_torch": "ktune_torch",  # ktune_torch.ops.linear_act / ffn_gated: ktune's tuned kernel, exported headers
    "two_step": "cublas_ktune_swiglu",  # F.linear over [Wg; Wu] (cuBLAS), then ktune_torch.ops.swiglu on its halves
    # x W^T alone (cuBLAS; the FFN: over [Wg; Wu], N = 2I): no bias, no activation; the yardstick, not an alternative.
    "gemm_alone": "cublas_gemm_alone",
    "addmm_gelu": "torch_addmm_activation",  # torch._addmm_activation(use_gelu=True): cuBLASLt's GELU_BIAS epilogue
    "sdpa_efficient": "torch_sdpa_efficient",
}

# ---------------------------------------------------------------------------------------------------------------------
# Flops, for the table's TFLOP/s: the op specs' main terms (ktune's own TFLOP/s come from its op specs).
# ---------------------------------------------------------------------------------------------------------------------


def flops(family, p):
    op = FAMILIES[family]["op"]
    if op == "gemm_act":
        return 2 * p["M"] * p["N"] * p["K"]
    if op == "ffn_gated":
        return 4 * p["M"] * p["I"] * p["K"]
    # Two matmuls of L x L x D per head; causal: the L (L + 1) / 2 pairs at or below the diagonal.
    pairs = p["L"] * p["L"] if FAMILIES[family]["variant"] == "full" else p["L"] * (p["L"] + 1) // 2
    return 4 * p["B"] * p["HQ"] * pairs * p["D"]


# ---------------------------------------------------------------------------------------------------------------------
# The peers.
# ---------------------------------------------------------------------------------------------------------------------


def uniform(shape, lo, hi, dtype, dev):
    """Values drawn as ktune's op specs range them (fp32 drawn, then cast)."""
    return torch.rand(shape, dtype=torch.float32, device=dev).mul_(hi - lo).add_(lo).to(dtype)


def gemm_none(x, w, b):
    return F.linear(x, w, b)


def gemm_gelu(x, w, b):
    return F.gelu(F.linear(x, w, b), approximate="tanh")


def gemm_silu(x, w, b):
    return F.silu(F.linear(x, w, b))


def ffn_swiglu(x, w):
    g, u = F.linear(x, w).chunk(2, dim=-1)
    return F.silu(g) * u


def ffn_geglu(x, w):
    g, u = F.linear(x, w).chunk(2, dim=-1)
    return F.gelu(g, approximate="tanh") * u


GEMM_FUNCTIONS = {"none": gemm_none, "gelu": gemm_gelu, "silu": gemm_silu}
FFN_FUNCTIONS = {"swiglu": ffn_swiglu, "geglu": ffn_geglu}
FFN_ACTIVATIONS = {"swiglu": "silu", "geglu": "gelu"}  # ktune_torch.ops.ffn_gated's activation of each variant


def _ktune_torch_ops(op_bit):
    """ktune_torch.ops, its library loaded and holding op_bit; raises where it does not (the op would run its torch
    math, which is not ktune's kernel)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    from ktune_torch import _lib, ops

    _lib.require()
    if not _lib.has_op(op_bit):
        raise RuntimeError(f"{op_bit} is not in the library (no results in the database it was built from)")
    return ops


def _checked_against(call, math):
    """call, whose output the harness checks against math (the op's fp32 torch math) rather than against the impl
    timed before it: ktune's is timed first, and a wrong result must count against ktune, not against the next."""
    call.reference = math
    return call


def _case_gemm_act(variant):
    fn = GEMM_FUNCTIONS[variant]

    def case(p, dtype, dev):
        x = uniform((p["M"], p["K"]), -1, 1, dtype, dev)
        w = uniform((p["N"], p["K"]), -0.05, 0.05, dtype, dev)
        b = uniform((p["N"],), -0.5, 0.5, dtype, dev)
        return {
            "ktune_torch": lambda: (lambda ops: _checked_against(lambda: ops.linear_act(x, w, b, variant),
                                                                 lambda: ops._linear_act_math(x, w, b, variant)))(
                _ktune_torch_ops(f"gemm_act_{variant}")),
            "eager": lambda: lambda: fn(x, w, b),
            "addmm_gelu": lambda: lambda: torch._addmm_activation(b, x, w.t(), use_gelu=True),
            "gemm_alone": lambda: _checked_against(lambda: F.linear(x, w),
                                                   lambda: F.linear(x.float(), w.float()).to(dtype)),
            "compile": lambda: (lambda f: lambda: f(x, w, b))(mp.compiled(fn)),
        }
    return case


def _case_ffn_gated(variant):
    fn = FFN_FUNCTIONS[variant]

    def case(p, dtype, dev):
        x = uniform((p["M"], p["K"]), -1, 1, dtype, dev)
        w = uniform((2 * p["I"], p["K"]), -0.05, 0.05, dtype, dev)  # [Wg; Wu], as the op's one buffer
        act = FFN_ACTIVATIONS[variant]
        return {
            "ktune_torch": lambda: (lambda ops: _checked_against(lambda: ops.ffn_gated(x, w, act),
                                                                 lambda: ops._ffn_gated_math(x, w, act)))(
                _ktune_torch_ops(f"ffn_gated_{variant}")),
            "eager": lambda: lambda: fn(x, w),
            "gemm_alone": lambda: _checked_against(lambda: F.linear(x, w),
                                                   lambda: F.linear(x.float(), w.float()).to(dtype)),
            # The best two-step path: one cuBLAS GEMM over [Wg; Wu], then ktune's SwiGLU kernel on its halves.
            "two_step": lambda: (lambda ops: lambda: ops.swiglu(*F.linear(x, w).chunk(2, dim=-1)))(
                _ktune_torch_ops("swiglu")),
            "compile": lambda: (lambda f: lambda: f(x, w))(mp.compiled(fn)),
        }
    return case


def _case_prefill_attention(causal):
    def case(p, dtype, dev):
        b, s, hq, hkv, d = p["B"], p["L"], p["HQ"], p["HK"], p["D"]
        # ktune's layout [B, S, H, D]; SDPA takes [B, H, S, D]: transposed views, no copy.
        q = torch.randn((b, s, hq, d), dtype=torch.float32, device=dev).to(dtype).transpose(1, 2)
        k = torch.randn((b, s, hkv, d), dtype=torch.float32, device=dev).to(dtype).transpose(1, 2)
        v = torch.randn((b, s, hkv, d), dtype=torch.float32, device=dev).to(dtype).transpose(1, 2)
        scale = 1.0 / math.sqrt(d)

        def sdpa():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=True)

        def with_backend(name):
            def setup():
                from torch.nn.attention import SDPBackend, sdpa_kernel
                backend = getattr(SDPBackend, name)

                def call():
                    with sdpa_kernel([backend]):
                        return sdpa()
                return call
            return setup

        return {
            "sdpa": lambda: sdpa,
            "sdpa_cudnn": with_backend("CUDNN_ATTENTION"),
            "sdpa_flash": with_backend("FLASH_ATTENTION"),
            "sdpa_efficient": with_backend("EFFICIENT_ATTENTION"),
        }
    return case


CASES = {
    "gemm_act_none": _case_gemm_act("none"),
    "gemm_act_gelu": _case_gemm_act("gelu"),
    "gemm_act_silu": _case_gemm_act("silu"),
    "ffn_gated_swiglu": _case_ffn_gated("swiglu"),
    "ffn_gated_geglu": _case_ffn_gated("geglu"),
    "prefill_attention_causal": _case_prefill_attention(True),
    "prefill_attention_full": _case_prefill_attention(False),
}

# ---------------------------------------------------------------------------------------------------------------------
# Which GELU cuBLASLt's epilogue computes, measured: y from torch._addmm_activation(use_gelu=True) against the tanh
# form and erf's. The two differ by up to ~5e-4, far below a bf16 tolerance, so ktune's validation cannot tell them
# apart; the mean error over many outputs can.
# ---------------------------------------------------------------------------------------------------------------------


def probe_gelu_form(dev):
    out = {}
    torch.manual_seed(1)
    for name, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
        x = torch.randn((256, 64), device=dev, dtype=torch.float32) * 0.4
        w = torch.randn((1024, 64), device=dev, dtype=torch.float32) * 0.4
        b = torch.randn((1024,), device=dev, dtype=torch.float32)
        x, w, b = x.to(dtype), w.to(dtype), b.to(dtype)
        saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            y = torch._addmm_activation(b, x, w.t(), use_gelu=True).double()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved
        z = torch.addmm(b.double(), x.double(), w.double().t())
        err_tanh = (y - F.gelu(z, approximate="tanh")).abs().mean().item()
        err_erf = (y - F.gelu(z)).abs().mean().item()
        form = "tanh" if err_tanh < err_erf else "erf"
        out[name] = f"{form} (mean |error| {err_tanh:.2e} against tanh, {err_erf:.2e} against erf)"
    return out


# ---------------------------------------------------------------------------------------------------------------------
# The run: measure_peers.py's, with these families.
# ---------------------------------------------------------------------------------------------------------------------


def compile_axis(text):
    return mp.axis_values(text)


def plan_with_compile_axes(compile_axes):
    original = mp.plan

    def plan():
        out = []
        for family, dtype, p, impls in original():
            if compile_axes and not all(axis not in p or p[axis] in v for axis, v in compile_axes):
                impls = [i for i in impls if i != "compile"]
            if impls:
                out.append((family, dtype, p, impls))
        return out
    return plan


def markdown_table(out_path, failures_path):
    with open(out_path) as f:
        peers = json.load(f)
    failures = {}
    if os.path.exists(failures_path):
        with open(failures_path) as f:
            failures = json.load(f)
    compile_s = {(c["op"], c["variant"], c["dtype"], mp.shape_text(c["shape"]), c["impl"]): c["seconds"]
                 for c in failures.get("first_calls", [])}
    by_op = {(d["op"], d["variant"]): fam for fam, d in FAMILIES.items()}
    lines = ["| op | dtype | problem | impl | p50 us | TFLOP/s | first call s |", "| --- | --- | --- | --- | ---: | ---: | ---: |"]
    for r in peers["results"]:
        if r.get("method", peers.get("method")) != mp.METHOD_EVENTS:
            continue
        family = by_op.get((r["op"], r["variant"]))
        if family is None:
            continue
        key = (r["op"], r["variant"], r["dtype"], mp.shape_text(r["shape"]), r["impl"])
        tflops = flops(family, r["shape"]) / (r["p50_us"] * 1e-6) / 1e12
        first = compile_s.get(key)
        lines.append(f'| {r["op"]}/{r["variant"]} | {r["dtype"]} | {mp.shape_text(r["shape"])} | {r["impl"]} | '
                     f'{r["p50_us"]:.2f} | {tflops:.1f} | {"" if first is None else f"{first:.1f}"} |')
    refused = failures.get("failures", [])
    if refused:
        lines += ["", "| op | dtype | problem | impl | stage | refused or failed |", "| --- | --- | --- | --- | --- | --- |"]
        for f in refused:
            error = f["error"].replace("|", "/").replace("\n", " ")[:160]
            lines.append(f'| {f["op"]}/{f["variant"]} | {f["dtype"]} | {mp.shape_text(f["shape"])} | {f["impl"]} | '
                         f'{f["stage"]} | {error} |')
    for c in failures.get("checks", []):
        lines.append(f'\nCHECK MISS {c["op"]}/{c["variant"]} {c["dtype"]} {mp.shape_text(c["shape"])} {c["impl"]}: '
                     f'relative error {c["relative_error"]:.3g} > {c["tolerance"]}')
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--compile-axis", action="append", default=[], type=compile_axis, metavar="AXIS=V,V..")
    ap.add_argument("--no-gelu-probe", action="store_true")
    ap.add_argument("--table")
    ap.add_argument("--ktune-torch", action="store_true")
    ap.add_argument("-h", "--help", action="store_true")
    own, rest = ap.parse_known_args()
    if own.help:
        print(__doc__)
        mp.parse_args(["--help"])
    # measure_peers.py's families, cases and impl names become these; its defaults become bf16 and autotuned
    # compilation (the flags given on the command line come later and win).
    mp.FAMILIES.clear()
    mp.FAMILIES.update(FAMILIES)
    if own.ktune_torch:  # ktune's first at every GEMM and FFN problem; the two-step SwiGLU path needs its library too
        for fam in mp.FAMILIES.values():
            if fam["op"] in ("gemm_act", "ffn_gated"):
                fam["impls"] = ["ktune_torch"] + fam["impls"] + ["gemm_alone"]
            if fam["op"] == "ffn_gated" and fam["variant"] == "swiglu":
                fam["impls"].insert(2, "two_step")
    mp.CASES.clear()
    mp.CASES.update(CASES)
    mp.IMPLS.update(IMPLS)
    mp.SCRIPT = "bench/peers/gemm_peers.py"
    mp.plan = plan_with_compile_axes(own.compile_axis)
    sys.argv = [sys.argv[0], "--dtypes", "bf16", "--compile-mode", "max-autotune-no-cudagraphs"] + rest
    args = mp.parse_args(sys.argv[1:])
    if not args.list and args.device != "cpu" and not own.no_gelu_probe:
        probe = probe_gelu_form(args.device)
        print(f"cuBLASLt's GELU epilogue (torch._addmm_activation): {probe}", flush=True)
        mp.EXTRA_ENVIRONMENT["cublaslt_gelu_form"] = probe
    mp.EXTRA_ENVIRONMENT["compile_axes"] = {a: v for a, v in own.compile_axis} or None
    if mp.EXTRA_ENVIRONMENT["compile_axes"] is None:
        del mp.EXTRA_ENVIRONMENT["compile_axes"]
    status = mp.main()
    if args.list or not os.path.exists(args.out):
        return status
    table = markdown_table(args.out, os.path.splitext(args.out)[0] + ".failures.json")
    with open(own.table or os.path.splitext(args.out)[0] + ".md", "w") as f:
        f.write(table)
    print(table, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
