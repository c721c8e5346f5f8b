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
Standard library only.
"""
import argparse
import itertools
import random
import sys


class ProtocolError(Exception):
    pass


class MBarrier:
    """mbarrier: a phase completes when its arrivals reach the count and its expected bytes have landed.
    try_wait.parity(p) passes once the phase of parity p has completed: when the current phase's parity is not p."""

    def __init__(self, count):
        self.count, self.pending, self.tx, self.completed = count, count, 0, 0

    def arrive(self, n=1):
        if n > self.pending:
            raise ProtocolError("more arrivals than the phase expects")
        self.pending -= n
        self._complete()

    def arrive_expect_tx(self, nbytes):
        self.tx += nbytes
        self.arrive()

    def complete_tx(self, nbytes):
        self.tx -= nbytes
        self._complete()

    def _complete(self):
        if self.pending == 0 and self.tx == 0:
            self.completed += 1
            self.pending = self.count

    def passed(self, parity):
        return (self.completed & 1) != parity


class NamedBarrier:
    """bar.sync / bar.arrive over two warpgroups: the barrier completes when both have arrived."""

    def __init__(self):
        self.units, self.generation = 0, 0

    def arrive(self):  # the barrier's generation this arrival belongs to; it has completed once generation passes it
        joined = self.generation
        self.units += 1
        if self.units == 2:
            self.units, self.generation = 0, self.generation + 1
        return joined


class Slot:
    """One K or V tile of a stage: which tile it holds, whether a copy is writing it, who reads it."""

    def __init__(self):
        self.tile, self.writing, self.readers, self.zeroed = None, False, set(), False


def run(cfg, seed, inject=frozenset()):
    consumers, stages, overlap, pingpong, causal = (cfg[k] for k in ("consumers", "stages", "overlap", "pingpong",
                                                                     "causal"))
    block_m, block_n, length, m0 = 64 * consumers, cfg["block_n"], cfg["length"], cfg["m0"]
    rng = random.Random(seed)
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
    k_slot = [Slot() for _ in range(stages)]
    v_slot = [Slot() for _ in range(stages)]
    named = {1: NamedBarrier(), 2: NamedBarrier()}
    copies = []  # in flight: (slot, tile, barrier)

    def copy(slot, tile, bar):
        if slot.readers:
            raise ProtocolError(f"a copy of tile {tile} starts in a stage still read by {sorted(slot.readers)}")
        slot.writing, slot.tile, slot.zeroed = True, None, False
        copies.append((slot, tile, bar))

    def land(i):
        slot, tile, bar = copies.pop(i)
        if slot.readers:
            raise ProtocolError(f"tile {tile} lands in a stage read by {sorted(slot.readers)}")
        slot.writing, slot.tile = False, tile
        bar.complete_tx(1)

    def wait(cond):  # an actor yields the condition it waits for
        return cond

    def producer():
        q_full.arrive_expect_tx(1)
        copies.append((Slot(), "q", q_full))
        for j in range(tiles):
            s = j % stages
            released = ((j // stages) - 1) & 1
            if j >= stages:
                yield wait(lambda: k_empty[s].passed(released))
            k_full[s].arrive_expect_tx(1)
            copy(k_slot[s], j, k_full[s])
            yield None
            if j >= stages:
                yield wait(lambda: v_empty[s].passed(released))
            v_full[s].arrive_expect_tx(1)
            copy(v_slot[s], j, v_full[s])
            yield None

    def fixer():  # producer warp 0 after its lane 0's loop (it runs after producer() has returned)
        if not last_crosses_end:
            return
        s = last % stages
        yield wait(lambda: v_full[s].passed((last // stages) & 1))
        if v_slot[s].tile != last or v_slot[s].writing:
            raise ProtocolError(f"the tail of tile {last} zeroed in a stage holding tile {v_slot[s].tile}")
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
            if slot.writing or slot.tile != tile:
                raise ProtocolError(f"{name} reads {what} of tile {tile} from a stage holding {slot.tile}"
                                    f"{' (being written)' if slot.writing else ''}")
            if what == "V" and tile == last and last_crosses_end and not slot.zeroed:
                raise ProtocolError(f"{name} reads the last V tile before its tail is zeroed")
            slot.readers.add(name)

        def done(slot):
            slot.readers.discard(name)

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
    waiting = {name: None for name in actors}
    while actors:
        runnable = [n for n in actors if waiting[n] is None or waiting[n]()]
        choices = runnable + (["copy"] if copies else [])
        if not choices:
            raise ProtocolError(f"deadlock: {sorted(actors)} wait")
        pick = rng.choice(choices)
        if pick == "copy":
            land(rng.randrange(len(copies)))
            continue
        try:
            waiting[pick] = next(actors[pick])
        except StopIteration:
            del actors[pick]
            del waiting[pick]
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=40, help="random interleavings per configuration")
    args = ap.parse_args()
    cfgs = list(configurations())
    runs = 0
    for cfg in cfgs:
        for seed in range(args.seeds):
            try:
                run(cfg, seed)
            except ProtocolError as e:
                print(f"FAILED: {cfg}, seed {seed}: {e}")
                return 1
            runs += 1
    # The model must catch the two mistakes it keeps as injections, each in some configuration and interleaving.
    for inject in ("fixer_far_wait", "skip_early_release"):
        caught = None
        for cfg, seed in itertools.product(cfgs, range(args.seeds)):
            try:
                run(cfg, seed, frozenset({inject}))
            except ProtocolError as e:
                caught = f"{e} ({cfg}, seed {seed})"
                break
        if caught is None:
            print(f"FAILED: the injected mistake {inject} went unnoticed")
            return 1
        print(f"injected {inject}: caught: {caught}")
    print(f"OK: {runs} interleavings of {len(cfgs)} configurations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
