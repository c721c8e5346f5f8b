#!/usr/bin/env python3
"""Tests of bench/measurements_ok.py (the check that fails an op's GPU script on a bad measurement), on a copy of the
package fixture's results database (ok rows of rmsnorm/fwd, written by the store, so the schema is the real one) with
failing rows added by hand.
  test_measurements_ok.py MAKE_FIXTURE_DB    (tests/package/make_fixture_db.cpp built; CTest bench_measurements_ok)
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "measurements_ok.py")
MAKE_FIXTURE = None
FIXTURE_DIR = FIXTURE = None


def setUpModule():
    global FIXTURE_DIR, FIXTURE
    FIXTURE_DIR = tempfile.mkdtemp(prefix="ktune-measurements-ok-fixture-")
    FIXTURE = os.path.join(FIXTURE_DIR, "fixture.db")
    subprocess.run([MAKE_FIXTURE, FIXTURE], check=True)


def tearDownModule():
    shutil.rmtree(FIXTURE_DIR)


class MeasurementsOk(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ktune-measurements-ok-")
        self.db = os.path.join(self.dir, "ktune.db")
        shutil.copy(FIXTURE, self.db)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def add(self, op, variant, alternative, status, mismatches=0, max_abs_error=None, message=""):
        """A measurement of a new kernel (op/variant, alternative) at the fixture's first problem and configuration."""
        with sqlite3.connect(self.db) as db:
            kernel = db.execute("INSERT INTO kernels (op, variant, source_path, source_hash, alternative) "
                                "VALUES (?, ?, 'x.cuh', ?, ?)", (op, variant, f"hash-{op}-{variant}-{alternative}",
                                                                   alternative)).lastrowid
            problem, config, device = db.execute("SELECT problem_id, configuration_id, device_key FROM measurements "
                                                 "ORDER BY id LIMIT 1").fetchone()
            db.execute("INSERT INTO measurements (kernel_id, configuration_id, problem_id, device_key, status, "
                       "message, mismatches, max_abs_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (kernel, config, problem, device, status, message, mismatches, max_abs_error))

    def run_check(self, *flags, db=None):
        r = subprocess.run([sys.executable, SCRIPT, db or self.db, *flags], capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    def test_a_database_of_ok_measurements_passes_and_counts_them(self):
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)
        self.assertIn("rmsnorm/fwd ok 12", out)

    def test_compiled_rows_of_a_compile_only_sweep_pass(self):
        self.add("gemm_act", "gelu", "wgmma", "compiled")
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)
        self.assertIn("gemm_act/gelu wgmma compiled 1", out)

    def test_a_wrong_result_fails_naming_kernel_mismatches_and_error(self):
        self.add("prefill_attention", "causal", "wgmma", "invalid_result", 1234, 0.5, "1234 of 4096 elements differ")
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn("1 measurements FAILED", out)
        self.assertIn("prefill_attention/causal wgmma | bf16:", out)
        self.assertIn("invalid_result (1234 elements mismatched, max abs error 0.5)", out)
        self.assertIn("1234 of 4096 elements differ", out)

    def test_every_status_but_ok_and_compiled_fails(self):
        for status in ("launch_error", "compile_error", "timeout"):
            with self.subTest(status=status):
                self.db = os.path.join(self.dir, f"{status}.db")  # a fresh copy (WAL: never copy over a used one)
                shutil.copy(FIXTURE, self.db)
                self.add("ffn_gated", "swiglu", "wgmma_ws", status, message="boom")
                rc, out = self.run_check()
                self.assertEqual(rc, 1, out)
                self.assertIn(f"| {status} | boom", out)

    def test_a_library_launch_error_passes_only_where_its_kernel_is_wrong_results_only(self):
        self.add("linear", "fwd", "", "launch_error", message="cuBLASLt offers 3 algorithms")
        self.assertEqual(self.run_check()[0], 1)
        rc, out = self.run_check("--wrong-results-only", "linear/fwd")
        self.assertEqual(rc, 0, out)
        self.assertIn("linear/fwd launch_error 1", out)

    def test_a_library_wrong_result_fails_even_where_its_kernel_is_wrong_results_only(self):
        self.add("linear", "fwd", "", "invalid_result", 7, 2.0)
        rc, out = self.run_check("--wrong-results-only", "linear/fwd")
        self.assertEqual(rc, 1, out)
        self.assertIn("linear/fwd | ", out)

    def test_wrong_results_only_leaves_other_kernels_strict(self):
        self.add("gemm_act", "gelu", "skinny", "launch_error")
        rc, out = self.run_check("--wrong-results-only", "linear/fwd")
        self.assertEqual(rc, 1, out)

    def test_at_most_thirty_failures_are_listed(self):
        for i in range(31):
            self.add("op", f"v{i:02d}", "", "timeout")
        rc, out = self.run_check()
        self.assertEqual(rc, 1, out)
        self.assertIn("31 measurements FAILED", out)
        self.assertIn("... and 1 more", out)
        self.assertNotIn("op/v30 |", out)

    def test_a_missing_database_fails(self):
        rc, out = self.run_check(db=os.path.join(self.dir, "absent.db"))
        self.assertEqual(rc, 1, out)
        self.assertIn("absent.db", out)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    MAKE_FIXTURE = sys.argv.pop(1)
    unittest.main()
