#!/usr/bin/env bash
# bundle.sh — the built benchmark binaries, redis-server's tools and the
# shared libraries they load, in one folder, to measure on a machine of the
# same architecture that has none of the packages (a larger machine lent
# for a while, say).
#
#   bench/bundle.sh DIR
#
# DIR gets build/ (shmkvd, kvtool, shm_bench, libshmkv, laid out as the
# bench scripts expect them), bin/ (redis-server, redis-benchmark,
# redis-cli), lib/ (every library those load, except the C runtime's own,
# which the other machine has in a version at least as new) and env.sh.
# There, from the repository root:
#
#   cp -r DIR/build . && . DIR/env.sh && bench/report.sh --prebuilt ...
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$(realpath -m "$1")
cd "$(dirname "$0")/.."

cmake --build build -j"$(nproc)" >/dev/null
rm -rf "$dir"
mkdir -p "$dir/build/daemon" "$dir/build/bench" "$dir/build/client" "$dir/bin" "$dir/lib"
cp build/daemon/shmkvd "$dir/build/daemon/"
cp build/bench/kvtool build/bench/shm_bench "$dir/build/bench/"
cp -P build/client/libshmkv.so* "$dir/build/client/"
for b in redis-server redis-benchmark redis-cli; do cp "$(command -v $b)" "$dir/bin/"; done
git rev-parse --short HEAD >"$dir/REV"

for f in "$dir"/build/daemon/* "$dir"/build/bench/* "$dir"/bin/*; do
    ldd "$f" | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
    case $(basename "$lib") in
    libc.so* | libm.so* | ld-linux* | libpthread.so* | libdl.so* | librt.so* | libstdc++.so* | libgcc_s.so*) ;;
    libshmkv.so*) ;;
    *) cp -L "$lib" "$dir/lib/" ;;
    esac
done

cat >"$dir/env.sh" <<'EOF'
# Sourced from the repository root: the bundle's programs and libraries first.
b=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH="$b/bin:$PATH"
export LD_LIBRARY_PATH="$b/lib:$PWD/build/client${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SHMKV_REV=$(cat "$b/REV")
EOF
du -sh "$dir" | awk '{ print "bundle: " $1 }'
