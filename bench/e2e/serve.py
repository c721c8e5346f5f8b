#!/usr/bin/env python3
"""Served generation under load (issue 26, seed 000): a small HTTP generate service built on the standard library
(http.server.ThreadingHTTPServer) over the Llama-3.2-3B-shaped random model of decode.py, baseline against ktune, driven
by a load generator (threads with http.client, in a process of its own) at each --concurrency for --seconds each.

Batching: simple request batching over a static cache of --slots rows (not continuous batching: HF's StaticCache writes
one cache position for every row, so rows cannot be at different positions). One GPU worker thread takes the requests
waiting (up to --slots), prefills them together (eager), runs --new-tokens greedy decode steps together and answers
them all; requests arriving meanwhile wait for the next batch. Every batch runs all --slots rows (the free ones padded
with a copy of a prompt), so each server compiles or captures one decode step only: the same for both servers.
  baseline   the HF model, its decode step torch.compile(mode="reduce-overhead") (CUDA graphs)
  ktune      ktune_torch.llama.patch_model, its decode step (argmax and position advance included) in one CUDA graph
End-to-end request latency (client side: send to full answer) p50/p95/p99 and requests/s per concurrency, and the %
difference of ktune against the baseline. Requests: a random prompt of --prompt tokens, --new-tokens new tokens.
  python3 bench/e2e/serve.py                          (H100: both servers, concurrency 1, 8, 32)
  python3 bench/e2e/serve.py --tiny --device cpu      (CI smoke test: a 2-layer model on CPU, eager both)
POST /generate {"prompt": [token ids]} -> {"tokens": [new token ids], "batch": rows that were real requests}.
"""

import argparse
import http.client
import json
import math
import queue
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parents[1] / "python"))
sys.path.insert(0, str(here))


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: at concurrency 32 the clients' connects overflowed it and were reset
    # (seen on the H100: 6 of the baseline's requests). Room for every client of the load generator.
    request_queue_size = 256


def percentile(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))] if s else float("nan")


# -------------------------------------------------------------------------------------------------------------- engine
class Engine:
    """A static cache of `slots` rows and one decode step compiled (baseline) or captured (ktune) for them."""

    def __init__(self, model, kind, args, device):
        import torch
        from transformers import StaticCache

        self.torch, self.model, self.kind, self.device = torch, model, kind, device
        self.slots, self.prompt, self.new_tokens = args.slots, args.prompt, args.new_tokens
        self.cuda = device.type == "cuda"
        # The capacity decode_gpu.sh tunes decode attention at (prompt 512 + 128 steps + 1), unless asked otherwise.
        self.cache = StaticCache(config=model.config, max_cache_len=max(args.cache_len, args.prompt + args.new_tokens + 1))
        self.ids = torch.zeros(self.slots, self.prompt, dtype=torch.long, device=device)
        self.prefill_pos = torch.arange(self.prompt, device=device)[None].expand(self.slots, -1)
        self.tok = torch.zeros(self.slots, 1, dtype=torch.long, device=device)
        self.pos = torch.full((self.slots, 1), self.prompt, dtype=torch.long, device=device)
        self.forward = model.forward  # eager: the prefill
        self.graph = None
        if kind == "baseline" and self.cuda:
            self.compiled = torch.compile(model.forward, mode="reduce-overhead", fullgraph=False)

    def _step(self):
        """One decode step: reads tok, pos; writes the next tok, advances pos."""
        torch = self.torch
        if self.kind == "ktune":
            from ktune_torch import llama
            logits = llama.decode_step(self.model, self.tok, self.pos, self.cache)
        elif self.cuda:
            torch.compiler.cudagraph_mark_step_begin()
            logits = self.compiled(input_ids=self.tok, position_ids=self.pos, past_key_values=self.cache,
                                   use_cache=True).logits
        else:
            logits = self.model(input_ids=self.tok, position_ids=self.pos, past_key_values=self.cache,
                                use_cache=True).logits
        from ktune_torch.llama import greedy_tokens  # both services' greedy pick (torch ops: argmax in two passes)

        self.tok.copy_(greedy_tokens(logits))
        self.pos.add_(1)

    def warm_up(self):
        """Compiles (baseline) or captures (ktune) the decode step: one batch, then the graph."""
        torch = self.torch
        t0 = time.perf_counter()
        self.generate([[1] * self.prompt])
        if self.kind == "ktune" and self.cuda:
            with torch.no_grad():
                self._prefill()
                side = torch.cuda.Stream()  # a first eager step off the capture (lazy initialisation)
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    self._step()
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                    self._step()
                self.graph = graph
            self.generate([[1] * self.prompt])
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    def _prefill(self):
        # Zeroed in place (addresses kept for the graphs): HF counts the tokens of a StaticCache from its contents.
        self.cache.reset()
        out = self.forward(input_ids=self.ids, position_ids=self.prefill_pos, past_key_values=self.cache,
                           use_cache=True)
        self.tok.copy_(out.logits[:, -1].argmax(-1, keepdim=True))
        self.pos.fill_(self.prompt)

    def generate(self, prompts):
        """New tokens of each prompt (at most `slots` prompts of `prompt` tokens): one batch."""
        torch = self.torch
        n = len(prompts)
        rows = torch.tensor([prompts[i % n] for i in range(self.slots)], dtype=torch.long)
        with torch.no_grad():
            self.ids.copy_(rows)
            self._prefill()
            out = [self.tok.clone()]
            for _ in range(self.new_tokens - 1):
                if self.graph is not None:
                    self.graph.replay()
                else:
                    self._step()
                out.append(self.tok.clone())
            return torch.cat(out, 1)[:n].tolist()  # the one host synchronisation of the batch


# -------------------------------------------------------------------------------------------------------------- server
class Service:
    """The HTTP front (a thread per connection) and the GPU worker (one thread) between a queue."""

    def __init__(self, engine, port=0):
        self.engine, self.requests = engine, queue.Queue()
        self.batches, self.rows = 0, 0
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: a client thread reuses its connection

            def do_POST(self):
                if self.path != "/generate":
                    self.send_error(404)
                    return
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                    prompt = [int(t) for t in body["prompt"]]
                    if len(prompt) != service.engine.prompt:
                        raise ValueError(f"the prompt must have {service.engine.prompt} tokens")
                except (ValueError, KeyError, TypeError) as e:
                    self.send_error(400, str(e))
                    return
                done, slot = threading.Event(), {}
                service.requests.put((prompt, done, slot))
                done.wait()
                reply = json.dumps({"tokens": slot.get("tokens"), "batch": slot.get("batch"),
                                    "error": slot.get("error")}).encode()
                self.send_response(200 if "error" not in slot else 500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *a):
                pass

        self.http = _Server(("127.0.0.1", port), Handler)
        self.http.daemon_threads = True
        self.port = self.http.server_address[1]
        self.stop = threading.Event()
        self.worker = threading.Thread(target=self._work, daemon=True)

    def _work(self):
        while not self.stop.is_set():
            try:
                first = self.requests.get(timeout=0.1)
            except queue.Empty:
                continue
            batch = [first]
            while len(batch) < self.engine.slots:
                try:
                    batch.append(self.requests.get_nowait())
                except queue.Empty:
                    break
            try:
                tokens = self.engine.generate([p for p, _, _ in batch])
                for (_, done, slot), t in zip(batch, tokens):
                    slot["tokens"], slot["batch"] = t, len(batch)
            except Exception as e:  # answered, not hung: the client sees the error
                for _, _, slot in batch:
                    slot["error"] = repr(e)
            self.batches += 1
            self.rows += len(batch)
            for _, done, _ in batch:
                done.set()

    def __enter__(self):
        self.worker.start()
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.http.shutdown()
        self.stop.set()
        self.worker.join()


# -------------------------------------------------------------------------------------------------------------- client
def load(url_port, concurrency, seconds, prompt, vocab, seed=0):
    """Closed loop: `concurrency` threads, each sending its next request when the last is answered, for `seconds`.
    Latency of the requests answered within the window (send to full answer, ms)."""
    import random

    latencies, errors, lock = [], [], threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(i):
        rng = random.Random(seed * 1000 + i)
        conn = http.client.HTTPConnection("127.0.0.1", url_port, timeout=600)
        while time.perf_counter() < deadline:
            body = json.dumps({"prompt": [rng.randrange(vocab) for _ in range(prompt)]})
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/generate", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                ok = resp.status == 200
            except (OSError, http.client.HTTPException) as e:
                ok, data = False, repr(e).encode()
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", url_port, timeout=600)
            t1 = time.perf_counter()
            with lock:
                if not ok:
                    errors.append(data[:200].decode(errors="replace"))
                elif t1 <= deadline:
                    latencies.append((t1 - t0) * 1e3)
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"concurrency": concurrency, "requests": len(latencies), "errors": len(errors),
            "first_error": errors[0] if errors else None, "window_s": seconds, "wall_s": time.perf_counter() - t0,
            "req_per_s": len(latencies) / seconds, "p50_ms": percentile(latencies, 50),
            "p95_ms": percentile(latencies, 95), "p99_ms": percentile(latencies, 99)}


def run_load(port, c, args, vocab):
    """The load generator in a process of its own (its threads do not share the server's interpreter lock)."""
    cmd = [sys.executable, __file__, "--client", str(port), "--concurrency", str(c), "--seconds", str(args.seconds),
           "--prompt", str(args.prompt), "--vocab", str(vocab)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.seconds + 600)
    if done.returncode != 0:
        raise RuntimeError(f"load generator failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------------------------- main
def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--seconds", type=float, default=10.0, help="load window per concurrency and server")
    p.add_argument("--slots", type=int, default=8, help="rows of the static cache: requests per batch")
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--cache-len", type=int, default=641, help="static cache capacity (decode_gpu.sh tunes at 641)")
    p.add_argument("--servers", default="baseline,ktune")
    p.add_argument("--tiny", action="store_true", help="a 2-layer model (smoke test)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--client", type=int, metavar="PORT", help=argparse.SUPPRESS)  # the load generator's process
    p.add_argument("--vocab", type=int, default=128256, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.client:
        print(json.dumps(load(args.client, args.concurrency[0], args.seconds, args.prompt, args.vocab)))
        return

    import torch
    from decode import build_model, llama_3b_config

    import ktune_torch
    from ktune_torch import llama

    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    cfg = llama_3b_config(args.tiny)
    dev = torch.cuda.get_device_name() if device.type == "cuda" else "cpu"
    print(f"ktune_torch library: {ktune_torch.library_status()}", flush=True)
    results, notes, first_tokens = [], [], {}
    for kind in args.servers.split(","):
        model = build_model(cfg, device, dtype)  # the same seed for both: the same weights
        if kind == "ktune":
            llama.patch_model(model, max_batch=args.slots)
        engine = Engine(model, kind, args, device)
        warm = engine.warm_up()
        probe = torch.Generator().manual_seed(7)
        first_tokens[kind] = engine.generate([torch.randint(0, cfg.vocab_size, (args.prompt,),
                                                            generator=probe).tolist()])[0]
        how = "eager" if device.type != "cuda" else "compiled" if kind == "baseline" else "captured"
        notes.append(f"{kind}: decode step {how}, warmed up in {warm:.0f} s")
        print(notes[-1], flush=True)
        with Service(engine) as service:
            for c in args.concurrency:
                r = run_load(service.port, c, args, cfg.vocab_size)
                r["server"] = kind
                results.append(r)
                print(f"  {kind} concurrency {c}: {r['requests']} requests, {r['req_per_s']:.1f}/s, p50 "
                      f"{r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms, {r['errors']} errors", flush=True)
            notes.append(f"{kind}: {service.batches} batches, {service.rows / max(1, service.batches):.1f} requests "
                         f"per batch on average")
        del engine, model
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if len(first_tokens) == 2:
        a, b = first_tokens.values()
        same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
        notes.append("greedy tokens of a probe request: " + (f"equal over all {len(a)}" if same is None else
                                                              f"equal for the first {same}, then differ"))

    print(f"\n## Served generation, {'tiny model' if args.tiny else 'Llama-3.2-3B shape'} ({dev}, torch "
          f"{torch.__version__}): {args.slots} slots, prompt {args.prompt}, {args.new_tokens} new tokens, "
          f"{args.seconds:.0f} s per run\n")
    print("| concurrency | server | requests | req/s | p50 ms | p95 ms | p99 ms | vs baseline p50 / p95 / p99 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    base = {r["concurrency"]: r for r in results if r["server"] == "baseline"}
    for r in sorted(results, key=lambda r: (r["concurrency"], r["server"] != "baseline")):
        b = base.get(r["concurrency"])
        diff = ""
        if b and r["server"] != "baseline":
            diff = " / ".join(f"{100 * (r[k] / b[k] - 1):+.1f} %" for k in ("p50_ms", "p95_ms", "p99_ms"))
            r["vs_baseline_pct"] = {k: 100 * (r[k] / b[k] - 1) for k in ("p50_ms", "p95_ms", "p99_ms", "req_per_s")}
        print(f"| {r['concurrency']} | {r['server']} | {r['requests']} | {r['req_per_s']:.2f} | {r['p50_ms']:.1f} | "
              f"{r['p95_ms']:.1f} | {r['p99_ms']:.1f} | {diff} |")
    print()
    for n in notes:
        print(f"- {n}")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": dev, "results": results, "notes": notes}, indent=1))
    errors = sum(r["errors"] for r in results)
    if errors or any(r["requests"] == 0 for r in results):
        print(f"serve: FAILED: {errors} failed requests, or a run answered none", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
