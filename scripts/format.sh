#!/usr/bin/env bash
# Lays out every tracked .c and .h file as .clang-format says; with --check,
# changes nothing and fails, naming the files, where one is laid out
# otherwise (CI runs that, through scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format: clang-format is not installed (scripts/deps.sh)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = --check ]; then
    bad=()
    for f in "${files[@]}"; do
        clang-format --dry-run --Werror "$f" 2>/dev/null || bad+=("$f")
    done
    if [ ${#bad[@]} -gt 0 ]; then
        echo "format: not laid out as .clang-format says (run scripts/format.sh): ${bad[*]}" >&2
        exit 1
    fi
    echo "format: ${#files[@]} files laid out as .clang-format says"
else
    clang-format -i "${files[@]}"
fi
