#!/usr/bin/env bash
# repl_bench.sh — replication against redis-server's, same machine, same
# run, as Markdown tables of medians.
#
#   bench/repl_bench.sh [--runs N] [--requests N] [--clients N] [--pipelines "1 16"]
#                       [--sizes "1000000 10000000"] [--replica shmkvd|redis] [--out FILE]
#
# 1. Writes with one replica: redis-benchmark SET (keys drawn from 100,000)
#    at each pipeline depth against a primary that has one replica attached:
#    redis-server with a redis-server replica, shmkvd with a replica of
#    --replica's kind (shmkvd by default; redis when asked, or when this
#    build's shmkvd has no REPLICAOF). Requests/s count until the replica
#    acknowledged everything (WAIT 1), and shmkvd's write-back until nothing
#    is pending. While it runs, the primary's INFO is sampled every 100 ms:
#    the replica's lag in bytes (master_repl_offset less its acknowledged
#    offset), median and largest; then the time the replica took to catch
#    up once the load stopped.
# 2. Full syncs: a primary holding N keys (DEBUG POPULATE) and a replica
#    started empty with --replicaof; the time until the replica's link is up
#    and it holds N keys, and the peak resident memory of the primary (its
#    forked child's included, for redis-server) and of the replica above
#    what each held before the sync, sampled every 100 ms.
# Both primaries sync diskless (repl-diskless-sync yes, Redis's default),
# without repl-diskless-sync-delay's wait; otherwise each server runs on its
# defaults.
# Each run benchmarks the servers in turn, so they share the machine's
# noise. Loopback only; every server is started here, stopped by its PID,
# and its folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

runs=3 requests=200000 clients=50 pipelines="1 16" sizes="1000000 10000000" replica=shmkvd out=""
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --pipelines) pipelines=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --replica) replica=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--requests N] [--clients N] [--pipelines LIST] [--sizes LIST] [--replica shmkvd|redis] [--out FILE]" >&2; exit 2 ;;
    esac
done
[ -x build/daemon/shmkvd ] || { echo "$0: build first (build/daemon/shmkvd)" >&2; exit 2; }
command -v redis-benchmark >/dev/null || { echo "$0: redis-benchmark missing (redis-tools)" >&2; exit 2; }

bench_init repl

start() { # KIND PORT DIR [--replicaof host port]: a server with DEBUG allowed
    local kind=$1 port=$2 dir=$3
    shift 3
    mkdir -p "$dir/data"
    case $kind in
    redis) # no 5 s wait for more replicas before a diskless sync starts
        redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
            --enable-debug-command yes --repl-diskless-sync-delay 0 "$@" >"$dir/log" 2>&1 & ;;
    shmkvd) # the same
        build/daemon/shmkvd --port "$port" --bind 127.0.0.1 --dir "$dir/data" \
            --enable-debug-command yes --repl-diskless-sync-delay 0 "$@" >"$dir/log" 2>&1 & ;;
    esac
    pid=$!
    pids+=("$pid")
    wait_ready "$port"
}

stop() { # PID
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

field() { # PORT NAME: an INFO field's value
    redis-cli -p "$1" info everything 2>/dev/null | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2; exit }'
}

link_up() { # PORT: until the replica there says its link is up (120 s at most)
    for _ in $(seq 1 1200); do
        [ "$(field "$1" master_link_status)" = up ] && return 0
        sleep 0.1
    done
    echo "$(basename "$0"): the replica on port $1 never synced" >&2
    exit 1
}

rss_kb() { # PID [and its children]: resident kB
    local t=0 p v
    for p in "$1" $(pgrep -P "$1" 2>/dev/null || true); do
        # a child that just exited has no VmRSS line, or no file
        v=$(awk '/^VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null || true)
        t=$((t + ${v:-0}))
    done
    echo "$t"
}

# Does this build's shmkvd follow a primary?
if [ "$replica" = shmkvd ]; then
    probe="$work/probe"
    port=$(free_port)
    start shmkvd "$port" "$probe"
    if redis-cli -p "$port" replicaof no one 2>&1 | grep -qi unknown; then
        echo "repl_bench: this shmkvd has no REPLICAOF: its replicas are redis-server" >&2
        replica=redis
    fi
    stop "$pid"
fi

declare -A rps lagmed lagmax catch synct pmem rmem

writes() { # PRIMARY-KIND REPLICA-KIND RUN
    local pk=$1 rk=$2 run=$3 pp rp ppid rpid t0 t1 p sampler
    pp=$(free_port)
    rp=$(free_port)
    start "$pk" "$pp" "$work/w-$pk-$run-p"
    ppid=$pid
    start "$rk" "$rp" "$work/w-$pk-$run-r" --replicaof 127.0.0.1 "$pp"
    rpid=$pid
    link_up "$rp"
    for p in $pipelines; do
        (
            while :; do
                o=$(field "$pp" master_repl_offset)
                a=$(redis-cli -p "$pp" info replication 2>/dev/null | tr -d '\r' |
                    sed -n 's/^slave0:.*offset=\([0-9]*\).*/\1/p')
                [ -n "$o" ] && [ -n "$a" ] && echo $((o - a))
                sleep 0.1
            done
        ) >"$work/lag-$pk-$run-$p" 2>/dev/null &
        sampler=$!
        t0=$(date +%s%N)
        redis-benchmark -p "$pp" -c "$clients" -n "$requests" -r 100000 -P "$p" -q \
            set "k:__rand_int__" "v:__rand_int__" >"$work/w-$pk-$run-$p.out" 2>&1
        t1=$(date +%s%N)
        redis-cli -p "$pp" wait 1 60000 >/dev/null
        catch_up_us "$pp" >/dev/null
        t2=$(date +%s%N)
        kill "$sampler" 2>/dev/null || true
        wait "$sampler" 2>/dev/null || true
        rps[$pk,$p,$run]=$(awk -v r="$requests" -v ns=$((t2 - t0)) 'BEGIN { printf "%.0f", r / (ns / 1e9) }')
        catch[$pk,$p,$run]=$(((t2 - t1) / 1000000))
        lagmed[$pk,$p,$run]=$(sort -n "$work/lag-$pk-$run-$p" | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : 0 }')
        lagmax[$pk,$p,$run]=$(sort -n "$work/lag-$pk-$run-$p" | tail -1)
        lagmax[$pk,$p,$run]=${lagmax[$pk,$p,$run]:-0}
    done
    stop "$rpid"
    stop "$ppid"
}

fullsync() { # PRIMARY-KIND REPLICA-KIND KEYS RUN
    local pk=$1 rk=$2 n=$3 run=$4 pp rp ppid rpid t0 t1 p0 r0 pmax rmax v
    pp=$(free_port)
    rp=$(free_port)
    # Folders of their own, removed after: a server started on another size's
    # folder would continue from its data and replication state (a partial
    # resync of the smaller data set, DEBUG POPULATE not being replicated).
    start "$pk" "$pp" "$work/s-$pk-$n-$run-p"
    ppid=$pid
    redis-cli -p "$pp" debug populate "$n" >/dev/null
    [ "$pk" = shmkvd ] && catch_up_us "$pp" >/dev/null
    p0=$(rss_kb "$ppid")
    start "$rk" "$rp" "$work/s-$pk-$n-$run-r"
    rpid=$pid
    r0=$(rss_kb "$rpid")
    pmax=$p0 rmax=$r0
    t0=$(date +%s%N)
    redis-cli -p "$rp" replicaof 127.0.0.1 "$pp" >/dev/null
    for _ in $(seq 1 6000); do
        v=$(rss_kb "$ppid"); [ "$v" -gt "$pmax" ] && pmax=$v
        v=$(rss_kb "$rpid"); [ "$v" -gt "$rmax" ] && rmax=$v
        [ "$(field "$rp" master_link_status)" = up ] && [ "$(redis-cli -p "$rp" dbsize)" = "$n" ] && break
        sleep 0.1
    done
    t1=$(date +%s%N)
    synct[$pk,$n,$run]=$(((t1 - t0) / 1000000))
    pmem[$pk,$n,$run]=$(((pmax - p0) / 1024))
    rmem[$pk,$n,$run]=$(((rmax - r0) / 1024))
    stop "$rpid"
    stop "$ppid"
    rm -rf "$work/s-$pk-$n-$run-p" "$work/s-$pk-$n-$run-r"
}

for run in $(seq 1 "$runs"); do
    writes redis redis "$run"
    writes shmkvd "$replica" "$run"
    echo "repl_bench: writes, run $run/$runs done" >&2
done
for n in $sizes; do
    for run in $(seq 1 "$runs"); do
        fullsync redis redis "$n" "$run"
        fullsync shmkvd "$replica" "$n" "$run"
        echo "repl_bench: full sync of $n keys, run $run/$runs done" >&2
    done
done

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2)) }'; }
stats() { # ARRAY-NAME KEY-PREFIX: "median (min–max)" over the runs
    local -n arr=$1
    local v
    v=$(for r in $(seq 1 "$runs"); do echo "${arr[$2,$r]}"; done)
    printf '%s (%s–%s)' "$(echo "$v" | median)" "$(echo "$v" | sort -n | head -1)" \
        "$(echo "$v" | sort -n | tail -1)"
}
ratio() { awk -v a="${1%% *}" -v b="${2%% *}" 'BEGIN { printf "%.2f", a ? b / a : 0 }'; }

{
    echo "## repl_bench — $(date +%F), $(nproc) CPUs, $runs runs"
    echo
    echo "### SET with one replica attached"
    echo
    echo "redis-benchmark SET, $clients clients, $requests requests, keys drawn from 100,000;"
    echo "requests/s until the replica acknowledged everything (and shmkvd's write-back had"
    echo "nothing pending), median over the runs (min–max). Primary and replica:"
    echo "redis-server and redis-server; shmkvd and $replica."
    echo
    echo "| pipeline | redis-server | shmkvd | shmkvd ÷ redis |"
    echo "|---:|---:|---:|---:|"
    for p in $pipelines; do
        r=$(stats rps "redis,$p")
        k=$(stats rps "shmkvd,$p")
        echo "| $p | $r | $k | $(ratio "$r" "$k") |"
    done
    echo
    echo "Replica lag under that load: the primary's offset less the replica's acknowledged"
    echo "one, in bytes, sampled every 100 ms (median of the samples, and the largest; both"
    echo "kinds of replica acknowledge once a second, so this includes up to a second of"
    echo "stream); catch-up: ms from the load's end until WAIT 1 answered."
    echo
    echo "| pipeline | server | lag median (B) | lag max (B) | catch-up (ms) |"
    echo "|---:|---|---:|---:|---:|"
    for p in $pipelines; do
        for s in redis shmkvd; do
            echo "| $p | $s | $(stats lagmed "$s,$p") | $(stats lagmax "$s,$p") | $(stats catch "$s,$p") |"
        done
    done
    echo
    echo "### Full sync"
    echo
    echo "A primary holding N keys (DEBUG POPULATE), a replica started empty: ms until its"
    echo "link is up and it holds N keys; the peak resident MiB above the start of the"
    echo "sync, of the primary (with redis-server's forked child) and of the replica."
    echo
    echo "| keys | server | time (ms) | ÷ redis | primary peak (MiB) | replica peak (MiB) |"
    echo "|---:|---|---:|---:|---:|---:|"
    for n in $sizes; do
        r=$(stats synct "redis,$n")
        for s in redis shmkvd; do
            t=$(stats synct "$s,$n")
            echo "| $n | $s | $t | $(ratio "$r" "$t") | $(stats pmem "$s,$n") | $(stats rmem "$s,$n") |"
        done
    done
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
