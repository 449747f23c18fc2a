#!/usr/bin/env bash
# eval_bench.sh — Lua scripts through redis-benchmark against shmkvd and
# Debian's redis-server, same machine, same run, as a Markdown table of
# medians.
#
#   bench/eval_bench.sh [--runs N] [--requests N] [--clients N] [--pipelines "1 16"]
#                       [--out FILE]
#
# Three scripts, each run with EVALSHA (loaded first with SCRIPT LOAD), over
# keys drawn at random from 100,000 (redis-benchmark -r and __rand_int__):
#   read:   return redis.call('GET', KEYS[1])
#   write:  redis.call('SET', KEYS[1], ARGV[1]) return 1
#   limit:  a rate limiter as client libraries write one: INCR, and EXPIRE
#           on the first hit; the count is returned
# each at every pipeline depth asked. Then the cost of entering and leaving
# Lua: EVALSHA of "return 1" against PING, one client pipelining 16, so the
# server is the bottleneck; the difference of their times per request is
# the per-call overhead of a script that does nothing.
# Each run benchmarks the servers in turn, so they share the machine's noise;
# the table gives the median requests/s over the runs (min–max) and shmkvd's
# ratio to redis-server (without persistence). shmkvd acknowledges a write
# before its flusher writes RocksDB: a write test's figure counts the time
# until write-back has nothing pending, as resp_bench.sh does. Loopback only;
# every server is started here, stopped by its PID, and its folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

runs=3 requests=100000 clients=50 pipelines="1 16" out=""
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --pipelines) pipelines=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--requests N] [--clients N] [--pipelines LIST] [--out FILE]" >&2; exit 2 ;;
    esac
done
[ -x build/daemon/shmkvd ] || { echo "$0: build first (build/daemon/shmkvd)" >&2; exit 2; }
command -v redis-benchmark >/dev/null || { echo "$0: redis-benchmark missing (redis-tools)" >&2; exit 2; }

bench_init eval
declare -A SCRIPT=(
    [read]="return redis.call('GET', KEYS[1])"
    [write]="redis.call('SET', KEYS[1], ARGV[1]) return 1"
    [limit]="local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('EXPIRE', KEYS[1], 60) end return n"
)
declare -A PREFIX=([read]=kv [write]=kv [limit]=hits)
tests=(write read limit)
declare -A rps

one() { # SERVER RUN: every test against one fresh server
    local srv=$1 run=$2 port dir sha t0 t1 us n
    port=$(free_port)
    dir="$work/$srv-$run"
    mkdir -p "$dir/data"
    start_server "$srv" "$port" "$dir"
    local spid=$pid
    for p in $pipelines; do
        for t in "${tests[@]}"; do
            sha=$(redis-cli -p "$port" script load "${SCRIPT[$t]}")
            t0=$(date +%s%N)
            # read reads what write wrote; the limiter counts keys of its own
            redis-benchmark -p "$port" -c "$clients" -n "$requests" -r 100000 -P "$p" -q \
                evalsha "$sha" 1 "${PREFIX[$t]}:__rand_int__" "v:__rand_int__" \
                >"$dir/$t-$p.out" 2>&1
            us=$(catch_up_us "$port")
            t1=$(date +%s%N)
            n=$(awk -v r="$requests" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", r / (ns / 1e9) }')
            rps[$srv,$t,$p,$run]=$n
        done
    done
    # Entering and leaving Lua: a script that does nothing, against PING.
    sha=$(redis-cli -p "$port" script load "return 1")
    for t in noop ping; do
        if [ $t = noop ]; then set -- evalsha "$sha" 0; else set -- ping; fi
        t0=$(date +%s%N)
        redis-benchmark -p "$port" -c 1 -P 16 -n "$requests" -q "$@" >"$dir/$t.out" 2>&1
        t1=$(date +%s%N)
        rps[$srv,$t,16,$run]=$(awk -v r="$requests" -v ns=$((t1 - t0)) \
            'BEGIN { printf "%.0f", r / (ns / 1e9) }')
    done
    kill "$spid"
    wait "$spid" 2>/dev/null || true
}

for run in $(seq 1 "$runs"); do
    for srv in redis shmkvd; do
        one "$srv" "$run"
    done
    echo "eval_bench: run $run/$runs done" >&2
done

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2)) }'; }
stats() { # SERVER TEST PIPELINE: "median (min–max)"
    local v
    v=$(for r in $(seq 1 "$runs"); do echo "${rps[$1,$2,$3,$r]}"; done)
    printf '%s (%s–%s)' "$(echo "$v" | median)" "$(echo "$v" | sort -n | head -1)" \
        "$(echo "$v" | sort -n | tail -1)"
}

{
    echo "## eval_bench — $(date +%F), $(nproc) CPUs, $runs runs, $requests requests, $clients clients"
    echo
    echo "EVALSHA of three scripts through redis-benchmark (keys drawn from 100,000);"
    echo "requests/s, median over the runs (min–max), write tests counting shmkvd's"
    echo "write-back until nothing is pending."
    echo
    echo "| script | pipeline | redis-server | shmkvd | shmkvd ÷ redis |"
    echo "|---|---:|---:|---:|---:|"
    for p in $pipelines; do
        for t in "${tests[@]}"; do
            r=$(stats redis "$t" "$p")
            k=$(stats shmkvd "$t" "$p")
            ratio=$(awk -v a="${r%% *}" -v b="${k%% *}" 'BEGIN { printf "%.2f", b / a }')
            echo "| $t | $p | $r | $k | $ratio |"
        done
    done
    echo
    echo "Entering and leaving Lua: one client, pipeline 16, EVALSHA of \"return 1\""
    echo "against PING; the overhead is the difference of their medians' times per"
    echo "request."
    echo
    echo "| server | PING /s | EVALSHA return 1 /s | overhead per call (µs) |"
    echo "|---|---:|---:|---:|"
    for srv in redis shmkvd; do
        pg=$(stats "$srv" ping 16)
        nop=$(stats "$srv" noop 16)
        over=$(awk -v a="${pg%% *}" -v b="${nop%% *}" 'BEGIN { printf "%.2f", 1e6 / b - 1e6 / a }')
        echo "| $srv | $pg | $nop | $over |"
    done
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
