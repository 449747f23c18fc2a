#!/usr/bin/env bash
# Quick start, first command: installs what is missing, builds everything and
# starts shmkvd in the foreground on its embedded defaults (port 6380, data in
# ./data). Extra arguments go to shmkvd: scripts/run.sh --port 7777
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
exec build/daemon/shmkvd "$@"
