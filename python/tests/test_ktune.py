"""The Python module on a machine without a GPU: spaces, configurations, stored results, export, compile-only."""
import os
import unittest

import ktune
from ktune_test_env import SOURCE_ROOT, T1_FIXTURE, TempDirTest


class SpaceTest(unittest.TestCase):
    def test_a_space_loads_by_name_with_its_problems_and_configurations(self):
        space = ktune.Space.load("rmsnorm", root=SOURCE_ROOT)
        self.assertEqual((space.op, space.variant), ("rmsnorm", "fwd"))
        problems = space.problems()
        self.assertIn("bf16:M=16,H=4096", problems)
        configs = space.configurations("bf16:M=16,H=4096")
        self.assertTrue(configs)
        self.assertIn("BLOCK=", configs[0])

    def test_parameters_say_their_kind_and_values(self):
        space = ktune.Space.load(os.path.join(SOURCE_ROOT, "examples", "user_op", "bias_gelu.yaml"))
        self.assertEqual(space.kernels(), ["flat", "rows"])
        kinds = {p.name: (p.kind, p.values) for p in space.parameters("flat")}
        self.assertEqual(kinds["FAST"], ("bool", ["false", "true"]))
        self.assertEqual(kinds["LOAD"], ("choice", ["cached", "streaming"]))

    def test_a_t1_file_loads_as_a_space(self):
        space = ktune.Space.load(T1_FIXTURE)
        self.assertEqual(space.op, "vector_add")
        self.assertEqual(len(space.configurations(space.problems()[0])), 17)

    def test_bad_input_is_a_value_error_naming_the_file(self):
        with self.assertRaises(ktune.BadInput) as caught:
            ktune.Space.load(os.path.join(SOURCE_ROOT, "no_such_space.yaml"))
        self.assertIsInstance(caught.exception, ValueError)
        self.assertIn("no_such_space.yaml", str(caught.exception))


class ResultsTest(TempDirTest):
    def test_best_reads_the_database_per_device(self):
        db = self.fixture_db()
        rows = ktune.best("rmsnorm/fwd", "H100 PCIe", db=db)
        self.assertEqual(len(rows), 2)
        self.assertEqual(rows[0].config, "BLOCK=256,VEC=4,UNROLL=8,ROWS_PER_BLOCK=2")
        self.assertGreater(rows[0].time_us, 0)
        self.assertEqual(len(ktune.best("rmsnorm", db=db)), 12)  # both devices

    def test_export_writes_the_header(self):
        db = self.fixture_db()
        header = ktune.export_header("rmsnorm", out_dir=os.path.join(self.dir, "generated"),
                                     paths=ktune.Paths(root=SOURCE_ROOT, db=db))
        self.assertEqual(header.function, "ktune_tuned::rmsnorm_fwd")
        self.assertTrue(os.path.isfile(header.path))

    def test_a_compile_only_tuning_compiles_the_t1_kernel_with_its_defines(self):
        seen = []
        result = ktune.tune(T1_FIXTURE, compile_only=True, configs=["block_size_x=128,tile_size_x=2"],
                            paths=ktune.Paths(root=SOURCE_ROOT, db=os.path.join(self.dir, "r.db"),
                                              cache_dir=os.path.join(self.dir, "cache")),
                            progress=seen.append)
        self.assertTrue(result.compile_only)
        self.assertEqual((result.compiled, result.compile_failed), (2, 0), result.compile_errors)  # with the reference
        self.assertTrue(seen)


if __name__ == "__main__":
    unittest.main()
