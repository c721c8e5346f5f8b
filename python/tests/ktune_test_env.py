"""What the Python tests share: the source tree, the build's fixture database writer, a temporary folder."""
import os
import subprocess
import tempfile
import unittest

SOURCE_ROOT = os.environ.get("KTUNE_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("KTUNE_BUILD_DIR", os.path.join(SOURCE_ROOT, "build"))
T1_FIXTURE = os.path.join(SOURCE_ROOT, "tests", "data", "t1", "vector_add.t1.json")


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory(prefix="ktune-python-test-")
        self.dir = self._dir.name

    def tearDown(self):
        self._dir.cleanup()

    def fixture_db(self):
        """The package test's database: rmsnorm/fwd tuned on two H100 models (tests/package/make_fixture_db.cpp)."""
        db = os.path.join(self.dir, "results.db")
        subprocess.run([os.path.join(BUILD_DIR, "tests", "ktune_package_fixture"), db], check=True)
        return db
