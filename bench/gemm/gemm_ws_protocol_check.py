#!/usr/bin/env python3
"""A model of the synchronization of the TMA GEMM's warp-specialized kernel with several tiles a block
(`gemm_ws_body` in kernels/gemm/gemm_wgmma_ws.cuh with TMA and TPB != 1; keep them in sync), run under random
interleavings: the producer filling the stages over the block's tiles, the full and empty mbarriers with the
hardware's parity rule, the consumers' wgmma reading the stages (one group kept in flight, each stage released when
the next one's group is issued), the consumers sharing every tile (cooperative) or taking turns over the block's tiles
(PINGPONG, with the order barriers), and each consumer's output staging handed to TMA stores.

It fails when a consumer reads a stage that does not hold its fill (or one still being written), a copy starts or
lands in a stage some consumer still reads, a consumer writes its staging while a store still reads it, or the actors
deadlock. Mistakes the kernel's comments guard against are kept as injections (--inject), and the run checks that the
model catches each of them, so that a model that checks nothing fails too.

    python3 bench/gemm/gemm_ws_protocol_check.py [--seeds 40]   (a ctest: gemm_ws_protocol)
Standard library only; the barriers, slots and scheduler are bench/barrier_model.py's.
"""
import itertools
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import barrier_model  # noqa: E402
from barrier_model import Copies, MBarrier, ProtocolError, Slot, run_actors  # noqa: E402


def run(cfg, seed, inject=frozenset()):
    stages, pingpong, k_tiles, block_tiles = cfg["stages"], cfg["pingpong"], cfg["k_tiles"], cfg["block_tiles"]
    consumers = 2
    full = [MBarrier(1) for _ in range(stages)]
    # Lane 0 of each warp that reads the stage: pingpong one consumer, else both ("one_consumer_releases": 4 always).
    empty_count = 4 if pingpong or "one_consumer_releases" in inject else 4 * consumers
    empty = [MBarrier(empty_count) for _ in range(stages)]
    order = [MBarrier(4) for _ in range(consumers)]
    slots = [Slot(f"stage {s}") for s in range(stages)]
    staging = [Slot(f"consumer {c}'s staging") for c in range(consumers)]
    stores = {c: 0 for c in range(consumers)}  # TMA stores still reading consumer c's staging
    copies = Copies()

    def wait(cond):
        return cond

    def producer():
        fill = 0
        for _ in range(block_tiles):
            for _ in range(k_tiles):
                s = fill % stages
                if fill >= stages:
                    yield wait(lambda: empty[s].passed(((fill // stages) - 1) & 1))
                full[s].arrive_expect_tx(1)
                copies.start(slots[s], fill, full[s])
                fill += 1
                yield None

    def stores_of(c):  # consumer c's TMA stores: each reads the staging until, at some later step, it has
        while f"consumer {c}" in live or stores[c]:
            if stores[c]:
                staging[c].done("store")
                stores[c] = 0
            yield None

    def consumer(cw):
        name = f"consumer {cw}"
        turn = 2 if pingpong else 1
        nth = cw if pingpong else 0
        fill = 0
        while nth < block_tiles:
            if pingpong:
                fill = nth * k_tiles
                if nth > 0 and "no_order" not in inject:
                    yield wait(lambda: order[1 - cw].passed(((nth - 1) // 2) & 1))
            in_flight = None  # the stage whose wgmma group is still running
            for kt in range(k_tiles):
                s = fill % stages
                yield wait(lambda: full[s].passed((fill // stages) & 1))
                slots[s].read(name, fill)  # this fill's wgmma issued; wait_group 1: the previous group completes
                if in_flight is not None:
                    slots[in_flight].done(name)
                    empty[in_flight].arrive(4)
                in_flight = s
                fill += 1
                yield None
            if pingpong:
                order[cw].arrive(4)  # the other consumer may start its next tile
            yield None
            slots[in_flight].done(name)  # wait_group 0
            empty[in_flight].arrive(4)  # the last stage back to the producer
            # This consumer's staging is free once its previous tile's stores have read it.
            if "no_store_wait" not in inject:
                yield wait(lambda: stores[cw] == 0)
            if staging[cw].readers:
                raise ProtocolError(f"{name} writes its staging while a store still reads it")
            yield None
            staging[cw].readers.add("store")
            stores[cw] += 1
            nth += turn

    live = {"producer": producer()}
    for c in range(consumers):
        live[f"consumer {c}"] = consumer(c)
    for c in range(consumers):
        live[f"stores {c}"] = stores_of(c)
    run_actors(live, copies, seed)


def configurations():
    for stages, pingpong, k_tiles, block_tiles in itertools.product((2, 3, 4, 5), (False, True), (1, 2, 3, 5, 8),
                                                                  (1, 2, 3, 4, 7)):
        yield dict(stages=stages, pingpong=pingpong, k_tiles=k_tiles, block_tiles=block_tiles)


if __name__ == "__main__":
    injections = ("no_order", "one_consumer_releases", "no_store_wait")
    sys.exit(barrier_model.main(run, configurations, injections, __doc__.split("\n\n")[0]))
