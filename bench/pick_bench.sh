#!/usr/bin/env bash
# pick_bench.sh — random picks from large collections (SRANDMEMBER, SPOP,
# HRANDFIELD, ZRANDMEMBER) against redis-server and shmkvd, same machine,
# same run, as a Markdown table of medians (docs/storage.md, "Random
# picks").
#
#   bench/pick_bench.sh [--members N] [--requests N] [--runs R] [--out FILE] [SERVER ...]
#
# SERVER: redis, shmkvd, or shmkvd@BIN to run the shmkvd binary BIN (an
# older build, say) beside this tree's (default: redis shmkvd). Each run
# starts every server afresh, fills a set, a hash and a sorted set of N
# members each (default 300,000) with redis-cli --pipe, waits until
# shmkvd's write-back has nothing pending, then times each command with
# one client, one request at a time (redis-benchmark -c 1 -n REQUESTS,
# default 2,000; SPOP takes one member a request out of N). The table
# gives the median over the runs of redis-benchmark's p50 latency, and
# the first SRANDMEMBER alone (shmkvd builds its pick index there).
# Loopback only; each server is stopped by its PID and its folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."

members=300000 requests=2000 runs=3 out="" servers=()
while [ $# -gt 0 ]; do
    case "$1" in
    --members) members=$2; shift ;;
    --requests) requests=$2; shift ;;
    --runs) runs=$2; shift ;;
    --out) out=$2; shift ;;
    redis | shmkvd | shmkvd@?*) servers+=("$1") ;;
    *) echo "usage: $0 [--members N] [--requests N] [--runs R] [--out FILE] [redis | shmkvd[@BIN] ...]" >&2; exit 2 ;;
    esac
    shift
done
[ ${#servers[@]} -gt 0 ] || servers=(redis shmkvd)
[ -x build/daemon/shmkvd ] || { echo "pick_bench: build first (cmake --build build)" >&2; exit 1; }

. bench/lib.sh
bench_init pickbench

tests=("SRANDMEMBER s" "SRANDMEMBER s 10" "SRANDMEMBER s -10" "SPOP s" "SPOP s 5"
    "HRANDFIELD h" "HRANDFIELD h 10 WITHVALUES" "ZRANDMEMBER z" "ZRANDMEMBER z 10 WITHSCORES"
    "SCARD s")

# The fill, in redis-cli --pipe's RESP: 100 members a command.
awk -v n="$members" 'function bulk(s) { return "$" length(s) "\r\n" s "\r\n" }
BEGIN {
    for (i = 0; i < n; i += 100) {
        m = (n - i < 100) ? n - i : 100
        s = "*" (m + 2) "\r\n" bulk("SADD") bulk("s")
        h = "*" (2 * m + 2) "\r\n" bulk("HSET") bulk("h")
        z = "*" (2 * m + 2) "\r\n" bulk("ZADD") bulk("z")
        for (j = i; j < i + m; j++) {
            s = s bulk("member:" j)
            h = h bulk("field:" j) bulk("value:" j)
            z = z bulk(j) bulk("member:" j)
        }
        printf "%s%s%s", s, h, z
    }
}' >"$work/fill.resp"

raw="$work/raw"
: >"$raw"
for r in $(seq 1 "$runs"); do
    for spec in "${servers[@]}"; do
        port=$(free_port)
        dir="$work/$r-$port"
        mkdir -p "$dir"
        start_server "$spec" "$port" "$dir"
        redis-cli -p "$port" --pipe <"$work/fill.resp" >/dev/null
        catch_up_us "$port" >/dev/null
        t0=$(date +%s%N)
        redis-cli -p "$port" SRANDMEMBER s >/dev/null
        echo "$spec	first SRANDMEMBER s	$((($(date +%s%N) - t0) / 1000))" >>"$raw"
        for t in "${tests[@]}"; do
            # shellcheck disable=SC2086 # the test's words are its arguments
            p50=$(redis-benchmark -p "$port" -c 1 -n "$requests" --csv $t 2>/dev/null |
                awk -F'"' 'NR == 2 { print $10 }')
            echo "$spec	$t	$(awk -v m="$p50" 'BEGIN { printf "%d", m * 1000 }')" >>"$raw"
        done
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        rm -rf "$dir"
    done
    echo "pick_bench: run $r/$runs done" >&2
done

{
    echo "## pick_bench — $(date +%Y-%m-%d), $(nproc) CPUs, $runs runs, $members members, $requests requests a test, 1 client"
    echo
    echo "Median over the runs of redis-benchmark's p50 latency, µs (the first SRANDMEMBER: redis-cli's whole call, connection included)."
    echo
    printf "| command |"
    for s in "${servers[@]}"; do printf " %s |" "$s"; done
    echo
    printf "|---|"
    for _ in "${servers[@]}"; do printf -- "---:|"; done
    echo
    for t in "first SRANDMEMBER s" "${tests[@]}"; do
        printf "| %s |" "$t"
        for s in "${servers[@]}"; do
            awk -F'\t' -v s="$s" -v t="$t" '$1 == s && $2 == t { v[++n] = $3 }
                END { for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { x = v[j]; v[j] = v[j - 1]; v[j - 1] = x }
                      printf " %d |", n ? v[int((n + 1) / 2)] : -1 }' "$raw"
        done
        echo
    done
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
