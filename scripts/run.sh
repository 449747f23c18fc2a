#!/usr/bin/env bash
# Quick start, first command: installs what is missing and builds
# everything. (It will start shmkvd on its embedded defaults once the
# daemon lands; until then it builds the storage engine, tests and benchmarks.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
if [ -x build/daemon/shmkvd ]; then
    exec build/daemon/shmkvd "$@"
fi
echo "built: build/tests/* (run scripts/test.sh) and build/bench/storage_bench"
