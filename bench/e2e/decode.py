#!/usr/bin/env python3
"""Decode-step benchmark (issue 26, seed 002): a Llama-3.2-3B-shaped model from a LlamaConfig with random bf16 weights
(no downloads), StaticCache, a prompt of --prompt tokens, then --steps greedy steps, at each --batch:
  eager           HF model forward per step
  compile         torch.compile(model.forward, mode="reduce-overhead") (CUDA graphs)
  ktune           ktune_torch.llama.patch_model, eager launches
  ktune+graph     the patched model's decode step (embedding, layers, norm, lm_head, greedy pick, position advance)
                  captured once in a CUDA graph and replayed; ktune's kernels that allow it launch with programmatic
                  dependent launch (Hopper: a kernel starts, and prefetches its weights, while the one before ends)
  ktune+graph+serial  the same with programmatic dependent launch off: every kernel waits for the one before
with --weights bf16, int4, int8 (lm_head bf16) or int4+head, int8+head (lm_head quantized too): quantized weights only
for the ktune modes, checked against eager over the same weights quantized and dequantized. Per step: CUDA-event time of the step; p50, p95,
p99 ms and tokens/s (batch / mean step time). Outputs: the greedy tokens of each ktune mode against eager's over the
first --check steps (equal, or the first step they differ and the step-0 logits' largest difference), said plainly.
Prints a Markdown table; --json FILE writes the numbers.
  python3 bench/e2e/decode.py                       (H100: the full model, batch 1 and 8)
  python3 bench/e2e/decode.py --tiny --device cpu   (a smoke run of the code paths on CPU)
"""

import argparse
import json
import math
import signal
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))


def llama_3b_config(tiny=False):
    from transformers import LlamaConfig

    shape = dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=28, num_attention_heads=24,
                 num_key_value_heads=8, head_dim=128, vocab_size=128256)
    if tiny:
        shape = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=8,
                     num_key_value_heads=2, head_dim=32, vocab_size=1024)
    rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    common = dict(max_position_embeddings=131072, rms_norm_eps=1e-5, tie_word_embeddings=True, hidden_act="silu")
    try:
        return LlamaConfig(**shape, **common, rope_parameters=rope)
    except TypeError:  # transformers before rope_parameters
        return LlamaConfig(**shape, **common, rope_theta=rope["rope_theta"], rope_scaling=rope)


def build_model(cfg, device, dtype, seed=0):
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(old)
    model.config._attn_implementation = "sdpa"
    return model.eval()


def quantize_linears(model, bits, group=128, lm_head=False):
    """Every decoder-layer linear's weight (and lm_head's) replaced by its INT4/INT8 round trip
    (ktune_torch.packing.dequantized): patch_model quantizes per row (groups along K), so q, k, v (gate, up) quantize
    alike separately or fused. lm_head gets a weight of its own: the tied embedding keeps the bf16 one."""
    from ktune_torch import packing

    with torch.no_grad():
        for layer in model.model.layers:
            for owner in (layer.self_attn, layer.mlp):
                for lin in owner.children():
                    if isinstance(lin, torch.nn.Linear):
                        lin.weight.copy_(packing.dequantized(lin.weight, bits, group))
        if lm_head:
            model.lm_head.weight = torch.nn.Parameter(packing.dequantized(model.lm_head.weight, bits, group),
                                                      requires_grad=False)


def weight_kind(w):
    """(bits or 0 for bf16, whether lm_head is quantized too) of a --weights name: bf16, int4, int8, int4+head..."""
    base, _, head = w.partition("+")
    if base not in ("bf16", "int4", "int8") or head not in ("", "head") or (base == "bf16" and head):
        raise SystemExit(f"decode: --weights takes bf16, int4, int8, int4+head, int8+head, not {w!r}")
    return {"bf16": 0, "int4": 4, "int8": 8}[base], bool(head)


def percentile(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))]


class Decoder:
    """One greedy decode run: prefill, then steps that each read tok/pos and write the next tok, advance pos."""

    def __init__(self, model, batch, prompt, steps, device, step_fn, prefill_forward=None, cache_len=None):
        from transformers import StaticCache

        self.model, self.batch, self.steps, self.device = model, batch, steps, device
        self.cache = StaticCache(config=model.config, max_cache_len=cache_len or prompt + steps + 1)
        gen = torch.Generator().manual_seed(1234)
        self.prompt_ids = torch.randint(0, model.config.vocab_size, (batch, prompt), generator=gen).to(device)
        self.tok = torch.zeros(batch, 1, dtype=torch.long, device=device)
        self.pos = torch.full((batch, 1), prompt, dtype=torch.long, device=device)
        self.step_fn = step_fn
        self.prefill_forward = prefill_forward or model  # eager: only the decode step is ever compiled
        self.first_logits = None
        self.prefill_logits = None

    def prefill(self):
        prompt = self.prompt_ids.shape[1]
        pos = torch.arange(prompt, device=self.device)[None].expand(self.batch, -1)
        with torch.no_grad():
            out = self.prefill_forward(input_ids=self.prompt_ids, position_ids=pos, past_key_values=self.cache,
                                       use_cache=True)
        self.tok.copy_(out.logits[:, -1].argmax(-1, keepdim=True))
        self.prefill_logits = out.logits[:, -1].float().clone()

    def step(self):
        from ktune_torch.llama import greedy_tokens  # every mode's greedy pick (torch ops: argmax in two passes)

        logits = self.step_fn(self)
        self.tok.copy_(greedy_tokens(logits))
        self.pos.add_(1)
        return logits


def hf_step(d):
    out = d.model(input_ids=d.tok, position_ids=d.pos, past_key_values=d.cache, use_cache=True)
    return out.logits


def compile_step(d):
    torch.compiler.cudagraph_mark_step_begin()  # a new step: the last step's graph outputs may be overwritten
    return hf_step(d)


def ktune_step(d):
    """The patched model's step: ktune_torch.llama.decode_step (residual adds fused with the norms, no mask)."""
    from ktune_torch import llama
    return llama.decode_step(d.model, d.tok, d.pos, d.cache)


def run(model, mode, batch, args, device):
    """One timed run of `mode` at `batch` (compile: compiled here, then reset)."""
    forward = model.forward
    if mode == "compile":
        model.forward = torch.compile(forward, mode="reduce-overhead", fullgraph=False)
    try:
        gen = run_steps(model, mode, batch, args, device, prefill_forward=forward)
        while True:
            try:
                next(gen)
            except StopIteration as done:
                return done.value
    finally:
        if mode == "compile":
            model.forward = forward
            torch._dynamo.reset()


def run_steps(model, mode, batch, args, device, prefill_forward=None):
    """Generator: prefill and the first (not steady) steps, then a pause (yield) before the timed steady steps; returns
    the run's numbers. The pause lets a torch.compile baseline compile every batch size first and time later."""
    step_fn = ktune_step if mode.startswith("ktune") else compile_step if mode == "compile" else hf_step
    graph_mode = mode.startswith("ktune+graph")
    if mode.startswith("ktune"):
        from ktune_torch import ops

        ops.set_programmatic_launch(mode != "ktune+graph+serial")  # captured into the graph as its edges
    d = Decoder(model, batch, args.prompt, args.steps, device, step_fn, prefill_forward)
    tokens, times = [], []
    cuda = device.type == "cuda"
    # Not steady state: steps 0 and 1 (warm-up, capture); under reduce-overhead also step 2 (cudagraph trees warm up
    # on the first call, record on the second, replay from the third).
    warm = 3 if mode == "compile" else 2
    if args.steps <= warm + 2:
        warm = 0
    with torch.no_grad():
        d.prefill()
        tokens.append(d.tok.clone())
        graph = None
        for i in range(args.steps):
            if i == warm:
                if cuda:
                    torch.cuda.synchronize()
                yield
                # Another run_steps may have run meanwhile and left its no_grad block, re-enabling grad mode: a
                # compiled step would then miss its guards and recompile inside the timed steps.
                torch.set_grad_enabled(False)
            if graph_mode and i == 1:
                # step 0 ran eagerly on a side stream (warm-up: lazy initialisation); now capture one step
                graph = torch.cuda.CUDAGraph()
                # thread_local: a kernel's one-time attribute calls (large shared memory) may run while capturing
                with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                    logits_static = d.step()
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
            else:
                t0 = time.perf_counter()
            if graph is not None:
                graph.replay()
                logits = logits_static
            elif graph_mode and i == 0:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    logits = d.step()
                torch.cuda.current_stream().wait_stream(side)
            else:
                logits = d.step()
            if cuda:
                end.record()
                times.append((start, end))
            else:
                times.append((time.perf_counter() - t0) * 1e3)
            if i == 0:
                d.first_logits = logits[:, -1].float().clone()
            tokens.append(d.tok.clone())
        if cuda:
            torch.cuda.synchronize()
            times = [s.elapsed_time(e) for s, e in times]
    steady = times[warm:]
    mean = sum(steady) / len(steady)
    return {
        "mode": mode, "batch": batch, "steps_timed": len(steady),
        "p50_ms": percentile(steady, 50), "p95_ms": percentile(steady, 95), "p99_ms": percentile(steady, 99),
        "tokens_per_s": batch * 1000.0 / mean,
        "tokens": torch.cat(tokens, dim=1).cpu(), "first_logits": d.first_logits.cpu(),
        "prefill_logits": d.prefill_logits.cpu(),
    }


def dispatch_steps(model, batch, args, device, weights):
    """Prints what each ktune op launched in a prefill and two decode steps (kernel instance, fallback level, tuned or
    nearest bucket, or the torch math): every shape the model hits must launch something valid."""
    from ktune_torch import _lib
    if _lib.load() is None:
        print(f"dispatch: {_lib.load_error()}")
        return
    # the timed runs' cache length: the ops that read the cache (decode attention, the KV write) take its shape
    d = Decoder(model, batch, args.prompt, 2, device, ktune_step, cache_len=args.prompt + args.steps + 1)
    _lib.trace(True)
    with torch.no_grad():
        d.prefill()
        d.step()
        d.step()
    recorded = _lib.trace(False)
    print(f"\ndispatch, batch {batch}, {weights} weights (prefill + 2 decode steps):")
    for (op, kernel, how), calls in sorted(recorded.items()):
        print(f"  {op:18s} {calls:4d} calls  {how:45s} {kernel}")


def fp32_prefill_logits(model, batches, args, device):
    """{batch: the last prompt position's logits} of an fp32 copy of `model` over decode.py's prompts: what the bf16
    runs' rounding is measured against."""
    import copy

    m32 = copy.deepcopy(model).float()
    out = {}
    for batch in batches:
        d = Decoder(m32, batch, args.prompt, 1, device, hf_step)
        d.prefill()
        out[batch] = d.prefill_logits.cpu()
        del d
    del m32
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return out


def compare(ref, other, check, exact=None):
    """(short, long): the greedy tokens against eager's over the first `check` steps (row by row), and the logits.

    With `exact` (the fp32 model's prefill logits) the logits verdict is the one bf16 kernels are held to: the run's
    prefill logits may be at most twice as far from fp32 as eager bf16's are (the same inputs for both: greedy tokens
    of a random-weight model part wherever two logits are nearly tied, which says little about the kernels). Without
    it, the step-0 logits within 2 % of the largest."""
    check = min(check, ref["tokens"].shape[1] - 1, other["tokens"].shape[1] - 1)
    a, b = ref["tokens"][:, :check + 1], other["tokens"][:, :check + 1]
    rows_same = int((a == b).all(1).sum())
    if exact is not None:
        e_ref = (ref["prefill_logits"] - exact).abs().max().item()
        e_run = (other["prefill_logits"] - exact).abs().max().item()
        within = e_run <= 2 * e_ref + 1e-3 * exact.abs().max().item()
        logits = (f"prefill logits vs fp32: max |diff| {e_run:.3g} against eager bf16's {e_ref:.3g} "
                  f"({e_run / max(e_ref, 1e-30):.2f}x): {'within' if within else 'OUTSIDE'} tolerance (2x eager's)")
    else:
        diff = (ref["first_logits"] - other["first_logits"]).abs().max().item()
        scale = ref["first_logits"].abs().max().item()
        within = diff <= 0.02 * max(scale, 1.0)  # bf16: ~2^-7 relative per rounding, a few roundings deep
        logits = (f"step-0 logits max |diff| {diff:.3g} (max |logit| {scale:.3g}): "
                  f"{'within' if within else 'OUTSIDE'} bf16 tolerance (2% of max |logit|)")
    tol = "within" if within else "OUTSIDE"
    if rows_same == a.shape[0]:
        return f"equal {check}/{check}, logits {tol} tol", f"greedy tokens equal over the first {check} steps; {logits}"
    first = int((a != b).any(0).nonzero()[0].item())
    return (f"differ from step {first}, logits {tol} tol",
            f"greedy tokens differ from step {first} ({rows_same} of {a.shape[0]} rows equal over {check} steps); "
            f"{logits}")


class CompileTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CompileTimeout()


def print_table(docs):
    """The Markdown table of results documents (what --json writes), merged: a row (batch, weights, mode) is taken from
    the first document that has it."""
    data = {"title": docs[0]["title"], "results": [], "outputs": []}
    seen = set()
    for doc in docs:
        for r in doc["results"]:
            if (r["batch"], r["weights"], r["mode"]) not in seen:
                seen.add((r["batch"], r["weights"], r["mode"]))
                data["results"].append(r)
        data["outputs"] += doc["outputs"]
    print(f"\n## {data['title']}\n")
    print("| batch | weights | mode | p50 ms | p95 ms | p99 ms | p99/p50 | tokens/s | tokens vs eager |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    order = {"eager": 0, "compile": 1, "ktune": 2, "ktune+graph+serial": 3, "ktune+graph": 4}
    for r in sorted(data["results"], key=lambda r: (r["batch"], r["weights"] != "bf16", r["weights"],
                                                   order.get(r["mode"], 9))):
        print(f"| {r['batch']} | {r['weights']} | {r['mode']} | {r['p50_ms']:.3f} | {r['p95_ms']:.3f} | "
              f"{r['p99_ms']:.3f} | {r['p99_ms'] / r['p50_ms']:.2f} | {r['tokens_per_s']:.0f} | "
              f"{r.get('agreement', '')} |")
    print()
    for n in data["outputs"]:
        print(f"- {n}")


def compile_baseline(args, device, dtype, dev):
    """torch.compile (reduce-overhead) at every batch size, compiled side by side while the GPU does other work (the
    compilation is CPU time: minutes for the whole model), timed only once --gate exists; eager runs again after it as
    the reference of the token comparison. Writes --json (compile rows) and prints its table."""
    t0 = time.perf_counter()
    torch.set_grad_enabled(False)  # inference only (the generators below suspend inside no_grad blocks)
    torch._dynamo.config.automatic_dynamic_shapes = False  # each batch size its own static graph, as run() compiles
    model = build_model(llama_3b_config(args.tiny), device, dtype)
    forward = model.forward
    model.forward = torch.compile(forward, mode="reduce-overhead", fullgraph=False)
    notes, pending = [], {}
    data = {"title": f"Decode step, {'tiny model' if args.tiny else 'Llama-3.2-3B shape'}, prompt {args.prompt}, "
                     f"{args.steps} greedy steps ({dev}, torch {torch.__version__})",
            "device": dev, "results": [], "outputs": notes}
    signal.signal(signal.SIGALRM, _alarm)
    for batch in args.batch:
        start = time.perf_counter()
        gen = run_steps(model, "compile", batch, args, device, prefill_forward=forward)
        try:
            if args.compile_timeout:
                signal.alarm(max(1, int(args.compile_timeout)))
            next(gen)  # prefill, compilation, warm-up steps
            signal.alarm(0)
            pending[batch] = gen
            notes.append(f"batch {batch} compile: compiled and warmed up in {time.perf_counter() - start:.0f} s")
        except CompileTimeout:
            notes.append(f"batch {batch} compile: dropped, not compiled within --compile-timeout "
                         f"{args.compile_timeout:.0f} s")
        finally:
            signal.alarm(0)
        print(f"[{time.perf_counter() - t0:6.1f} s] {notes[-1]}", flush=True)
    Path(args.ready).write_text("compiled\n")
    while not Path(args.gate).exists():
        time.sleep(0.2)
    print(f"[{time.perf_counter() - t0:6.1f} s] gate open: timing", flush=True)
    done = {}
    for batch, gen in pending.items():
        try:
            next(gen)
        except StopIteration as finished:
            done[batch] = finished.value
    model.forward = forward
    for batch, r in done.items():
        ref = run(model, "eager", batch, args, device)
        short, long = compare(ref, r, args.check, fp32_prefill_logits(model, [batch], args, device)[batch])
        data["results"].append({k: v for k, v in dict(r, weights="bf16", agreement=short).items()
                                if k not in ("tokens", "first_logits", "prefill_logits")})
        notes.append(f"batch {batch} compile bf16 vs eager bf16 (eager run again here): {long}")
        if args.json:
            Path(args.json).write_text(json.dumps(data, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))
    print_table([data])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--steps", type=int, default=128)
    p.add_argument("--check", type=int, default=32, help="steps whose greedy tokens are compared with eager's")
    p.add_argument("--modes", default="eager,compile,ktune,ktune+graph")
    p.add_argument("--weights", default="bf16,int4")
    p.add_argument("--tiny", action="store_true", help="a 2-layer model (smoke test)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--json", help="write the results here (rewritten after every run, so a cut-off run keeps them)")
    p.add_argument("--compile-timeout", type=float, default=0,
                   help="seconds for each torch.compile run (compilation + steps); past it the run is dropped, said so")
    p.add_argument("--table", metavar="JSON", nargs="+", help="only print the table of results files and exit")
    p.add_argument("--ready", help="the torch.compile baseline alone (with --gate): compile every batch size and run "
                   "its warm-up steps, then write this file")
    p.add_argument("--gate", help="... then wait for this file before the timed steps (the GPU is then ours alone)")
    args = p.parse_args()
    if args.table:
        print_table([json.loads(Path(t).read_text()) for t in args.table if Path(t).exists()])
        return
    device = torch.device(args.device)
    modes = args.modes.split(",")
    weights = args.weights.split(",")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32

    import ktune_torch
    from ktune_torch import _lib, llama

    dev = torch.cuda.get_device_name() if device.type == "cuda" else "cpu"
    if args.gate:
        return compile_baseline(args, device, dtype, dev)
    print(f"ktune_torch library: {ktune_torch.library_status()}", flush=True)
    cfg = llama_3b_config(args.tiny)
    t0 = time.perf_counter()
    model = build_model(cfg, device, dtype)
    results, notes, refs = [], [], {}
    data = {"title": f"Decode step, {'tiny model' if args.tiny else 'Llama-3.2-3B shape'}, prompt {args.prompt}, "
                     f"{args.steps} greedy steps ({dev}, torch {torch.__version__})",
            "device": dev, "results": [], "outputs": notes}

    def add(r, w, against_eager=True):
        r = dict(r, weights=w)
        ref_key = r["batch"] if w == "bf16" else (r["batch"], w)
        if against_eager and ref_key in refs and r["mode"] != "eager":
            short, long = compare(refs[ref_key], r, args.check, exact.get((r["batch"], w)))
            r["agreement"] = short
            notes.append(f"batch {r['batch']} {r['mode']} {w} vs eager {w}: {long}")
        elif r["mode"] == "eager":
            r["agreement"] = "(reference)"
        results.append(r)
        data["results"] = [{k: v for k, v in x.items() if k not in ("tokens", "first_logits", "prefill_logits")} for x in results]
        if args.json:
            Path(args.json).write_text(json.dumps(data, indent=1))
        print(f"[{time.perf_counter() - t0:6.1f} s] batch {r['batch']} {w} {r['mode']}: p50 {r['p50_ms']:.3f} ms, "
              f"{r['tokens_per_s']:.0f} tokens/s {r.get('agreement', '')}", flush=True)

    exact = {}  # (batch, weights) -> the fp32 model's prefill logits
    if "eager" in modes:
        if device.type == "cuda":
            exact.update({(b, "bf16"): x for b, x in fp32_prefill_logits(model, args.batch, args, device).items()})
        for batch in args.batch:
            refs[batch] = run(model, "eager", batch, args, device)
            add(refs[batch], "bf16")
    for w in weights:
        bits, head = weight_kind(w)
        if bits and device.type == "cuda" and not _lib.has_op(f"linear_int{bits}"):
            # its torch math dequantizes every weight on every call: minutes per run, and not ktune's kernel
            notes.append(f"{w} weights not run: linear_int{bits} is not in the op library (not tuned)")
            print(notes[-1], flush=True)
            continue
        if bits and "eager" in modes:
            # INT4/INT8 change the weights: their reference is eager over the same weights quantized and dequantized
            twin = build_model(cfg, device, dtype)
            quantize_linears(twin, bits, lm_head=head)
            if device.type == "cuda":
                exact.update({(b, w): x for b, x in fp32_prefill_logits(twin, args.batch, args, device).items()})
            for batch in args.batch:
                refs[(batch, w)] = run(twin, "eager", batch, args, device)
                add(refs[(batch, w)], w)
            del twin
        patched = build_model(cfg, device, dtype)  # the same seed: the same random weights as `model`
        llama.patch_model(patched, weights=f"int{bits}" if bits else "bf16", max_batch=max(args.batch),
                          quantize_lm_head=head)
        for batch in args.batch:
            dispatch_steps(patched, batch, args, device, w)
            for mode in ("ktune", "ktune+graph", "ktune+graph+serial"):
                if mode not in modes or (mode.startswith("ktune+graph") and device.type != "cuda"):
                    continue
                add(run(patched, mode, batch, args, device), w)
        del patched
        if device.type == "cuda":
            torch.cuda.empty_cache()
    # torch.compile last: its compilation (minutes for the whole model, per batch size) is the only open-ended part
    if "compile" in modes and device.type == "cuda":
        for batch in args.batch:
            if args.compile_timeout:
                signal.signal(signal.SIGALRM, _alarm)
                signal.alarm(max(1, int(args.compile_timeout)))
            start = time.perf_counter()
            try:
                r = run(model, "compile", batch, args, device)
                signal.alarm(0)
                r["wall_s"] = time.perf_counter() - start
                add(r, "bf16")
                notes.append(f"batch {batch} compile: compilation and {args.steps} steps took {r['wall_s']:.0f} s")
            except CompileTimeout:
                notes.append(f"batch {batch} compile: dropped, not done in --compile-timeout {args.compile_timeout:.0f} s")
                print(notes[-1], flush=True)
            finally:
                signal.alarm(0)
        if args.json:
            Path(args.json).write_text(json.dumps(data, indent=1))

    print_table([data])
    # ktune's outputs must agree with eager's over the same weights (bf16, or quantized and dequantized)
    bad = [n for n in notes if " vs eager" in n and "OUTSIDE" in n and "compile" not in n]
    if bad:
        print(f"decode: FAILED: {len(bad)} bf16 ktune runs disagree with eager beyond bf16 tolerance", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
