#!/usr/bin/env python3
"""A model of the synchronization of the TMA GEMM's warp-specialized kernel with several tiles a block
(`gemm_ws_body` in kernels/gemm/gemm_wgmma_ws.cuh with TMA and TPB != 1; keep them in sync), run under random
interleavings: the producer filling the stages over the block's tiles, the full and empty mbarriers with the
hardware's parity rule, the consumers' wgmma reading the stages (one group kept in flight, each stage released when
the next one's group is issued), the consumers sharing every tile (cooperative) or taking turns over the block's tiles
(PINGPONG, with the order barriers), and each consumer's output staging handed to TMA stores. With CLUSTER 2 (the
_pair kernels) two such blocks run in step: each producer copies its x tile into its own stage and its part of the w
tile into both blocks' (a multicast: two copies landing on their own), each full barrier expecting all three, and each
consumer releases the stage in both blocks; a producer stays until every release has reached its block. A
consumer's output is staged whole (one store group a tile, the staging free once every earlier group has read it) or,
where the whole tile does not fit, through a ring of two panels (a group per panel, a panel's slot free once all but
the newest group have read theirs); the store groups finish reading in any order.

It fails when a consumer reads a stage that does not hold its fill (or one still being written), a copy starts or
lands in a stage some consumer still reads, a consumer writes its staging while a store still reads it, an arrival
or a copy reaches a block that has exited, or the actors deadlock. Mistakes the kernel's comments guard against are kept as injections (--inject), and the run checks that the
model catches each of them, so that a model that checks nothing fails too.

    python3 bench/gemm/gemm_ws_protocol_check.py [--seeds 40]   (a ctest: gemm_ws_protocol)
Standard library only; the barriers, slots and scheduler are bench/barrier_model.py's.
"""
import itertools
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import barrier_model  # noqa: E402
from barrier_model import Copies, MBarrier, ProtocolError, Slot, run_actors  # noqa: E402


class BlockBarrier(MBarrier):
    """An mbarrier of one block of the cluster: an arrival or a copy's bytes reaching it after the block exited is a
    fault (the hardware's: shared memory that is gone)."""

    def __init__(self, count, block, alive):
        super().__init__(count)
        self.block, self.alive = block, alive

    def _check(self):
        if not self.alive(self.block):
            raise ProtocolError(f"an arrival reaches block {self.block}, which has exited")

    def arrive(self, n=1):
        self._check()
        super().arrive(n)

    def complete_tx(self, nbytes):
        self._check()
        super().complete_tx(nbytes)


def run(cfg, seed, inject=frozenset()):
    stages, pingpong, k_tiles, block_tiles = cfg["stages"], cfg["pingpong"], cfg["k_tiles"], cfg["block_tiles"]
    cluster, ring, panels = cfg["cluster"], cfg["ring"], cfg["panels"]
    consumers = 2
    live = {}

    def alive(b):
        return any(name.startswith(f"block {b} ") for name in live)

    # Per block b: stage s's x part and the w parts, one from each block of the cluster.
    parts = ["x"] + [f"w{r}" for r in range(cluster)]
    full = [[BlockBarrier(1, b, alive) for _ in range(stages)] for b in range(cluster)]
    # Lane 0 of each warp that reads the stage, in every block: pingpong one consumer, else both
    # ("one_consumer_releases": 4 always; "local_release": this block's consumers only).
    readers = 4 if pingpong or "one_consumer_releases" in inject else 4 * consumers
    releasing_blocks = 1 if "local_release" in inject else cluster
    empty = [[BlockBarrier(readers * releasing_blocks, b, alive) for _ in range(stages)] for b in range(cluster)]
    order = [[MBarrier(4) for _ in range(consumers)] for _ in range(cluster)]
    slots = [[{p: Slot(f"block {b}'s stage {s} ({p})") for p in parts} for s in range(stages)] for b in range(cluster)]
    # Each consumer's staging: the whole tile, or a ring of two panels; the store groups not done reading theirs,
    # (group, slot) oldest first, and how many groups it has committed.
    staging = [[[Slot(f"block {b}'s consumer {c}'s staging {i}") for i in range(2 if ring else 1)]
                for c in range(consumers)] for b in range(cluster)]
    pending = [[[] for _ in range(consumers)] for _ in range(cluster)]
    committed = [[0] * consumers for _ in range(cluster)]
    # bulk wait_group.read N: all but the N newest groups have read. The ring needs N = 1 ("ring_two_pending": 2).
    newest = (2 if "ring_two_pending" in inject else 1) if ring else 0
    rng = random.Random(seed)
    copies = Copies()

    def wait(cond):
        return cond

    def producer(b):
        fill = 0
        for _ in range(block_tiles):
            for _ in range(k_tiles):
                s = fill % stages
                if fill >= stages:
                    yield wait(lambda: empty[b][s].passed(((fill // stages) - 1) & 1))
                full[b][s].arrive_expect_tx(len(parts))  # x and every block's w part
                copies.start(slots[b][s]["x"], fill, full[b][s])
                for r in range(cluster):  # the multicast of this block's w part: one copy into each block
                    copies.start(slots[r][s][f"w{b}"], fill, full[r][s])
                fill += 1
                yield None
        if cluster > 1 and "no_producer_tail" not in inject:
            # The last release of each stage: every block's consumers are then done arriving on this one.
            for f in range(max(fill - stages, 0), fill):
                yield wait(lambda f=f: empty[b][f % stages].passed((f // stages) & 1))

    def stores_of(b, c):  # consumer c's TMA store groups: each reads its slot until some later step, in any order
        while f"block {b} consumer {c}" in live or pending[b][c]:
            if pending[b][c]:
                _, slot = pending[b][c].pop(rng.randrange(len(pending[b][c])))
                staging[b][c][slot].done("store")
            yield None

    def consumer(b, cw):
        name = f"block {b} consumer {cw}"
        turn = 2 if pingpong else 1
        nth = cw if pingpong else 0
        fill = 0
        out_panels = 0

        def release(s):  # the wgmma reading stage s have completed: back to the producers that fill it
            for p in parts:
                slots[b][s][p].done(name)
            for r in range(releasing_blocks):
                empty[(b + r) % cluster][s].arrive(4)

        while nth < block_tiles:
            if pingpong:
                fill = nth * k_tiles
                if nth > 0 and "no_order" not in inject:
                    yield wait(lambda: order[b][1 - cw].passed(((nth - 1) // 2) & 1))
            in_flight = None  # the stage whose wgmma group is still running
            for kt in range(k_tiles):
                s = fill % stages
                yield wait(lambda: full[b][s].passed((fill // stages) & 1))
                for p in parts:  # this fill's wgmma issued; wait_group 1: the previous group completes
                    slots[b][s][p].read(name, fill)
                if in_flight is not None:
                    release(in_flight)
                in_flight = s
                fill += 1
                yield None
            if pingpong:
                order[b][cw].arrive(4)  # the other consumer may start its next tile
            yield None
            release(in_flight)  # wait_group 0; the last stage back to the producers
            for _ in range(panels if ring else 1):
                slot = out_panels % len(staging[b][cw])
                # The slot is free once every group but the `newest` has read (the whole tile: every group).
                if "no_store_wait" not in inject:
                    yield wait(lambda: all(g >= committed[b][cw] - newest for g, _ in pending[b][cw]))
                if staging[b][cw][slot].readers:
                    raise ProtocolError(f"{name} writes its staging {slot} while a store still reads it")
                yield None
                staging[b][cw][slot].readers.add("store")
                pending[b][cw].append((committed[b][cw], slot))
                committed[b][cw] += 1
                out_panels += 1
            nth += turn

    for b in range(cluster):
        live[f"block {b} producer"] = producer(b)
        for c in range(consumers):
            live[f"block {b} consumer {c}"] = consumer(b, c)
        for c in range(consumers):
            live[f"block {b} stores {c}"] = stores_of(b, c)
    run_actors(live, copies, seed)


def configurations():
    for cluster, stages, pingpong, k_tiles, block_tiles in itertools.product((1, 2), (2, 3, 4, 5), (False, True),
                                                                           (1, 2, 3, 5, 8), (1, 2, 3, 4, 7)):
        yield dict(cluster=cluster, stages=stages, pingpong=pingpong, k_tiles=k_tiles, block_tiles=block_tiles,
                   ring=False, panels=1)
    # The ring: one panel a tile, or three (an odd count: the slots alternate across tiles).
    for cluster, stages, pingpong, k_tiles, block_tiles, panels in itertools.product(
            (1, 2), (2, 3, 4, 5), (False, True), (1, 3), (1, 2, 3, 7), (1, 3)):
        yield dict(cluster=cluster, stages=stages, pingpong=pingpong, k_tiles=k_tiles, block_tiles=block_tiles,
                   ring=True, panels=panels)


if __name__ == "__main__":
    injections = ("no_order", "one_consumer_releases", "no_store_wait", "local_release", "no_producer_tail",
                  "ring_two_pending")
    sys.exit(barrier_model.main(run, configurations, injections, __doc__.split("\n\n")[0]))
