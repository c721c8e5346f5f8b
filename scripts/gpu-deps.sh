#!/usr/bin/env bash
# For a GPU host that has the CUDA toolkit and most build dependencies but no network, and lacks SQLite's headers and
# muParser: unpacks those Debian packages (downloaded here, not installed) into a folder of the working tree that git
# ignores, so that the folder travels with the tree and CMake finds them there.
#   scripts/gpu-deps.sh [DEST] [EXTRA_DEBIAN_PACKAGE...]      (default DEST: .gpu-deps, in the repository root)
# Then on the GPU host, from the repository root:
#   cmake -S . -B build-gpu -G Ninja -DCMAKE_PREFIX_PATH=$PWD/.gpu-deps/usr -DKTUNE_BUILD_BENCH=OFF
#   cmake --build build-gpu --target ktune ktune-worker
# Binaries built that way find muParser's library in DEST through their build-tree RPATH: keep DEST beside them.
# Needs apt-get (run `apt-get update` once if it cannot find the packages) and dpkg-deb; no root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-.gpu-deps}
(($# == 0)) || shift
# -dev packages hold the headers, CMake files and the unversioned .so link; the runtime packages what that link names.
packages=(libsqlite3-dev libsqlite3-0 libmuparser-dev libmuparser2v5 "$@")

case $dest in
  /*) ;;
  *) dest=$root/$dest ;;
esac
if [ "$(git -C "$root" check-ignore -q "$dest/" && echo yes)" != yes ]; then
  echo "ktune gpu-deps: $dest is not ignored by git; choose a folder that is (e.g. .gpu-deps, see .gitignore)" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 777 "$tmp"  # apt-get download runs as the _apt user where it can, who must be able to write here
if ! (cd "$tmp" && apt-get download "${packages[@]}" >/dev/null); then
  echo "ktune gpu-deps: apt-get download ${packages[*]} failed (run 'apt-get update' once first?)" >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$dest"; done

for f in usr/include/sqlite3.h usr/include/muParser.h; do
  [ -e "$dest/$f" ] || { echo "ktune gpu-deps: $f is missing from $dest" >&2; exit 1; }
done
ls "$dest"/usr/lib/*/cmake/muparser/muparserConfig.cmake >/dev/null 2>&1 \
  || { echo "ktune gpu-deps: muParser's CMake package is missing from $dest" >&2; exit 1; }

echo "ktune gpu-deps: $dest ($(du -sh "$dest" | cut -f1)): ${packages[*]}"
echo "send it with the working tree, then on the GPU host: cmake ... -DCMAKE_PREFIX_PATH=\$PWD/${dest#"$root"/}/usr"
