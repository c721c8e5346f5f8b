#!/usr/bin/env python3
"""Where a decode step's time goes (issue 26): the Llama-3.2-3B-shaped model of decode.py, patched by ktune_torch
(--weights bf16, int4, int8; +head: lm_head too), one decode step at --batch run eagerly under torch.profiler, its GPU kernels grouped by name:
calls, total and mean kernel time, the share of the step's kernel time, and for the linears the bytes read (weights)
against --bandwidth (GB/s, e.g. the device's copy/read roofline). Then the same step captured in a CUDA graph, timed:
the difference between the graph's step time and the kernels' sum is what launches and gaps cost inside the graph.
Last, the greedy pick that decode.py's steps end with, over the step's logits: torch's argmax against
ktune_torch.llama.greedy_tokens (two passes), their kernels and kernel time per pick.
  KTUNE_TORCH_LIB=.../libktune_torch_ops.so python3 bench/e2e/profile_step.py --batch 1 --weights bf16
"""
import argparse
import sys
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def kernel_family(name):
    """A short family name for a kernel's (demangled) name: ktune's templates by their function, torch's by kind."""
    base = name.split("<")[0].split("(")[0].strip()
    base = base.rsplit("::", 1)[-1] or name[:40]
    return base[:48]


def cuda_kernel_us(prof):
    """The profiled CUDA kernels' durations (us)."""
    return [e.time_range.elapsed_us() for e in prof.events()
            if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us() > 0]


def pick_kernels(logits, steps):
    """(pick, kernels per pick, kernel us per pick) of torch's argmax and llama.greedy_tokens over `logits`."""
    from ktune_torch import llama
    from torch.profiler import ProfilerActivity, profile

    rows = []
    for name, pick in (("torch argmax", lambda: logits[:, -1].argmax(-1, keepdim=True)),
                       ("ktune_torch.llama.greedy_tokens", lambda: llama.greedy_tokens(logits))):
        pick()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                pick()
            torch.cuda.synchronize()
        us = cuda_kernel_us(prof)
        rows.append((name, len(us) / steps, sum(us) / steps))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--weights", default="bf16", choices=["bf16", "int4", "int8", "int4+head", "int8+head"],
                   help="int4+head, int8+head: lm_head quantized too")
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--cache", type=int, default=641)
    p.add_argument("--steps", type=int, default=3, help="profiled eager steps (the table is per step)")
    p.add_argument("--graph-steps", type=int, default=50)
    p.add_argument("--layers", type=int, default=0, help="decoder layers (default: the model's 28)")
    args = p.parse_args()

    import decode as bench
    from ktune_torch import llama
    from torch.profiler import ProfilerActivity, profile
    from transformers import StaticCache

    device = torch.device("cuda")
    cfg = bench.llama_3b_config()
    if args.layers:
        cfg.num_hidden_layers = args.layers
    model = bench.build_model(cfg, device, torch.bfloat16)
    weights, _, head = args.weights.partition("+")
    llama.patch_model(model, weights=weights, max_batch=args.batch, quantize_lm_head=head == "head")
    cache = StaticCache(config=model.config, max_cache_len=args.cache)
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.prompt), device=device)
    tok = torch.zeros(args.batch, 1, dtype=torch.long, device=device)
    pos = torch.full((args.batch, 1), args.prompt, dtype=torch.long, device=device)
    with torch.no_grad():
        model(input_ids=ids, past_key_values=cache, use_cache=True)
        for _ in range(2):  # warm-up: every shape's scratch and plan made
            llama.decode_step(model, tok, pos, cache)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.steps):
                llama.decode_step(model, tok, pos, cache)
            torch.cuda.synchronize()
        # the same step in a CUDA graph (decode.py's ktune+graph)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            llama.decode_step(model, tok, pos, cache)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            llama.decode_step(model, tok, pos, cache)
        for _ in range(5):
            graph.replay()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(args.graph_steps):
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        logits = llama.decode_step(model, tok, pos, cache)
        picks = pick_kernels(logits, args.steps)
    times.sort()
    graph_us = times[len(times) // 2]

    fam = defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        us = e.time_range.elapsed_us() if e.device_type == torch.autograd.DeviceType.CUDA else 0
        if us > 0:
            f = fam[kernel_family(e.name)]
            f[0] += 1
            f[1] += us
    total = sum(v[1] for v in fam.values()) / args.steps
    print(f"## One decode step, batch {args.batch}, {args.weights} weights, {cfg.num_hidden_layers} layers "
          f"({torch.cuda.get_device_name()})\n")
    print(f"CUDA graph step p50 {graph_us:.0f} us; kernels' sum (eager, per step) {total:.0f} us; "
          f"the rest ({graph_us - total:.0f} us, {100 * (graph_us - total) / graph_us:.0f} %) is launches and gaps\n")
    print("| kernel | calls / step | us / step | mean us | share |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (calls, us) in sorted(fam.items(), key=lambda kv: -kv[1][1]):
        print(f"| {name} | {calls / args.steps:.0f} | {us / args.steps:.0f} | {us / calls:.2f} | "
              f"{100 * us / args.steps / total:.1f} % |")
    print("\n| greedy pick over the logits | kernels | kernel us |")
    print("| --- | ---: | ---: |")
    for name, kernels, us in picks:
        print(f"| {name} | {kernels:.0f} | {us:.1f} |")


if __name__ == "__main__":
    main()
