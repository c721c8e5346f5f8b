#!/usr/bin/env bash
# Installs the Debian packages ktune needs when they are missing, then configures and builds it.
#   scripts/setup.sh [BUILD_DIR]      (default: build)
# Needs the CUDA toolkit (nvcc, NVRTC, CUPTI, driver API headers) under /usr/local/cuda or on PATH; needs no GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}

packages=(cmake ninja-build g++ pkg-config libfmt-dev libyaml-cpp-dev libsqlite3-dev libcli11-dev nlohmann-json3-dev
          libmuparser-dev libgtest-dev libgmock-dev libbenchmark-dev python3-dev pybind11-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ktune setup: installing missing Debian packages: ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
if ! command -v nvcc >/dev/null; then
  echo "ktune setup: the CUDA toolkit (nvcc, NVRTC, CUPTI) was not found; install it (e.g. under /usr/local/cuda)" >&2
  exit 1
fi

jobs=$(nproc)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${KTUNE_BUILD_TYPE:-RelWithDebInfo} ${KTUNE_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$jobs"
