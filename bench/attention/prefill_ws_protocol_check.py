#!/usr/bin/env python3
"""A model of the synchronization of prefill attention's warp-specialized kernel (`wgmma_ws_body` in
kernels/attention/prefill_attention_wgmma.cuh; keep them in sync), run under random interleavings: the producer's TMA
copies of q, K and V tiles, the mbarriers (q_full, q_empty, k_full, v_full, k_empty, v_empty, v_landed) with the
hardware's parity waits, the consumers' MMAs reading q and the stages, the causal skip, OVERLAP's pending P V,
PINGPONG's named-barrier turns, the V tiles' rows past a sequence's end zeroed by the producer warp, and (PERSISTENT)
a block's several items, its stages' phases running on across them, q in one buffer or two (Q_STAGES), and (O_SMEM)
O stored through the consumer's rows of the q buffer, released once the store has read them.

It fails when a consumer reads q or a stage that does not hold its tile (or one still being written), a copy lands
where some consumer still reads, a V tile crossing the sequence's end is read before its tail is zeroed or the zeroing
hits another tile, or the actors deadlock. Mistakes that are easy to make are kept as injections (--inject): the
causal skip releasing its stage before the fill lands (made while writing the kernel), the producer copying the next
item's q without waiting for q_empty, the tail's V copied onto v_full, and (O_SMEM) q released before O's store
has read the buffer. The run checks that the model catches each
of them, so that a model that checks nothing fails too.

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
    consumers, stages, overlap, pingpong, causal, q_stages, o_smem = (
        cfg[k] for k in ("consumers", "stages", "overlap", "pingpong", "causal", "q_stages", "o_smem"))
    block_m, block_n = 64 * consumers, cfg["block_n"]
    turns = pingpong and consumers == 2

    # The block's items (PERSISTENT: several blocks of rows in turn), each (length, m0): its tiles, the last one's
    # rows from `valid` on past the sequence's end.
    items = []
    for length, m0 in cfg["items"]:
        kv_end = min(length, m0 + block_m) if causal else length
        tiles = (kv_end + block_n - 1) // block_n
        items.append(dict(length=length, m0=m0, tiles=tiles, tail=length - (tiles - 1) * block_n < block_n))

    v_landed = MBarrier(1)
    q_full = [MBarrier(1) for _ in range(q_stages)]
    q_empty = [MBarrier(4 * consumers) for _ in range(q_stages)]
    k_full = [MBarrier(1) for _ in range(stages)]
    v_full = [MBarrier(1) for _ in range(stages)]
    k_empty = [MBarrier(4 * consumers) for _ in range(stages)]
    v_empty = [MBarrier(4 * consumers) for _ in range(stages)]
    q_slot = [Slot(f"q buffer {i}") for i in range(q_stages)]
    k_slot = [Slot(f"K stage {s}") for s in range(stages)]
    v_slot = [Slot(f"V stage {s}") for s in range(stages)]
    named = {1: NamedBarrier(), 2: NamedBarrier()}
    copies = Copies()

    def wait(cond):  # an actor yields the condition it waits for
        return cond

    def producer():  # warp 0 of the producer warpgroup: lane 0 copies, the warp zeroes the V tails
        t = tails = 0
        for n, it in enumerate(items):
            qi = n % q_stages
            if n >= q_stages and "no_q_wait" not in inject:
                yield wait(lambda: q_empty[qi].passed(((n // q_stages) - 1) & 1))
            q_full[qi].arrive_expect_tx(1)
            copies.start(q_slot[qi], ("q", n), q_full[qi])
            for j in range(it["tiles"]):
                s = t % stages
                released = ((t // stages) - 1) & 1
                if t >= stages:
                    yield wait(lambda: k_empty[s].passed(released))
                k_full[s].arrive_expect_tx(1)
                copies.start(k_slot[s], t, k_full[s])
                yield None
                if t >= stages:
                    yield wait(lambda: v_empty[s].passed(released))
                tail = j == it["tiles"] - 1 and it["tail"]
                bar = v_landed if tail and "tail_on_v_full" not in inject else v_full[s]
                bar.arrive_expect_tx(1)
                copies.start(v_slot[s], t, bar)
                yield None
                if tail:
                    if "tail_on_v_full" in inject:
                        yield wait(lambda: v_full[s].passed((t // stages) & 1))
                    else:
                        yield wait(lambda: v_landed.passed(tails & 1))
                    tails += 1
                    if v_slot[s].content != t or v_slot[s].writing:
                        raise ProtocolError(f"the tail of tile {t} zeroed in a stage holding {v_slot[s].content}")
                    if v_slot[s].readers:
                        raise ProtocolError("the tail zeroed while the stage is read")
                    v_slot[s].zeroed = True
                    yield None
                    if "tail_on_v_full" not in inject:
                        v_full[s].arrive()
                t += 1

    def consumer(cw):
        name = f"consumer {cw}"

        def my_turn():  # bar.sync on this consumer's barrier: until the other has arrived on it
            if turns:
                joined = named[1 + cw].arrive()
                yield wait(lambda: named[1 + cw].generation > joined)

        def their_turn():
            if turns:
                named[2 - cw].arrive()

        tail_tiles = set()  # tiles (counted as t) whose V crosses the sequence's end
        t = 0
        for it in items:
            t += it["tiles"]
            if it["tail"]:
                tail_tiles.add(t - 1)

        def read(slot, tile, what):
            slot.read(name, tile)
            if what == "V" and tile in tail_tiles and not slot.zeroed:
                raise ProtocolError(f"{name} reads V tile {tile} before its tail is zeroed")

        if turns and cw == 1:
            named[1].arrive()
        t = 0
        stored = None  # O_SMEM, two q buffers: the buffer whose store is released after the next item's first S

        def release_stored():
            nonlocal stored
            if stored is not None:
                q_slot[stored].done(name)  # the store has read it
                if "o_smem_early_release" not in inject:
                    q_empty[stored].arrive(4)
                stored = None

        for n, it in enumerate(items):
            last_row = it["m0"] + 64 * cw + 63
            qi = n % q_stages
            yield wait(lambda: q_full[qi].passed((n // q_stages) & 1))
            pending = -1

            def finish_pending():
                nonlocal pending
                ps = pending % stages
                read(v_slot[ps], pending, "V")
                yield None  # the P V runs
                v_slot[ps].done(name)
                v_empty[ps].arrive(4)
                pending = -1

            for j in range(it["tiles"]):
                s, parity = t % stages, (t // stages) & 1
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
                    t += 1
                    continue
                yield wait(lambda: k_full[s].passed(parity))
                if overlap:
                    yield from my_turn()
                    q_slot[qi].read(name, ("q", n))
                    read(k_slot[s], t, "K")  # S
                    if j == 0:
                        release_stored()
                    ps = pending % stages
                    if pending >= 0:
                        read(v_slot[ps], pending, "V")  # the pending P V
                    their_turn()
                    yield None  # S completes (wait_group 1)
                    q_slot[qi].done(name)
                    k_slot[s].done(name)
                    k_empty[s].arrive(4)
                    yield None  # softmax; then the pending P V completes (wait_group 0)
                    if pending >= 0:
                        v_slot[ps].done(name)
                        v_empty[ps].arrive(4)
                    yield wait(lambda: v_full[s].passed(parity))
                    pending = t
                else:
                    yield from my_turn()
                    q_slot[qi].read(name, ("q", n))
                    read(k_slot[s], t, "K")
                    if j == 0:
                        release_stored()
                    their_turn()
                    yield None
                    q_slot[qi].done(name)
                    k_slot[s].done(name)
                    k_empty[s].arrive(4)
                    yield wait(lambda: v_full[s].passed(parity))
                    read(v_slot[s], t, "V")
                    yield None
                    v_slot[s].done(name)
                    v_empty[s].arrive(4)
                t += 1
            # O_SMEM: 64 rows inside the sequence leave through this consumer's rows of the q buffer.
            staged = o_smem and it["m0"] + 64 * cw + 64 <= it["length"]
            if not staged or "o_smem_early_release" in inject:
                q_empty[qi].arrive(4)  # every S of the item is done
            if overlap and pending >= 0:
                yield from finish_pending()
            if staged:
                q_slot[qi].read(name, ("q", n))  # still this item's: nothing was copied over it
                yield None  # stmatrix, then the TMA store reads the rows
                stored = qi  # one thread arrives for the warpgroup's four warps once the store has read them:
                if q_stages == 1:  # at once (the next q goes into this buffer), else after the next item's first S
                    release_stored()
            yield None  # the store
        if turns and cw == 0:
            yield from my_turn()

    actors = {"producer": producer()}
    for c in range(consumers):
        actors[f"consumer {c}"] = consumer(c)
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
        # One block of rows each: a whole one, one whose last tile crosses the sequence's end, the sequence's last
        # block, a short one. Then (PERSISTENT) a block's several items: long and short ones, tails one after another,
        # items of one tile (fewer than the stages, so that a stage's phases run on across items).
        singles = ((1024, 384), (1000, 384), (1000, 1000 - 1000 % block_m), (77, 0))
        runs = (((1000, 1000 - 1000 % block_m), (77, 0), (77, 0), (1024, 384), (130, 0)),
                ((600, 512), (50, 0), (1000, 128), (61, 0), (61, 0), (61, 0)))
        for item_list, q_stages in [((one,), 1) for one in singles] + [(r, q) for r in runs for q in (1, 2)]:
            if all(m0 < length for length, m0 in item_list):
                for o_smem in (False, True):
                    yield dict(consumers=consumers, stages=stages, overlap=overlap, pingpong=pingpong, causal=causal,
                               block_n=block_n, items=item_list, q_stages=q_stages, o_smem=o_smem)


if __name__ == "__main__":
    injections = ("skip_early_release", "no_q_wait", "tail_on_v_full", "o_smem_early_release")
    sys.exit(barrier_model.main(run, configurations, injections, __doc__.split("\n\n")[0]))
