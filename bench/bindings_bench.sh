#!/usr/bin/env bash
# bindings_bench.sh — the language bindings of libshmkv (client/python,
# client/node, client/go): a shared-memory GET through each, against the
# same language's usual client doing GET over the Unix socket to shmkvd and
# to Debian's redis-server, with libshmkv's C hit as the floor; same
# machine, same run.
#
#   bench/bindings_bench.sh [--quick] [--runs N] [--keys N] [--ops N]
#                           [--langs "python node go"] [--procs "1 2"] [--out FILE]
#
# 16-byte keys and 100-byte values (bench/shm_bench.c's), loaded into both
# servers; the cache is warmed by one pass. Each run measures, per reader
# process count: the C hit (shm_bench), then per language its shared-memory
# GET over uniform keys and over 1,000 hot keys, and its usual client's GET
# to shmkvd and to redis-server (uniform). Every reader times each GET with
# its language's monotonic clock (the clock's own cost is in the figures
# and shown); p50 and p99 are pooled as the median of the processes', and
# reads/s is summed over them; the table gives the median over the runs.
# The readers are client/*/ programs with one command line (see
# client/python/bench_reader.py). Loopback sockets only; servers are stopped
# by their PIDs and the scratch folder removed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3 keys=100000 ops=1000000 out="" langs="python node go" procs="1 2"
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) runs=1 keys=20000 ops=100000 ;;
    --runs) runs=$2; shift ;;
    --keys) keys=$2; shift ;;
    --ops) ops=$2; shift ;;
    --langs) langs=$2; shift ;;
    --procs) procs=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: $0 [--quick] [--runs N] [--keys N] [--ops N] [--langs LIST] [--procs LIST] [--out FILE]" >&2; exit 2 ;;
    esac
    shift
done

shmkvd=build/daemon/shmkvd cbench=build/bench/shm_bench
[ -x "$shmkvd" ] && [ -x "$cbench" ] || { echo "bindings_bench: build first (cmake --build build)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "bindings_bench: redis-server is needed (scripts/deps.sh)" >&2; exit 1; }

. bench/lib.sh
bench_init bindings

# libshmkv as a user installs it; each binding builds against it.
cmake --install build --prefix "$work/inst" >/dev/null
PKG_CONFIG_PATH=$(dirname "$(find "$work/inst" -name shmkv.pc)")
export PKG_CONFIG_PATH

declare -A reader # language -> its reader's command line
for l in $langs; do
    case $l in
    python)
        /usr/bin/python3 -m venv --system-site-packages "$work/venv"
        cp -r client/python "$work/py-src"
        "$work/venv/bin/pip" install -q --no-build-isolation --no-index "$work/py-src"
        # Run from the scratch folder: the source folder would shadow the
        # installed package (it has no compiled module).
        cp client/python/bench_reader.py "$work/"
        reader[python]="$work/venv/bin/python $work/bench_reader.py" ;;
    node)
        bash client/node/build.sh "$work/node" >/dev/null
        reader[node]="node $work/node/bench-reader.js" ;;
    go)
        # Go's caches in the scratch folder; the standard library only.
        (cd client/go && GOPROXY=off GOFLAGS=-mod=mod GOENV=off GOCACHE="$work/gocache" \
            GOPATH="$work/gopath" CGO_LDFLAGS="-Wl,-rpath,$(pkg-config --variable=libdir shmkv)" \
            go build -o "$work/go-reader" ./cmd/shmkv-bench-reader)
        reader[go]="$work/go-reader" ;;
    *) echo "bindings_bench: no binding $l" >&2; exit 2 ;;
    esac
done

ksock="$work/shmkvd.sock" rsock="$work/redis.sock"
mkdir -p "$work/k" "$work/r"
kport=$(free_port) rport=$(free_port)
"$shmkvd" --port "$kport" --bind 127.0.0.1 --dir "$work/k/data" --unixsocket "$ksock" >"$work/k/log" 2>&1 &
pids+=($!)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/r" \
    --unixsocket "$rsock" >"$work/r/log" 2>&1 &
pids+=($!)
wait_ready "$kport"
wait_ready "$rport"
"$cbench" load "$ksock" "$keys"
"$cbench" load "$rsock" "$keys"
"$cbench" shm "$ksock" "$keys" "$keys" 1 uniform >/dev/null # fills the cache

hot=1000
[ "$keys" -lt "$hot" ] && hot=$keys
rtt_ops=$((ops / 10))
raw="$work/raw"
: >"$raw"

# One measurement: P processes of one reader at once, appended to $raw as
# "NAME P DIST p50 p99 reads/s hit_ratio clock_ns" (median p50 and p99 of
# the processes, reads/s summed).
measure() { # NAME P DIST CMD...
    local name=$1 P=$2 dist=$3 i p rpids=()
    shift 3
    for i in $(seq 1 "$P"); do
        "$@" --seed "$((i * 7919))" >"$work/out.$i" &
        rpids+=($!)
    done
    for p in "${rpids[@]}"; do
        wait "$p" || { echo "bindings_bench: a reader failed: $*" >&2; exit 1; }
    done
    for i in $(seq 1 "$P"); do cat "$work/out.$i"; done | awk -v name="$name" -v P="$P" -v dist="$dist" '
        function med(a, n,   i, j, t) {
            for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
            return a[int((n + 1) / 2)]
        }
        { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
          p50[NR] = v["p50_ns"]; p99[NR] = v["p99_ns"]; rate += v["ops"] / v["secs"]
          hits += v["hits"]; ops += v["ops"]; clk = v["clock_ns"] }
        END { printf "%s %s %s %d %d %.0f %.4f %d\n", name, P, dist, med(p50, NR), med(p99, NR), rate, hits / ops, clk }' >>"$raw"
}

for run in $(seq 1 "$runs"); do
    for P in $procs; do
        for d in uniform hot; do
            k=$keys
            [ "$d" = hot ] && k=$hot
            set -- $("$cbench" shm "$ksock" "$k" "$ops" "$P" uniform)
            echo "C $P $d $1 $2 $4 $5 0" >>"$raw"
        done
        for l in $langs; do
            cmd=(${reader[$l]})
            measure "$l" "$P" uniform "${cmd[@]}" --sock "$ksock" --mode shm --keys "$keys" --hot 0 --ops "$ops"
            measure "$l" "$P" hot "${cmd[@]}" --sock "$ksock" --mode shm --keys "$keys" --hot "$hot" --ops "$ops"
            measure "$l-client-shmkvd" "$P" uniform "${cmd[@]}" --sock "$ksock" --mode plain --keys "$keys" --hot 0 --ops "$rtt_ops"
            measure "$l-client-redis" "$P" uniform "${cmd[@]}" --sock "$rsock" --mode plain --keys "$keys" --hot 0 --ops "$rtt_ops"
        done
    done
    echo "bindings_bench: run $run/$runs done" >&2
done

client_name() {
    case $1 in python) echo "redis-py" ;; node) echo "ioredis" ;; go) echo "Go RESP client (stdlib)" ;; esac
}

table=$(awk -v langs="$langs" '
function median(arr, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
    return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
{ k = $1 " " $2 " " $3; n[k]++; for (c = 4; c <= 8; c++) v[k, c, n[k]] = $c
  if (!(k in seen)) { seen[k] = 1; order[++no] = k } }
END {
    for (o = 1; o <= no; o++) {
        k = order[o]; m = n[k]
        for (c = 4; c <= 8; c++) { for (i = 1; i <= m; i++) a[i] = v[k, c, i]; med[k, c] = median(a, m) }
        split(k, f, " ")
        printf "| %s | %s | %s | %d | %d | %.0f | %.4f | %d |\n", f[1], f[2], f[3] == "hot" ? "1,000 hot keys" : "uniform", med[k, 4], med[k, 5], med[k, 6], med[k, 7], med[k, 8]
        p50[k] = med[k, 4]; rate[k] = med[k, 6]
    }
    printf "\n| binding | P | shm GET p50 vs usual client to redis-server | vs usual client to shmkvd | reads/s vs usual client to redis-server | overhead over the C hit, p50 (uniform / hot) |\n|---|---:|---:|---:|---:|---:|\n"
    nl = split(langs, L, " ")
    for (i = 1; i <= nl; i++) for (P = 1; P <= 2; P++) {
        s = L[i] " " P " uniform"; h = L[i] " " P " hot"
        if (!(s in p50)) continue
        r = L[i] "-client-redis " P " uniform"; q = L[i] "-client-shmkvd " P " uniform"
        printf "| %s | %d | %.0fx | %.0fx | %.0fx | %+d ns / %+d ns |\n", L[i], P, p50[r] / p50[s], p50[q] / p50[s], rate[s] / rate[r], p50[s] - p50["C " P " uniform"], p50[h] - p50["C " P " hot"]
    }
}' "$raw")

{
    echo "## bindings_bench — $(date -u +%Y-%m-%d), $(nproc) CPUs, $runs run(s), $keys keys, $ops reads per process (socket clients: $rtt_ops)"
    echo
    echo "GET of a 100-byte value. shm: through the binding (C: libshmkv itself, bench/shm_bench.c);"
    for l in $langs; do
        echo "$l-client-*: $(client_name "$l") over the Unix socket."
    done
    echo "Latency in ns per GET, timed by the reader with its own clock (clock_ns: one pair of clock reads, included); median over the runs."
    echo
    echo "| reader | processes | keys | p50 ns | p99 ns | reads/s | local hit ratio | clock_ns |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|"
    echo "$table"
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
