#!/usr/bin/env bash
# thread_cpu.sh — SET (or another write) at pipeline 16 against fresh
# servers in alternated rounds, with each server thread's CPU per request:
# which thread sets the rate (docs/daemon.md, "The hot path").
#
#   bench/thread_cpu.sh [--requests N] [--rounds R] [--data-size B] [--test T] [--out FILE] [SERVER ...]
#
# SERVER: redis or shmkvd, optionally with arguments after a colon, e.g.
#   bench/thread_cpu.sh --rounds 4 redis "redis:--io-threads 4" shmkvd "shmkvd:--io-threads 4"
# (default: redis shmkvd). shmkvd@BIN runs the shmkvd binary BIN instead of
# this tree's, to compare two builds in alternated rounds (copy the old
# build's build/daemon/shmkvd to OLD, change and rebuild, then
# bench/thread_cpu.sh --rounds 12 shmkvd@OLD shmkvd). redis runs without
# persistence, shmkvd on its defaults. Each measurement starts the server,
# writes 200,000 SETs to warm it, then runs redis-benchmark -t set
# -r 100000 -c 50 -P 16 and waits for shmkvd's write-back to have nothing
# pending. --test runs another of redis-benchmark's tests instead of the
# measured SETs (lpush, hset, sadd, zadd, incr, ...: its collection writes
# all go to one key; the warm-up stays SET). CPU is user+system time from
# /proc/<pid>/task/*/stat over the test and that catch-up, summed by thread
# name (shmkvd names its threads; redis-server's I/O threads are io_thd_N),
# divided by the requests. Odd rounds run the servers in the order given,
# even rounds in reverse. The output closes with each server's medians
# over the rounds, and with each server's figures over the first server's
# in the same round (median and range): main-thread CPU per SET, the
# flusher's, and SET/s counting catch-up; the figures to compare builds
# by on a machine whose speed drifts between rounds.
# Loopback only; each server is stopped by its PID and its folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."

requests=1000000 rounds=3 dsize=3 test=set out="" servers=()
while [ $# -gt 0 ]; do
    case "$1" in
    --requests) requests=$2; shift ;;
    --data-size) dsize=$2; shift ;; # value bytes (redis-benchmark -d; its default 3)
    --rounds) rounds=$2; shift ;;
    --test) test=$2; shift ;;
    --out) out=$2; shift ;;
    redis | redis:* | shmkvd | shmkvd:* | shmkvd@?*) servers+=("$1") ;;
    *) echo "usage: $0 [--requests N] [--rounds R] [--data-size B] [--test T] [--out FILE] [redis[:ARGS] | shmkvd[@BIN][:ARGS] ...]" >&2; exit 2 ;;
    esac
    shift
done
[ ${#servers[@]} -gt 0 ] || servers=(redis shmkvd)
shmkvd=build/daemon/shmkvd
[ -x "$shmkvd" ] || { echo "thread_cpu: build first (cmake --build build)" >&2; exit 1; }

. bench/lib.sh
bench_init threadcpu
tck=$(getconf CLK_TCK)

# cpu PID: "name ticks" per thread name, sorted by name.
cpu() {
    for t in /proc/"$1"/task/*; do
        local s
        s=$(sed 's/.*) //' "$t/stat" 2>/dev/null) || continue
        echo "$(tr ' ' '_' <"$t/comm" 2>/dev/null) $(echo "$s" | awk '{ print $12 + $13 }')"
    done | awk '{ a[$1] += $2 } END { for (k in a) print k, a[k] }' | sort
}

# us NAME: the CPU per SET in µs of the threads named NAME, from $ticks
# (the round's "name before after" lines); empty if there are none.
us() {
    echo "$ticks" | awk -v t="$1" -v n="$requests" -v tk="$tck" '$1 == t { printf "%.3f", ($3 - $2) / tk * 1e6 / n }'
}

T=${test^^} # the request's name in the tables
rows=""
for r in $(seq 1 "$rounds"); do
    # Even rounds run the servers in the reverse order: whichever runs
    # first in a round measured a few percent apart from its place alone,
    # and the paired ratios are by round.
    order=("${servers[@]}")
    if [ $((r % 2)) -eq 0 ]; then
        order=()
        for ((i = ${#servers[@]} - 1; i >= 0; i--)); do order+=("${servers[i]}"); done
    fi
    for spec in "${order[@]}"; do
        name=${spec%%:*} args="" bin=$shmkvd
        [[ $spec == *:* ]] && args=${spec#*:}
        [[ $name == shmkvd@* ]] && bin=${name#shmkvd@}
        port=$(free_port)
        dir="$work/$r-$port"
        mkdir -p "$dir"
        if [ "$name" = redis ]; then
            # shellcheck disable=SC2086
            redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" $args >"$dir/log" 2>&1 &
        else
            # shellcheck disable=SC2086
            "$bin" --port "$port" --bind 127.0.0.1 --dir "$dir/data" $args >"$dir/log" 2>&1 &
        fi
        pid=$!
        pids+=("$pid")
        wait_ready "$port"
        redis-benchmark -p "$port" -t set -n 200000 -r 100000 -d "$dsize" -c 50 -P 16 -q >/dev/null 2>&1
        catch_up_us "$port" >/dev/null
        cpu "$pid" >"$dir/cpu0"
        rps=$(redis-benchmark -p "$port" -t "$test" -n "$requests" -r 100000 -d "$dsize" -c 50 -P 16 --csv 2>/dev/null |
            awk -F, 'NR == 2 { gsub(/"/, "", $2); print $2 }')
        cu=$(catch_up_us "$port")
        cpu "$pid" >"$dir/cpu1"
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        ticks=$(join "$dir/cpu0" "$dir/cpu1")
        per=$(echo "$ticks" | awk -v n="$requests" -v tk="$tck" '
            { d = $3 - $2; if (d > 0) s = s (s ? ", " : "") sprintf("%s %.2f", $1, d / tk * 1e6 / n) }
            END { print s }')
        total=$(awk -v n="$requests" -v r="$rps" -v cu="$cu" 'BEGIN { printf "%.0f", n / (n / r + cu / 1e6) }')
        rows+=$(printf '| %s | %s | %.0f | %s | %s |' "$r" "$name${args:+ $args}" "$rps" "$total" "$per")$'\n'
        # For the medians: the main thread, named after the binary, by spec.
        main=redis-server
        [ "$name" = redis ] || main=$(basename "$bin" | cut -c1-15)
        # Fields: spec, SET/s counting catch-up, main thread's and flusher
        # threads' CPU per SET (µs; the flusher's empty for redis), round.
        echo "$spec"$'\t'"$total"$'\t'"$(us "$main")"$'\t'"$(us shmkv-flusher)"$'\t'"$r" >>"$work/by_spec"
        echo "thread_cpu: round $r, $name${args:+ $args}: $rps ${T}/s, catch-up $((cu / 1000)) ms" >&2
    done
done

{
    echo "## thread_cpu — $(date -u +%Y-%m-%d), $(nproc) CPUs, $rounds rounds, $requests ${T}s of $dsize-byte values at pipeline 16, 50 clients"
    echo
    echo "${T}/s during the test (redis-benchmark's figure) and counting shmkvd's write-back catch-up after it (requests ÷ (the test's time + the catch-up), as resp_bench.sh counts it); CPU per ${T} in µs by thread name, user+system, over the test and the catch-up."
    echo
    echo "| round | server | ${T}/s during the test | ${T}/s counting catch-up | CPU per ${T} by thread, µs |"
    echo "|---:|---|---:|---:|---|"
    printf '%s' "$rows"
    echo
    echo "Medians over the rounds (main thread: redis-server's, or shmkvd's event loop):"
    echo
    # med(a, n): the median of a[1..n], which it sorts in place.
    med_awk='function med(a, n,   i, j, t) {
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }'
    echo "| server | ${T}/s counting catch-up | main thread's CPU per ${T}, µs |"
    echo "|---|---:|---:|"
    for spec in "${servers[@]}"; do
        awk -F'\t' -v s="$spec" "$med_awk"'
            $1 == s { k++; r[k] = $2; c[k] = $3 }
            END { printf "| %s | %.0f | %.3f |\n", s, med(r, k), med(c, k) }' "$work/by_spec"
    done
    # Paired: each round's ratio to the first server's same round, so that
    # the VM's drift between rounds cancels out of the comparison.
    if [ ${#servers[@]} -gt 1 ]; then
        echo
        echo "Over ${servers[0]}'s figure in the same round, median of the rounds (range): the main thread's CPU per ${T}, the flusher's (shmkvd against shmkvd), and ${T}/s counting catch-up:"
        echo
        echo "| server | main thread | range | flusher | range | ${T}/s | range |"
        echo "|---|---:|---|---:|---|---:|---|"
        for spec in "${servers[@]:1}"; do
            awk -F'\t' -v b="${servers[0]}" -v s="$spec" "$med_awk"'
                $1 == b { bc[$5] = $3; bf[$5] = $4; bt[$5] = $2 }
                $1 == s { mc[$5] = $3; mf[$5] = $4; mt[$5] = $2 }
                END {
                    for (r in mc) {
                        if (bc[r] > 0) q[++k] = mc[r] / bc[r]
                        if (bf[r] > 0 && mf[r] > 0) f[++kf] = mf[r] / bf[r]
                        if (bt[r] > 0) t[++kt] = mt[r] / bt[r]
                    }
                    m = med(q, k); mt_ = med(t, kt)
                    fl = "—"; flr = "—"
                    if (kf) { fl = sprintf("%.3f", med(f, kf)); flr = sprintf("%.3f-%.3f", f[1], f[kf]) }
                    printf "| %s | %.3f | %.3f-%.3f | %s | %s | %.3f | %.3f-%.3f |\n", s, m, q[1], q[k], fl, flr, mt_, t[1], t[kt]
                }' "$work/by_spec"
        done
    fi
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
