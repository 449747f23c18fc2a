#!/usr/bin/env bash
# queue_bench.sh — a queue at a steady length, against redis-server and
# shmkvd, same machine, same run, as a Markdown table: do pops slow down as
# the deleted records behind them pile up (docs/storage.md, "Queues")?
#
#   bench/queue_bench.sh [--cycles N] [--len N] [--window N] [--runs R] [--kinds K,...]
#                        [--out FILE] [SERVER ...]
#
# SERVER: redis, shmkvd, or shmkvd@BIN (default: redis shmkvd). For each
# run, server and kind (a list: LPUSH + RPOP; a sorted set: ZADD of the
# next score + ZPOPMIN), a fresh server gets a queue of --len elements
# (1,000), then --cycles push-and-pop cycles (10,000,000), one client, each
# command its own round trip (kvtool queue). The table gives the pops'
# latency p50 and p99 over the first and the last --window cycles
# (1,000,000) and their ratio, last ÷ first: 1.0 is no growth. Median over
# the runs. Loopback only; each server is stopped by its PID and its folder
# removed. --kinds: list, zset or both (the default).
set -euo pipefail
cd "$(dirname "$0")/.."

cycles=10000000 len=1000 window=1000000 runs=1 out="" servers=() kinds="list zset"
while [ $# -gt 0 ]; do
    case "$1" in
    --cycles) cycles=$2; shift ;;
    --len) len=$2; shift ;;
    --window) window=$2; shift ;;
    --runs) runs=$2; shift ;;
    --out) out=$2; shift ;;
    --kinds) kinds=${2//,/ }; shift ;;
    redis | shmkvd | shmkvd@?*) servers+=("$1") ;;
    *) echo "usage: $0 [--cycles N] [--len N] [--window N] [--runs R] [--kinds list,zset] [--out FILE] [redis | shmkvd[@BIN] ...]" >&2; exit 2 ;;
    esac
    shift
done
[ ${#servers[@]} -gt 0 ] || servers=(redis shmkvd)
[ -x build/bench/kvtool ] || { echo "queue_bench: build first (cmake --build build)" >&2; exit 1; }

. bench/lib.sh
bench_init queue

declare -A res
for run in $(seq 1 "$runs"); do
    for s in "${servers[@]}"; do
        for kind in $kinds; do
            port=$(free_port)
            dir="$work/$run-${s//[^a-z]/}-$kind"
            mkdir -p "$dir"
            start_server "$s" "$port" "$dir"
            res[$s,$kind,$run]=$(build/bench/kvtool queue 127.0.0.1 "$port" "$kind" "$cycles" "$len" "$window")
            kill "$pid"
            wait "$pid" 2>/dev/null || true
            rm -rf "$dir"
            echo "queue_bench: run $run, $s, $kind: ${res[$s,$kind,$run]}" >&2
        done
    done
done

col() { # SERVER KIND FIELD: the field's median over the runs
    for r in $(seq 1 "$runs"); do echo "${res[$1,$2,$r]}" | awk -v f="$3" '{ print $f }'; done | median
}

{
    echo "## queue_bench — $(date +%F), $(nproc) CPUs, $runs run(s)"
    echo
    echo "A queue of $len elements, then $cycles cycles of one push and one pop, one"
    echo "client, each command its own round trip. Pop latency in µs over the first and"
    echo "the last $window cycles; growth is last ÷ first (1.00: none)."
    echo
    echo "| server | queue | first p50 | first p99 | last p50 | last p99 | p50 growth | p99 growth | cycles/s |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    for s in "${servers[@]}"; do
        for kind in $kinds; do
            f50=$(col "$s" "$kind" 1) f99=$(col "$s" "$kind" 2)
            l50=$(col "$s" "$kind" 3) l99=$(col "$s" "$kind" 4) sec=$(col "$s" "$kind" 5)
            what=$([ "$kind" = list ] && echo "LPUSH + RPOP" || echo "ZADD + ZPOPMIN")
            awk -v s="$s" -v w="$what" -v f50="$f50" -v f99="$f99" -v l50="$l50" -v l99="$l99" \
                -v sec="$sec" -v n="$cycles" 'BEGIN {
                printf "| %s | %s | %d | %d | %d | %d | %.2f | %.2f | %.0f |\n",
                    s, w, f50, f99, l50, l99, l50 / f50, l99 / f99, n / sec }'
        done
    done
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
