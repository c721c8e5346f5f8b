#!/usr/bin/env python3
"""Fails an op's GPU script on any measurement that is not ok: prints the database's measurement counts per kernel
variant and status, then, if any measurement is neither ok nor compiled (invalid_result, fault, timeout, ...), up to 20
of them, and exits 1.
  bench/measurements_ok.py DB
"""
import sqlite3
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    counts = db.execute("""SELECT k.variant, m.status, count(*) FROM measurements m JOIN kernels k ON k.id = m.kernel_id
                           GROUP BY k.variant, m.status""").fetchall()
    print("\nmeasurements: " + ", ".join(f"{v} {s} {n}" for v, s, n in counts))
    bad = db.execute("""SELECT k.variant, p.key, c.key, m.status, m.message FROM measurements m
                        JOIN kernels k ON k.id = m.kernel_id JOIN problems p ON p.id = m.problem_id
                        JOIN configurations c ON c.id = m.configuration_id
                        WHERE m.status NOT IN ('ok', 'compiled') ORDER BY k.variant, p.key, c.key""").fetchall()
    if bad:
        print(f"\n{len(bad)} configurations FAILED:")
        for row in bad[:20]:
            print(" ", *row)
        sys.exit(1)


if __name__ == "__main__":
    main()
