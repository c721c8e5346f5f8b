#!/usr/bin/env bash
# Configures and builds ktune, ktune-worker and libktune with CMake 4 (from PyPI, in a virtual environment), tests
# and benchmarks off, in a build folder of its own, then installs it and builds the package test's consumer against the
# installed package with CMake 4 (tests/package/run.cmake, without running it: that needs the tests' fixture). The GPU host runs CMake 4 and Debian's CMake is 3.25: this keeps the
# project building under both (CMake 4's FindCUDAToolkit lists two include folders, and its FindSQLite3 renamed its
# target).
#   scripts/cmake4_check.sh [BUILD_DIR]      (default: build-cmake4)
#   CMAKE4_SPEC='cmake>=4,<5'                which CMake to install (a pip requirement)
#   CMAKE4_VENV=DIR                          where the virtual environment lives (default: BUILD_DIR/venv)
# Needs Python 3 with venv and pip, PyPI, Ninja, the CUDA toolkit and the Debian packages of scripts/setup.sh
# (run that first, as .ci/run does through scripts/test.sh). A pip or build failure fails the script.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-cmake4}
venv=${CMAKE4_VENV:-$build/venv}
spec=${CMAKE4_SPEC:-cmake>=4,<5}

if [ ! -x "$venv/bin/cmake" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet "$spec"
fi
cmake4="$venv/bin/cmake"
version=$("$cmake4" --version | sed -n '1s/^cmake version //p')
case $version in
  4.*) ;;
  *) echo "ktune cmake4: expected CMake 4.x, got '$version' from $cmake4" >&2; exit 1 ;;
esac
echo "ktune cmake4: CMake $version"

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
"$cmake4" -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${KTUNE_BUILD_TYPE:-RelWithDebInfo} \
  -DKTUNE_BUILD_TESTS=OFF -DKTUNE_BUILD_BENCH=OFF ${KTUNE_CMAKE_ARGS:-} >/dev/null
targets=(ktune ktune-worker ktune_api)
# The Python module, where pybind11 and Python's headers are found: the install needs it built.
if "$cmake4" --build "$build" --target help | grep -q '^ktune_python:'; then targets+=(ktune_python); fi
"$cmake4" --build "$build" -j "$(nproc)" --target "${targets[@]}"
"$build/ktune" --help >/dev/null
"$cmake4" -DBUILD_DIR="$build" -DSOURCE_DIR="$root" -DWORK_DIR="$build/package" -DGENERATOR=Ninja \
  -P "$root/tests/package/run.cmake"
echo "ktune cmake4: ${targets[*]} built, installed and found by a consumer with CMake $version in $build"
