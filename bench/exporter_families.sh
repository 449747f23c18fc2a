#!/usr/bin/env bash
# exporter_families.sh — which metric families Debian's prometheus-redis-exporter
# (oliver006/redis_exporter) yields against shmkvd and against redis-server, with
# the same data, as a Markdown report (issue 52).
#
#   bench/exporter_families.sh [--shmkvd BIN] [--exporter-args "ARGS"] [--out FILE]
#                              [--save DIR]
#
# Starts redis-server (no persistence) and shmkvd on free loopback ports, each
# in a scratch folder, loads the same small data set into both (strings, a
# hash, a set, a sorted set, a list, a key with a TTL, keys in db 0 and db 1,
# reads that hit and miss), starts one exporter per server on free loopback
# ports with its defaults (plus ARGS, split on spaces, e.g.
# "--include-system-metrics"), scrapes /metrics twice and compares the
# families of the second scrape (its "# TYPE name kind" lines): those both
# yield, those only redis-server yields, those only shmkvd yields, with each
# family's kind and sample count, and the values of redis_up and
# redis_exporter_last_scrape_error. The exporters' logs (where scrape errors
# go) follow. Exits 1 if shmkvd's redis_up is not 1 or its
# last_scrape_error is not 0 (or redis-server's, which would make the
# comparison meaningless). Every wait is bounded; every process is started
# here and stopped by its PID, and the scratch folder removed (bench/lib.sh).
# --save DIR keeps both scrapes, both exporter logs and both INFO ALL replies
# there (redis.* and shmkvd.*). "--exporter-args --debug" logs every command
# the exporter sends and every reply it parses.
#
# The exporter: `apt-get install -y prometheus-redis-exporter` (Debian 12
# ships 1.45.0), or a release binary of github.com/oliver006/redis_exporter
# named by $REDIS_EXPORTER.
set -euo pipefail
cd "$(dirname "$0")/.."

shmkvd=build/daemon/shmkvd eargs="" out="" save=""
while [ $# -gt 0 ]; do
    case "$1" in
    --shmkvd) shmkvd=$2; shift ;;
    --exporter-args) eargs=$2; shift ;;
    --out) out=$2; shift ;;
    --save) save=$2; shift ;;
    *) echo "usage: $0 [--shmkvd BIN] [--exporter-args ARGS] [--out FILE] [--save DIR]" >&2; exit 2 ;;
    esac
    shift
done

me=exporter_families
exporter=${REDIS_EXPORTER:-$(command -v prometheus-redis-exporter || true)}
if [ -z "$exporter" ] || [ ! -x "$exporter" ]; then
    echo "$me: prometheus-redis-exporter is missing; install it with" >&2
    echo "    sudo apt-get install -y prometheus-redis-exporter" >&2
    echo "or point \$REDIS_EXPORTER at a redis_exporter binary" >&2
    exit 1
fi
[ -x "$shmkvd" ] || { echo "$me: no $shmkvd; build first (scripts/run.sh or cmake --build build)" >&2; exit 1; }
for c in redis-server redis-cli curl timeout; do
    command -v "$c" >/dev/null || { echo "$me: $c is needed (scripts/deps.sh; curl: apt-get install curl)" >&2; exit 1; }
done

. bench/lib.sh
bench_init exporter

# Ports: two servers, two exporters, all distinct.
ports=()
while [ ${#ports[@]} -lt 4 ]; do
    p=$(free_port)
    case " ${ports[*]} " in *" $p "*) continue ;; esac
    ports+=("$p")
done
rport=${ports[0]} kport=${ports[1]} erport=${ports[2]} ekport=${ports[3]}

mkdir -p "$work/redis" "$work/shmkvd"
start_server redis "$rport" "$work/redis"
case $shmkvd in
build/daemon/shmkvd) start_server shmkvd "$kport" "$work/shmkvd" ;;
*) start_server "shmkvd@$shmkvd" "$kport" "$work/shmkvd" ;;
esac

# The same data, the same reads, in both.
load() { # PORT
    local cli=(timeout 10 redis-cli -p "$1")
    "${cli[@]}" -n 0 >/dev/null <<'EOF'
SET str:1 hello
SET str:2 world
SET counter 10
INCR counter
MSET str:3 a str:4 b
APPEND str:1 !
HSET hash:1 f1 v1 f2 v2 f3 3
SADD set:1 a b c d
ZADD zset:1 1 one 2 two 3 three
RPUSH list:1 x y z
SET ttl:1 soon EX 3600
GET str:1
GET str:2
GET nosuchkey
MGET str:3 nosuch:2
HGET hash:1 f1
HGET nosuch:h f1
SISMEMBER set:1 a
ZSCORE zset:1 two
LRANGE list:1 0 -1
EXISTS nosuch:3
TTL ttl:1
EOF
    "${cli[@]}" -n 1 >/dev/null <<'EOF'
SET db1:str v
HSET db1:hash f v
SADD db1:set m
GET db1:str
GET db1:nosuch
EOF
}
load "$rport"
load "$kport"
for p in "$rport" "$kport"; do
    n0=$(timeout 10 redis-cli -p "$p" -n 0 dbsize) n1=$(timeout 10 redis-cli -p "$p" -n 1 dbsize)
    if [ "$n0" != 10 ] || [ "$n1" != 3 ]; then
        echo "$me: port $p holds $n0 and $n1 keys in db 0 and 1, not 10 and 3" >&2
        exit 1
    fi
done

# One exporter per server.
start_exporter() { # NAME SERVER_PORT LISTEN_PORT
    # shellcheck disable=SC2086 # ARGS are split on spaces on purpose
    "$exporter" --redis.addr "redis://127.0.0.1:$2" --web.listen-address "127.0.0.1:$3" $eargs >"$work/$1/exporter.log" 2>&1 &
    local epid=$!
    pids+=("$epid")
    for _ in $(seq 1 100); do
        curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$3/" && return 0
        kill -0 "$epid" 2>/dev/null || break
        sleep 0.1
    done
    echo "$me: the exporter for $1 did not start:" >&2
    cat "$work/$1/exporter.log" >&2
    exit 1
}
start_exporter redis "$rport" "$erport"
start_exporter shmkvd "$kport" "$ekport"

# Two scrapes each; the second is compared (the first warms the exporter).
for n in redis shmkvd; do
    case $n in redis) q=$erport ;; shmkvd) q=$ekport ;; esac
    for i in 1 2; do
        curl -sf --max-time 30 "http://127.0.0.1:$q/metrics" >"$work/$n/scrape$i" ||
            { echo "$me: scraping the exporter for $n failed" >&2; exit 1; }
    done
    # family kind samples, one line each, sorted by name
    awk '/^# TYPE / { if (f != "") print f, k, s; f = $3; k = $4; s = 0; next }
         /^#/ { next }
         NF { s++ }
         END { if (f != "") print f, k, s }' "$work/$n/scrape2" | LC_ALL=C sort >"$work/$n/families"
done

value() { # NAME FAMILY: the value of the family's first sample ("absent" if none)
    awk -v f="$2" '$1 == f || index($1, f "{") == 1 { print $NF; found = 1; exit }
                   END { if (!found) print "absent" }' "$work/$1/scrape2"
}
sample() { # NAME FAMILY: the family's first sample line, as it came
    awk -v f="$2" '$1 == f || index($1, f "{") == 1 { print; exit }' "$work/$1/scrape2"
}

R=$work/redis/families K=$work/shmkvd/families
both=$(LC_ALL=C join "$R" "$K" || true)
ronly=$(LC_ALL=C join -v 1 "$R" "$K" || true)
konly=$(LC_ALL=C join -v 2 "$R" "$K" || true)
count() { if [ -z "$1" ]; then echo 0; else printf '%s\n' "$1" | wc -l; fi; }

rup=$(value redis redis_up) kup=$(value shmkvd redis_up)
rerr=$(value redis redis_exporter_last_scrape_error) kerr=$(value shmkvd redis_exporter_last_scrape_error)

rv=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
kv=$("$shmkvd" --version 2>&1 | head -1)
ev=$("$exporter" --version 2>&1 | sed -n 's/.*msg="Redis Metrics Exporter \([^ ]*\).*/\1/p' | head -1)
cmdline="bench/exporter_families.sh"
[ "$shmkvd" != build/daemon/shmkvd ] && cmdline+=" --shmkvd $shmkvd"
[ -n "$eargs" ] && cmdline+=" --exporter-args \"$eargs\""

fence() { echo '```'; cat "$1"; echo '```'; }
samples() { # NAME FAMILY...: "series<TAB>value" for those families' samples
    awk -v fams="${*:2}" 'BEGIN { split(fams, f, " "); for (i in f) want[f[i]] = 1 }
        /^#/ || !NF { next }
        { name = $1; sub(/\{.*/, "", name) }
        name in want { print substr($0, 1, length($0) - length($NF) - 1) "\t" $NF }' "$work/$1/scrape2" |
        LC_ALL=C sort -t "$(printf '\t')" -k1,1
}
labels() { # a sample line on stdin -> "label<TAB>value" lines, sorted
    sed -e 's/^[^{]*{//' -e 's/} [^ ]*$//' | awk '{
        while (match($0, /^[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"/)) {
            kv = substr($0, 1, RLENGTH); $0 = substr($0, RLENGTH + 1); sub(/^,/, "")
            i = index(kv, "="); v = substr(kv, i + 2, length(kv) - i - 2)
            print substr(kv, 1, i - 1) "\t" (v == "" ? "(empty)" : v)
        }
    }' | LC_ALL=C sort -t "$(printf '\t')" -k1,1
}
datafams=(redis_db_keys redis_db_keys_expiring redis_db_avg_ttl_seconds redis_keyspace_hits_total
    redis_keyspace_misses_total redis_expired_keys_total redis_evicted_keys_total
    redis_commands_processed_total redis_connected_clients redis_total_error_replies)
{
    echo "## exporter_families — $(date -u +%Y-%m-%d)"
    echo
    echo "Metric families of prometheus-redis-exporter ${ev:-?} against redis-server $rv and $kv, the same data in both. Made by \`$cmdline\`; exporter options: ${eargs:-the defaults}."
    echo
    echo "| | redis-server | shmkvd |"
    echo "|---|---:|---:|"
    echo "| families | $(wc -l <"$R") | $(wc -l <"$K") |"
    echo "| in both | $(count "$both") | $(count "$both") |"
    echo "| only here | $(count "$ronly") | $(count "$konly") |"
    echo "| redis_up | $rup | $kup |"
    echo "| redis_exporter_last_scrape_error | $rerr | $kerr |"
    echo
    echo "As scraped: redis-server \`$(sample redis redis_exporter_last_scrape_error)\`, shmkvd \`$(sample shmkvd redis_exporter_last_scrape_error)\`."
    echo
    echo "### Only redis-server yields ($(count "$ronly"))"
    echo
    echo "| family | kind | samples |"
    echo "|---|---|---:|"
    [ -n "$ronly" ] && printf '%s\n' "$ronly" | awk '{ printf "| %s | %s | %s |\n", $1, $2, $3 }'
    echo
    echo "### Only shmkvd yields ($(count "$konly"))"
    echo
    echo "| family | kind | samples |"
    echo "|---|---|---:|"
    [ -n "$konly" ] && printf '%s\n' "$konly" | awk '{ printf "| %s | %s | %s |\n", $1, $2, $3 }'
    echo
    echo "### Both yield ($(count "$both"))"
    echo
    echo "Samples: how many series of the family each scrape held (labels such as cmd, db or role make them differ)."
    echo
    echo "| family | kind | samples redis-server | samples shmkvd |"
    echo "|---|---|---:|---:|"
    [ -n "$both" ] && printf '%s\n' "$both" | awk '{ printf "| %s | %s%s | %s | %s |\n", $1, $2, ($2 == $4 ? "" : " / " $4), $3, $5 }'
    echo
    echo "### Values that depend on the data and the reads"
    echo
    echo "Series of these families that are not 0 in either scrape (redis_db_avg_ttl_seconds is redis-server's estimate from its expiry sampling): ${datafams[*]}."
    echo
    echo "| series | redis-server | shmkvd |"
    echo "|---|---:|---:|"
    LC_ALL=C join -t "$(printf '\t')" -a 1 -a 2 -e - -o 0,1.2,2.2 <(samples redis "${datafams[@]}") <(samples shmkvd "${datafams[@]}") |
        awk -F '\t' '$2 + 0 != 0 || $3 + 0 != 0 { printf "| `%s` | %s | %s%s |\n", $1, $2, $3, ($2 == $3 ? "" : " (differs)") }'
    echo
    echo "redis_instance_info labels (process_id, run_id and tcp_port differ between any two servers):"
    echo
    echo "| label | redis-server | shmkvd |"
    echo "|---|---|---|"
    LC_ALL=C join -t "$(printf '\t')" -a 1 -a 2 -e '(absent)' -o 0,1.2,2.2 \
        <(sample redis redis_instance_info | labels) <(sample shmkvd redis_instance_info | labels) |
        awk -F '\t' '{ printf "| %s | %s | %s |\n", $1, $2, $3 }'
    echo
    echo "### Exporter log, redis-server"
    echo
    fence "$work/redis/exporter.log"
    echo
    echo "### Exporter log, shmkvd"
    echo
    fence "$work/shmkvd/exporter.log"
} | if [ -n "$out" ]; then tee "$out"; else cat; fi

if [ -n "$save" ]; then
    mkdir -p "$save"
    for n in redis shmkvd; do
        case $n in redis) p=$rport ;; shmkvd) p=$kport ;; esac
        cp "$work/$n/scrape2" "$save/$n.metrics"
        cp "$work/$n/exporter.log" "$save/$n.exporter.log"
        timeout 10 redis-cli -p "$p" info all | tr -d '\r' >"$save/$n.info" || true
    done
fi

status=0
if [ "$kup" != 1 ] || [ "$kerr" != 0 ]; then
    echo "$me: FAIL: against shmkvd redis_up is $kup and redis_exporter_last_scrape_error is $kerr (want 1 and 0)" >&2
    status=1
fi
if [ "$rup" != 1 ] || [ "$rerr" != 0 ]; then
    echo "$me: FAIL: against redis-server redis_up is $rup and redis_exporter_last_scrape_error is $rerr (want 1 and 0)" >&2
    status=1
fi
exit $status
