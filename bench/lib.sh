# lib.sh — helpers the benchmark scripts share: a scratch folder removed on
# exit, servers started on free loopback ports and stopped by their PIDs.
# Source it after `set -euo pipefail`; call bench_init NAME first.

bench_init() { # NAME: makes $work and arranges the cleanup
    work=$(mktemp -d "${TMPDIR:-/tmp}/shmkv-$1-XXXXXX")
    pids=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}

free_port() { # a port nothing listens on, below the kernel's ephemeral range
    # (tests/integration/harness.h, h_free_port, says why)
    /usr/bin/python3 -c '
import random, socket
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(1000):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randrange(10000, lo) if lo > 11000 else 0))
        print(s.getsockname()[1]); break
    except OSError:
        pass
    finally:
        s.close()
' 2>/dev/null || echo $((20000 + RANDOM % 10000))
}

wait_ready() { # PORT: until the server there answers PING (20 s at most)
    for _ in $(seq 1 200); do
        redis-cli -p "$1" ping 2>/dev/null | grep -q PONG && return 0
        sleep 0.1
    done
    echo "$(basename "$0"): server on port $1 did not start" >&2
    exit 1
}

start_server() { # SPEC PORT DIR: redis (without persistence, with the
    # options in the array redis_args if set), shmkvd (this tree's build,
    # with the options in the array shmkvd_args if set) or shmkvd@BIN
    # (another build's binary), on 127.0.0.1:PORT with its files and log in
    # DIR; its PID goes to $pid and to $pids
    case $1 in
    redis) redis-server --port "$2" --bind 127.0.0.1 --save '' --appendonly no --dir "$3" \
        ${redis_args[@]+"${redis_args[@]}"} >"$3/log" 2>&1 & ;;
    shmkvd) build/daemon/shmkvd --port "$2" --bind 127.0.0.1 --dir "$3/data" \
        ${shmkvd_args[@]+"${shmkvd_args[@]}"} >"$3/log" 2>&1 & ;;
    shmkvd@?*) "${1#shmkvd@}" --port "$2" --bind 127.0.0.1 --dir "$3/data" >"$3/log" 2>&1 & ;;
    *) echo "$(basename "$0"): no server $1" >&2; exit 2 ;;
    esac
    pid=$!
    pids+=("$pid")
    wait_ready "$2"
}

median() { # the median of the numbers on stdin, one a line
    sort -n | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'
}

catch_up_us() { # PORT: microseconds until shmkvd's write-back has nothing
    # pending (30 s at most); 0 if nothing was (redis-server has no such field)
    local t0 t1
    t0=$(date +%s%N)
    redis-cli -p "$1" info persistence 2>/dev/null | grep -q '^writeback_pending_sets:[1-9]' ||
        { echo 0; return; }
    for _ in $(seq 1 6000); do
        sleep 0.005
        redis-cli -p "$1" info persistence 2>/dev/null | grep -q '^writeback_pending_sets:0' && break
    done
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000))
}
