#!/usr/bin/env bash
# instr_bench.sh — instructions and simulated cache misses per command of
# each server's main thread (shmkvd's event loop), counted by valgrind's
# callgrind: a figure that does not move with the machine's load, for
# comparing builds on a shared VM where CPU time per SET varies by ±10%
# from round to round (docs/daemon.md, "The hot path").
#
#   bench/instr_bench.sh [--requests N] [--test TEST] [--keep DIR] [--out FILE] [SERVER ...]
#
# SERVER: redis, shmkvd, or shmkvd@BIN (the shmkvd binary BIN, e.g. an
# older build's), with arguments after a colon as in thread_cpu.sh
# (default: redis shmkvd). Each server starts under callgrind on a free
# loopback port, takes 200,000 SETs over 100,000 keys at pipeline 16 (50
# clients) to warm (86% of the keys set, so that most GETs find theirs
# and the rest a cached absence, not RocksDB), has its counters zeroed,
# then runs N requests of the test (default 100,000 SETs) and dumps them.
# Threads are counted apart (--separate-threads); the table gives the main
# thread's figures divided by N. The caches are simulated at fixed sizes
# (32 KiB 8-way L1i and L1d, 8 MiB 16-way last level), the same for every
# server and machine. Under valgrind the threads run one at a time, so
# shmkvd's flusher keeps up better than it does at full speed and more
# SETs find their key gone from the overlay: the figures compare builds
# and servers with each other, not with a run at full speed. --keep DIR
# keeps each main thread's profile as DIR/<n>.callgrind (the n-th server),
# for callgrind_annotate.
# Loopback only; each server is stopped by its PID and its folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."

requests=100000 test=set out="" keep="" servers=()
while [ $# -gt 0 ]; do
    case "$1" in
    --requests) requests=$2; shift ;;
    --test) test=$2; shift ;;
    --out) out=$2; shift ;;
    --keep) keep=$2; shift ;;
    redis | redis:* | shmkvd | shmkvd:* | shmkvd@?*) servers+=("$1") ;;
    *) echo "usage: $0 [--requests N] [--test TEST] [--keep DIR] [--out FILE] [redis[:ARGS] | shmkvd[@BIN][:ARGS] ...]" >&2; exit 2 ;;
    esac
    shift
done
# redis-benchmark's tests of one command each (its collection writes go to one key: myhash, mylist, ...)
case "$test" in set | get | incr | lpush | rpush | lpop | rpop | sadd | hset | spop | zadd) ;;
*) echo "instr_bench: --test set, get, incr, lpush, rpush, lpop, rpop, sadd, hset, spop or zadd" >&2; exit 2 ;; esac
[ ${#servers[@]} -gt 0 ] || servers=(redis shmkvd)
shmkvd=build/daemon/shmkvd
if ! command -v valgrind >/dev/null || ! command -v callgrind_control >/dev/null; then
    echo "instr_bench: needs valgrind (apt-get install valgrind)" >&2
    exit 1
fi

. bench/lib.sh
bench_init instr

rows="" first="" n=0
[ -z "$keep" ] || mkdir -p "$keep"
for spec in "${servers[@]}"; do
    name=${spec%%:*} args="" bin=$shmkvd
    [[ $spec == *:* ]] && args=${spec#*:}
    [[ $name == shmkvd@* ]] && bin=${name#shmkvd@}
    [ "$name" = redis ] || [ -x "$bin" ] || { echo "instr_bench: no binary $bin (cmake --build build)" >&2; exit 1; }
    port=$(free_port)
    dir="$work/$port"
    mkdir -p "$dir"
    # shellcheck disable=SC2054 # the cache geometries are comma-separated
    vg=(valgrind --tool=callgrind --separate-threads=yes --cache-sim=yes --compress-strings=no
        --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64
        "--callgrind-out-file=$dir/cg")
    if [ "$name" = redis ]; then
        # shellcheck disable=SC2086
        "${vg[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" $args >"$dir/log" 2>&1 &
    else
        # shellcheck disable=SC2086
        "${vg[@]}" "$bin" --port "$port" --bind 127.0.0.1 --dir "$dir/data" $args >"$dir/log" 2>&1 &
    fi
    pid=$!
    pids+=("$pid")
    # Under valgrind a start takes seconds; wait_ready allows 20.
    wait_ready "$port"
    redis-benchmark -p "$port" -t set -n 200000 -r 100000 -c 50 -P 16 -q >/dev/null 2>&1
    [ "$test" = set ] || redis-benchmark -p "$port" -t get -n 100000 -r 100000 -c 50 -P 16 -q >/dev/null 2>&1
    callgrind_control -z "$pid" >/dev/null
    redis-benchmark -p "$port" -t "$test" -n "$requests" -r 100000 -c 50 -P 16 -q >/dev/null 2>&1
    callgrind_control -d "$pid" >/dev/null
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    # The dump after the zeroing: cg.<dump>-01 is the main thread's.
    f=$(ls "$dir"/cg.*-01 2>/dev/null | sort | tail -1)
    [ -n "$f" ] || { echo "instr_bench: no callgrind dump for $spec" >&2; exit 1; }
    n=$((n + 1))
    [ -z "$keep" ] || cp "$f" "$keep/$n.callgrind"
    # summary: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
    line=$(awk -v n="$requests" '/^events:/ { for (i = 2; i <= NF; i++) ev[i] = $i }
        /^summary:/ { for (i = 2; i <= NF; i++) v[ev[i]] = $i
            printf "%.0f %.2f %.2f %.3f", v["Ir"] / n, v["I1mr"] / n, (v["D1mr"] + v["D1mw"]) / n, (v["ILmr"] + v["DLmr"] + v["DLmw"]) / n }' "$f")
    read -r ir i1 d1 ll <<<"$line"
    [ -n "$first" ] || first=$ir
    ratio=$(awk -v a="$ir" -v b="$first" 'BEGIN { printf "%.3f", a / b }')
    rows+="| $name${args:+ $args} | $ir | $ratio | $i1 | $d1 | $ll |"$'\n'
    echo "instr_bench: $name${args:+ $args}: $ir instructions per $test" >&2
done

{
    echo "## instr_bench — $(date -u +%Y-%m-%d), $requests ${test^^}s at pipeline 16, 50 clients, 100,000 keys, under callgrind"
    echo
    echo "Per request, main thread only (shmkvd's event loop); misses in simulated caches (32 KiB L1i and L1d, 8 MiB last level)."
    echo
    echo "| server | instructions | over the first | L1i misses | L1d misses | last-level misses |"
    echo "|---|---:|---:|---:|---:|---:|"
    printf '%s' "$rows"
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
