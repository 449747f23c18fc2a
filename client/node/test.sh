#!/usr/bin/env bash
# test.sh BUILD_DIR — the Node binding's tests: libshmkv installed from
# BUILD_DIR into a temp prefix and found with pkg-config, the package built
# there as a user builds it (build.sh: npm ci, node-gyp), then node's test
# runner against real shmkvd daemons from BUILD_DIR (the tests start, restart
# and stop them by PID). Exit 77: a tool it needs is missing.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: test.sh BUILD_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
shmkvd=$build/daemon/shmkvd
[ -x "$shmkvd" ] || { echo "client/node: no $shmkvd (build first)" >&2; exit 1; }
command -v cmake >/dev/null || { echo "client/node: SKIP: cmake is not installed"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shmkv-node-XXXXXX")
cleanup() {
    # Daemons the tests left behind (a test process killed mid-run): each
    # test daemon's folder holds its PID.
    for f in "$tmp"/node-shmkvd-*/pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = shmkvd ]; then
            kill "$pid" 2>/dev/null || true
        fi
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
PKG_CONFIG_PATH=$(dirname "$(find "$tmp/prefix" -name shmkv.pc)")
export PKG_CONFIG_PATH

rc=0
bash "$here/build.sh" "$tmp/pkg" || rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
# The addon finds libshmkv by its rpath, as a user's would.
# (grep without -q: it would leave ldd a closed pipe, which pipefail counts.)
ldd "$tmp/pkg/build/Release/shmkv.node" | grep "$tmp/prefix/.*libshmkv" >/dev/null ||
    { echo "client/node: the addon does not load the installed libshmkv" >&2; exit 1; }

cd "$tmp/pkg"
SHMKVD=$shmkvd SHMKV_TEST_TMP=$tmp timeout 300 \
    node --test --test-timeout=120000 --test-reporter=spec test/*.test.js
