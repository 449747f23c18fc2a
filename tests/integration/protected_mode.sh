#!/usr/bin/env bash
# protected_mode.sh SHMKVD — Redis 7.0's protected mode, against
# redis-server. Both servers run in a private network namespace (unshare
# -rn: a user and a network namespace, no privilege needed) whose loopback
# interface also carries 10.200.0.1: an address outside 127.0.0.0/8, so a
# client connecting from it is not local, and no packet leaves the
# namespace. The same steps must get the same replies from both: refused
# from 10.200.0.1 while the default user has no password, served from
# 127.0.0.1, served from anywhere with protected-mode no, and asked for a
# password once there is one. Exits 77 (skipped) where the machine allows
# no such namespace.
set -euo pipefail
shmkvd=$1
redis=/usr/bin/redis-server
for p in "$redis" redis-cli ip unshare; do
    command -v "$p" >/dev/null || { echo "protected_mode: $p not found: skipped"; exit 77; }
done
if ! unshare -rn true 2>/dev/null; then
    echo "protected_mode: no private network namespace here (unshare -rn): skipped"
    exit 77
fi

inside() {
    set -euo pipefail
    ip link set lo up
    ip addr add 10.200.0.1/32 dev lo
    work=$(mktemp -d /tmp/shmkv-protected.XXXXXX)
    pids=()
    cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
        rm -rf "$work"
    }
    trap cleanup EXIT
    mkdir -p "$work/r" "$work/k"
    "$redis" --port 7001 --bind "127.0.0.1 10.200.0.1" --save "" --appendonly no \
        --dir "$work/r" --logfile "$work/r.log" &
    pids+=($!)
    "$shmkvd" --port 7002 --bind 127.0.0.1 10.200.0.1 --dir "$work/k" \
        --unixsocket "$work/k.sock" --logfile "$work/k.log" &
    pids+=($!)
    for port in 7001 7002; do
        for _ in $(seq 100); do
            redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
            sleep 0.1
        done
    done
    steps=0
    step() { # HOST COMMAND...: the same reply from both servers
        local host=$1
        shift
        local a b
        a=$(redis-cli -h "$host" -p 7001 "$@" 2>&1)
        b=$(redis-cli -h "$host" -p 7002 "$@" 2>&1)
        if [ "$a" != "$b" ]; then
            echo "protected_mode: $host: $*: redis-server said"
            echo "  $a"
            echo "and shmkvd"
            echo "  $b"
            exit 1
        fi
        steps=$((steps + 1))
    }
    want() { # HOST TEXT COMMAND...: both replies hold TEXT
        local host=$1 text=$2 port
        shift 2
        for port in 7001 7002; do
            redis-cli -h "$host" -p "$port" "$@" 2>&1 | grep -q -- "$text" ||
                { echo "protected_mode: port $port, $host $*: no '$text'"; exit 1; }
        done
    }
    want 10.200.0.1 "DENIED Redis is running in protected mode" ping
    step 10.200.0.1 ping
    step 127.0.0.1 ping
    step 127.0.0.1 config set protected-mode no
    step 10.200.0.1 ping
    step 127.0.0.1 config set protected-mode yes
    step 10.200.0.1 get k
    step 127.0.0.1 config set requirepass pw
    step 10.200.0.1 ping
    want 10.200.0.1 NOAUTH ping
    step 10.200.0.1 --user default --pass pw ping
    step 127.0.0.1 --user default --pass pw acl setuser default nopass
    step 10.200.0.1 ping
    # The unix socket is local, as in Redis.
    redis-cli -s "$work/k.sock" ping | grep -q PONG || { echo "protected_mode: unix socket refused"; exit 1; }
    a=$(redis-cli -p 7001 info stats | tr -d '\r' | grep rejected_connections)
    b=$(redis-cli -p 7002 info stats | tr -d '\r' | grep rejected_connections)
    [ "$a" = "$b" ] || { echo "protected_mode: redis-server $a, shmkvd $b"; exit 1; }
    echo "protected_mode: $steps steps in a private network namespace agree with redis-server ($b)"
}

export shmkvd redis
export -f inside
unshare -rn bash -c inside
