#!/usr/bin/env bash
# writeback_bench.sh — what write-back buys, measured with redis-benchmark.
#
#   bench/writeback_bench.sh [--quick] [--runs N] [--requests N] [--out FILE]
#
# 1. SET and HSET latency (p50, p99, p99.9) and throughput, 50 clients,
#    random keys, with shmkvd's write-back on and with writes straight to
#    RocksDB — both while a background client bulk-loads 4 KiB values. Both
#    run with 4 MiB memtables: with the 64 MiB default, this load never made
#    RocksDB switch memtables or stall often enough to matter (its LOG showed
#    no stalls), and the test measured CPU contention instead.
# 2. appendfsync always: shmkvd against redis-server with appendonly yes and
#    appendfsync always, 50 clients, same run.
#
# Medians over the runs (min–max for throughput). Loopback only; every
# server is started here, stopped by its PID, and its folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3 requests=100000 out="" loadreq=2000000
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) runs=1 requests=10000 loadreq=20000 ;;
    --runs) runs=$2; shift ;;
    --requests) requests=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--quick] [--runs N] [--requests N] [--out FILE]" >&2; exit 2 ;;
    esac
    shift
done

shmkvd=build/daemon/shmkvd
[ -x "$shmkvd" ] || { echo "writeback_bench: build first" >&2; exit 1; }
. bench/lib.sh
bench_init wbbench

# Starts a server (name, then its command line); sets $port and $pid.
start() {
    local name=$1
    shift
    port=$(free_port)
    mkdir -p "$work/$name"
    "$@" --port "$port" >"$work/$name/log" 2>&1 &
    pid=$!
    pids+=("$pid")
    wait_ready "$port"
}

stop() {
    redis-cli -p "$1" shutdown nosave >/dev/null 2>&1 || true
    wait "$2" 2>/dev/null || true
}

# redis-benchmark's full report → "TEST rps p50 p99 p999" lines.
bench_lines() {
    awk '
    /^====== / { t = $2 }
    /^[0-9.]+% <= / {
        p = $1; sub(/%/, "", p); v = $3
        if (p + 0 >= 50 && !(t SUBSEP "50" in got)) { got[t, "50"] = v }
        if (p + 0 >= 99 && !(t SUBSEP "99" in got)) { got[t, "99"] = v }
        if (p + 0 >= 99.9 && !(t SUBSEP "999" in got)) { got[t, "999"] = v }
    }
    /throughput summary:/ { rps[t] = $3; order[++n] = t }
    END { for (i = 1; i <= n; i++) { t = order[i]; print t, rps[t], got[t, "50"], got[t, "99"], got[t, "999"] } }'
}

raw="$work/raw"
: >"$raw"
for run in $(seq 1 "$runs"); do
    for mode in yes no; do
        start "wb-$mode" "$shmkvd" --bind 127.0.0.1 --dir "$work/wb-$mode/data" --write-back "$mode" \
            --write-buffer-size 4mb
        # The compaction load: 4 KiB values over a wide key range, 4 clients.
        redis-benchmark -p "$port" -t set -d 4096 -r 10000000 -n "$loadreq" -c 4 -P 8 -q >/dev/null 2>&1 &
        load=$!
        sleep 1
        redis-benchmark -p "$port" -t set,hset -r 100000 -n "$requests" -c 50 2>/dev/null | tr '\r' '\n' |
            bench_lines | sed "s/^/write-back-$mode /" >>"$raw"
        kill "$load" 2>/dev/null || true
        wait "$load" 2>/dev/null || true
        stop "$port" "$pid"
    done
    start always-shmkvd "$shmkvd" --bind 127.0.0.1 --dir "$work/always/data" --appendfsync always
    redis-benchmark -p "$port" -t set -r 100000 -n "$requests" -c 50 2>/dev/null | tr '\r' '\n' |
        bench_lines | sed "s/^/always-shmkvd /" >>"$raw"
    stop "$port" "$pid"
    start always-redis redis-server --bind 127.0.0.1 --save '' --appendonly yes --appendfsync always \
        --dir "$work/always-redis"
    redis-benchmark -p "$port" -t set -r 100000 -n "$requests" -c 50 2>/dev/null | tr '\r' '\n' |
        bench_lines | sed "s/^/always-redis /" >>"$raw"
    stop "$port" "$pid"
    echo "writeback_bench: run $run/$runs done" >&2
done

summary=$(sort "$raw" | awk '
function med(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
{ k = $1 " " $2; n[k]++; r[k, n[k]] = $3; p50[k, n[k]] = $4; p99[k, n[k]] = $5; p999[k, n[k]] = $6 }
END {
    for (k in n) {
        m = n[k]
        for (i = 1; i <= m; i++) { a[i] = r[k, i]; b[i] = p50[k, i]; c[i] = p99[k, i]; d[i] = p999[k, i] }
        lo = 1e18; hi = 0
        for (i = 1; i <= m; i++) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
        split(k, kk, " ")
        printf "%s|%s|%.0f (%.0f–%.0f)|%.3f|%.3f|%.3f\n", kk[1], kk[2], med(a, m), lo, hi, med(b, m), med(c, m), med(d, m)
    }
}' | sort)

{
    echo "## writeback_bench — $(date -u +%Y-%m-%d), $(nproc) CPUs, $runs runs, $requests requests, 50 clients, random keys"
    echo
    echo "### Writes while a bulk load keeps RocksDB compacting"
    echo
    echo "| mode | test | requests/s median (min–max) | p50 ms | p99 ms | p99.9 ms |"
    echo "|---|---|---:|---:|---:|---:|"
    echo "$summary" | grep '^write-back' | sed 's/|/ | /g; s/^/| /; s/$/ |/'
    echo
    echo "### appendfsync always, 50 clients"
    echo
    echo "| server | test | requests/s median (min–max) | p50 ms | p99 ms | p99.9 ms |"
    echo "|---|---|---:|---:|---:|---:|"
    echo "$summary" | grep '^always' | sed 's/|/ | /g; s/^/| /; s/$/ |/'
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
