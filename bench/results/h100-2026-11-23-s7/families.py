#!/usr/bin/env python3
"""Same-configuration comparison of two tunings of one space (kernel time, CUPTI p50): every configuration measured
in both, GROUP_CHUNKS dropped from the key (old kernels have none), geometric mean per family (PIPE, M_FRAGS,
INTERLEAVE) over configurations with an even UNROLL, and the 8 fastest configurations of two problems side by side.
Usage: families.py OLD.sqlite NEW.sqlite (each database's most recently measured kernel source)."""
import collections, math, re, sqlite3, sys

def load(path):
    db = sqlite3.connect(path)
    (kid,) = db.execute("select kernel_id from measurements order by id desc limit 1").fetchone()
    rows = db.execute("select c.key, p.key, m.cupti_p50_us from measurements m join problems p on p.id = m.problem_id "
                      "join configurations c on c.id = m.configuration_id where m.status = 'ok' and m.kernel_id = ?",
                      (kid,))
    return {(re.sub(r",GROUP_CHUNKS=\d", "", c), p): t for c, p, t in rows}

a, b = load(sys.argv[1]), load(sys.argv[2])
family = collections.defaultdict(list)
per_problem = collections.defaultdict(list)
for k in a.keys() & b.keys():
    kv = dict(s.split("=") for s in k[0].split(","))
    per_problem[k[1]].append((k[0], a[k], b[k]))
    if int(kv["UNROLL"]) % 2 == 0:
        family[(kv["PIPE"], kv["M_FRAGS"], kv["INTERLEAVE"])].append(math.log(b[k] / a[k]))
print("family (PIPE, M_FRAGS, INTERLEAVE), configurations x problems, geomean new/old kernel time")
for f in sorted(family):
    print(f"  {f}  {len(family[f]):4d}  {100 * (math.exp(sum(family[f]) / len(family[f])) - 1):+.2f} %")
for p in ["bf16:M=16,N=4096,K=4096,G=128", "bf16:M=1,N=4096,K=4096,G=128"]:
    print(p, "(old us, new us)")
    for c, x, y in sorted(per_problem[p], key=lambda r: r[1])[:8]:
        print(f"  {c:92s} {x:7.3f} {y:7.3f} {100 * (y / x - 1):+5.1f} %")
