#!/usr/bin/env python3
"""Fails an op's GPU script on any measurement that is not ok: prints the database's measurement counts per kernel
(op/variant, alternative) and status, then, if any measurement is neither ok nor compiled (invalid_result,
launch_error, compile_error, timeout), up to 30 of them (kernel, problem, configuration, status, mismatched elements
and largest absolute error of a wrong result, message), and exits 1.
  bench/measurements_ok.py DB [--wrong-results-only OP/VARIANT]...
--wrong-results-only: for that kernel only invalid_result fails (a library baseline such as linear/fwd's cuBLASLt
ranks, where a rank past what cuBLASLt offers is a launch error by design).
"""
import argparse
import sqlite3
import sys

SHOWN = 30


def kernel_name(op, variant, alternative):
    return f"{op}/{variant}" + (f" {alternative}" if alternative else "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("db")
    parser.add_argument("--wrong-results-only", action="append", default=[], metavar="OP/VARIANT")
    args = parser.parse_args(argv)
    try:
        db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
        counts = db.execute("""SELECT k.op, k.variant, k.alternative, m.status, count(*) FROM measurements m
                               JOIN kernels k ON k.id = m.kernel_id
                               GROUP BY k.op, k.variant, k.alternative, m.status""").fetchall()
        bad = db.execute("""SELECT k.op, k.variant, k.alternative, p.key, c.key, m.status, m.mismatches,
                                   m.max_abs_error, m.message FROM measurements m
                            JOIN kernels k ON k.id = m.kernel_id JOIN problems p ON p.id = m.problem_id
                            JOIN configurations c ON c.id = m.configuration_id
                            WHERE m.status NOT IN ('ok', 'compiled')
                            ORDER BY k.op, k.variant, k.alternative, p.key, c.key""").fetchall()
    except sqlite3.Error as e:
        sys.exit(f"measurements_ok: {args.db}: {e}")
    print("\nmeasurements: " + ", ".join(f"{kernel_name(o, v, a)} {s} {n}" for o, v, a, s, n in counts))
    bad = [r for r in bad if r[5] == "invalid_result" or f"{r[0]}/{r[1]}" not in args.wrong_results_only]
    if not bad:
        print("no failed measurements")
        return
    print(f"\n{len(bad)} measurements FAILED (kernel | problem | configuration | status | message):")
    for op, variant, alternative, problem, config, status, mismatches, max_abs_error, message in bad[:SHOWN]:
        if status == "invalid_result":
            error = "?" if max_abs_error is None else f"{max_abs_error:.4g}"
            status += f" ({mismatches} elements mismatched, max abs error {error})"
        print(f"  {kernel_name(op, variant, alternative)} | {problem} | {config} | {status} | {(message or '')[:300]}")
    if len(bad) > SHOWN:
        print(f"  ... and {len(bad) - SHOWN} more (the database holds them all)")
    sys.exit(1)


if __name__ == "__main__":
    main()
