#!/usr/bin/env bash
# walk_bench.sh — the first walks right after a burst of writes, against
# redis-server and shmkvd, same machine, same run, as a Markdown table of
# medians (docs/writeback.md, "The overlay").
#
#   bench/walk_bench.sh [--burst N] [--runs R] [--out FILE] [SERVER ...]
#
# SERVER: redis, shmkvd, or shmkvd@BIN to run the shmkvd binary BIN (an
# older build, say) beside this tree's (default: redis shmkvd). Each run
# starts every server afresh, makes a sorted set and a hash of 300 members
# each and waits until shmkvd's write-back has nothing pending, then
# writes a burst of N SETs (default 300,000; redis-benchmark -t set -r
# 1000000 -c 50 -P 16) and at once runs each command below once, one
# client. A shmkvd walk (an iterator's first seek) links the overlay's
# records still waiting for the order, and every other client waits for
# it. The table gives each command's time inside the server, from INFO
# commandstats (reset before the commands: no client or connection
# time), median over the runs. Loopback only; each server is stopped by
# its PID and its folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."

burst=300000 runs=5 out="" servers=()
while [ $# -gt 0 ]; do
    case "$1" in
    --burst) burst=$2; shift ;;
    --runs) runs=$2; shift ;;
    --out) out=$2; shift ;;
    redis | shmkvd | shmkvd@?*) servers+=("$1") ;;
    *) echo "usage: $0 [--burst N] [--runs R] [--out FILE] [redis | shmkvd[@BIN] ...]" >&2; exit 2 ;;
    esac
    shift
done
[ ${#servers[@]} -gt 0 ] || servers=(redis shmkvd)
[ -x build/daemon/shmkvd ] || { echo "walk_bench: build first (cmake --build build)" >&2; exit 1; }

. bench/lib.sh
bench_init walkbench

# name in INFO commandstats, then the command
tests=("zrangebyscore|ZRANGEBYSCORE z 10 20" "hgetall|HGETALL h" "scan|SCAN 0 COUNT 10")

raw="$work/raw"
: >"$raw"
for r in $(seq 1 "$runs"); do
    for spec in "${servers[@]}"; do
        port=$(free_port)
        dir="$work/$r-$port"
        mkdir -p "$dir"
        start_server "$spec" "$port" "$dir"
        # shellcheck disable=SC2046 # the members are the arguments
        redis-cli -p "$port" ZADD z $(seq 0 299 | awk '{ print $1, "member:" $1 }') >/dev/null
        # shellcheck disable=SC2046
        redis-cli -p "$port" HSET h $(seq 0 299 | awk '{ print "field:" $1, $1 }') >/dev/null
        catch_up_us "$port" >/dev/null
        redis-benchmark -p "$port" -t set -n "$burst" -r 1000000 -c 50 -P 16 -q >/dev/null 2>&1
        redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
        for t in "${tests[@]}"; do
            # shellcheck disable=SC2086 # the test's words are its arguments
            redis-cli -p "$port" ${t#*|} >/dev/null
        done
        stats=$(redis-cli -p "$port" INFO commandstats)
        for t in "${tests[@]}"; do
            us=$(echo "$stats" | tr -d '\r' | awk -F'[:,=]' -v c="cmdstat_${t%%|*}" '$1 == c { print $5 }')
            echo "$spec	${t#*|}	${us:--1}" >>"$raw"
        done
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        rm -rf "$dir"
    done
    echo "walk_bench: run $r/$runs done" >&2
done

{
    echo "## walk_bench — $(date +%Y-%m-%d), $(nproc) CPUs, $runs runs, each command once right after $burst SETs"
    echo
    echo "Time inside the server (INFO commandstats), µs, median (min–max) over the runs."
    echo
    printf "| command |"
    for s in "${servers[@]}"; do printf " %s |" "$s"; done
    echo
    printf "|---|"
    for _ in "${servers[@]}"; do printf -- "---:|"; done
    echo
    for t in "${tests[@]}"; do
        printf "| %s |" "${t#*|}"
        for s in "${servers[@]}"; do
            awk -F'\t' -v s="$s" -v t="${t#*|}" '$1 == s && $2 == t { v[++n] = $3 }
                END { for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { x = v[j]; v[j] = v[j - 1]; v[j - 1] = x }
                      if (n) printf " %d (%d–%d) |", v[int((n + 1) / 2)], v[1], v[n]; else printf " — |" }' "$raw"
        done
        echo
    done
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
