#!/usr/bin/env bash
# resp_bench.sh — redis-benchmark against shmkvd and Debian's redis-server,
# same machine, same run, as a Markdown table of medians.
#
#   bench/resp_bench.sh [--quick] [--runs N] [--requests N] [--tests set,get,...]
#                       [--clients N] [--pipelines "1 16"]
#                       [--shmkvd-args "--name value ..."] [--out FILE]
#
# Keys are drawn at random from 100,000 (-r), not redis-benchmark's single
# default key, which would flatter any write-back that coalesces overwrites.
# Servers: redis-server without persistence, redis-server with appendonly
# everysec, shmkvd (its defaults: write-back, RocksDB's WAL synced every
# second). Each run benchmarks the three in turn, so they share the
# machine's noise; the table gives the median requests/s over the runs
# (min–max) and shmkvd's ratio to redis-server without persistence.
#
# Tests run one redis-benchmark each, in the order given (a GET test after
# a SET test reads keys that exist). shmkvd acknowledges a write before its
# flusher writes RocksDB, so a write test leaves work behind: its figure
# counts that work (requests ÷ (the test's time + the time until write-back
# has nothing pending)), and the next test starts after it, so that no test
# pays for another's writes. The figure clients saw during the test, before
# that catch-up, is given too. Loopback only; every server is started here,
# stopped by its PID, and its folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5 requests=200000 tests="set,get" clients=50 out="" pipelines="1 16" keyspace=100000 kargs=""
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) runs=1 requests=20000 ;;
    --runs) runs=$2; shift ;;
    --requests) requests=$2; shift ;;
    --tests) tests=$2; shift ;;
    --clients) clients=$2; shift ;;
    --pipelines) pipelines=$2; shift ;;
    --out) out=$2; shift ;;
    --shmkvd-args) kargs=$2; shift ;; # e.g. "--flusher-threads 4"; split on spaces
    *) echo "usage: $0 [--quick] [--runs N] [--requests N] [--tests a,b] [--clients N] [--pipelines 'P ...'] [--shmkvd-args ARGS] [--out FILE]" >&2; exit 2 ;;
    esac
    shift
done

shmkvd=build/daemon/shmkvd
[ -x "$shmkvd" ] || { echo "resp_bench: build first (scripts/run.sh or cmake --build build)" >&2; exit 1; }
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
    { echo "resp_bench: redis-server and redis-benchmark are needed (scripts/deps.sh)" >&2; exit 1; }

. bench/lib.sh
bench_init respbench

names=(redis redis-aof shmkvd)
ports=()
for n in "${names[@]}"; do
    p=$(free_port)
    mkdir -p "$work/$n"
    case $n in
    redis) redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/$n" >"$work/$n/log" 2>&1 & ;;
    redis-aof) redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir "$work/$n" >"$work/$n/log" 2>&1 & ;;
    shmkvd) "$shmkvd" --port "$p" --bind 127.0.0.1 --dir "$work/$n/data" $kargs >"$work/$n/log" 2>&1 & ;;
    esac
    pids+=($!)
    ports+=("$p")
done
for p in "${ports[@]}"; do wait_ready "$p"; done

# raw lines: server pipeline test rps p99 rps-before-catch-up
raw="$work/raw"
: >"$raw"
for run in $(seq 1 "$runs"); do
    for P in $pipelines; do
        for i in "${!names[@]}"; do
            for t in ${tests//,/ }; do
                csv=$(redis-benchmark -p "${ports[$i]}" -t "$t" -n "$requests" -r "$keyspace" -c "$clients" -P "$P" --csv 2>/dev/null)
                cu=$(catch_up_us "${ports[$i]}")
                echo "$csv" | awk -F, -v s="${names[$i]}" -v P="$P" -v n="$requests" -v cu="$cu" 'NR > 1 {
                    gsub(/"/, "")
                    if ($1 ~ /needed to benchmark/) next # LRANGE'"'"'s own LPUSH warm-up
                    split($1, w, " ")                    # "MSET (10 keys)" -> MSET
                    print s, P, w[1], n / (n / $2 + cu / 1e6), $7, $2 }' >>"$raw"
            done
        done
    done
    echo "resp_bench: run $run/$runs done" >&2
done

# Medians (and min–max) per server, pipeline and test.
table=$(sort -k3,3 -k2,2n "$raw" | awk '
function median(arr, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
    return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
{ k = $3 SUBSEP $2 SUBSEP $1; n[k]++; r[k, n[k]] = $4; l[k, n[k]] = $5; dr[k, n[k]] = $6; keys[$3 SUBSEP $2] = 1 }
END {
    split("redis redis-aof shmkvd", S, " ")
    for (tp in keys) {
        split(tp, a, SUBSEP)
        line = sprintf("| %s | %s |", a[1], a[2])
        for (s = 1; s <= 3; s++) {
            k = tp SUBSEP S[s]; m = n[k]
            for (i = 1; i <= m; i++) { rr[i] = r[k, i]; ll[i] = l[k, i] }
            med[s] = median(rr, m); lo = rr[1]; hi = rr[m]; p99 = median(ll, m)
            line = line sprintf(" %.0f (%.0f–%.0f) | %.3f |", med[s], lo, hi, p99)
        }
        for (i = 1; i <= m; i++) aa[i] = dr[k, i]  # k: shmkvd, the last server
        line = line sprintf(" %.2fx | %.0f |", med[3] / med[1], median(aa, m))
        print line
    }
}' | sort)

{
    echo "## resp_bench — $(date -u +%Y-%m-%d), $(nproc) CPUs, $runs runs, $requests requests, $clients clients"
    echo
    echo "requests/s: median (min–max) over the runs; p99 latency in ms (median over the runs). Each test runs alone, in the order given; shmkvd's figure includes the time its write-back needed after the test to have nothing pending (its last column: the requests/s clients saw during the test, without that)."
    echo
    echo "| test | pipeline | redis-server | p99 | redis-server aof everysec | p99 | shmkvd | p99 | shmkvd / redis-server | shmkvd during the test |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    echo "$table"
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
