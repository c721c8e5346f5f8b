#!/usr/bin/env python3
"""Reads a tuning database (with peers imported) and prints where each op stands against the issue targets.

Per op/variant, over the best configuration of every problem:
  - validated: problems with an `ok` best, and measurements that were not ok (by status)
  - large: the lowest % of the copy ceiling among problems moving >= 256 MB
  - mid: the lowest % among problems moving 4 to 64 MB, by event time and by CUPTI kernel duration (the event time
    holds ~2.4 us of launch on an H100: an empty kernel is 3.2 us by events, 0.9 us by CUPTI), and (when the
    database, or --copy-db, holds a tuned `copy` op, the copy roofline per size) the lowest ratio of a same-size
    copy's time to the op's time: how close the op gets to the best copy of the bytes it moves, same method
  - with --detail: each problem's copy floor (the best copy of the bytes it moves, by events and by kernel time) and,
    with a tuned copy/read (the read roofline), its read floor (the floor of an op that mostly reads, like the
    decode-time kernels)
  - decode: the longest CUPTI kernel duration among problems with M (tokens) 1 or 16
  - vs peers: ktune's event p50 against the fastest event-timed peer (ratio = peer / ktune, >= 1 means ktune leads),
    and ktune's CUPTI p50 against the fastest kernel-duration peer; the problems where ktune trails are listed
  - with --baseline OP/VARIANT (e.g. linear/fwd, the cuBLAS library baseline tuned into the same database): each
    problem's speedup over that op's best at the same shape (axes the baseline lacks, like INT4's G, ignored), by
    events and by kernel time: both sides measured by ktune in the same way
Usage: bench/targets.py DB [--op OP] [--detail] [--copy-db DB] [--versus IMPL] [--baseline OP/VARIANT]
"""
import argparse
import json
import sqlite3
from collections import defaultdict

ap = argparse.ArgumentParser()
ap.add_argument("db")
ap.add_argument("--op", help="only this op (or op/variant)")
ap.add_argument("--detail", action="store_true", help="print every problem")
ap.add_argument("--versus", help="with --detail: also each problem's speedup over this peer impl (e.g. cublas_bf16)")
ap.add_argument("--copy-db", help="take the copy roofline from this database (tuned with the same method)")
ap.add_argument("--baseline", help="with --detail: also each problem's speedup over this op/variant's best in the same "
                "database (e.g. linear/fwd: cuBLAS through ktune's library launcher)")
args = ap.parse_args()
db = sqlite3.connect(args.db)
copy = {k: g for k, g in db.execute("select key, copy_gbps from devices")}

# The best ok measurement per (kernel, problem, device): lowest p50 of the newest kernel source per op/variant, a tie
# going to the lower CUPTI kernel time (the order of Store::best in results/store.cpp).
rows = db.execute("""
  select k.op, k.variant, k.source_hash, p.key, p.shape_json, c.key, m.p50_us, m.cupti_p50_us, m.gbps, m.device_key,
         m.measured_at
  from measurements m join kernels k on k.id = m.kernel_id join problems p on p.id = m.problem_id
  join configurations c on c.id = m.configuration_id where m.status = 'ok'""").fetchall()
newest = {}
for op, variant, h, *_rest in rows:
    t = _rest[-1]
    if (op, variant) not in newest or t > newest[(op, variant)][1]:
        newest[(op, variant)] = (h, t)
best = {}
for op, variant, h, pkey, shape, ckey, p50, cupti, gbps, dev, t in rows:
    if newest[(op, variant)][0] != h:
        continue
    k = (op, variant, pkey)
    rank = (p50, not (cupti and cupti > 0), cupti or 0.0)
    if k not in best or rank < best[k]["rank"]:
        best[k] = dict(shape=json.loads(shape), config=ckey, p50=p50, cupti=cupti, gbps=gbps, dev=dev, rank=rank)
failed = defaultdict(lambda: defaultdict(int))
for op, variant, status, n in db.execute("""select k.op, k.variant, m.status, count(*) from measurements m
        join kernels k on k.id = m.kernel_id where m.status != 'ok' group by 1, 2, 3"""):
    failed[(op, variant)][status] += n

peers = defaultdict(dict)  # (op, variant, problem_key) -> method -> (p50, impl)
for op, variant, pkey, impl, method, p50 in db.execute(
        "select op, variant, problem_key, impl, method, p50_us from peer_measurements"):
    if impl == args.versus:
        peers[(op, variant, pkey)]["versus:" + method] = (p50, impl)
    cur = peers[(op, variant, pkey)].get(method)
    if cur is None or p50 < cur[0]:
        peers[(op, variant, pkey)][method] = (p50, impl)


def canonical(pkey):  # peers may write the axes in another order
    dtype, _, shape = pkey.partition(":")
    return dtype + ":" + ",".join(sorted(shape.split(",")))


peer_by_canon = {(o, v, canonical(p)): m for (o, v, p), m in peers.items()}

baseline = {}  # problem key with the baseline's axes only, canonical -> its best
if args.baseline:
    b_op, _, b_variant = args.baseline.partition("/")
    for (op, variant, pkey), b in best.items():
        if op == b_op and variant == (b_variant or variant):
            baseline[canonical(pkey)] = b


def baseline_of(pkey, shape, dev):
    if not baseline:
        return None
    dtype = pkey.partition(":")[0]
    for key, b in baseline.items():
        if key.partition(":")[0] == dtype and b["dev"] == dev and all(shape.get(a) == v for a, v in b["shape"].items()):
            return b
    return None

# The rooflines: copy/fwd (half read, half written) and copy/read (read once) per bytes moved, from this database
# and, per variant it holds, --copy-db; interpolated log-log between the measured sizes. Per size: the lowest event
# p50 and, apart, the lowest CUPTI kernel time over the newest source's configurations.
def roof_from(measured):
    """{variant: {problem: dict(moved, p50, cupti)}} from (variant, problem, p50, cupti, gbps) rows."""
    out = defaultdict(dict)
    for variant, pkey, p50, cupti, gbps in measured:
        e = out[variant].setdefault(pkey, dict(moved=gbps * 1e3 * p50, p50=p50, cupti=None))
        e["p50"] = min(e["p50"], p50)
        if cupti and cupti > 0:
            e["cupti"] = min(e["cupti"] or cupti, cupti)
    return out


roofs = roof_from((variant, pkey, p50, cupti, gbps) for op, variant, h, pkey, _s, _c, p50, cupti, gbps, _d, _t in rows
                  if op == "copy" and newest[(op, variant)][0] == h)
if args.copy_db:
    cdb = sqlite3.connect(args.copy_db)
    # The newest source of each measured cold (the targets' method): a database may also hold hot or dirty-flush runs.
    # Stores before schema 3 have no l2_state column and hold one method per kernel source only by convention.
    has_state = any(r[1] == "l2_state" for r in cdb.execute("pragma table_info(kernels)"))
    cold = "and k2.l2_state = 'cold'" if has_state else ""
    roofs.update(roof_from(cdb.execute(f"""
            select k.variant, p.key, m.p50_us, m.cupti_p50_us, m.gbps from measurements m
            join kernels k on k.id = m.kernel_id join problems p on p.id = m.problem_id
            where m.status = 'ok' and k.op = 'copy' and k.source_hash =
            (select k2.source_hash from measurements m2 join kernels k2 on k2.id = m2.kernel_id
             where k2.op = 'copy' and k2.variant = k.variant {cold} order by m2.measured_at desc limit 1)""")))


def roofline(variant):
    """(bytes moved, lowest event p50, lowest CUPTI p50) of copy/<variant> per size, by bytes."""
    return sorted(((e["moved"], e["p50"], e["cupti"]) for e in roofs.get(variant, {}).values()),
                  key=lambda c: (c[0], c[1]))


copy_curve = roofline("fwd")
read_curve = roofline("read")


def interpolate(curve, moved, column=1):
    import math
    pts = [(c[0], c[column]) for c in curve if c[column]]
    if len(pts) < 2 or not pts[0][0] <= moved <= pts[-1][0]:
        return None
    for (b0, t0), (b1, t1) in zip(pts, pts[1:]):
        if b0 <= moved <= b1:
            f = (math.log(moved) - math.log(b0)) / (math.log(b1) - math.log(b0)) if b1 > b0 else 0.0
            return math.exp(math.log(t0) + f * (math.log(t1) - math.log(t0)))


def copy_time(moved):
    return interpolate(copy_curve, moved)


by_op = defaultdict(list)
for (op, variant, pkey), b in best.items():
    if args.op and args.op not in (op, f"{op}/{variant}"):
        continue
    by_op[(op, variant)].append((pkey, b))

for (op, variant), items in sorted(by_op.items()):
    large, mid, mid_kernel, mid_vs_copy, decode, trail = [], [], [], [], [], []
    lead = []
    for pkey, b in sorted(items):
        pct = 100 * b["gbps"] / copy[b["dev"]]
        moved = b["gbps"] * 1e3 * b["p50"]  # bytes
        if moved >= 256e6:
            large.append((pct, pkey))
        elif 4e6 <= moved <= 64e6:
            mid.append((pct, pkey))
            if b["cupti"]:
                mid_kernel.append((100 * moved / (b["cupti"] * 1e3) / copy[b["dev"]], pkey))
            ct = copy_time(moved)
            if ct:
                mid_vs_copy.append((100 * ct / b["p50"], pkey))
        if b["shape"].get("M") in (1, 16):
            decode.append((b["cupti"] or float("nan"), pkey))
        pm = peer_by_canon.get((op, variant, canonical(pkey)), {})
        ev = pm.get("cold_l2_events")
        cu = pm.get("cupti_kernel_sum")
        ratios = []
        if ev:
            ratios.append((ev[0] / b["p50"], "events", ev[1], ev[0], b["p50"]))
        if cu and b["cupti"]:
            ratios.append((cu[0] / b["cupti"], "kernel", cu[1], cu[0], b["cupti"]))
        if ratios:
            worst = min(ratios)
            lead.append(worst[0])
            if worst[0] < 1.0:
                trail.append((pkey, worst))
        if args.detail:
            r = " ".join(f"{x[1]}:{x[0]:.2f}x({x[2]})" for x in ratios)
            for method, name, mine in (("cold_l2_events", "events", b["p50"]), ("cupti_kernel_sum", "kernel", b["cupti"])):
                v = pm.get("versus:" + method)
                if v and mine:
                    r += f" | {name} {v[0] / mine:.2f}x over {args.versus} ({v[0]:.2f} us)"
            for name, curve in (("copy", copy_curve), ("read", read_curve)):
                ft, fk = interpolate(curve, moved), interpolate(curve, moved, 2)
                if ft and op != "copy":
                    r += f" | {name} floor {ft:.2f} us events" + (f", {fk:.2f} kernel" if fk else "")
            base = baseline_of(pkey, b["shape"], b["dev"]) if args.baseline and op != args.baseline.partition("/")[0] else None
            if base:
                r += f" | events {base['p50'] / b['p50']:.2f}x over {args.baseline} ({base['p50']:.2f} us, {base['config']})"
                if base["cupti"] and b["cupti"]:
                    r += f" kernel {base['cupti'] / b['cupti']:.2f}x ({base['cupti']:.2f} us)"
            print(f"  {op}/{variant} {pkey:<40} {b['p50']:9.2f} us {pct:6.1f} % cupti {b['cupti'] or 0:7.2f} {r}")
    n_fail = dict(failed[(op, variant)])
    f = lambda xs, fn: f"{fn(xs)[0]:.1f} ({fn(xs)[1]})" if xs else "-"
    print(f"{op}/{variant}: {len(items)} problems ok; not ok {n_fail or 0}")
    print(f"  large >= 256 MB: min {f(large, min)} % of copy; mid 4-64 MB: min {f(mid, min)} %, "
          f"{sum(p < 80 for p, _ in mid)} of {len(mid)} below 80 %" +
          (f"; by kernel time: min {f(mid_kernel, min)} %, {sum(p < 80 for p, _ in mid_kernel)} below 80 %"
           if mid_kernel else "") +
          (f"; against a same-size copy: min {f(mid_vs_copy, min)} %" if mid_vs_copy else ""))
    print(f"  decode M in (1, 16): max CUPTI {f(decode, max)} us, {sum(d > 3 for d, _ in decode)} of {len(decode)} over 3 us")
    if lead:
        print(f"  vs fastest peer: {len(lead)} problems with peers, trails at {len(trail)} "
              f"({sum(w[0] < 0.97 for _, w in trail)} by more than 3 %); worst "
              f"{min(lead):.2f}x" + "".join(f"\n    trails {k}: {w[0]:.2f}x by {w[1]} vs {w[2]} ({w[3]:.2f} vs {w[4]:.2f} us)"
                                            for k, w in trail[:12]))
