#!/usr/bin/env bash
# small_bench.sh — many small collections (docs/storage.md, "Small
# collections inline"): N hashes of 10 fields, N sets of 10 integers and N
# sorted sets of 10 members, read and written at random by redis-benchmark
# against redis-server and shmkvd, same machine, same run; and what each
# server's memory and disk hold once they are filled.
#
#   bench/small_bench.sh [--keys N] [--requests N] [--runs R] [--out FILE] [SERVER ...]
#
# SERVER: redis, shmkvd (this tree's build, small collections inline),
# cached (the same with a 1 GiB shared-memory cache, which holds every key:
# memory like redis-server's, see the RSS column) or records (this tree's
# build with every threshold at 0: the per-element records only). Default:
# redis shmkvd cached records. Each run starts every server afresh and
# fills it with redis-cli --pipe (keys h:, s:, z: then the 12-digit number
# redis-benchmark's __rand_int__ gives, default 1,000,000 of each); for
# shmkvd it waits until write-back has nothing pending. Then
# each test runs with 50 clients at pipeline 1 and 16 (redis-benchmark -r N
# -n REQUESTS, default 200,000), each request on a random key. The tables
# give medians over the runs: requests per second, their ratio to the first
# server, and memory and disk. Loopback only; each server is stopped by its
# PID and its folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."

keys=1000000 requests=200000 runs=1 out="" servers=()
while [ $# -gt 0 ]; do
    case "$1" in
    --keys) keys=$2; shift ;;
    --requests) requests=$2; shift ;;
    --runs) runs=$2; shift ;;
    --out) out=$2; shift ;;
    redis | shmkvd | cached | records) servers+=("$1") ;;
    *) echo "usage: $0 [--keys N] [--requests N] [--runs R] [--out FILE] [redis | shmkvd | cached | records ...]" >&2; exit 2 ;;
    esac
    shift
done
[ ${#servers[@]} -gt 0 ] || servers=(redis shmkvd cached records)
[ -x build/daemon/shmkvd ] || { echo "small_bench: build first (cmake --build build)" >&2; exit 1; }

. bench/lib.sh
bench_init small

K=__rand_int__
tests=("HSET h:$K f5 v5" "HGET h:$K f5" "HMGET h:$K f1 f5 f9" "HGETALL h:$K"
    "SADD s:$K 5" "SISMEMBER s:$K 5" "SMISMEMBER s:$K 1 5 9" "SMEMBERS s:$K"
    "ZADD z:$K 5 m5" "ZSCORE z:$K m5" "ZMSCORE z:$K m1 m5 m9" "ZRANGE z:$K 0 -1 WITHSCORES")

fill() { # PORT: the keys, in RESP, through redis-cli --pipe
    awk -v n="$keys" 'function bulk(s) { return "$" length(s) "\r\n" s "\r\n" }
    BEGIN {
        srand(7)
        for (i = 0; i < n; i++) {
            k = sprintf("%012d", i)
            h = "*22\r\n" bulk("HSET") bulk("h:" k)
            s = "*12\r\n" bulk("SADD") bulk("s:" k)
            z = "*22\r\n" bulk("ZADD") bulk("z:" k)
            for (j = 0; j < 10; j++) {
                h = h bulk("f" j) bulk(sprintf("v%07d", int(rand() * 10000000)))
                s = s bulk(j)
                z = z bulk(int(rand() * 1000)) bulk("m" j)
            }
            printf "%s%s%s", h, s, z
        }
    }' | redis-cli -p "$1" --pipe >/dev/null
}

info() { redis-cli -p "$1" info "$2" | tr -d '\r'; }

raw="$work/raw"
: >"$raw"
for r in $(seq 1 "$runs"); do
    for spec in "${servers[@]}"; do
        port=$(free_port)
        dir="$work/$r-$spec"
        mkdir -p "$dir"
        shmkvd_args=()
        srv=$spec
        case $spec in
        cached) shmkvd_args=(--shm-cache-size 1gb) srv=shmkvd ;;
        records)
            shmkvd_args=(--hash-max-listpack-entries 0 --set-max-intset-entries 0
                --zset-max-listpack-entries 0)
            srv=shmkvd
            ;;
        esac
        start_server "$srv" "$port" "$dir"
        t0=$(date +%s%N)
        fill "$port"
        catch_up_us "$port" >/dev/null
        fill_s=$(awk -v t="$(($(date +%s%N) - t0))" 'BEGIN { printf "%.1f", t / 1e9 }')
        sleep 2 # RocksDB's flushes settle
        rss=$(($(awk '/VmRSS/ { print $2 }' "/proc/$pid/status") * 1024))
        if [ "$srv" = redis ]; then
            data=$(info "$port" memory | sed -n 's/^used_memory://p')
            disk=0
        else
            data=$(info "$port" storage | awk -F'[=,]' '/^cf_/ { s += $4 + $6 } END { print s }')
            disk=$(du -sb "$dir/data" | awk '{ print $1 }')
        fi
        echo "$spec	fill	$fill_s	$rss	$data	$disk" >>"$raw"
        for t in "${tests[@]}"; do
            for p in 1 16; do
                # shellcheck disable=SC2086 # the test's words are its arguments
                rps=$(redis-benchmark -p "$port" -c 50 -P "$p" -r "$keys" -n "$requests" --csv $t 2>/dev/null |
                    awk -F'"' 'NR == 2 { print $4 }')
                echo "$spec	$t	$p	$rps" >>"$raw"
            done
        done
        echo "small_bench: run $r/$runs, $spec done" >&2
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        rm -rf "$dir"
    done
done

med() { # SPEC TEST P: the median requests/s
    awk -F'\t' -v s="$1" -v t="$2" -v p="$3" '$1 == s && $2 == t && $3 == p { print $4 }' "$raw" | median
}
medf() { # SPEC COLUMN: a median of the fill line
    awk -F'\t' -v s="$1" -v c="$2" '$1 == s && $2 == "fill" { print $c }' "$raw" | median
}

{
    [ -s "${out:-/dev/null}" ] && echo # apart from what the file holds already
    echo "## small_bench — $(date +%F), $(nproc) CPUs, $runs run(s)"
    echo
    echo "$keys hashes of 10 fields (10-byte values), $keys sets of 10 integers and $keys sorted"
    echo "sets of 10 members; redis-benchmark, 50 clients, $requests requests a test, each on a"
    echo "random key. Requests per second (median over the runs); ratio: each server ÷ ${servers[0]}."
    echo
    printf "| command | P |"
    for s in "${servers[@]}"; do printf " %s |" "$s"; done
    for s in "${servers[@]:1}"; do printf " %s ratio |" "$s"; done
    echo
    printf "|---|---:|"
    for _ in "${servers[@]}" "${servers[@]:1}"; do printf -- "---:|"; done
    echo
    for t in "${tests[@]}"; do
        for p in 1 16; do
            printf "| %s | %s |" "${t//__rand_int__/N}" "$p"
            base=$(med "${servers[0]}" "$t" "$p")
            for s in "${servers[@]}"; do printf " %.0f |" "$(med "$s" "$t" "$p")"; done
            for s in "${servers[@]:1}"; do
                awk -v a="$base" -v b="$(med "$s" "$t" "$p")" 'BEGIN { printf " %.2f |", a ? b / a : 0 }'
            done
            echo
        done
    done
    echo
    echo "After the fill (medians): the fill's time, the process's RSS, the data (redis-server's"
    echo "used_memory; shmkvd's RocksDB table files and memtables, all column families) and the"
    echo "data folder on disk."
    echo
    echo "| server | fill s | RSS MiB | data MiB | disk MiB |"
    echo "|---|---:|---:|---:|---:|"
    for s in "${servers[@]}"; do
        awk -v n="$s" -v f="$(medf "$s" 3)" -v r="$(medf "$s" 4)" -v d="$(medf "$s" 5)" -v k="$(medf "$s" 6)" \
            'BEGIN { printf "| %s | %s | %.0f | %.0f | %.0f |\n", n, f, r / 1048576, d / 1048576, k / 1048576 }'
    done
} | if [ -n "$out" ]; then tee -a "$out"; else cat; fi
