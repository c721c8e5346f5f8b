#!/usr/bin/env python3
"""Times torch SDPA (each backend: cuDNN, flash, memory-efficient) on prefill attention problems with ktune's method
(bench/peers/measure_peers.py's CudaTimer: cold L2 by the clean flush, a sleep kernel holding the stream, CUDA events
around the call alone, p50 of the samples), and writes one JSON row per (problem, causal, backend).

    prefill_sdpa.py OUT.json 'B=1,L=2048' 'B=4,L=2048' ... [--hq 32 --hk 8 --d 128 --samples 60]
    KTUNE_TORCH_LIB=lib.so prefill_sdpa.py OUT.json 'B=1,L=8192' --ktune-torch --rounds 2 --samples 200

--ktune-torch also times ktune's tuned kernels through the same harness: ktune_torch.ops.prefill_attention, from the
library scripts/build_torch_ops.sh builds from a tuned database. Both then share everything but the call: process,
timer, inputs, samples, and the pauses between them. --rounds N times every impl in turn N times.

SDPA takes [B, H, L, D]: q, k, v are made [B, L, H, D] (ktune's layout, as the projections give them) and passed as
transposed views, which the flash and cuDNN backends read without a copy; GQA by enable_gqa=True (no repeat of k, v).
Every sequence is L tokens long (ktune's U = 1).
"""
import argparse
import json
import math
import os
import sys
import types

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
import measure_peers  # noqa: E402

BACKENDS = {"sdpa_cudnn": "CUDNN_ATTENTION", "sdpa_flash": "FLASH_ATTENTION", "sdpa_efficient": "EFFICIENT_ATTENTION"}


def make_call(name, q, k, v, qt, kt, vt, causal, scale, ktune_ops):
    """The call timed for impl `name` and how it takes grouped-query heads. SDPA gets the [B, H, L, D] views (qt, kt,
    vt); ktune_torch's op the [B, L, H, D] tensors, its output seen as SDPA's (a view)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if name == "ktune_torch":
        from ktune_torch import _lib
        variant = "prefill_attention_causal" if causal else "prefill_attention_full"
        if not _lib.has_op(variant):  # the op would run its torch math: not ktune's kernel
            raise RuntimeError(f"{variant} is not in the library (no results in the database it was built from)")
        return (lambda: ktune_ops.prefill_attention(q, k, v, None, causal).transpose(1, 2)), "grouped heads read"
    backend = getattr(SDPBackend, BACKENDS[name])

    def call():
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, scale=scale, enable_gqa=True)
    try:
        measure_peers.warm_up(call)
        return call, "enable_gqa"
    except Exception:  # noqa: BLE001 - a backend without GQA: kv heads repeated outside the timing
        group = q.shape[2] // k.shape[2]
        kx, vx = kt.repeat_interleave(group, dim=1), vt.repeat_interleave(group, dim=1)

        def call_expanded():
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(qt, kx, vx, is_causal=causal, scale=scale)
        return call_expanded, "kv repeated before the call"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("problems", nargs="+", help="B=..,L=..")
    ap.add_argument("--hq", type=int, default=32)
    ap.add_argument("--hk", type=int, default=8)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=1, help="time every impl in turn, this many times")
    ap.add_argument("--ktune-torch", action="store_true",
                    help="also time ktune_torch.ops.prefill_attention (the library $KTUNE_TORCH_LIB, built by "
                         "scripts/build_torch_ops.sh from a tuned database), first in each round")
    args = ap.parse_args()
    measure_peers.ARGS = types.SimpleNamespace(flush="clean", device="cuda", compile_mode="default")
    dev = torch.device("cuda")
    timer = measure_peers.CudaTimer(dev)
    rows = []
    ktune_ops = None
    if args.ktune_torch:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
        from ktune_torch import _lib, ops as ktune_ops
        _lib.require()
    impls = (["ktune_torch"] if ktune_ops else []) + list(BACKENDS)
    for text in args.problems:
        p = {k: int(v) for k, v in (kv.split("=") for kv in text.split(","))}
        b, length = p["B"], p["L"]
        gen = torch.Generator(device=dev).manual_seed(1)
        q = torch.empty((b, length, args.hq, args.d), device=dev, dtype=torch.bfloat16).uniform_(-4, 4, generator=gen)
        k = torch.empty((b, length, args.hk, args.d), device=dev, dtype=torch.bfloat16).uniform_(-1, 1, generator=gen)
        v = torch.empty_like(k).uniform_(-1, 1, generator=gen)
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scale = 1.0 / math.sqrt(args.d)
        for causal in (True, False):
            ref = None
            # Rounds: every impl in turn, then again, so that a clock that drifts over the run shows as a difference
            # between an impl's rounds, not between impls.
            for round_ in range(args.rounds):
                for name in impls:
                    row = {"problem": f"B={b},L={length},HQ={args.hq},HK={args.hk},D={args.d},U=1",
                           "causal": causal, "impl": name, "dtype": "bf16", "round": round_ + 1}
                    try:
                        call, row["gqa"] = make_call(name, q, k, v, qt, kt, vt, causal, scale, ktune_ops)
                        _, out = measure_peers.warm_up(call)
                        if ref is None:
                            ref = out.float()
                        row["max_abs_diff_vs_first"] = float((out.float() - ref).abs().max())
                        row.update(measure_peers.summarize(timer.events(call, args.samples)))
                    except Exception as e:  # noqa: BLE001 - a backend that refuses the shape is reported, not fatal
                        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    json.dump({"device": torch.cuda.get_device_name(dev), "torch": torch.__version__, "method": "cold_l2_events",
               "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
