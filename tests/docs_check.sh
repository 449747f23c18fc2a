#!/usr/bin/env bash
# The documents against the tree: every source file, script or document
# README.md and docs/ name in backticks or link to exists; and they carry
# no dates, work-period numbers or commit hashes (bench/results/ holds the
# dated figures) and point at nothing outside the repository. Prints each
# finding and exits 1; exits 0 when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
say() { echo "docs: $*" >&2; bad=1; }
docs=(README.md docs/*.md)
mapfile -t tracked < <(git ls-files)
declare -A have base
for f in "${tracked[@]}"; do
    have[$f]=1
    base[${f##*/}]=1
done
exists() { # a path, or a bare file name anywhere in the tree
    local p=$1
    if [[ $p == */* ]]; then
        [ -n "${have[$p]:-}" ] || [ -d "$p" ]
    else
        [ -n "${base[$p]:-}" ]
    fi
}
for d in "${docs[@]}"; do
    dir=$(dirname "$d")
    # `name.c`, `storage/name.[ch]`, `scripts/x.sh`: files in backticks
    while IFS= read -r tok; do
        tok=${tok#\`}
        tok=${tok%\`}
        case "$tok" in
        *'.[ch]') exists "${tok%'.[ch]'}.c" || exists "${tok%'.[ch]'}.h" || say "$d names $tok, which does not exist" ;;
        *) exists "$tok" || say "$d names $tok, which does not exist" ;;
        esac
    done < <(grep -oE '`[A-Za-z0-9_./-]+\.(c|h|\[ch\]|sh|md|conf)`' "$d" | grep -vE '^`(/|\.\./)' | sort -u)
    # [text](path): links to files of the repository
    while IFS= read -r link; do
        link=${link#*](}
        link=${link%)}
        link=${link%%#*}
        [ -z "$link" ] && continue
        case "$link" in http*://*) continue ;; esac
        [ -e "$dir/$link" ] || say "$d links to $link, which does not exist"
    done < <(sed 's/`[^`]*`//g' "$d" | grep -oE '\]\([^)]+\)' | sort -u)
done
if grep -nE '(^|[^a-z])sessions?([^a-z]|$)|[0-9]{4}-[0-9]{2}-[0-9]{2}|`[0-9a-f]{7,12}`|\.\./shared|DESIGN\.md' "${docs[@]}"; then
    say "dated or narrative lines, commit hashes or outside references (above)"
fi
exit $bad
