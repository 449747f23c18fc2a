#!/usr/bin/env bash
# soak.sh [--minutes N] [--kills] [--out FILE] — the soak: shmkvd under mixed load
# (redis-benchmark, two writers whose every acknowledged write is recorded,
# two readers through shared memory), killed with kill -9 or SIGTERM and
# restarted at random moments, with BGSAVE, CONFIG SET of buffer limits and
# full-disk episodes in between; the first half under appendfsync everysec,
# the second under always. After each restart every acknowledged value must
# be there; no read may be torn or go backwards; RSS must stay under its
# bound. 30 minutes by default; bench/soak.py says how. --kills: every
# event is a kill -9, every 1.5 to 4 s (the kill cycles under each fsync
# policy, under the same load). Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=30 out="" mode=mixed
while [ $# -gt 0 ]; do
    case "$1" in
    --minutes) minutes=$2; shift ;;
    --out) out=$2; shift ;;
    --kills) mode=kills ;;
    *) echo "usage: $0 [--minutes N] [--kills] [--out FILE]" >&2; exit 2 ;;
    esac
    shift
done
[ -x build/daemon/shmkvd ] || { echo "soak: build first (cmake --build build)" >&2; exit 1; }
command -v redis-benchmark >/dev/null || { echo "soak: redis-benchmark is needed (scripts/deps.sh)" >&2; exit 1; }

. bench/lib.sh
bench_init soak
cleanup_soak() {
    # A journal folder in /dev/shm that a killed run of the daemon left.
    j=$(head -n 1 "$work/data/journal-shm" 2>/dev/null || true)
    case $(basename -- "${j:-none}") in shmkv-journal-*) rm -rf -- "$j" ;; esac
    bench_cleanup
}
trap cleanup_soak EXIT

# The readers read through the Python binding, installed as a user installs it.
cmake --install build --prefix "$work/inst" >/dev/null
PKG_CONFIG_PATH=$(dirname "$(find "$work/inst" -name shmkv.pc)")
export PKG_CONFIG_PATH
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
cp -r client/python "$work/py-src"
"$work/venv/bin/pip" install -q --no-build-isolation --no-index "$work/py-src"
cp bench/soak.py "$work/"
# Its own copy of the daemon: a rebuild during the run must not change it.
cp build/daemon/shmkvd "$work/shmkvd"

table="$work/table.md"
rc=0
(cd "$work" && "$work/venv/bin/python" soak.py "$work/shmkvd" "$work" "$minutes" "$table" "$mode") || rc=$?
{
    echo "## soak — $(date -u +%Y-%m-%d), $(nproc) CPUs, $minutes minutes, $mode"
    echo
    if [ "$mode" = kills ]; then
        echo "bench/soak.sh --minutes $minutes --kills: the same load, and a kill -9 and restart"
        echo "every 1.5 to 4 s; appendfsync everysec for the first half, always for the second."
    else
        echo "bench/soak.sh --minutes $minutes: mixed load, kill -9 and SIGTERM restarts at random"
        echo "moments (every 3 to 10 s), BGSAVE, CONFIG SET of buffer limits and full-disk episodes;"
        echo "appendfsync everysec for the first half, always for the second."
    fi
    echo
    cat "$table"
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
exit "$rc"
