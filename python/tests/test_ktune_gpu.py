"""The Python module on a GPU (label gpu): tune a T1 file, then read its best configuration back."""
import unittest

import ktune
from ktune_test_env import SOURCE_ROOT, T1_FIXTURE, TempDirTest


class TuneOnGpuTest(TempDirTest):
    def test_a_t1_kernel_tunes_validated_and_its_best_is_stored(self):
        paths = ktune.Paths(root=SOURCE_ROOT, db=self.dir + "/r.db", cache_dir=self.dir + "/cache")
        result = ktune.tune(T1_FIXTURE, paths=paths, budget=6)
        if result.no_gpu_reason:
            self.skipTest(result.no_gpu_reason)
        self.assertEqual(result.status_counts.get("invalid_result", 0), 0)
        self.assertEqual(len(result.best), 1)
        stored = ktune.best("vector_add", paths=paths)
        self.assertEqual([b.config for b in stored], [result.best[0].config])


if __name__ == "__main__":
    unittest.main()
