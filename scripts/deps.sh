#!/usr/bin/env bash
# Installs the Debian 12 packages shmkv builds, tests and benchmarks with,
# skipping those already present. Safe to run again; needs root or sudo.
# The compression libraries come with librocksdb-dev anyway; they are named
# because the release build links librocksdb.a and them directly. The last
# line is for the Debian packages and their test (tests/dist/): cpack's
# dpkg-shlibdeps and file(1), debootstrap for a fresh Debian 12 root, and
# systemd-analyze to verify the unit. redis-py and the Prometheus exporter
# are programs that run scripts, which a test drives against shmkvd. The
# last lines build and test libshmkv's bindings (client/python, client/go,
# client/node; the Node.js packages come from npm), and clang with its
# libFuzzer runtime builds the fuzz targets (tests/fuzz/).
set -euo pipefail

PKGS=(build-essential cmake pkg-config clang-format
      librocksdb-dev libck-dev libjemalloc-dev libhiredis-dev libcmocka-dev
      libsnappy-dev zlib1g-dev libbz2-dev liblz4-dev libzstd-dev
      redis-server redis-tools redis-sentinel gnuplot-nox
      dpkg-dev file debootstrap systemd
      liblua5.1-0-dev lua-cjson-dev lua-bitop-dev libssl-dev openssl
      python3-redis prometheus-redis-exporter
      python3-cffi python3-pytest python3-venv python3-setuptools python3-wheel python3-dev
      golang-go clang libclang-rt-14-dev)

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js: a machine's own (with its npm and headers) when it has one;
# otherwise Debian's nodejs, npm and libnode-dev (the headers).
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ -e /usr/include/node/node_api.h ] || missing+=(libnode-dev)
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
