#!/usr/bin/env bash
# cold_bench.sh — SET and GET at pipeline 16 over a key space larger than
# shmkvd's shm cache, every key existing before the test: the writes whose
# prior state and the reads that only RocksDB holds (docs/storage.md,
# "Writes of cold keys"). redis-server without persistence and shmkvd on
# its defaults, in one run, as a Markdown table of medians.
#
#   bench/cold_bench.sh [--keys N] [--requests N] [--runs R] [--tests set,get,mget] [SERVER ...]
#
# SERVER: redis, shmkvd, or shmkvd@BIN to run another build's binary
# (default: redis shmkvd). Each server is started in turn, filled with
# 2 x keys random SETs (redis-benchmark -r, pipeline 64), then each test
# runs R times: redis-benchmark -t TEST -r keys -c 50 -P 16, counting
# shmkvd's write-back catch-up after a write test as resp_bench.sh does.
# The test mget is MGET of 10 random keys (requests: MGETs).
# Loopback only; each server is stopped by its PID and its folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."

keys=3000000 requests=2000000 runs=3 tests="set,get" servers=()
while [ $# -gt 0 ]; do
    case "$1" in
    --keys) keys=$2; shift ;;
    --requests) requests=$2; shift ;;
    --runs) runs=$2; shift ;;
    --tests) tests=$2; shift ;;
    redis | shmkvd | shmkvd@?*) servers+=("$1") ;;
    *) echo "usage: $0 [--keys N] [--requests N] [--runs R] [--tests set,get,mget] [redis | shmkvd[@BIN] ...]" >&2; exit 2 ;;
    esac
    shift
done
[ ${#servers[@]} -gt 0 ] || servers=(redis shmkvd)
shmkvd=build/daemon/shmkvd
[ -x "$shmkvd" ] || { echo "cold_bench: build first (cmake --build build)" >&2; exit 1; }

. bench/lib.sh
bench_init cold

rows=""
declare -A med
for spec in "${servers[@]}"; do
    port=$(free_port)
    dir="$work/$port"
    mkdir -p "$dir"
    start_server "$spec" "$port" "$dir"
    echo "cold_bench: $spec: filling $keys keys" >&2
    redis-benchmark -p "$port" -t set -n $((2 * keys)) -r "$keys" -c 50 -P 64 -q >/dev/null 2>&1
    catch_up_us "$port" >/dev/null
    for t in ${tests//,/ }; do
        vals=()
        for ((r = 1; r <= runs; r++)); do
            # (a command to run comes after redis-benchmark's options)
            if [ "$t" = mget ]; then what=(MGET $(printf 'key:__rand_int__ %.0s' $(seq 10))); else what=(-t "$t"); fi
            rps=$(redis-benchmark -p "$port" -n "$requests" -r "$keys" -c 50 -P 16 --csv "${what[@]}" 2>/dev/null |
                awk -F, 'NR == 2 { gsub(/"/, "", $2); print $2 }')
            cu=$(catch_up_us "$port")
            v=$(awk -v n="$requests" -v r="$rps" -v cu="$cu" 'BEGIN { printf "%.0f", n / (n / r + cu / 1e6) }')
            echo "cold_bench: $spec $t run $r: $v/s" >&2
            vals+=("$v")
        done
        m=$(printf '%s\n' "${vals[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
        med[$spec,$t]=$m
        all=$(IFS=,; echo "${vals[*]}")
        rows+="| $spec | ${t^^} | ${all//,/, } | $m |"$'\n'
    done
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    rm -rf "$dir"
done

echo "## cold_bench — $(date +%F), $(nproc) CPUs, $keys keys, $requests requests at pipeline 16, 50 clients"
echo
echo "Requests/s counting shmkvd's write-back catch-up; median of $runs runs."
echo
echo "| server | test | runs | median |"
echo "|---|---|---|---:|"
printf '%s' "$rows"
if [ -n "${med[redis,set]:-}${med[redis,get]:-}" ]; then
    echo
    echo "Over redis-server's median:"
    echo
    for spec in "${servers[@]}"; do
        [ "$spec" = redis ] && continue
        for t in ${tests//,/ }; do
            [ -n "${med[redis,$t]:-}" ] || continue
            awk -v s="$spec" -v t="${t^^}" -v a="${med[$spec,$t]}" -v b="${med[redis,$t]}" \
                'BEGIN { printf "* %s %s: %.2fx\n", s, t, a / b }'
        done
    done
fi
