#!/usr/bin/env bash
# zrank_bench.sh — ranks in a large sorted set, against redis-server and
# shmkvd, same machine, same run, as a Markdown table: ZRANK and ZREVRANK of
# random members, ZRANGE of 10 members at a random index, and ZADD of new
# scores for random members with and without a rank index kept up
# (docs/storage.md, "Ranks").
#
#   bench/zrank_bench.sh [--members N] [--ops N] [--runs R] [--out FILE] [SERVER ...]
#
# SERVER: redis, shmkvd, or shmkvd@BIN (default: redis shmkvd). Each run
# starts each server fresh and fills two sets of --members members (1M)
# scored 0..N-1 (kvtool fill): `z` is ranked once (the first ZRANK, timed:
# on shmkvd it builds the index), `zb` never is. Then --ops commands (200k)
# of each kind, one connection, at pipeline 1 and 16 (kvtool zrank). Median
# over the runs. Loopback only; each server is stopped by its PID and its
# folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."

members=1000000 ops=200000 runs=1 out="" servers=()
while [ $# -gt 0 ]; do
    case "$1" in
    --members) members=$2; shift ;;
    --ops) ops=$2; shift ;;
    --runs) runs=$2; shift ;;
    --out) out=$2; shift ;;
    redis | shmkvd | shmkvd@?*) servers+=("$1") ;;
    *) echo "usage: $0 [--members N] [--ops N] [--runs R] [--out FILE] [redis | shmkvd[@BIN] ...]" >&2; exit 2 ;;
    esac
    shift
done
[ ${#servers[@]} -gt 0 ] || servers=(redis shmkvd)
[ -x build/bench/kvtool ] || { echo "zrank_bench: build first (cmake --build build)" >&2; exit 1; }

. bench/lib.sh
bench_init zrank

# kind key label
tests=("rank z ZRANK" "revrank z ZREVRANK" "range z ZRANGE i i+9" "zadd z ZADD, ranked set" "zadd zb ZADD, set never ranked")
declare -A res
for run in $(seq 1 "$runs"); do
    for s in "${servers[@]}"; do
        port=$(free_port)
        dir="$work/$run-${s//[^a-z]/}"
        mkdir -p "$dir"
        start_server "$s" "$port" "$dir"
        build/bench/kvtool fill 127.0.0.1 "$port" z zset "$members"
        build/bench/kvtool fill 127.0.0.1 "$port" zb zset "$members"
        sleep 1 # write-back and RocksDB's flushes settle a little
        res[$s,first,$run]=$(build/bench/kvtool timecmd 127.0.0.1 "$port" ZRANK z "f$((members / 2))")
        for t in "${tests[@]}"; do
            read -r kind key _ <<<"$t"
            for p in 1 16; do
                res[$s,$kind$key,$p,$run]=$(build/bench/kvtool zrank 127.0.0.1 "$port" "$key" "$members" "$kind" "$ops" "$p")
                echo "zrank_bench: run $run, $s, $kind $key P$p: ${res[$s,$kind$key,$p,$run]}" >&2
            done
        done
        if [ "${s%%@*}" = shmkvd ]; then
            res[$s,built,$run]=$(redis-cli -p "$port" info storage | tr -d '\r' | sed -n 's/^zset_rank_indexes_built://p')
        fi
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        rm -rf "$dir"
    done
done

col() { # KEY FIELD: the field's median over the runs
    for r in $(seq 1 "$runs"); do echo "${res[$1,$r]}" | awk -v f="$2" '{ print $f }'; done | median
}

{
    echo "## zrank_bench — $(date +%F), $(nproc) CPUs, $runs run(s)"
    echo
    echo "A sorted set of $members members; $ops commands of each kind on one connection,"
    echo "random members and indexes. ops/s and, at pipeline 1, the round trip's p50 in µs."
    echo "The ratio is shmkvd ÷ the first server (higher is better for ops/s)."
    echo
    printf "| command | P |"
    for s in "${servers[@]}"; do printf " %s ops/s | %s p50 |" "$s" "$s"; done
    [ ${#servers[@]} -gt 1 ] && printf " ratio |"
    echo
    printf "|---|---:|"
    for _ in "${servers[@]}"; do printf -- "---:|---:|"; done
    [ ${#servers[@]} -gt 1 ] && printf -- "---:|"
    echo
    for t in "${tests[@]}"; do
        read -r kind key label <<<"$t"
        for p in 1 16; do
            printf "| %s | %s |" "$label" "$p"
            first=""
            last=""
            for s in "${servers[@]}"; do
                o=$(col "$s,$kind$key,$p" 1)
                printf " %.0f | %s |" "$o" "$([ "$p" = 1 ] && col "$s,$kind$key,$p" 2 || echo -)"
                [ -n "$first" ] || first=$o
                last=$o
            done
            [ ${#servers[@]} -gt 1 ] && awk -v a="$first" -v b="$last" 'BEGIN { printf " %.2f |", b / a }'
            echo
        done
    done
    echo
    for s in "${servers[@]}"; do
        echo "First ZRANK on $s: $(col "$s,first" 1) µs$([ "${s%%@*}" = shmkvd ] && echo " (it builds the index; indexes built in the run: ${res[$s,built,1]})")."
    done
} | if [ -n "$out" ]; then tee -a "$out"; else cat; fi
