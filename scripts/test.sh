#!/usr/bin/env bash
# Quick start, second command: installs what is missing, builds, and runs
# every test — the release build, then the ASan+UBSan build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

# Sanitizers: everything but the benchmarks, under ASan+UBSan.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSHMKV_SANITIZE=ON -DSHMKV_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan --output-on-failure -j"$jobs"

# The benchmarks must keep working: a small run, figures not judged.
build/bench/storage_bench --quick >/dev/null
echo "bench: storage_bench --quick ran"
