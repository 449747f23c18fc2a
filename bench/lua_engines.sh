#!/usr/bin/env bash
# lua_engines.sh — the two Lua 5.1 interpreters Debian ships, PUC Lua 5.1
# (what shmkvd embeds, as Redis does) and LuaJIT 2.1, on the work scripts
# do, timed and compared for identical output, as a Markdown table.
#
#   bench/lua_engines.sh [--runs N] [--out FILE]
#
# Each case is a small Lua program run by each interpreter's command-line
# tool (lua5.1, luajit: Debian's packages of the same names), timed whole,
# median of N runs; and each case's output from the two is compared, since
# an engine that answers differently cannot replace Redis's. The cases:
# string building, table building and sorting, arithmetic, what a rate
# limiter or a queue script does between its redis.call()s (a few table
# and string operations), and walking a hash table with pairs(), whose
# order is the engine's own. The command-line tools are not the embedded
# engine, but they run the same interpreters.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5 out=""
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--out FILE]" >&2; exit 2 ;;
    esac
done
for t in lua5.1 luajit; do
    command -v "$t" >/dev/null || { echo "$0: $t missing (apt-get install lua5.1 luajit)" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/shmkv-lua-XXXXXX")
trap 'rm -rf "$work"' EXIT

declare -A CASE=(
    [strings]='local t = {} for i = 1, 2000000 do t[#t + 1] = tostring(i) .. ":" .. i % 7 end
local s = table.concat(t, ",") print(#s, s:sub(1, 40))'
    [tables]='local t = {} for i = 1, 1000000 do t[i] = (i * 7919) % 1000003 end
table.sort(t) local sum = 0 for i = 1, #t, 1000 do sum = sum + t[i] end print(sum)'
    [numbers]='local x = 0 for i = 1, 30000000 do x = x + (i % 13) * 0.5 end print(string.format("%.17g", x))'
    [script_glue]='local out = 0 for i = 1, 2000000 do
  local key = "rate:" .. (i % 1000) local args = {key, tostring(i), "60"}
  local n = tonumber(args[2]) if n % 2 == 0 then out = out + #args[1] end end print(out)'
    [pairs_order]='local t = {} for i = 1, 20 do t["k" .. i] = i end
local keys = {} for k in pairs(t) do keys[#keys + 1] = k end print(table.concat(keys, " "))'
    [tostring]='print(tostring(0.1), tostring(1/3), tostring(2^53), tostring(-0.0), 1e300 * 10, string.format("%.14g", 1/3))'
)
cases=(strings tables numbers script_glue pairs_order tostring)

time_ms() { # ENGINE FILE: milliseconds for one run
    local t0 t1
    t0=$(date +%s%N)
    "$1" "$2" >/dev/null
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2)) }'; }

{
    echo "## lua_engines — $(date +%F), $(nproc) CPUs, $runs runs"
    echo
    echo "$(lua5.1 -v 2>&1 | head -1 | cut -d' ' -f1-2) against $(luajit -v | cut -d' ' -f1-2): each case's whole run in ms,"
    echo "median of $runs (min–max), and whether the two print the same."
    echo
    echo "| case | Lua 5.1 ms | LuaJIT ms | LuaJIT ÷ Lua | same output |"
    echo "|---|---:|---:|---:|---|"
    for c in "${cases[@]}"; do
        printf '%s\n' "${CASE[$c]}" >"$work/$c.lua"
        declare -a pl=() jl=()
        for _ in $(seq 1 "$runs"); do
            pl+=("$(time_ms lua5.1 "$work/$c.lua")")
            jl+=("$(time_ms luajit "$work/$c.lua")")
        done
        p=$(printf '%s\n' "${pl[@]}" | median)
        j=$(printf '%s\n' "${jl[@]}" | median)
        pr="$p ($(printf '%s\n' "${pl[@]}" | sort -n | head -1)–$(printf '%s\n' "${pl[@]}" | sort -n | tail -1))"
        jr="$j ($(printf '%s\n' "${jl[@]}" | sort -n | head -1)–$(printf '%s\n' "${jl[@]}" | sort -n | tail -1))"
        ratio=$(awk -v a="$p" -v b="$j" 'BEGIN { printf "%.2f", a ? b / a : 0 }')
        if [ "$(lua5.1 "$work/$c.lua")" = "$(luajit "$work/$c.lua")" ]; then same=yes; else same=no; fi
        echo "| $c | $pr | $jr | $ratio | $same |"
    done
    echo
    echo "Where the output differs:"
    echo
    for c in "${cases[@]}"; do
        a=$(lua5.1 "$work/$c.lua" | tr '\t' ' ')
        b=$(luajit "$work/$c.lua" | tr '\t' ' ')
        [ "$a" = "$b" ] || echo "* $c: Lua 5.1 \`$a\`, LuaJIT \`$b\`"
    done
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
