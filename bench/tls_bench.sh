#!/usr/bin/env bash
# tls_bench.sh — GET and SET over TLS against redis-server over TLS, same
# machine, same run (docs/security.md, "TLS"), as a Markdown table.
#
#   bench/tls_bench.sh [--requests N] [--runs R] [--out FILE]
#
# Both servers get the same certificates (tests/integration/tls_certs.sh)
# and require a client certificate. Each run starts each server afresh;
# redis-benchmark --tls then runs SET and GET with 50 clients at pipeline 1
# and 16 (-n REQUESTS, default 200,000, keys at random among 100,000), and
# the same over the plain port for reference. Medians over the runs
# (default 3). Loopback only; servers stopped by PID, folders removed.
set -euo pipefail
cd "$(dirname "$0")/.."

requests=200000 runs=3 out=""
while [ $# -gt 0 ]; do
    case "$1" in
    --requests) requests=$2; shift ;;
    --runs) runs=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--requests N] [--runs R] [--out FILE]" >&2; exit 2 ;;
    esac
    shift
done
[ -x build/daemon/shmkvd ] || { echo "tls_bench: build first (cmake --build build)" >&2; exit 1; }
command -v openssl >/dev/null || { echo "tls_bench: needs the openssl command" >&2; exit 1; }

. bench/lib.sh
bench_init tls
certs=$work/certs
tests/integration/tls_certs.sh "$certs"
client=(--tls --cacert "$certs/ca.crt" --cert "$certs/client.crt" --key "$certs/client.key")

raw=$work/raw
: >"$raw"
for r in $(seq 1 "$runs"); do
    for spec in redis shmkvd; do
        port=$(free_port)
        tport=$(free_port)
        dir=$work/$r-$spec
        mkdir -p "$dir"
        tls=(--tls-port "$tport" --tls-cert-file "$certs/server.crt" --tls-key-file
            "$certs/server.key" --tls-ca-cert-file "$certs/ca.crt")
        redis_args=("${tls[@]}")
        shmkvd_args=("${tls[@]}")
        start_server "$spec" "$port" "$dir"
        for t in set get; do
            for p in 1 16; do
                for how in tls plain; do
                    if [ "$how" = tls ]; then
                        args=(-p "$tport" "${client[@]}")
                    else
                        args=(-p "$port")
                    fi
                    rps=$(redis-benchmark "${args[@]}" -c 50 -P "$p" -r 100000 -n "$requests" \
                        -t "$t" --csv 2>/dev/null | awk -F'"' 'NR == 2 { print $4 }')
                    echo "$spec	$t	$p	$how	$rps" >>"$raw"
                done
            done
        done
        echo "tls_bench: run $r/$runs, $spec done" >&2
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        rm -rf "$dir"
    done
done

med() { # SPEC TEST P HOW
    awk -F'\t' -v s="$1" -v t="$2" -v p="$3" -v h="$4" \
        '$1 == s && $2 == t && $3 == p && $4 == h { print $5 }' "$raw" | median
}

{
    [ -s "${out:-/dev/null}" ] && echo
    echo "## tls_bench — $(date +%F), $(nproc) CPUs, $runs run(s)"
    echo
    echo "redis-benchmark, 50 clients, $requests requests a test on random keys among 100,000;"
    echo "TLS with a client certificate (RSA 2048), and the plain port for reference."
    echo "Requests per second, median over the runs; ratio: shmkvd ÷ redis-server."
    echo
    echo "| test | P | redis TLS | shmkvd TLS | TLS ratio | redis plain | shmkvd plain | plain ratio |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    for t in set get; do
        for p in 1 16; do
            a=$(med redis "$t" "$p" tls) b=$(med shmkvd "$t" "$p" tls)
            c=$(med redis "$t" "$p" plain) d=$(med shmkvd "$t" "$p" plain)
            awk -v t="${t^^}" -v p="$p" -v a="$a" -v b="$b" -v c="$c" -v d="$d" 'BEGIN {
                printf "| %s | %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f |\n",
                    t, p, a, b, a ? b / a : 0, c, d, c ? d / c : 0 }'
        done
    done
} | if [ -n "$out" ]; then tee -a "$out"; else cat; fi
