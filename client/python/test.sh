#!/usr/bin/env bash
# test.sh BUILD_DIR — installs the Python binding as a user does (pip, no
# network, against libshmkv installed from BUILD_DIR and found with
# pkg-config) into a throwaway virtual environment, then runs its tests
# (pytest) against a real shmkvd from BUILD_DIR. Exit 77: a tool is missing.
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# Debian's interpreter: its python3-cffi, -redis and -pytest serve it.
py=/usr/bin/python3
for m in cffi redis pytest venv; do
    "$py" -c "import $m" 2>/dev/null || { echo "test.sh: $py lacks the module $m (python3-$m)"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/inst" >/dev/null
PKG_CONFIG_PATH=$(dirname "$(find "$tmp/inst" -name shmkv.pc)")
export PKG_CONFIG_PATH
"$py" -m venv --system-site-packages "$tmp/venv"
# pip builds in the source folder: a copy keeps the repository clean.
cp -r "$here" "$tmp/src"
rm -rf "$tmp/src/tests"
"$tmp/venv/bin/pip" install -q --no-build-isolation --no-index "$tmp/src"
cd "$tmp"
export PYTHONDONTWRITEBYTECODE=1
SHMKVD="$build/daemon/shmkvd" timeout 300 "$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider \
    --rootdir "$tmp" "$here/tests"
