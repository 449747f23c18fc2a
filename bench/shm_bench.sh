#!/usr/bin/env bash
# shm_bench.sh — local reads: a libshmkv hit in shmkvd's shared-memory cache
# against a GET round trip through hiredis over a Unix socket, to shmkvd
# and to Debian's redis-server, same machine, same run.
#
#   bench/shm_bench.sh [--quick] [--runs N] [--keys N] [--ops N] [--procs "1 2"]
#                      [--out FILE] [--cdf DIR]
#
# 16-byte keys, 100-byte values, loaded into both servers; the cache is
# warmed by one pass of reads. Each run measures, in turn: shm hits from 1
# and 2 reader processes, uniform and Zipf(0.99) keys, then hiredis GETs to
# shmkvd and to redis-server (1 and 2 processes, uniform). A hot-set row
# (1,000 keys) shows a hit whose records sit in the CPU caches. Latencies
# are per operation (TSC, pooled over the processes), reported as the
# median over the runs of each run's percentiles; reads/s is the sum over
# processes. Each run also times one dependent load from memory (shm_bench
# chase) over as many MiB as the segment's index and records for these keys
# span, on the segment's kind of pages: the floor under a uniform read whose
# record is not in the CPU caches. --cdf DIR keeps the last run's latency distributions (shm hit,
# GET to shmkvd, GET to redis-server; 1 process, uniform) for a plot.
# Loopback sockets only; servers are stopped by their PIDs and
# their folders removed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5 keys=100000 ops=1000000 out="" cdf="" procs="1 2"
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) runs=1 keys=20000 ops=100000 ;;
    --runs) runs=$2; shift ;;
    --keys) keys=$2; shift ;;
    --ops) ops=$2; shift ;;
    --out) out=$2; shift ;;
    --cdf) cdf=$2; shift ;;
    --procs) procs=$2; shift ;; # reader process counts, e.g. "1 2 4 8" on a larger machine
    *) echo "usage: $0 [--quick] [--runs N] [--keys N] [--ops N] [--procs LIST] [--out FILE] [--cdf DIR]" >&2; exit 2 ;;
    esac
    shift
done

shmkvd=build/daemon/shmkvd bench=build/bench/shm_bench
[ -x "$shmkvd" ] && [ -x "$bench" ] || { echo "shm_bench: build first (cmake --build build)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "shm_bench: redis-server is needed (scripts/deps.sh)" >&2; exit 1; }

. bench/lib.sh
bench_init shmbench

kport=$(free_port) rport=$(free_port)
ksock="$work/shmkvd.sock" rsock="$work/redis.sock"
mkdir -p "$work/k" "$work/r"
"$shmkvd" --port "$kport" --bind 127.0.0.1 --dir "$work/k/data" --unixsocket "$ksock" >"$work/k/log" 2>&1 &
pids+=($!)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/r" \
    --unixsocket "$rsock" >"$work/r/log" 2>&1 &
pids+=($!)
wait_ready "$kport"
wait_ready "$rport"

"$bench" load "$ksock" "$keys"
"$bench" load "$rsock" "$keys"
"$bench" shm "$ksock" "$keys" "$keys" 1 uniform >/dev/null # fills the cache

# The footprint of a uniform read: the whole index plus the records in use.
info=$(redis-cli -s "$ksock" INFO cache | tr -d '\r')
field() { echo "$info" | sed -n "s/^$1://p"; }
span_mib=$(( ($(field cache_segment_bytes) - $(field cache_log_bytes) + $(field cache_used_bytes) + (1 << 20) - 1) >> 20 ))
huge=""
[ "$(field cache_huge_pages)" = 1 ] && huge=huge

hot=1000
[ "$keys" -lt "$hot" ] && hot=$keys
rtt_ops=$((ops / 10))
# raw lines: name p50 p99 p999 reads/s hit_ratio
raw="$work/raw"
: >"$raw"
for run in $(seq 1 "$runs"); do
    for P in $procs; do
        # The CDF files of the last run, one process, uniform keys.
        c1="" c2="" c3=""
        if [ -n "$cdf" ] && [ "$run" = "$runs" ] && [ "$P" = 1 ]; then
            mkdir -p "$cdf"
            c1="$cdf/shm.cdf" c2="$cdf/hiredis-shmkvd.cdf" c3="$cdf/hiredis-redis.cdf"
        fi
        for d in uniform zipf; do
            if [ "$d" = uniform ]; then
                echo "shm-$P-$d $("$bench" shm "$ksock" "$keys" "$ops" "$P" "$d" $c1)" >>"$raw"
            else
                echo "shm-$P-$d $("$bench" shm "$ksock" "$keys" "$ops" "$P" "$d")" >>"$raw"
            fi
        done
        echo "shm-$P-hot $("$bench" shm "$ksock" "$hot" "$ops" "$P" uniform)" >>"$raw"
        echo "hiredis-shmkvd-$P-uniform $("$bench" hiredis "$ksock" "$keys" "$rtt_ops" "$P" uniform $c2)" >>"$raw"
        echo "hiredis-redis-$P-uniform $("$bench" hiredis "$rsock" "$keys" "$rtt_ops" "$P" uniform $c3)" >>"$raw"
    done
    "$bench" chase "$span_mib" $huge >>"$work/chase"
    echo "shm_bench: run $run/$runs done" >&2
done

table=$(awk '
function median(arr, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
    return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
{ n[$1]++; for (c = 2; c <= 6; c++) v[$1, c, n[$1]] = $c; if (!($1 in seen)) { seen[$1] = 1; order[++no] = $1 } }
END {
    for (o = 1; o <= no; o++) {
        k = order[o]; m = n[k]
        for (c = 2; c <= 6; c++) {
            for (i = 1; i <= m; i++) a[i] = v[k, c, i]
            med[c] = median(a, m)
            if (c == 5) { lo = a[1]; hi = a[m] }
        }
        split(k, f, "-")
        what = f[1] == "shm" ? "libshmkv hit (shm)" : "hiredis GET, Unix socket, " f[2]
        procs = f[1] == "shm" ? f[2] : f[3]
        dist = f[1] == "shm" ? f[3] : f[4]
        if (dist == "hot") dist = "uniform, 1,000 hot keys"
        printf "| %s | %s | %s | %d | %d | %d | %.0f (%.0f–%.0f) | %.4f |\n", what, procs, dist, med[2], med[3], med[4], med[5], lo, hi, med[6]
        p50[k] = med[2]
    }
    printf "\nredis-server GET round trip p50 ÷ shm hit p50 (1 process): uniform %.0fx, Zipf %.0fx, hot set %.0fx.\n", p50["hiredis-redis-1-uniform"] / p50["shm-1-uniform"], p50["hiredis-redis-1-uniform"] / p50["shm-1-zipf"], p50["hiredis-redis-1-uniform"] / p50["shm-1-hot"]
}' "$raw")

{
    echo "## shm_bench — $(date -u +%Y-%m-%d), $(nproc) CPUs, $runs runs, $keys keys, $ops reads per process (hiredis: $rtt_ops)"
    echo
    echo "Latency in ns per read (median over the runs of each run's percentile); reads/s summed over processes, median (min–max)."
    echo
    echo "| reader | processes | keys | p50 ns | p99 ns | p99.9 ns | reads/s | hit ratio |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|"
    echo "$table"
    echo
    sort -n "$work/chase" | awk -v mib="$span_mib" -v hit="$(echo "$table" | awk -F'|' '$2 ~ /libshmkv/ && $3+0 == 1 && $4 ~ /^ uniform $/ { u = $5 } $2 ~ /libshmkv/ && $3+0 == 1 && $4 ~ /hot/ { h = $5 } END { print u - h }')" '
        { v[NR] = $1; pages = $2 }
        END { printf "One dependent load from memory on this machine (pointer chase over %d MiB, the span of the segment'"'"'s index and records for these keys, %s pages; median over the runs): %d ns (%d–%d). A uniform hit'"'"'s p50 exceeds the hot set'"'"'s by %d ns.\n", mib, pages == "4k" ? "4 KiB" : "2 MiB hugetlb", NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2, v[1], v[NR], hit }'
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
