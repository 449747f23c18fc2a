#!/usr/bin/env bash
# Tests the Go binding against a real shmkvd:  bash client/go/test.sh BUILD_DIR
#
# Installs libshmkv from BUILD_DIR into a temporary prefix, builds the
# binding against it through pkg-config (as a user would), and runs go vet
# and go test (the binding, then the bench reader). Everything it writes
# (Go's caches, daemons' directories) lives in one temporary directory,
# removed at the end. Exits 77 when a tool it needs is missing.
set -euo pipefail

build=${1:?usage: test.sh BUILD_DIR}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

skip() {
    echo "client/go: skipped: $*" >&2
    exit 77
}
command -v go >/dev/null || skip "no go toolchain (Debian: golang-go)"
command -v pkg-config >/dev/null || skip "no pkg-config (Debian: pkg-config)"
command -v cc >/dev/null || skip "no C compiler for cgo (Debian: gcc)"
command -v cmake >/dev/null || skip "no cmake to install libshmkv"
[ -x "$build/daemon/shmkvd" ] || {
    echo "client/go: no $build/daemon/shmkvd: build the project first" >&2
    exit 1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shmkv-go.XXXXXX")
cleanup() {
    # Daemons a killed test left behind: only ours, which run in $tmp.
    local pids
    pids=$(pgrep -f -- "$tmp/" || true)
    if [ -n "$pids" ]; then
        kill $pids 2>/dev/null || true
        sleep 1
    fi
    # A killed daemon leaves its write-back journal folder (in /dev/shm),
    # named by the journal-shm file of its data directory.
    local f j
    while IFS= read -r f; do
        j=$(head -n 1 "$f")
        case $(basename -- "$j") in shmkv-journal-*) rm -rf -- "$j" ;; esac
    done < <(find "$tmp" -name journal-shm -type f 2>/dev/null)
    rm -rf "$tmp"
}
trap cleanup EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pc=$(find "$tmp/prefix" -name shmkv.pc | head -n 1)
[ -n "$pc" ] || {
    echo "client/go: cmake --install wrote no shmkv.pc" >&2
    exit 1
}
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
pkg-config --exists shmkv ||
    skip "pkg-config cannot resolve shmkv (its Requires.private needs hiredis: Debian libhiredis-dev)"
libdir=$(pkg-config --variable=libdir shmkv)

# Go's module proxy is not used (the binding needs the standard library
# only); its caches go to the temporary directory.
export GOPROXY=off GOFLAGS=-mod=mod GOENV=off GO111MODULE=on CGO_ENABLED=1
export GOCACHE="$tmp/gocache" GOPATH="$tmp/gopath" TMPDIR="$tmp"
export CGO_LDFLAGS="-Wl,-rpath,$libdir"
export SHMKVD="$build/daemon/shmkvd"

cd "$here"
go vet ./...
go test -count=1 -timeout 240s ./...
echo "client/go: ok"
