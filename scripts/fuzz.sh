#!/usr/bin/env bash
# Builds the libFuzzer targets of the search-space loader and the expression evaluator with clang (AddressSanitizer
# and UndefinedBehaviorSanitizer on), then fuzzes each for FUZZ_SECONDS (default 60) from the committed seeds.
#   scripts/fuzz.sh [TARGET...]        targets: space_loader expression (default: both)
#   FUZZ_SECONDS=600 scripts/fuzz.sh   longer runs;   FUZZ_SECONDS=0 replays the seeds only (a regression check)
#   FUZZ_BUILD=dir                     where to build and keep the growing corpus (default: build-fuzz)
# Seeds: tests/fuzz/corpus/<target>/ (committed, including reproducers of fixed findings), plus, for the loader,
# tests/data/spaces/{good,bad}/ and search_spaces/. New interesting inputs go to $FUZZ_BUILD/corpus/<target>/, never
# into the source tree. A finding (crash, sanitizer report, leak, timeout, any exception but ktune::Error) fails the
# script and leaves the reproducer in $FUZZ_BUILD/artifacts/<target>/; run the printed command to reproduce it, fix
# the bug, and commit the reproducer to tests/fuzz/corpus/<target>/.
# Needs clang and libFuzzer (Debian: clang, libclang-rt-14-dev; installed when missing) and the packages of setup.sh;
# no CUDA.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-60}
targets=("$@")
((${#targets[@]})) || targets=(space_loader expression)

packages=(clang libclang-rt-14-dev libyaml-cpp-dev libmuparser-dev libfmt-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "ktune fuzz: installing missing Debian packages: ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
cxx=${FUZZ_CXX:-clang++}
command -v "$cxx" >/dev/null || { echo "ktune fuzz: $cxx not found" >&2; exit 1; }

# The library code under test (tuner/space and tuner/core, as the ktune_space module builds it) is instrumented for
# coverage and the sanitizers; Debian's yaml-cpp and muParser (built with g++, same libstdc++) are linked as they are.
flags=(-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
       -I"$root" $(pkg-config --cflags yaml-cpp muparser fmt 2>/dev/null || true))
libs=($(pkg-config --libs yaml-cpp muparser fmt 2>/dev/null || echo -lyaml-cpp -lmuparser -lfmt))
mkdir -p "$build/obj"
objects=()
for src in "$root"/core/*.cpp "$root"/tuner/space/*.cpp; do
  obj="$build/obj/$(basename "$(dirname "$src")")_$(basename "${src%.cpp}").o"
  # Rebuild when the source or any header of the two modules is newer than the object.
  if [ ! -f "$obj" ] || [ -n "$(find "$src" "$root"/core "$root"/tuner/space -name '*.[hc]pp' -newer "$obj" | head -1)" ]; then
    "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
  fi
  objects+=("$obj")
done

failed=()
for t in "${targets[@]}"; do
  src="$root/tests/fuzz/fuzz_$t.cpp"
  [ -f "$src" ] || { echo "ktune fuzz: no target $t ($src)" >&2; exit 2; }
  bin="$build/fuzz_$t"
  "$cxx" "${flags[@]}" -fsanitize=fuzzer "$src" "${objects[@]}" "${libs[@]}" -o "$bin"

  seeds=("$root/tests/fuzz/corpus/$t")
  [ "$t" = space_loader ] && seeds+=("$root/tests/data/spaces/good" "$root/tests/data/spaces/bad" "$root/search_spaces")
  mkdir -p "$build/corpus/$t" "$build/artifacts/$t"
  opts=(-timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1
        -artifact_prefix="$build/artifacts/$t/" -dict="$root/tests/fuzz/dict/$t.dict")
  if [ "$seconds" -gt 0 ]; then
    echo "ktune fuzz: $t for ${seconds} s"
    run=("$bin" "${opts[@]}" -max_total_time="$seconds" "$build/corpus/$t" "${seeds[@]}")
  else
    echo "ktune fuzz: $t, replaying the seeds"
    run=("$bin" "${opts[@]}" -runs=0 "${seeds[@]}")
  fi
  log="$build/fuzz_$t.log"
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
       "${run[@]}" >"$log" 2>&1; then
    grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" | sed "s/^/  $t: /" || true
  else
    failed+=("$t")
    echo "ktune fuzz: $t FOUND A PROBLEM; the end of $log:" >&2
    tail -n 60 "$log" >&2
    for a in "$build/artifacts/$t"/*; do
      [ -e "$a" ] && echo "  reproduce: $bin $a" >&2
    done
  fi
done
if ((${#failed[@]})); then
  echo "ktune fuzz: findings in: ${failed[*]}" >&2
  exit 1
fi
echo "ktune fuzz: no findings (${targets[*]}; ${seconds} s each)"
