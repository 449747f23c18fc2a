#!/usr/bin/env bash
# build.sh DEST — the Node binding installed as a user installs it, in DEST
# (made afresh): the package's files copied there, then `npm ci` (npm
# install where there is no lockfile), whose install step builds the addon
# with node-gyp against libshmkv found by pkg-config (PKG_CONFIG_PATH must
# find shmkv.pc) and the running Node's own headers. DEST then holds
# index.js, bench-reader.js, test/ and node_modules/.
# Exit 77: a tool it needs is missing; 1: the build failed.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: build.sh DEST" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
dest=$1

skip() { echo "client/node: SKIP: $*"; exit 77; }
for t in node npm pkg-config python3 make c++; do
    command -v "$t" >/dev/null || skip "$t is not installed"
done
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
    skip "Node $(node --version) is older than 20 (ioredis 6 needs 20)"
prefix=$(node -p 'require("path").resolve(process.execPath, "../..")')
[ -f "$prefix/include/node/node_api.h" ] ||
    skip "no Node headers in $prefix/include/node (Debian: libnode-dev)"
pkg-config --exists shmkv ||
    { echo "client/node: pkg-config does not find shmkv (set PKG_CONFIG_PATH)" >&2; exit 1; }

rm -rf "$dest"
mkdir -p "$dest"
# The package's own files, not a node_modules/ or build/ left in the source.
cp -r "$here"/package.json "$here"/.npmrc "$here"/binding.gyp "$here"/build-addon.js \
    "$here"/index.js "$here"/bench-reader.js "$here"/src "$here"/test "$dest"/
[ -f "$here/package-lock.json" ] && cp "$here/package-lock.json" "$dest"/
cd "$dest"
npm_flags=(--no-audit --no-fund --include=dev --prefer-offline --loglevel=error)
start=$SECONDS
if [ -f package-lock.json ]; then
    npm ci "${npm_flags[@]}"
else
    npm install "${npm_flags[@]}"
fi
[ -f build/Release/shmkv.node ] || { echo "client/node: no addon was built" >&2; exit 1; }
echo "client/node: npm ci and the addon's build took $((SECONDS - start)) s"
