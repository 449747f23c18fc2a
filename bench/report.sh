#!/usr/bin/env bash
# report.sh — the benchmark report: shmkv against Debian's redis-server on
# this machine, in this run, as a Markdown report and PNG plots (gnuplot).
#
#   bench/report.sh [--quick] [--out DIR] [--sections 1,3] [--loads A,B]
#                   [--prebuilt]
#
# Builds what it needs, then measures, each as medians over repeated runs
# with min–max where a section repeats, and as ratios against the peer
# measured in the same run:
#   1. local reads: a libshmkv shm hit against GET round trips over the
#      Unix socket to shmkvd and redis-server (bench/shm_bench.sh)
#   2. RESP throughput and p99: redis-benchmark, 8 tests, pipeline 1 and 16,
#      50 clients, shmkvd against redis-server with and without AOF
#      (bench/resp_bench.sh); then SET and GET at pipeline 16 ten times as
#      long, for the rate under a sustained write load
#   3. writes under compaction pressure: paced SET and HSET latency second
#      by second while a bulk load keeps RocksDB compacting (one load its
#      compaction keeps up with, one it does not, and the first again with
#      RocksDB's flush and compaction limited to a disk bandwidth below the
#      load's), write-back on and off, and redis-server with AOF under the
#      same load
#   4. larger than memory: Zipf 0.99 reads over 10x the keys the shm cache
#      holds, and the cold start after a restart
#   5. big keys: DEL and EXPIRE of a 1M-field hash and a 1M-member sorted
#      set, against redis-server's DEL and UNLINK
#   6. footprint: bytes on disk per record after compaction and RSS, for
#      10M small strings, against redis-server's RSS
# The default scale takes about 15 minutes on 2 CPUs; --quick (about 2
# minutes, run by CI so the code never rots) shrinks every count and judges
# nothing. Output: DIR/REPORT.md and DIR/*.png (default bench/results).
# --sections runs only those sections; --loads sets section 3's two bulk
# loads in MiB/s (default 24,56: on a larger machine both may be kept up
# with), --io-limit the flush and compaction bandwidth of its third run
# (default 16mb, per second); --prebuilt skips installing and building, for a machine that got
# the binaries from bench/bundle.sh. Without gnuplot the plots are skipped.
# Loopback and Unix sockets only; every server is started here, stopped by
# its PID, and its folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0 out=bench/results sections=1,2,3,4,5,6 loads="" io_limit="" prebuilt=0
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=1 ;;
    --out) out=$2; shift ;;
    --sections) sections=$2; shift ;;
    --loads) loads=$2; shift ;;
    --io-limit) io_limit=$2; shift ;;
    --prebuilt) prebuilt=1 ;;
    *) echo "usage: $0 [--quick] [--out DIR] [--sections LIST] [--loads A,B] [--io-limit BYTES] [--prebuilt]" >&2; exit 2 ;;
    esac
    shift
done
want() { [[ ",$sections," == *",$1,"* ]]; }

if [ "$prebuilt" = 0 ]; then
    scripts/deps.sh
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j"$(nproc)" >/dev/null
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
shmkvd=$PWD/build/daemon/shmkvd kvtool=$PWD/build/bench/kvtool shmb=$PWD/build/bench/shm_bench

. bench/lib.sh
bench_init report

if [ "$quick" = 1 ]; then
    shm_args=(--quick) resp_args=(--quick) steady_args=(--runs 1 --requests 50000) tl_secs=4 tl_mbps=8 tl_mbps_over=16 tl_io=4mb tl_rate=1000 ltm_cache=2mb ltm_secs=2
    big=20000 big_runs=1 ltm_runs=1 fp_keys=100000
else
    shm_args=(--runs 3) resp_args=(--runs 3 --requests 100000) steady_args=(--runs 5 --requests 1000000) tl_secs=20 tl_mbps=24 tl_mbps_over=56 tl_io=16mb tl_rate=5000
    ltm_cache=16mb ltm_secs=10 ltm_runs=3 big=1000000 big_runs=3 fp_keys=10000000
fi
if [ -n "$loads" ]; then tl_mbps=${loads%,*} tl_mbps_over=${loads#*,}; fi
if [ -n "$io_limit" ]; then tl_io=$io_limit; fi
started=$(date +%s)
note() { echo "report: $* ($(($(date +%s) - started)) s)" >&2; }

# Starts a server; sets $port and $pid. start NAME shmkvd|redis [ARGS...]
start() {
    local name=$1 kind=$2
    shift 2
    port=$(free_port)
    mkdir -p "$work/$name"
    if [ "$kind" = shmkvd ]; then
        "$shmkvd" --port "$port" --bind 127.0.0.1 --dir "$work/$name/data" \
            --unixsocket "$work/$name/sock" "$@" >"$work/$name/log" 2>&1 &
    else
        redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/$name" \
            --unixsocket "$work/$name/sock" "$@" >"$work/$name/log" 2>&1 &
    fi
    pid=$!
    pids+=("$pid")
    wait_ready "$port"
}

stop() { # PID: SIGTERM, then wait for it
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

plot() { # the gnuplot script on stdin, or nothing where gnuplot is missing
    if command -v gnuplot >/dev/null; then gnuplot; else cat >/dev/null; note "no gnuplot: a plot skipped"; fi
}

img() { # ALT FILE: the Markdown for a plot, where one was drawn
    if command -v gnuplot >/dev/null; then echo "![$1]($2)"; fi
}

rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

md="$work/report.md"
: >"$md"

# Each section sits in `if want N` unindented: its gnuplot here-documents
# end at column 0.

# ---- 1. local reads ----
if want 1; then
note "1/6 local reads"
bench/shm_bench.sh "${shm_args[@]}" --cdf "$work/cdf" --out "$work/shm.md" >/dev/null 2>&1
{
    echo "## 1. Local reads: shm hit against GET round trips"
    echo
    tail -n +3 "$work/shm.md"
    echo
    img "latency CDF" "local_reads_cdf.png"
    echo
} >>"$md"
plot <<EOF
set terminal pngcairo size 900,500 noenhanced
set output "$out/local_reads_cdf.png"
set title "Local read latency, 1 process, uniform keys"
set logscale x
set xlabel "latency (ns, log scale)"
set ylabel "fraction of reads"
set key bottom right
set grid
plot "$work/cdf/shm.cdf" using 1:2 with lines lw 2 title "libshmkv shm hit", \
     "$work/cdf/hiredis-shmkvd.cdf" using 1:2 with lines lw 2 title "hiredis GET, Unix socket, shmkvd", \
     "$work/cdf/hiredis-redis.cdf" using 1:2 with lines lw 2 title "hiredis GET, Unix socket, redis-server"
EOF

fi

# ---- 2. RESP throughput ----
if want 2; then
note "2/6 RESP throughput"
bench/resp_bench.sh "${resp_args[@]}" --tests set,get,hset,lpush,sadd,zadd,lrange_100,mset \
    --out "$work/resp.md" >/dev/null 2>&1
# A write test of 100,000 requests at pipeline 16 lasts a fraction of a
# second, less than the flusher waits for a batch to fill, so shmkvd's
# figure there counts the write of one batch after the test more than
# any rate. SET and GET run again, ten times as long: the flusher's rate
# then decides, as it would under a sustained load.
bench/resp_bench.sh "${steady_args[@]}" --pipelines 16 --tests set,get \
    --out "$work/steady.md" >/dev/null 2>&1
{
    echo "## 2. RESP throughput and p99 (redis-benchmark, 50 clients, TCP loopback)"
    echo
    tail -n +3 "$work/resp.md"
    echo
    echo "SET and GET at pipeline 16 again, ${steady_args[3]} requests per test (runs: ${steady_args[1]}): a write test of ${resp_args[3]:-20000} requests lasts less than the flusher waits for a batch to fill (until writes pause for 10 ms, 250 ms pass or 16 MiB are queued), so above, shmkvd's figure counts one batch written after the test; here it counts the flusher's rate under a sustained load."
    echo
    tail -n +5 "$work/steady.md"
    echo
    img "throughput" "resp_throughput.png"
    echo
} >>"$md"
# test pipeline redis aof shmkvd: the medians, first number of each cell
grep '^| [A-Z]' "$work/resp.md" | awk -F'|' '{
    gsub(/ /, "", $2); gsub(/ /, "", $3)
    split($4, a, " "); split($6, b, " "); split($8, c, " ")
    printf "%s/P%s %s %s %s\n", $2, $3, a[1], b[1], c[1] }' >"$work/resp.dat"
plot <<EOF
set terminal pngcairo size 1100,500 noenhanced
set output "$out/resp_throughput.png"
set title "redis-benchmark requests/s (median), 50 clients"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -35
set ylabel "requests/s"
set grid ytics
set key top left
plot "$work/resp.dat" using 2:xtic(1) title "redis-server", '' using 3 title "redis-server aof everysec", '' using 4 title "shmkvd"
EOF

fi

# ---- 3. writes under compaction pressure ----
if want 3; then
# Paced: a fixed rate below every server's capacity, latency counted from
# each command's scheduled time. Run back to back from 50 connections, the
# test measured queueing at saturation instead, which hides what a stall
# does to the commands behind it. Two bulk loads: one RocksDB keeps up
# with, and one it does not (its compaction falls behind and it delays
# writes), for as long as write-back's overlay has room; the overlay's
# peak is reported so the room used shows. On a machine whose disk keeps
# up with both, RocksDB never stalls for long, so the first load runs a
# third time with flush and compaction limited to a bandwidth below what
# it needs (compaction-io-limit): a slower or shared disk, where the
# write stalls that write-back exists to hide do happen. The whole run's
# p99.9 is given beside the median over the seconds, which drops a stall
# that lasts a second or two.
note "3/6 writes under compaction pressure"
tl_rows=""
# The paced clients run at real-time priority where that is allowed (root,
# or CAP_SYS_NICE): latency is counted from each command's scheduled time,
# so a client thread that waits for a CPU before it sends, or before it
# reads the reply, counts its own wait as the server's. On 2 CPUs shared
# with the loader, the daemon and RocksDB's threads, the nine most delayed
# of the 50 client threads waited more than 1 ms for a CPU 55-105 times
# each in 20 s (perf sched),
# which put write-back's whole-run p99.9 at 4.3-5.7 ms in three runs,
# against 1.5-5.9 ms (median 2.6) in eight with the clients at real-time
# priority (writeback.md). The loader and
# every server keep the normal priority, in all three modes.
tl_prio=()
tl_prio_note="the paced clients at normal priority (real-time priority was not allowed here)"
if chrt -f 1 true 2>/dev/null; then
    tl_prio=(chrt -f 1)
    tl_prio_note="the paced clients' threads at real-time priority (SCHED_FIFO 1), so that their own waits for a CPU do not count as the server's latency; the loader and the servers at normal priority"
fi
tl_cells() { # MBPS TAG [IO_LIMIT]: SET and HSET x write-back on, off, redis-server AOF
    local mbps=$1 tag=$2 io=${3:-0} cmd mode loader poller f
    for cmd in set hset; do
        for mode in on off redis; do
            f="$work/tl-$tag-$cmd-$mode"
            if [ $mode = redis ]; then
                start "tl-$tag-$cmd-$mode" redis --appendonly yes --appendfsync everysec
            else
                start "tl-$tag-$cmd-$mode" shmkvd --write-buffer-size 4mb --compaction-io-limit "$io" \
                    --write-back "$([ $mode = on ] && echo yes || echo no)"
            fi
            "$kvtool" load 127.0.0.1 "$port" "$mbps" "$((tl_secs + 5))" &
            loader=$!
            echo 0 >"$f.peak"
            if [ $mode = on ]; then
                (
                    peak=0
                    while kill -0 "$loader" 2>/dev/null; do
                        b=$(redis-cli -p "$port" info persistence 2>/dev/null | tr -d '\r' |
                            awk -F: '/^writeback_overlay_bytes/ { print $2 + 0 }')
                        if [ "${b:-0}" -gt "$peak" ]; then peak=$b; echo "$peak" >"$f.peak"; fi
                        sleep 0.5
                    done
                ) &
                poller=$!
            fi
            "${tl_prio[@]}" "$kvtool" timeline 127.0.0.1 "$port" 50 "$tl_secs" "$f.dat" "$tl_rate" "$cmd"
            kill "$loader" 2>/dev/null || true
            wait "$loader" 2>/dev/null || true
            if [ $mode = on ]; then wait "$poller" 2>/dev/null || true; fi
            stop "$pid"
            # RocksDB logs each change of its write controller: "Stalling
            # writes" (delayed) and "Stopping writes".
            stalls=—
            if [ $mode != redis ]; then
                stalls="$(cat "$work/tl-$tag-$cmd-$mode/data/LOG"* 2>/dev/null | grep -c 'Stalling writes' || true) / $(cat "$work/tl-$tag-$cmd-$mode/data/LOG"* 2>/dev/null | grep -c 'Stopping writes' || true)"
            fi
            rm -rf "${work:?}/tl-$tag-$cmd-$mode" # a fast load writes gigabytes per cell
            tl_rows+=$(awk -v c="$cmd" -v m="$mode" -v l="$mbps" -v io="$io" -v pk="$(cat "$f.peak")" -v st="$stalls" -v all="$(cat "$f.dat.all")" '
                function median(arr, n,   i, j, t) {
                    for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
                    return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2 }
                { n++; p50[n] = $2; p99[n] = $3; p999[n] = $4; ops[n] = $5; if ($4 > mx) mx = $4; if (!mn || $4 < mn) mn = $4 }
                END { split(all, w, " ")
                      printf "| %s | %d MiB/s%s | %s | %d | %d | %d (%d–%d) | %d | %.0f | %s | %s |\n", toupper(c), l, io == "0" ? "" : ", compaction " io "/s", m == "redis" ? "redis-server, appendonly everysec" : "shmkvd, write-back " m, median(p50, n), median(p99, n), median(p999, n), mn, mx, w[3], median(ops, n), m == "on" ? sprintf("%.1f", pk / 1048576) : "—", st }' "$f.dat")
            tl_rows+=$'\n'
        done
    done
}
tl_cells "$tl_mbps" a
tl_cells "$tl_mbps_over" b
tl_cells "$tl_mbps" c "$tl_io"
tl_ratio() { # TAG CMD: p99.9 off ÷ on, and redis ÷ on, medians over the seconds and whole runs
    awk 'function median(arr, n,   i, j, t) {
            for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
            return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2 }
        FNR == 1 { f++ } f == 1 { x[++nx] = $4 } f == 2 { y[++ny] = $4 } f == 3 { z[++nz] = $4 }
        f == 4 { wx = $3 } f == 5 { wy = $3 } f == 6 { wz = $3 }
        END { printf "%.2fx, whole run %.2fx (redis-server ÷ write-back on: %.2fx, %.2fx)", median(y, ny) / median(x, nx), wy / wx, median(z, nz) / median(x, nx), wz / wx }' \
        "$work/tl-$1-$2-on.dat" "$work/tl-$1-$2-off.dat" "$work/tl-$1-$2-redis.dat" \
        "$work/tl-$1-$2-on.dat.all" "$work/tl-$1-$2-off.dat.all" "$work/tl-$1-$2-redis.dat.all"
}
{
    echo "## 3. Writes under compaction pressure"
    echo
    echo "SET and HSET, 100-byte values, $tl_rate commands/s paced from 50 connections for $tl_secs s, latency counted from each command's scheduled time, $tl_prio_note; meanwhile a background client writes 4 KiB values at a steady rate: $tl_mbps MiB/s, then $tl_mbps_over MiB/s, then $tl_mbps MiB/s again with shmkvd's flush and compaction writes limited to $tl_io per second (\`compaction-io-limit\`, RocksDB's rate limiter: a disk slower than the load needs, or one shared with other work). Where compaction falls behind, RocksDB delays writes (the last column counts the times it began delaying and stopping them, from its LOG); with write-back the flusher takes the delay and the overlay grows, up to overlay-max-memory, 256 MiB by default, beyond which writers wait too. shmkvd runs with 4 MiB memtables, so RocksDB flushes and compacts throughout; redis-server, with AOF, is the reference under the same load. Per second: latency percentiles in µs; the table gives their medians over the seconds (min–max for p99.9), and the p99.9 over all of a run's commands, in which a stall of a second or two counts by the commands it held. An unpaced load is not used: it overloads every design, which must then push back somewhere (bench/results/writeback_bench.md measures that case, and throughput)."
    echo
    echo "| command | bulk load | server | p50 µs | p99 µs | p99.9 µs | p99.9 µs, whole run | commands/s | overlay peak MiB | RocksDB delays / stops |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s' "$tl_rows"
    echo
    echo "p99.9, write-back off ÷ on, median over the seconds and whole run: at $tl_mbps MiB/s, SET $(tl_ratio a set), HSET $(tl_ratio a hset); at $tl_mbps_over MiB/s, SET $(tl_ratio b set), HSET $(tl_ratio b hset); at $tl_mbps MiB/s with compaction at $tl_io/s, SET $(tl_ratio c set), HSET $(tl_ratio c hset)."
    echo
    img "latency over time" "writes_under_compaction.png"
    echo
} >>"$md"
tl_plot() { # TAG TITLE: one panel
    cat <<PLOT
set title "bulk load $2"
plot "$work/tl-$1-set-on.dat" using 1:4 with lines lw 2 title "SET, write-back on", \
     "$work/tl-$1-set-off.dat" using 1:4 with lines lw 2 title "SET, write-back off", \
     "$work/tl-$1-set-redis.dat" using 1:4 with lines lw 1 title "SET, redis-server AOF", \
     "$work/tl-$1-hset-on.dat" using 1:4 with lines dt 2 lw 2 title "HSET, write-back on", \
     "$work/tl-$1-hset-off.dat" using 1:4 with lines dt 2 lw 2 title "HSET, write-back off", \
     "$work/tl-$1-hset-redis.dat" using 1:4 with lines dt 2 lw 1 title "HSET, redis-server AOF"
PLOT
}
plot <<EOF
set terminal pngcairo size 2000,500 noenhanced
set output "$out/writes_under_compaction.png"
set multiplot layout 1,3 title "p99.9 latency per second during a bulk load ($tl_rate commands/s)"
set xlabel "second"
set ylabel "p99.9 latency (µs, log scale)"
set logscale y
set grid
set key top left
$(tl_plot a "$tl_mbps MiB/s")
$(tl_plot b "$tl_mbps_over MiB/s")
$(tl_plot c "$tl_mbps MiB/s, compaction $tl_io/s")
unset multiplot
EOF

fi

# ---- 4. larger than memory ----
if want 4; then
note "4/6 larger than memory"
start ltm shmkvd --shm-cache-size "$ltm_cache"
ltm_port=$port
records=$(redis-cli -p "$port" info cache | awk -F: '/^cache_log_bytes/ { printf "%d", $2 / 176 }')
keys=$((records * 10))
"$shmb" load "$work/ltm/sock" "$keys"
stop "$pid"
# Each run starts the daemon afresh (an empty segment; the data on disk)
# and reads for ltm_secs: the start is the cold-start curve, the second
# half the steady state.
: >"$work/ltm.raw"
for run in $(seq 1 "$ltm_runs"); do
    "$shmkvd" --port "$ltm_port" --bind 127.0.0.1 --dir "$work/ltm/data" --unixsocket "$work/ltm/sock" \
        --shm-cache-size "$ltm_cache" >>"$work/ltm/log" 2>&1 &
    pid=$!
    pids+=("$pid")
    wait_ready "$ltm_port"
    "$kvtool" zipfread "$work/ltm/sock" "$keys" "$ltm_secs" 100 "$work/ltm-cold.dat"
    stop "$pid"
    # steady_rps steady_hit first_rps first_hit t90_ms
    awk '{ n++; t[n] = $1; r[n] = $2; h[n] = $3 } END {
        for (i = int(n / 2) + 1; i <= n; i++) { rs += r[i]; hs += h[i]; m++ }
        s = hs / m; t90 = -1
        for (i = 1; i <= n && t90 < 0; i++) if (h[i] >= 0.9 * s) t90 = t[i]
        printf "%.0f %.4f %.0f %.4f %d\n", rs / m, s, r[1], h[1], t90 }' "$work/ltm-cold.dat" >>"$work/ltm.raw"
done
{
    echo "## 4. Larger than memory"
    echo
    echo "Zipf 0.99 GETs through libshmkv over $keys keys (16-byte keys, 100-byte values), 10x the about $records records the $ltm_cache shm cache holds; one process. Each run restarts the daemon (a new, empty segment) and reads for $ltm_secs s: median (min–max) over $ltm_runs runs."
    echo
    echo "| | reads/s | shm hit ratio |"
    echo "|---|---:|---:|"
    awk 'function med(c,   i, j, t, n) { n = 0; for (i = 1; i <= NR; i++) a[++n] = v[i, c]
            for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
            lo = a[1]; hi = a[n]; return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
        { for (c = 1; c <= 5; c++) v[NR, c] = $c }
        END {
            m = med(1); printf "| steady state (the second half of each run) | %.0f (%.0f–%.0f) |", m, lo, hi
            m = med(2); printf " %.4f (%.4f–%.4f) |\n", m, lo, hi
            m = med(3); printf "| cold start: the first 100 ms | %.0f (%.0f–%.0f) |", m, lo, hi
            m = med(4); printf " %.4f (%.4f–%.4f) |\n", m, lo, hi
            m = med(5); printf "| cold start: 90%% of the steady hit ratio reached after | %.0f ms (%.0f–%.0f) | |\n", m, lo, hi }' "$work/ltm.raw"
    echo
    img "cold start" "cold_start.png"
    echo
} >>"$md"
plot <<EOF
set terminal pngcairo size 900,500 noenhanced
set output "$out/cold_start.png"
set title "Cold start after a restart (the last run): Zipf 0.99 over 10x the cache"
set xlabel "ms since the first read"
set ylabel "shm hit ratio"
set y2label "reads/s"
set ytics nomirror
set y2tics
set yrange [0:1]
set grid
plot "$work/ltm-cold.dat" using 1:3 with lines lw 2 title "hit ratio", \
     "$work/ltm-cold.dat" using 1:2 axes x1y2 with lines title "reads/s"
EOF

fi

# ---- 5. big keys ----
if want 5; then
note "5/6 big keys"
start big-k shmkvd
kport=$port kpid=$pid
start big-r redis
rport=$port rpid=$pid
# Waits (60 s at most) until shmkvd's write-back has caught up, so a timed
# command does not share the loop with the clean-up of the fill before it.
settle() {
    for _ in $(seq 1 600); do
        n=$(redis-cli -p "$1" info persistence | awk -F: '/^writeback_overlay_entries/ { print $2 + 0 }')
        [ "${n:-0}" = 0 ] && return 0
        sleep 0.1
    done
}
bk() { # server-port type command...: fills key "big", then times the command
    local p=$1 type=$2
    shift 2
    "$kvtool" fill 127.0.0.1 "$p" big "$type" "$big"
    settle "$p"
    "$kvtool" timecmd 127.0.0.1 "$p" "$@"
}
# raw lines: type column µs
: >"$work/big.raw"
for run in $(seq 1 "$big_runs"); do
    for t in hash zset; do
        echo "$t 1 $(bk "$kport" $t DEL big)" >>"$work/big.raw"
        echo "$t 2 $(bk "$kport" $t PEXPIRE big 0)" >>"$work/big.raw"
        echo "$t 3 $(bk "$rport" $t DEL big)" >>"$work/big.raw"
        echo "$t 4 $(bk "$rport" $t UNLINK big)" >>"$work/big.raw"
        echo "$t 5 $(bk "$rport" $t PEXPIRE big 0)" >>"$work/big.raw"
    done
done
{
    echo "## 5. Big keys"
    echo
    echo "One command's round trip in µs on a key of $big fields or members, filled afresh before each command (and, for shmkvd, write-back settled): median (min–max) over $big_runs runs."
    echo
    echo "| key | shmkvd DEL | shmkvd EXPIRE (PEXPIRE 0) | redis-server DEL | redis-server UNLINK | redis-server EXPIRE (PEXPIRE 0) | redis DEL ÷ shmkvd DEL |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    sort -k1,1 -k2,2n -k3,3n "$work/big.raw" | awk '
        { k = $1 SUBSEP $2; n[k]++; v[k, n[k]] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++no] = $1 } }
        END { for (o = 1; o <= no; o++) { t = order[o]; line = "| " t " |"
                for (c = 1; c <= 5; c++) { k = t SUBSEP c; m = n[k]
                    med[c] = m % 2 ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2
                    line = line sprintf(" %.0f (%d–%d) |", med[c], v[k, 1], v[k, m]) }
                printf "%s %.0fx |\n", line, med[3] / med[1] } }'
    echo
} >>"$md"
stop "$kpid"
stop "$rpid"

fi

# ---- 6. footprint ----
if want 6; then
note "6/6 footprint"
start fp-k shmkvd
kport=$port kpid=$pid
start fp-r redis
rport=$port rpid=$pid
"$shmb" load "$work/fp-k/sock" "$fp_keys"
"$shmb" load "$work/fp-r/sock" "$fp_keys"
krss_load=$(rss_kb "$kpid")
redis-cli -p "$kport" shmkv.compact >/dev/null
sst=$(redis-cli -p "$kport" info storage | awk -F'[=,:]' '/^cf_/ { s += $5 } END { printf "%d", s }')
# Settled: write-back drained, then past jemalloc's 10 s decay of freed
# pages. Right after the load, RSS also holds the overlay's freed memory,
# and how much depends on how far the flusher lagged at that moment.
for _ in $(seq 100); do
    [ "$(redis-cli -p "$kport" info persistence | awk -F: '/^writeback_pending_sets/ { printf "%d", $2 }')" = 0 ] && break
    sleep 0.1
done
sleep 12
krss=$(rss_kb "$kpid") rrss=$(rss_kb "$rpid")
rused=$(redis-cli -p "$rport" info memory | awk -F: '/^used_memory:/ { printf "%d", $2 }')
{
    echo "## 6. Footprint"
    echo
    echo "$fp_keys strings (16-byte keys, 100-byte values of random letters, 116 bytes of data each), loaded into both; shmkvd then compacted (SHMKV.COMPACT). One measurement: sizes, unlike latencies, barely move between runs, and a second 10M load would double the section's time."
    echo
    echo "| | shmkvd | redis-server |"
    echo "|---|---:|---:|"
    echo "| bytes on disk per record (SST files after compaction) | $(awk -v s="$sst" -v n="$fp_keys" 'BEGIN { printf "%.1f", s / n }') | — |"
    echo "| RSS right after the load (MiB) | $((krss_load / 1024)) | — |"
    echo "| RSS settled (MiB) | $((krss / 1024)) | $((rrss / 1024)) |"
    echo "| RSS settled per record (bytes) | $((krss * 1024 / fp_keys)) | $((rrss * 1024 / fp_keys)) |"
    echo "| redis used_memory per record (bytes) | — | $((rused / fp_keys)) |"
    echo
    echo "Settled: after the compaction, once write-back has drained and 12 s later (past jemalloc's 10 s decay of freed pages); right after the load, shmkvd's RSS also holds the freed memory of the write-back overlay, and how much depends on how far the flusher lagged at that moment. shmkvd's RSS is bounded by its configuration — the shm cache (64 MiB), RocksDB's block cache and memtables, the overlay's limit — not by the data, which lives on disk; redis-server's grows with the data."
    echo
} >>"$md"
stop "$kpid"
stop "$rpid"
fi

{
    echo "# shmkv benchmark report"
    echo
    echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r); shmkvd ${SHMKV_REV:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}, redis-server $(redis-server --version | awk '{ print $3 }' | cut -d= -f2)$([ "$quick" = 1 ] && echo ', --quick scale: figures not meaningful'). Made by \`bench/report.sh\`$([ "$sections" = 1,2,3,4,5,6 ] || echo " (sections $sections)") in $(($(date +%s) - started)) s."
    echo
    cat "$md"
} >"$out/REPORT.md"
note "done: $out/REPORT.md"
