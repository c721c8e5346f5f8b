#!/usr/bin/env python3
"""A model of the synchronization of prefill attention's warp-specialized kernel (`wgmma_ws_body` in
kernels/attention/prefill_attention_wgmma.cuh; keep them in sync), run under random interleavings: the producer's TMA
copies of K and V tiles into the stages, the mbarriers (k_full, v_full, k_empty, v_empty, q_full, v_ready) with the
hardware's parity waits, the consumers' MMAs reading the stages, the causal skip, OVERLAP's pending P V, PINGPONG's
named-barrier turns and the last V tile's rows past the sequence zeroed by the producer warp.

It fails when a consumer reads a stage that does not hold its tile (or one still being written), a copy lands in a
stage some consumer still reads, the last V tile is read before its tail is zeroed or the zeroing hits another tile,
or the actors deadlock. Two mistakes made while writing the kernel are kept as injections (--inject), and the run
checks that the model catches each of them, so that a model that checks nothing fails too.

    python3 bench/attention/prefill_ws_protocol_check.py [--seeds 40]   (a ctest: prefill_ws_protocol)
Standard library only; the barriers, slots and scheduler are bench/barrier_model.py's.
"""
import itertools
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import barrier_model  # noqa: E402
from barrier_model import Copies, MBarrier, NamedBarrier, ProtocolError, Slot, run_actors  # noqa: E402


def run(cfg, seed, inject=frozenset()):
    consumers, stages, overlap, pingpong, causal = (cfg[k] for k in ("consumers", "stages", "overlap", "pingpong",
                                                                     "causal"))
    block_m, block_n, length, m0 = 64 * consumers, cfg["block_n"], cfg["length"], cfg["m0"]
    kv_end = min(length, m0 + block_m) if causal else length
    tiles = (kv_end + block_n - 1) // block_n
    last, valid = tiles - 1, length - (tiles - 1) * block_n
    last_crosses_end = valid < block_n
    turns = pingpong and consumers == 2

    q_full, v_ready = MBarrier(1), MBarrier(1)
    k_full = [MBarrier(1) for _ in range(stages)]
    v_full = [MBarrier(1) for _ in range(stages)]
    k_empty = [MBarrier(4 * consumers) for _ in range(stages)]
    v_empty = [MBarrier(4 * consumers) for _ in range(stages)]
    k_slot = [Slot(f"K stage {s}") for s in range(stages)]
    v_slot = [Slot(f"V stage {s}") for s in range(stages)]
    named = {1: NamedBarrier(), 2: NamedBarrier()}
    copies = Copies()

    def wait(cond):  # an actor yields the condition it waits for
        return cond

    def producer():
        q_full.arrive_expect_tx(1)
        copies.start(Slot("q"), "q", q_full)
        for j in range(tiles):
            s = j % stages
            released = ((j // stages) - 1) & 1
            if j >= stages:
                yield wait(lambda: k_empty[s].passed(released))
            k_full[s].arrive_expect_tx(1)
            copies.start(k_slot[s], j, k_full[s])
            yield None
            if j >= stages:
                yield wait(lambda: v_empty[s].passed(released))
            v_full[s].arrive_expect_tx(1)
            copies.start(v_slot[s], j, v_full[s])
            yield None

    def fixer():  # producer warp 0 after its lane 0's loop (it runs after producer() has returned)
        if not last_crosses_end:
            return
        s = last % stages
        yield wait(lambda: v_full[s].passed((last // stages) & 1))
        if v_slot[s].content != last or v_slot[s].writing:
            raise ProtocolError(f"the tail of tile {last} zeroed in a stage holding tile {v_slot[s].content}")
        if v_slot[s].readers:
            raise ProtocolError("the tail zeroed while the stage is read")
        v_slot[s].zeroed = True
        v_ready.arrive()

    def producer_warp():
        yield from producer()
        yield from fixer()

    def consumer(cw):
        name = f"consumer {cw}"
        last_row = m0 + 64 * cw + 63

        def my_turn():  # bar.sync on this consumer's barrier: until the other has arrived on it
            if turns:
                joined = named[1 + cw].arrive()
                yield wait(lambda: named[1 + cw].generation > joined)

        def their_turn():
            if turns:
                named[2 - cw].arrive()

        def read(slot, tile, what):
            slot.read(name, tile)
            if what == "V" and tile == last and last_crosses_end and not slot.zeroed:
                raise ProtocolError(f"{name} reads the last V tile before its tail is zeroed")

        def done(slot):
            slot.done(name)

        def wait_v(j):
            yield wait(lambda: v_full[j % stages].passed((j // stages) & 1))
            if j == last and last_crosses_end:
                yield wait(lambda: v_ready.passed(0))

        if turns and cw == 1:
            named[1].arrive()
        yield wait(lambda: q_full.passed(0))
        pending = -1

        def finish_pending():
            nonlocal pending
            ps = pending % stages
            read(v_slot[ps], pending, "V")
            yield None  # the P V runs
            done(v_slot[ps])
            v_empty[ps].arrive(4)
            pending = -1

        for j in range(tiles):
            s, parity = j % stages, (j // stages) & 1
            if causal and j * block_n > last_row:
                yield from my_turn()
                if overlap and pending >= 0:
                    yield from finish_pending()
                their_turn()
                if "skip_early_release" not in inject:
                    yield wait(lambda: k_full[s].passed(parity))
                    yield wait(lambda: v_full[s].passed(parity))
                k_empty[s].arrive(4)
                v_empty[s].arrive(4)
                continue
            yield wait(lambda: k_full[s].passed(parity))
            if overlap:
                yield from my_turn()
                read(k_slot[s], j, "K")  # S
                ps = pending % stages
                if pending >= 0:
                    read(v_slot[ps], pending, "V")  # the pending P V
                their_turn()
                yield None  # S completes (wait_group 1)
                done(k_slot[s])
                k_empty[s].arrive(4)
                yield None  # softmax; then the pending P V completes (wait_group 0)
                if pending >= 0:
                    done(v_slot[ps])
                    v_empty[ps].arrive(4)
                yield from wait_v(j)
                pending = j
            else:
                yield from my_turn()
                read(k_slot[s], j, "K")
                their_turn()
                yield None
                done(k_slot[s])
                k_empty[s].arrive(4)
                yield from wait_v(j)
                read(v_slot[s], j, "V")
                yield None
                done(v_slot[s])
                v_empty[s].arrive(4)
        if overlap and pending >= 0:
            yield from finish_pending()
        if turns and cw == 0:
            yield from my_turn()

    actors = {"producer": producer_warp()}
    for c in range(consumers):
        actors[f"consumer {c}"] = consumer(c)
    if "fixer_far_wait" in inject:  # the fixer as a warp of its own from the start, waiting on the last tile's parity
        actors["producer"] = producer()
        actors["fixer"] = fixer()
    run_actors(actors, copies, seed)
    # Named barriers balanced: every arrival met its partner.
    if any(b.units for b in named.values()):
        raise ProtocolError("a named barrier is left with an unmatched arrival")


def configurations():
    for consumers, stages, overlap, pingpong, causal, block_n in itertools.product(
            (1, 2), (2, 3, 4), (False, True), (False, True), (False, True), (64, 128, 176)):
        if pingpong and consumers == 1:
            continue
        block_m = 64 * consumers
        # A whole block, one whose last tile crosses the sequence's end, the sequence's last block, a short one.
        for length, m0 in ((1024, 384), (1000, 384), (1000, 1000 - 1000 % block_m), (77, 0)):
            if m0 < length:
                yield dict(consumers=consumers, stages=stages, overlap=overlap, pingpong=pingpong, causal=causal,
                           block_n=block_n, length=length, m0=m0)


if __name__ == "__main__":
    injections = ("fixer_far_wait", "skip_early_release")
    sys.exit(barrier_model.main(run, configurations, injections, __doc__.split("\n\n")[0]))
