"""The pieces of the CPU models of ktune's warp-specialized kernels (bench/attention/prefill_ws_protocol_check.py,
bench/gemm/gemm_ws_protocol_check.py): mbarriers with the hardware's parity rule, named barriers, shared-memory slots
that know who reads and writes them, asynchronous copies, and a scheduler that runs actors (generators yielding the
condition they wait for, or None) under a random interleaving. Standard library only.
"""
import argparse
import random


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
    """A piece of shared memory: what it holds, whether a copy is writing it, who reads it."""

    def __init__(self, name=""):
        self.name, self.content, self.writing, self.readers, self.zeroed = name, None, False, set(), False

    def read(self, reader, expected):
        if self.writing or self.content != expected:
            raise ProtocolError(f"{reader} reads {expected} from {self.name} holding {self.content}"
                                f"{' (being written)' if self.writing else ''}")
        self.readers.add(reader)

    def done(self, reader):
        self.readers.discard(reader)


class Copies:
    """Asynchronous copies into slots (TMA loads): each lands at a random later step and completes its barrier's
    bytes. A copy may not start, nor land, in a slot someone reads."""

    def __init__(self):
        self.in_flight = []

    def start(self, slot, content, bar):
        if slot.readers:
            raise ProtocolError(f"a copy of {content} starts in {slot.name}, still read by {sorted(slot.readers)}")
        slot.writing, slot.content, slot.zeroed = True, None, False
        self.in_flight.append((slot, content, bar))

    def land(self, i):
        slot, content, bar = self.in_flight.pop(i)
        if slot.readers:
            raise ProtocolError(f"{content} lands in {slot.name}, read by {sorted(slot.readers)}")
        slot.writing, slot.content = False, content
        bar.complete_tx(1)


def run_actors(actors, copies, seed):
    """Runs the actors (name -> generator) under one random interleaving of their steps and the copies' landings;
    raises ProtocolError on a deadlock or whatever an actor or copy raises."""
    rng = random.Random(seed)
    waiting = {name: None for name in actors}
    while actors:
        runnable = [n for n in actors if waiting[n] is None or waiting[n]()]
        choices = runnable + (["copy"] if copies.in_flight else [])
        if not choices:
            raise ProtocolError(f"deadlock: {sorted(actors)} wait")
        pick = rng.choice(choices)
        if pick == "copy":
            copies.land(rng.randrange(len(copies.in_flight)))
            continue
        try:
            waiting[pick] = next(actors[pick])
        except StopIteration:
            del actors[pick]
            del waiting[pick]


def check_injections(run, configurations, seeds, injections):
    """The model must catch each injected mistake in some configuration and interleaving: returns the lines to print,
    or raises ProtocolError naming the one it missed."""
    lines = []
    for inject in injections:
        caught = None
        for cfg in configurations:
            for seed in range(seeds):
                try:
                    run(cfg, seed, frozenset({inject}))
                except ProtocolError as e:
                    caught = f"{e} ({cfg}, seed {seed})"
                    break
            if caught:
                break
        if caught is None:
            raise ProtocolError(f"the injected mistake {inject} went unnoticed")
        lines.append(f"injected {inject}: caught: {caught}")
    return lines


def main(run, configurations, injections, description):
    """A model's command line: every configuration under --seeds interleavings, then each injected mistake caught.
    Returns the exit status (0: the protocol holds and the model caught every injection)."""
    ap = argparse.ArgumentParser(description=description)
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
    try:
        print("\n".join(check_injections(run, cfgs, args.seeds, injections)))
    except ProtocolError as e:
        print(f"FAILED: {e}")
        return 1
    print(f"OK: {runs} interleavings of {len(cfgs)} configurations")
    return 0
