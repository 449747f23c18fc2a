#!/usr/bin/env bash
# The arrows inside a folder, which include directories cannot draw: each
# file's quoted includes must name headers its layer may use
# (docs/architecture.md, "Module layering"). Prints each include
# that crosses one and exits 1; exits 0 when there is none.
set -euo pipefail
cd "$(dirname "$0")/../.."

# allowed PATTERN for files matching GLOB: the headers (a regex) they may
# include with quotes.
bad=0
check() { # check FILES... -- REGEX
    local files=() re
    while [ "$1" != -- ]; do files+=("$1"); shift; done
    re=$2
    for f in "${files[@]}"; do
        [ -f "$f" ] || continue
        while IFS= read -r line; do
            h=$(sed -E 's/^#include "([^"]+)".*/\1/' <<<"$line")
            if ! grep -qE "^($re)\$" <<<"$h"; then
                echo "layering: $f includes \"$h\", outside its arrows" >&2
                bad=1
            fi
        done < <(grep -E '^#include "' "$f" || true)
    done
}
kv='kv_[a-z0-9]+\.h'
check storage/kv_*.[ch] -- "$kv"
check storage/enc.[ch] -- "$kv|enc\.h"
check storage/stor*.[ch] storage/wb*.[ch] -- "$kv|enc\.h|stor(_int)?\.h|wb_(int|ov)\.h"
check storage/db*.[ch] storage/hll.[ch] -- "$kv|enc\.h|stor\.h|db(_int)?\.h|hll\.h"
check shm/shmc_r.[ch] -- "$kv|shmc_(layout|err|r)\.h"
check shm/shmc_w.[ch] shm/shmc_layout.h shm/shmc_err.h -- "$kv|shmc_(layout|err|w)\.h"
check client/*.[ch] -- "$kv|enc\.h|shmc_(layout|err|r)\.h|shmkv\.h"
# RocksDB's API belongs to the engine alone.
for f in $(grep -lE '#include <rocksdb/' storage/*.[ch] shm/*.[ch] client/*.[ch] daemon/*.[ch] || true); do
    case "$f" in storage/stor*|storage/wb*) ;; *) echo "layering: $f includes RocksDB's API" >&2; bad=1 ;; esac
done
exit $bad
