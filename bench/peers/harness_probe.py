#!/usr/bin/env python3
"""Which part of a timing harness changes a ~5 us kernel's time? Times ktune's tuned RMSNorm forward (the ktune_aot
library, bench/peers/ktune_aot) under variants of the peers script's method, one change at a time, in one process:

  base      as measure_peers.py: legacy default stream, a sleep kernel holds the stream, fill_ flush of 2x L2, events
  memset    flush with zero_() (cudaMemsetAsync), as the C++ AOT benchmark does
  stream    the whole sample on a created non-blocking stream, as ktune's worker does
  nohold    no sleep kernel: the host enqueues flush, events and call as the GPU runs them
  aligned   x and y each in its own fresh allocation rounded up to 2 MiB (the worker's buffers)
  rotate    8 copies of x and y used in turn (the worker's rotation below 64 MiB)
  ktinputs  inputs uniform in [-1, 1) instead of randn
  held      an untimed event recorded after the sleep kernel and queried by the host once the sample is enqueued
            (measure_peers.py does this to detect a hold that ran out)
  newy      y allocated by torch.empty_like for every call (as measure_peers.py's ktune_aot impl does)
  mp        the call timed by measure_peers.py's CudaTimer.events itself
  mpcase    measure_peers.py's own inputs and ktune_aot wrapper, timed by its CudaTimer.events
  evictlast x and w read once by a Triton kernel with eviction_policy='evict_last' (as torch.compile's kernels load
            reused inputs), then timed as base
  evictlast_flushlast  the same, but the flush writes with evict_last too
  aftercompile  base, right after torch.compile's RMSNorm ran at the same shape (measure_peers.py's order)

Each variant is timed in each of --phases in turn: before anything else, after one PyTorch profiler session
(measure_peers.py opens one at start-up and one per case for its CUPTI samples), after nvidia-smi, after torch.compile's
RMSNorm was timed by measure_peers.py's timer. What it showed (evict_last lines survive a flush of plain writes):
docs/measuring.md, "Cold L2".
Usage: harness_probe.py LIB [--samples N] [--variants a,b] [--phases ...]; prints p50 (events) per variant and
problem, twice in alternating order.
"""
import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_peers  # noqa: E402 - beside this file

ap = argparse.ArgumentParser()
ap.add_argument("lib")
ap.add_argument("--samples", type=int, default=300)
ap.add_argument("--variants", default="base,memset,stream,nohold,aligned,rotate,ktinputs")
ap.add_argument("--phases", default="before any profiler session,after one profiler session",
                help="in order, from: 'before any profiler session', 'after one profiler session', 'after "
                "nvidia-smi', 'after timing torch.compile'")
args = ap.parse_args()

# measure_peers' pieces run as its main would set them, with the plain flush the probe's variants compare against.
measure_peers.ARGS = argparse.Namespace(ktune_aot_lib=args.lib, compile_mode="default", device="cuda", flush="plain")
f = measure_peers.load_ktune_aot(args.lib)
dev = torch.device("cuda")
l2 = torch.cuda.get_device_properties(dev).L2_cache_size
flush_buf = torch.empty(2 * l2 // 4, dtype=torch.int32, device=dev)
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
side = torch.cuda.Stream()
_mp_timer = None


def mp_timer():
    global _mp_timer
    if _mp_timer is None:
        _mp_timer = measure_peers.CudaTimer(dev)
    return _mp_timer


def make_inputs(M, H, variant):
    def alloc(shape):
        if variant == "aligned":
            n = M * H * 2
            big = torch.empty(((n + (2 << 20) - 1) // (2 << 20)) * (2 << 20) // 2, dtype=torch.bfloat16, device=dev)
            return big[: M * H].view(M, H)
        return torch.empty(shape, dtype=torch.bfloat16, device=dev)
    copies = 8 if variant == "rotate" else 1
    out = []
    for _ in range(copies):
        x, y = alloc((M, H)), alloc((M, H))
        if variant == "ktinputs":
            x.copy_(torch.rand((M, H), device=dev) * 2 - 1)
        else:
            x.copy_(torch.randn((M, H), device=dev))
        out.append((x, y))
    w = torch.randn((H,), device=dev).mul_(0.5).add_(1).to(torch.bfloat16)
    return out, w


def time_with_measure_peers(M, H):
    """The same call timed by measure_peers.py's own CudaTimer.events."""
    pairs, w = make_inputs(M, H, "base")
    x, y = pairs[0]
    fn = lambda: f(0, 2, y.data_ptr(), x.data_ptr(), w.data_ptr(), M, H, 1e-6, 0)  # noqa: E731
    return statistics.median(mp_timer().events(fn, args.samples))


def measure_peers_case(M, H, impl):
    """measure_peers.py's own case for bf16 RMSNorm (its inputs and its call of impl), warmed up."""
    fn = measure_peers.case_rmsnorm_fwd({"M": M, "H": H}, torch.bfloat16, dev)[impl]()
    for _ in range(3):
        fn()
    return fn


def run_compiled_rmsnorm(M, H):
    """What measure_peers.py runs just before ktune_aot: torch.compile's RMSNorm at the same shape."""
    fn = measure_peers_case(M, H, "compile")
    for _ in range(50):
        fn()
    torch.cuda.synchronize()


_read_evict_last = None


def read_evict_last(t):
    """Reads a tensor once with eviction_policy='evict_last', as torch.compile's Triton kernels load reused inputs."""
    global _read_evict_last
    import triton
    if _read_evict_last is None:
        import triton.language as tl

        @triton.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            v = tl.load(x_ptr + offs, mask=offs < n, other=0.0, eviction_policy="evict_last")
            tl.store(out_ptr + tl.program_id(0), tl.sum(v.to(tl.float32), axis=0))

        _read_evict_last = kernel
    n = t.numel()
    _read_evict_last[(triton.cdiv(n, 1024),)](t, torch.empty(triton.cdiv(n, 1024), device=dev), n, BLOCK=1024)


def time_variant(M, H, variant):
    if variant == "mp":
        return time_with_measure_peers(M, H)
    if variant == "mpcase":
        return statistics.median(mp_timer().events(measure_peers_case(M, H, "ktune_aot"), args.samples))
    if variant == "aftercompile":
        run_compiled_rmsnorm(M, H)
        return time_variant(M, H, "base")
    pairs, w = make_inputs(M, H, variant)
    if variant.startswith("evictlast"):
        read_evict_last(pairs[0][0])
        read_evict_last(w)
    stream = side if variant == "stream" else torch.cuda.current_stream()
    samples = []
    held = torch.cuda.Event()
    with torch.cuda.stream(stream):
        handle = stream.cuda_stream
        for i in range(args.samples + 5):
            x, y = pairs[i % len(pairs)]
            if variant != "nohold":
                torch.cuda._sleep(200_000)  # ~100 us at 1.98 GHz: longer than the host's enqueue below
            if variant == "held":
                held.record(stream)
            if variant == "newy":
                y = torch.empty_like(x)
            if variant == "memset":
                flush_buf.zero_()
            elif variant == "evictlast_flushlast":
                n = flush_buf.numel()
                measure_peers._fill_evict_last()[(-(-n // 4096),)](flush_buf, n, i + 1, BLOCK=4096)
            else:
                flush_buf.fill_(i + 1)
            start.record(stream)
            st = f(0, 2, y.data_ptr(), x.data_ptr(), w.data_ptr(), M, H, 1e-6, handle)
            stop.record(stream)
            if variant == "held":
                held.query()
            stop.synchronize()
            if st != 0:
                raise SystemExit(f"status {st}")
            if i >= 5:
                samples.append(start.elapsed_time(stop) * 1e3)
    return statistics.median(samples)


def profile_once():
    """What measure_peers.py does at start-up and for every case's CUPTI samples: a PyTorch profiler session."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        torch.cuda._sleep(1000)
        torch.cuda.synchronize()


def run_nvidia_smi():
    """What measure_peers.py does once at start-up (driver_version) besides timing: nvidia-smi, and cuDNN's version."""
    import subprocess
    subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True)
    torch.backends.cudnn.version()


def time_compiled_rmsnorm():
    """What measure_peers.py does before ktune_aot in a problem: torch.compile's RMSNorm timed by CudaTimer.events
    (cold L2, held stream), 200 samples."""
    fn = measure_peers_case(256, 4096, "compile")
    print(f"  (torch.compile RMSNorm bf16 M=256 H=4096 timed: {statistics.median(mp_timer().events(fn, 200)):.2f} us)")


variants = args.variants.split(",")
phases = {"after timing torch.compile": time_compiled_rmsnorm, "before any profiler session": lambda: None,
          "after one profiler session": profile_once,
          "after nvidia-smi": run_nvidia_smi}
for phase in args.phases.split(","):
    phases[phase]()
    for M, H in [(1, 4096), (256, 4096), (256, 8192)]:
        for rnd in range(2):
            order = variants if rnd == 0 else variants[::-1]
            res = {v: time_variant(M, H, v) for v in order}
            print(f"{phase}: bf16 M={M} H={H} round {rnd}: " + "  ".join(f"{v} {res[v]:.2f}" for v in variants),
                  flush=True)
