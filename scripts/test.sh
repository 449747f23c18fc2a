#!/usr/bin/env bash
# Quick start, second command: installs what is missing, checks the
# sources' layout, builds, and runs every test in the release build, then
# the ASan+UBSan build, then the TSan build, a short run of every fuzz
# target, and a short run of every benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)

# The layout of the sources first: it takes seconds, the builds minutes.
scripts/format.sh --check

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

# libshmkv as a user gets it: installed, found with pkg-config, linked
# shared and static.
inst=$(mktemp -d)
trap 'rm -rf "$inst"' EXIT
cmake --install build --prefix "$inst" >/dev/null
export PKG_CONFIG_PATH=$(dirname "$(find "$inst" -name shmkv.pc)")
cc -Wall -Werror -o "$inst/ex" client/example.c $(pkg-config --cflags --libs shmkv) -Wl,-rpath,"$(pkg-config --variable=libdir shmkv)"
cc -Wall -Werror -o "$inst/ex-static" client/example.c $(pkg-config --cflags shmkv) \
    "$(find "$inst" -name libshmkv.a)" $(pkg-config --static --libs shmkv | sed 's/-lshmkv//')
unset PKG_CONFIG_PATH
echo "libshmkv: installed, linked shared and static with pkg-config"

# Sanitizers: everything but the benchmarks, under ASan+UBSan.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSHMKV_SANITIZE=ON -DSHMKV_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan --output-on-failure -j"$jobs"

# ThreadSanitizer for the concurrent parts (write-back's flusher thread, in
# unit tests and in shmkvd under the integration tests). Reports from inside
# Debian's uninstrumented librocksdb are suppressed (tests/tsan.supp). Left
# out: the fuzz test, and test_scr_libs, single-threaded code whose
# malformed-input rounds recurse as deep as Lua's stack allows (as Redis's
# libraries do), past what TSan can record of a stack.
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DSHMKV_TSAN=ON -DSHMKV_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$jobs"
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/tsan.supp" \
    ctest --test-dir build-tsan --output-on-failure -j"$jobs" -E 'test_fuzz|test_scr_libs'

# Coverage-guided fuzzing (tests/fuzz/): every target built with clang's
# libFuzzer under ASan+UBSan, each run briefly from its seed corpus. A
# crash fails the run and leaves its input in build-fuzz/findings.
CC=clang cmake -S . -B build-fuzz -DSHMKV_FUZZ=ON -DSHMKV_TESTS=OFF -DSHMKV_BENCH=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_targets
mkdir -p build-fuzz/findings
FUZZ_ARTIFACTS=build-fuzz/findings tests/fuzz/run.sh build-fuzz 15

# The benchmarks must keep working: a small run, figures not judged.
build/bench/storage_bench --quick >/dev/null
build/bench/evict_bench --quick >/dev/null
report=$(mktemp -d)
bench/report.sh --quick --out "$report"
rm -rf "$report"
bench/thread_cpu.sh --requests 20000 --rounds 1 >/dev/null
echo "bench: storage_bench, evict_bench, the report (bench/report.sh) --quick and thread_cpu.sh ran"
