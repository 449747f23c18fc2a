/*
 * test_diff_conn — what a connection sees, against Debian's redis-server,
 * byte for byte: RESP3 replies, publish/subscribe, client tracking,
 * keyspace notifications, MONITOR, CLIENT REPLY and INFO's statistics.
 */
#include "diff_fixture.h"

/* ---- RESP3 against redis-server ----
 *
 * Debian's hiredis reads RESP2 only, so these replies are read raw and
 * compared byte for byte: the types (maps, sets, doubles, nulls, verbatim
 * strings) are what RESP3 clients such as Lettuce, which asks for RESP3 by
 * default, decode. The script avoids replies whose order or value Redis
 * leaves open (SCAN, KEYS, RANDOMKEY, ids, clocks) and collections of more
 * than one unordered element. */

static const char *const RESP3_SCRIPT[] = {
    "FLUSHALL",
    "SET s 10",
    "GET s",
    "GET nokey",
    "INCRBYFLOAT s 1.5",
    "MGET s nokey",
    "SET s2 v EX 100",
    "TTL s2",
    "EXPIRETIME nokey",
    "SET k v GET",
    "SET k2 v NX GET",
    "GETEX s2 PERSIST",
    "COPY s scopy",
    "DEL scopy nokey",
    "EXISTS s nokey",
    "TYPE s",
    "HSET h f 1",
    "HGETALL h",
    "HGETALL nokey",
    "HINCRBYFLOAT h f 2.5",
    "HMGET h f nope",
    "HRANDFIELD h 1 WITHVALUES",
    "HRANDFIELD h -1 WITHVALUES",
    "HRANDFIELD nokey 2 WITHVALUES",
    "HSCAN h 0",
    "HKEYS h",
    "HVALS nokey",
    "SADD st a",
    "SMEMBERS st",
    "SMEMBERS nokey",
    "SINTER st nokey",
    "SUNION st",
    "SDIFF st nokey",
    "SMISMEMBER st a b",
    "SPOP nokey",
    "SPOP nokey 2",
    "SRANDMEMBER st 5",
    "SRANDMEMBER nokey",
    "SSCAN st 0",
    "SINTERCARD 1 st",
    "ZADD z 1.5 a 2 b 3e10 c",
    "ZADD z INCR 1 a",
    "ZADD z XX INCR 1 nope",
    "ZSCORE z a",
    "ZSCORE z nope",
    "ZMSCORE z a nope b",
    "ZMSCORE nokey a",
    "ZINCRBY z 0.25 a",
    "ZRANGE z 0 -1 WITHSCORES",
    "ZRANGE z 0 -1",
    "ZRANGE z (1 +inf BYSCORE LIMIT 0 2",
    "ZRANGEBYSCORE z -inf +inf WITHSCORES LIMIT 0 2",
    "ZREVRANGE z 0 0 WITHSCORES",
    "ZRANGESTORE z2 z 0 1",
    "ZPOPMIN z",
    "ZPOPMIN nokey",
    "ZPOPMIN nokey 2",
    "ZPOPMIN z 5",
    "ZADD z 1 a 2 b",
    "ZPOPMAX z 1",
    "ZRANDMEMBER z 1 WITHSCORES",
    "ZRANDMEMBER nokey 2",
    "ZRANK z a",
    "ZRANK z nope",
    "ZUNION 1 z WITHSCORES",
    "ZINTER 2 z z2 WITHSCORES",
    "ZDIFF 1 z WITHSCORES",
    "ZUNIONSTORE z3 2 z z2 WEIGHTS 0.5 2",
    "ZRANGE z3 0 -1 WITHSCORES",
    "ZSCAN z 0",
    "ZCOUNT z -inf +inf",
    "ZLEXCOUNT z - +",
    "ZINTERCARD 2 z z3 LIMIT 5",
    "ZADD zm 1 a 2 b 3 c",
    "ZMPOP 2 nokey zm MIN COUNT 2",
    "ZMPOP 1 nokey MAX",
    "BZMPOP 0.01 1 zm MAX",
    "BZMPOP 0.01 1 zm MAX",
    "ZADD zm 4 d",
    "BZPOPMIN nokey zm 0.01",
    "BZPOPMAX zm 0.01",
    "LPUSH l a b c",
    "LRANGE l 0 -1",
    "LMPOP 2 nokey l RIGHT COUNT 2",
    "LMPOP 1 nokey LEFT",
    "BLMPOP 0.01 1 l LEFT COUNT 5",
    "BLMPOP 0.01 1 l LEFT",
    "LPUSH l a b c",
    "MOVE l 1",
    "MOVE l 1",
    "SELECT 1",
    "LRANGE l 0 -1",
    "MOVE l 0",
    "SELECT 0",
    "SETBIT bits 9 1",
    "GETBIT bits 9",
    "BITCOUNT bits 0 -1 BIT",
    "BITPOS bits 1 2",
    "BITOP NOT bits2 bits",
    "BITPOS nokey 0",
    "SET bits3 12",
    "BITCOUNT bits3 -4 -7",
    "BITPOS bits3 1 -4 -7",
    "BITPOS bits3 1 -40 -70 BIT",
    "BITFIELD bits3 OVERFLOW FAIL INCRBY u2 0 100 GET u2 0 SET i8 #1 -3",
    "BITFIELD_RO bits3 GET i8 #1",
    "BITFIELD nokey",
    "RPUSH sl 3 1 2 10",
    "SORT sl",
    "SORT nokey",
    "SORT sl DESC LIMIT 0 2",
    "SORT sl ALPHA GET # GET nokey*",
    "SORT_RO sl BY nosort",
    "SORT sl STORE sdst",
    "LRANGE sdst 0 -1",
    "SET w_3 30",
    "SET w_1 100",
    "HSET h_3 f x3",
    "SORT sl BY w_*",
    "SORT sl BY nosort DESC LIMIT 1 2",
    "SORT sl GET # GET w_* GET h_*->f",
    "SORT sl BY w_* GET # STORE sdst",
    "LRANGE sdst 0 -1",
    "SADD sset 5 2 9",
    "SORT sset BY nosort STORE sdst",
    "LRANGE sdst 0 -1",
    "ZADD sz 1 c 2 a",
    "SORT sz BY nosort DESC",
    "SET w_10 abc",
    "SORT sl BY w_*",
    "SORT s",
    "LPOP l 2",
    "LPOP nokey 2",
    "RPOP nokey",
    "LPOS l a",
    "LPOS l zz COUNT 0",
    "LINDEX l 9",
    "BLPOP nokey 0.01",
    "BLPOP l 0.01",
    "BRPOP nokey 0.01",
    "BLMOVE nokey l2 LEFT LEFT 0.01",
    "LMOVE l l2 LEFT RIGHT",
    "RPOPLPUSH nokey l2",
    "OBJECT ENCODING z",
    "OBJECT FREQ s",
    "OBJECT IDLETIME nokey",
    "TOUCH s nokey s",
    "DBSIZE",
    "CONFIG GET maxclients",
    "CONFIG GET nosuchparam",
    "CLIENT GETNAME",
    "CLIENT SETNAME x",
    "CLIENT GETNAME",
    "ECHO hi",
    "PING",
    "PING x",
    "MULTI",
    "SET a 1",
    "INCRBYFLOAT a 0.5",
    "ZSCORE z a",
    "HGETALL h",
    "SMEMBERS st",
    "BLPOP nokey 1",
    "EXEC",
    "MULTI",
    "DISCARD",
    "EXEC",
    "WATCH a",
    "UNWATCH",
    "SLOWLOG GET 0",
    "SELECT 1",
    "HGETALL h",
    "SELECT 0",
    "GET a",
    "WRONGTYPE",
    "HGET s f",
    "ZSCORE z notanumber",
    "ROLE",
    "MULTI",
    "AUTH nopass",
    "SHUTDOWN NOSAVE",
    "SAVE",
    "PING",
    "EXEC",
    "MULTI",
    "AUTH nopass",
    "PING",
    "EXEC",
    "MULTI",
    "SET a 2",
    "EXEC x",
    "EXEC",
    "GET a",
    "EXEC x",
    "WAIT 0 0",
    "WAIT 1 1",
    "WAIT x x",
    "WAIT 0 x",
    "MULTI",
    "WAIT 2 0",
    "EXEC",
    "MEMORY USAGE nokey",
    "MEMORY USAGE s SAMPLES -1",
    "MEMORY USAGE s SAMPLES x",
    "MEMORY FOO",
    "MEMORY USAGE",
    "MEMORY PURGE",
    "MEMORY PURGE x",
    "CLIENT UNBLOCK 999999",
    "CLIENT UNBLOCK 999999 ERROR",
    "CLIENT UNBLOCK 1 X",
    "CLIENT UNBLOCK x",
    "CLIENT NO-EVICT on",
    "CLIENT NO-EVICT off",
    "CLIENT NO-EVICT x",
    "CLIENT ID x",
    "CLIENT GETNAME x",
    "CLIENT NO-EVICT",
    "CLIENT UNBLOCK",
    "CLIENT KILL",
    "CLIENT SETNAME",
    "CLIENT NOSUCH",
    "CLIENT PAUSE x",
    "CLIENT PAUSE -1",
    "CLIENT PAUSE 10 FOO",
    "CLIENT PAUSE",
    "CLIENT UNPAUSE x",
    "CLIENT PAUSE 10 WRITE x",
    "CLIENT PAUSE 0 WRITE",
    "CLIENT UNPAUSE",
    "HRANDFIELD h -9223372036854775808",
    "ZRANDMEMBER z -9223372036854775808",
    "SRANDMEMBER st -9223372036854775808",
    "SET l1 ohmytext",
    "SET l2 mynewtext",
    "LCS l1 l2 IDX WITHMATCHLEN",
    "LCS l1 l2 IDX MINMATCHLEN -5",
    "LCS l1 nokey IDX",
    "LCS l1 l2 LEN IDX",
    "LCS l1 l2 MINMATCHLEN",
    "LCS l1 l2 MINMATCHLEN x",
    "LCS l1 l2 FOO",
    "LCS l1 h",
    "COMMAND GETKEYS",
    "COMMAND GETKEYS get",
    "COMMAND GETKEYS get a",
    "COMMAND GETKEYS GET a b",
    "COMMAND GETKEYS nosuch a",
    "COMMAND GETKEYS ping",
    "COMMAND GETKEYS mset a 1 b 2",
    "COMMAND GETKEYS mset a 1 b",
    "COMMAND GETKEYS del a b c",
    "COMMAND GETKEYS blpop a b 0",
    "COMMAND GETKEYS zunionstore d 2 a b",
    "COMMAND GETKEYS zunionstore d 3 a b",
    "COMMAND GETKEYS zunionstore d x a b",
    "COMMAND GETKEYS zunionstore d 0 a b",
    "COMMAND GETKEYS zunionstore d -1 a",
    "COMMAND GETKEYS zunion 2 a b WEIGHTS 1 2",
    "COMMAND GETKEYS lmpop 2 a b LEFT",
    "COMMAND GETKEYS blmpop 0 2 a b LEFT",
    "COMMAND GETKEYS zmpop 1 a MIN",
    "COMMAND GETKEYS bzmpop 1 1 a MIN",
    "COMMAND GETKEYS sintercard 2 a b LIMIT 1",
    "COMMAND GETKEYS zintercard 1 a",
    "COMMAND GETKEYS sort a",
    "COMMAND GETKEYS sort a STORE b",
    "COMMAND GETKEYS sort a LIMIT 0 1 STORE b GET x BY y",
    "COMMAND GETKEYS sort a STORE",
    "COMMAND GETKEYS sort_ro a BY x",
    "COMMAND GETKEYS sort_ro a STORE b",
    "COMMAND GETKEYS sort a LIMIT 0 STORE b",
    "COMMAND GETKEYS sort a GET store STORE b STORE c",
    "COMMAND GETKEYS lmove a b LEFT RIGHT",
    "COMMAND GETKEYS rename a b",
    "COMMAND GETKEYS publish a b",
    "COMMAND GETKEYS ssubscribe a b",
    "COMMAND GETKEYS spublish a b",
    "COMMAND GETKEYS watch a b",
    "COMMAND GETKEYS object encoding a",
    "COMMAND GETKEYS memory usage a",
    "COMMAND GETKEYS client list",
    "COMMAND GETKEYS msetnx a 1",
    "COMMAND GETKEYS set a b EX 10",
    "COMMAND GETKEYS pfmerge a b c",
    "COMMAND GETKEYS bitop and d a b",
    "COMMAND GETKEYS zrangestore d s 0 1",
    "COMMAND GETKEYS copy a b",
    "COMMAND GETKEYS smove a b c",
    "ZADD zf 1e999 a",
    "ZADD zf 1e-999 a",
    "ZADD zf 2e-310 a",
    "ZADD zf inf b",
    "ZUNIONSTORE zu 1 zf WEIGHTS 1e400",
    "MULTI",
    "CLIENT GETNAME x",
    "OBJECT ENCODING",
    "EXEC",
    "CLIENT PAUSE",
    "SLOWLOG GET 1 2",
    "PUBSUB NUMPAT x",
    "LATENCY LATEST",
    "LATENCY HISTORY command",
    "LATENCY RESET",
    "LATENCY RESET command x",
    "LATENCY GRAPH command",
    "LATENCY HISTOGRAM nosuch",
    "LATENCY foo",
    "LATENCY HISTORY",
    "CONFIG GET latency-tracking-info-percentiles",
    "CONFIG GET latency-monitor-threshold",
    "CONFIG SET latency-tracking-info-percentiles 99.99",
    "CONFIG GET latency-tracking-info-percentiles",
    "CONFIG SET latency-tracking-info-percentiles 101",
    "CONFIG SET latency-tracking-info-percentiles abc",
    "CONFIG SET maxclients 123 timeout abc",
    "CONFIG GET maxclients",
    "CONFIG SET maxclients 123 nosuch 1",
    "CONFIG SET maxclients 1 maxclients 2",
    "CONFIG SET maxclients 123 daemonize yes",
    "CONFIG GET maxclients",
    "GEOADD gr 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
    "GEOPOS gr Palermo nope",
    "GEOPOS nokey a",
    "GEOHASH gr Catania nope",
    "GEODIST gr Palermo Catania km",
    "GEODIST gr Palermo nope",
    "GEOSEARCH gr FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHCOORD WITHDIST WITHHASH",
    "GEORADIUS gr 15 37 200 km WITHCOORD COUNT 1",
    "GEOSEARCH nokey FROMLONLAT 1 2 BYBOX 1 1 m",
    "GEOSEARCHSTORE gd gr FROMMEMBER Palermo BYBOX 400 400 km STOREDIST",
    "ZRANGE gd 0 -1 WITHSCORES",
};

static void r3_show(char *out, size_t cap, const char *p, size_t n)
{
    size_t u = 0;
    for (size_t i = 0; i < n && u + 5 < cap; i++)
        u += (size_t)(p[i] == '\r'   ? snprintf(out + u, cap - u, "\\r")
                      : p[i] == '\n' ? snprintf(out + u, cap - u, "\\n")
                                     : snprintf(out + u, cap - u, "%c", p[i]));
    out[u] = 0;
}

static void test_diff_resp3_replies(void **state)
{
    (void)state;
    int fr = r3_connect(R.port), fk = r3_connect(K.port);
    size_t n;
    free(r3_call(fr, "HELLO 3", &n)); /* server facts: not compared */
    free(r3_call(fk, "HELLO 3", &n));
    size_t count = sizeof RESP3_SCRIPT / sizeof RESP3_SCRIPT[0];
    for (size_t i = 0; i < count; i++) {
        size_t na, nb;
        char *a = r3_call(fr, RESP3_SCRIPT[i], &na), *b = r3_call(fk, RESP3_SCRIPT[i], &nb);
        if (na != nb || memcmp(a, b, na) != 0) {
            char sa[2048], sb[2048];
            r3_show(sa, sizeof sa, a, na);
            r3_show(sb, sizeof sb, b, nb);
            fail_msg("RESP3 %s\n  redis:  %s\n  shmkvd: %s", RESP3_SCRIPT[i], sa, sb);
        }
        free(a);
        free(b);
    }
    close(fr);
    close(fk);
    printf("test_diff: %zu RESP3 replies identical to redis-server's, byte for byte\n", count);
}

/* ---- pub/sub against redis-server ----
 *
 * Four connections to each server (0 and 1 speak RESP2, 2 and 3 RESP3) run
 * the same script; after each step, whatever every connection received is
 * compared byte for byte: subscription notices and counts, messages and
 * pattern messages, the RESP2 subscribed context's errors and PING, and
 * RESP3 pushes mixed with replies. The script leaves out what Redis's order
 * leaves open (several names in one PUBSUB CHANNELS or UNSUBSCRIBE-all). */

/* One step of a script over several connections to each server. */
struct conn_step {
    int conn;
    const char *cmd;
};

static const struct conn_step PUBSUB_SCRIPT[] = {
    {2, "HELLO 3"},
    {3, "HELLO 3"},
    {0, "SUBSCRIBE news sport news"},
    {0, "GET x"},
    {0, "PING"},
    {0, "PING hi"},
    {0, "CLIENT INFO"},
    {0, "MULTI"},
    {0, "PSUBSCRIBE n*"},
    {0, "EXEC"},
    {1, "PUBLISH news hello"},
    {1, "PUBLISH sport x"},
    {1, "PUBLISH nothing y"},
    {2, "PSUBSCRIBE n* ?port"},
    {2, "GET x"},
    {2, "PING"},
    {1, "PUBLISH news again"},
    {3, "PUBLISH sport ball"},
    {1, "PUBSUB NUMPAT"},
    {1, "PUBSUB NUMSUB news sport nothing"},
    {1, "PUBSUB CHANNELS s*"},
    {1, "PUBSUB CHANNELS n*"},
    {1, "PUBSUB CHANNELS a b"},
    {1, "PUBSUB NUMPAT x"},
    {1, "PUBSUB NOSUCH"},
    {1, "SUBSCRIBE"},
    {1, "PUBLISH a"},
    {3, "SUBSCRIBE self"},
    {3, "PUBLISH self loop"},
    {3, "UNSUBSCRIBE"},
    {3, "UNSUBSCRIBE"},
    {3, "PUNSUBSCRIBE"},
    {3, "SSUBSCRIBE shard"},
    {1, "SPUBLISH shard s1"},
    {1, "PUBLISH shard s2"},
    {1, "PUBSUB SHARDCHANNELS"},
    {1, "PUBSUB SHARDNUMSUB shard nope"},
    {3, "SUNSUBSCRIBE shard"},
    {0, "UNSUBSCRIBE sport nope"},
    {0, "UNSUBSCRIBE"},
    {0, "UNSUBSCRIBE"},
    {0, "PUNSUBSCRIBE"},
    {0, "GET x"},
    {0, "SUBSCRIBE news"},
    {0, "RESET"},
    {0, "GET x"},
    {1, "PUBLISH news after-reset"},
    {2, "PUNSUBSCRIBE ?port"},
    {1, "PUBLISH news 2"},
    {2, "QUIT"},
    {1, "PUBLISH news 3"},
    {1, "PUBSUB NUMPAT"},
    {1, "PUBSUB NUMSUB news"},
};

/* Everything fd received until it stays quiet for 20 ms. */
static size_t drain(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    struct timeval tv = {0, 20 * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (;;) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    return n;
}

static size_t count_lines(const char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += p[i] == '\n';
    return k;
}

/* Drains a connection to each server into a + *na and b + *nb; while the
 * two hold different numbers of lines, the one behind is drained again
 * for up to 3 s: under ASan on a busy machine a reply can take longer
 * than one 20 ms quiet period, and must not be read as missing. */
static void drain_pair(int fa, char *a, size_t *na, size_t capa, int fb, char *b, size_t *nb,
                       size_t capb)
{
    *na += drain(fa, a + *na, capa - *na);
    *nb += drain(fb, b + *nb, capb - *nb);
    for (int i = 0; i < 150; i++) {
        size_t la = count_lines(a, *na), lb = count_lines(b, *nb);
        if (la == lb)
            break;
        if (la < lb)
            *na += drain(fa, a + *na, capa - *na);
        else
            *nb += drain(fb, b + *nb, capb - *nb);
    }
}

/* Runs a script on nconn connections to each server (up to 4); after
 * each step, whatever every connection received is compared byte for byte
 * (a HELLO step's replies, server facts, are not). Returns the bytes. */
static size_t run_conn_script(const char *what, const struct conn_step *script, size_t steps,
                              int nconn)
{
    int fr[4], fk[4];
    for (int i = 0; i < nconn; i++) {
        fr[i] = r3_connect(R.port);
        fk[i] = r3_connect(K.port);
    }
    /* "$ID<n>" in a command stands for connection n's CLIENT ID, which
     * differs between the servers. */
    long long idr[4] = {0}, idk[4] = {0};
    for (size_t s = 0; s < steps; s++) {
        if (!strstr(script[s].cmd, "$ID"))
            continue;
        for (int i = 0; i < nconn; i++) {
            size_t n;
            char *a = r3_call(fr[i], "CLIENT ID", &n), *b = r3_call(fk[i], "CLIENT ID", &n);
            idr[i] = atoll(a + 1);
            idk[i] = atoll(b + 1);
            free(a);
            free(b);
        }
        break;
    }
    size_t bytes = 0;
    static char a[65536], b[65536];
    for (size_t s = 0; s < steps; s++) {
        int i = script[s].conn;
        const char *at = strstr(script[s].cmd, "$ID");
        if (at) {
            char lr[256], lk[256];
            int n = (int)(at - script[s].cmd), which = at[3] - '0';
            snprintf(lr, sizeof lr, "%.*s%lld%s", n, script[s].cmd, idr[which], at + 4);
            snprintf(lk, sizeof lk, "%.*s%lld%s", n, script[s].cmd, idk[which], at + 4);
            send_line(fr[i], lr);
            send_line(fk[i], lk);
        } else {
            send_line(fr[i], script[s].cmd);
            send_line(fk[i], script[s].cmd);
        }
        for (int j = 0; j < nconn; j++) {
            size_t na = 0, nb = 0;
            drain_pair(fr[j], a, &na, sizeof a, fk[j], b, &nb, sizeof b);
            if (!strncmp(script[s].cmd, "HELLO", 5))
                continue;
            if (na != nb || memcmp(a, b, na) != 0) {
                char sa[2048], sb[2048];
                r3_show(sa, sizeof sa, a, na);
                r3_show(sb, sizeof sb, b, nb);
                fail_msg("%s step %zu (connection %d: %s), connection %d received\n"
                         "  redis:  %s\n  shmkvd: %s",
                         what, s, i, script[s].cmd, j, sa, sb);
            }
            bytes += na;
        }
    }
    for (int i = 0; i < nconn; i++) {
        close(fr[i]);
        close(fk[i]);
    }
    return bytes;
}

static void test_diff_pubsub(void **state)
{
    (void)state;
    size_t steps = sizeof PUBSUB_SCRIPT / sizeof PUBSUB_SCRIPT[0];
    size_t bytes = run_conn_script("pub/sub", PUBSUB_SCRIPT, steps, 4);
    printf("test_diff: %zu pub/sub steps on four connections, %zu bytes received, identical "
           "to redis-server's\n",
           steps, bytes);
}

/* CLIENT TRACKING against redis-server: what every connection receives,
 * byte for byte — invalidation pushes to RESP3 clients (after the reply
 * when the client changed the key itself), the default mode's one message
 * per read key, FLUSHDB's null, keys read in another database, NOLOOP,
 * OPTIN/OPTOUT with CLIENT CACHING, BCAST per prefix (sorted, once per key
 * and loop iteration), REDIRECT to a RESP2 client subscribed to
 * __redis__:invalidate, inside MULTI, and the errors. Connections 0 and 1
 * speak RESP2, 2 and 3 RESP3. */
static const struct conn_step TRACKING_SCRIPT[] = {
    {2, "HELLO 3"},
    {3, "HELLO 3"},
    {0, "FLUSHALL"},
    {2, "CLIENT TRACKING on"},
    {2, "GET a"},
    {2, "MGET b c"},
    {0, "SET a 1"},
    {0, "MSET b 1 c 2 d 3"},
    {2, "GET a"},
    {2, "SET a 2"},
    {2, "HGET h f"},
    {0, "HSET h f v"},
    {0, "HSET h f v2"},
    {2, "EXISTS h"},
    {0, "DEL h nokey"},
    {2, "LRANGE l 0 -1"},
    {0, "RPUSH l x y"},
    {2, "LLEN l"},
    {0, "LPOP l"},
    {2, "ZSCORE z m"},
    {0, "ZADD z 1 m"},
    {2, "SMEMBERS s"},
    {0, "SADD s x"},
    {0, "SADD s x"},
    {2, "SCARD s"},
    {0, "SREM s nope"},
    {0, "SREM s x"},
    {2, "GET i"},
    {0, "INCR i"},
    {2, "STRLEN i"},
    {0, "EXPIRE i 100"},
    {2, "TTL i"},
    {0, "PERSIST i"},
    {2, "GET r1"},
    {0, "SET r1 x"},
    {2, "GET r1"},
    {0, "RENAME r1 r2"},
    {2, "CLIENT TRACKINGINFO"},
    {2, "CLIENT GETREDIR"},
    {2, "GET a"},
    {0, "FLUSHDB"},
    {2, "SELECT 1"},
    {2, "GET a"},
    {2, "SELECT 0"},
    {0, "SET a x"},
    {2, "MULTI"},
    {2, "GET m"},
    {2, "SET m 1"},
    {2, "GET m"},
    {2, "EXEC"},
    {0, "SET m 2"},
    {2, "CLIENT TRACKING on NOLOOP"},
    {2, "GET n"},
    {2, "SET n 1"},
    {2, "GET n"},
    {0, "SET n 2"},
    {2, "CLIENT TRACKINGINFO"},
    {3, "CLIENT CACHING yes"},
    {3, "CLIENT TRACKING on OPTIN"},
    {3, "GET o"},
    {0, "SET o 1"},
    {3, "CLIENT CACHING yes"},
    {3, "GET o"},
    {0, "SET o 2"},
    {3, "CLIENT CACHING yes"},
    {3, "PING"},
    {3, "GET o"},
    {0, "SET o 3"},
    {3, "CLIENT CACHING no"},
    {3, "CLIENT CACHING maybe"},
    {3, "CLIENT TRACKINGINFO"},
    {3, "CLIENT TRACKING on OPTOUT"},
    {3, "CLIENT TRACKING off"},
    {3, "CLIENT TRACKING on OPTOUT"},
    {3, "CLIENT CACHING no"},
    {3, "GET p"},
    {0, "SET p 1"},
    {3, "GET p"},
    {0, "SET p 2"},
    {3, "CLIENT TRACKING off"},
    {3, "CLIENT TRACKING on BCAST PREFIX user: PREFIX item:"},
    {0, "MSET user:1 a item:2 b other c user:0 d"},
    {0, "DEL user:1 user:1"},
    {3, "CLIENT TRACKING on BCAST PREFIX us"},
    {3, "CLIENT TRACKING on BCAST PREFIX a PREFIX ab"},
    {3, "CLIENT TRACKING on PREFIX x"},
    {3, "CLIENT TRACKING on BCAST OPTIN"},
    {3, "CLIENT TRACKING on"},
    {3, "CLIENT TRACKINGINFO"},
    {3, "CLIENT TRACKING off"},
    {3, "CLIENT TRACKING on BCAST NOLOOP"},
    {3, "SET z1 1"},
    {0, "SET y1 1"},
    {3, "CLIENT TRACKING on OPTIN OPTOUT"},
    {0, "CLIENT TRACKING maybe"},
    {0, "CLIENT TRACKING on REDIRECT 999999999"},
    {0, "CLIENT TRACKING on BOGUS"},
    {1, "SUBSCRIBE __redis__:invalidate"},
    {0, "CLIENT TRACKING on REDIRECT $ID1"},
    {0, "GET r"},
    {2, "SET r 1"},
    {0, "GET r"},
    {0, "FLUSHALL"},
    {0, "CLIENT TRACKING off"},
    {0, "CLIENT TRACKING on"},
    {0, "GET q"},
    {2, "SET q 1"},
    {0, "CLIENT GETREDIR"},
    {2, "CLIENT TRACKING off"},
    {2, "GET a"},
    {0, "SET a 3"},
    {2, "CLIENT GETREDIR"},
    {2, "CLIENT TRACKINGINFO"},
};

/* CLIENT KILL's filters: TYPE (a subscribed client is "pubsub"), USER
 * (only "default" exists), their errors, and what the killed connections
 * then receive (nothing). */
static const struct conn_step KILL_SCRIPT[] = {
    {1, "SUBSCRIBE ch"},
    {0, "CLIENT KILL TYPE foo"},
    {0, "CLIENT KILL USER nobody"},
    {0, "CLIENT KILL TYPE master"},
    {0, "CLIENT KILL TYPE replica SKIPME no"},
    {0, "CLIENT KILL TYPE normal USER default"},
    {0, "CLIENT KILL TYPE pubsub"},
    {0, "CLIENT KILL TYPE pubsub"},
    {0, "CLIENT KILL TYPE normal"},
    {0, "PING"},
};

static void test_diff_tracking(void **state)
{
    (void)state;
    size_t steps = sizeof TRACKING_SCRIPT / sizeof TRACKING_SCRIPT[0];
    size_t bytes = run_conn_script("tracking", TRACKING_SCRIPT, steps, 4);
    printf("test_diff: CLIENT TRACKING: %zu steps on four connections, %zu bytes received, "
           "identical to redis-server's\n",
           steps, bytes);
    /* The kill counts every normal client: first let both servers see
     * the connections closed before go (a loaded machine delays it). */
    for (int t = 0; t < 200; t++) {
        long long n[2];
        int ports[2] = {R.port, K.port};
        for (int i = 0; i < 2; i++) {
            redisContext *q = h_connect_port(ports[i]);
            assert_non_null(q);
            redisReply *r = redisCommand(q, "INFO clients");
            const char *at = strstr(r->str, "connected_clients:");
            n[i] = at ? atoll(at + 18) : -1;
            freeReplyObject(r);
            redisFree(q);
        }
        if (n[0] == n[1])
            break;
        usleep(10 * 1000);
    }
    steps = sizeof KILL_SCRIPT / sizeof KILL_SCRIPT[0];
    bytes = run_conn_script("client kill", KILL_SCRIPT, steps, 3);
    printf("test_diff: CLIENT KILL filters: %zu steps on three connections, %zu bytes received, "
           "identical to redis-server's\n",
           steps, bytes);
}

/* Keyspace events where the random run does not go: a blocked client
 * served by another's push (its pop's events follow the push's), a
 * transaction, RENAME/COPY/MOVE across databases, SMOVE's three cases,
 * SORT STORE, GETEX with a past time, a key created with no event of its
 * own, and a RESP3 client subscribed to its own events (the pushes come
 * before the reply, byte for byte). */
static const struct conn_step KEYSPACE_SCRIPT[] = {
    {1, "CONFIG SET notify-keyspace-events KEAn"},
    {0, "PSUBSCRIBE __key*__:*"},
    {2, "BLPOP kq 5"},
    {1, "RPUSH kq a b"},
    {2, "BLMOVE kq kd RIGHT LEFT 5"},
    {2, "BZPOPMIN kz 5"},
    {1, "ZADD kz 1 a 2 b"},
    {1, "ZINCRBY kz 0 b"},
    {1, "ZADD kz INCR 1 b"},
    {1, "MULTI"},
    {1, "SET km 1"},
    {1, "INCR km"},
    {1, "EXPIRE km 100"},
    {1, "EXEC"},
    {1, "PERSIST km"},
    {1, "PERSIST km"},
    {1, "GETEX km PXAT 1"},
    {1, "SET kr 1"},
    {1, "RENAME kr kr"},
    {1, "RENAME kr kr2"},
    {1, "RENAMENX kr2 kd"},
    {1, "COPY kr2 kr3 DB 2"},
    {1, "MOVE kr2 3"},
    {1, "SELECT 3"},
    {1, "DEL kr2 nokey"},
    {1, "SELECT 0"},
    {1, "SADD ks a b"},
    {1, "SMOVE ks ks a"},
    {1, "SMOVE ks ks2 a"},
    {1, "SADD ks a"},
    {1, "SMOVE ks ks2 a"},
    {1, "SMOVE ks ks2 b"},
    {1, "RPUSH kl 3 1 2"},
    {1, "SORT kl STORE ksorted"},
    {1, "SORT nokey STORE ksorted"},
    {1, "LTRIM kl 5 6"},
    {1, "EXPIRE kd -1"},
    {1, "HSET kh a 1 b 2"},
    {1, "HDEL kh a b c"},
    {1, "BITFIELD kbf OVERFLOW FAIL INCRBY i8 0 200"}, /* creates the key: "new" alone */
    {3, "HELLO 3"},
    {3, "PSUBSCRIBE __keyevent@0__:*"},
    {3, "SET self 1"},
    {3, "APPEND self 2"},
    {3, "DEL self"},
    {3, "PUNSUBSCRIBE"},
    {1, "FLUSHALL"},
    {0, "PUNSUBSCRIBE"},
};

static void test_diff_keyspace_events(void **state)
{
    (void)state;
    size_t steps = sizeof KEYSPACE_SCRIPT / sizeof KEYSPACE_SCRIPT[0];
    size_t bytes = run_conn_script("keyspace events", KEYSPACE_SCRIPT, steps, 4);
    /* (The CLIENT KILL script before closed the random run's connections.) */
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    redisReply *a = redisCommand(dr, "CONFIG SET notify-keyspace-events %s", "");
    redisReply *b = redisCommand(dk, "CONFIG SET notify-keyspace-events %s", "");
    assert_true(a && b && a->type == REDIS_REPLY_STATUS && b->type == REDIS_REPLY_STATUS);
    freeReplyObject(a);
    freeReplyObject(b);
    redisFree(dr);
    redisFree(dk);
    printf("test_diff: keyspace events: %zu steps on four connections, %zu bytes received, "
           "identical to redis-server's\n",
           steps, bytes);
}

/* SWAPDB: every client stays on its database number and sees the other's
 * data; a watched key in either database fails the transaction; a client
 * blocked on a list the swap brings is served; keyspace events, MOVE,
 * SELECT and INFO keyspace use the numbers; the errors are Redis's. */
static const struct conn_step SWAPDB_SCRIPT[] = {
    {0, "FLUSHALL"},
    {0, "CONFIG SET notify-keyspace-events KEA"},
    {3, "PSUBSCRIBE __key*@*__:*"},
    {0, "SELECT 1"},
    {0, "SET k one"},
    {0, "RPUSH q job"},
    {0, "SELECT 0"},
    {0, "SET k zero"},
    {1, "WATCH k"},
    {1, "MULTI"},
    {1, "SET k from-tx"},
    {2, "BLPOP q 0"},
    {0, "SWAPDB 0 1"},
    {1, "EXEC"},
    {0, "GET k"},
    {0, "DBSIZE"},
    {2, "GET k"},
    {0, "SELECT 1"},
    {0, "GET k"},
    {0, "LLEN q"},
    {0, "SET n 1"},
    {0, "MOVE n 0"},
    {0, "SELECT 0"},
    {0, "GET n"},
    {0, "INFO keyspace"},
    {1, "WATCH other"},
    {1, "MULTI"},
    {1, "SET other x"},
    {0, "SWAPDB 1 0"},
    {1, "EXEC"},
    {0, "GET k"},
    {0, "SWAPDB 3 3"},
    {0, "SWAPDB a 1"},
    {0, "SWAPDB 0 b"},
    {0, "SWAPDB 0 16"},
    {0, "SWAPDB -1 0"},
    {0, "SWAPDB 0"},
    {0, "MULTI"},
    {0, "SWAPDB 0 2"},
    {0, "SELECT 2"},
    {0, "GET k"},
    {0, "EXEC"},
    {0, "SWAPDB 0 2"},
    {0, "SELECT 0"},
    {0, "GET k"},
    {0, "FLUSHALL"},
    {0, "CONFIG SET notify-keyspace-events \"\""},
};

static void test_diff_swapdb(void **state)
{
    (void)state;
    size_t steps = sizeof SWAPDB_SCRIPT / sizeof SWAPDB_SCRIPT[0];
    size_t bytes = run_conn_script("swapdb", SWAPDB_SCRIPT, steps, 4);
    printf("test_diff: SWAPDB: %zu steps on four connections, %zu bytes received, identical "
           "to redis-server's\n",
           steps, bytes);
}

/* INFO commandstats and errorstats against redis-server: after CONFIG
 * RESETSTAT, one script of successes, in-command errors (failed_calls),
 * refusals before running (rejected_calls: arity, a transaction's
 * refused command, a refused EXEC), unknown commands (error counts only),
 * subcommands ("config|get") and a transaction with a failing command.
 * The lines are compared with their usec figures masked, in any order. */
static const char *const STATS_SCRIPT[] = {
    "SET st 1",
    "GET st",
    "LPUSH st x",
    "GET",
    "NOSUCH a",
    "INCR st",
    "INCRBY st x",
    "HSET sth f v",
    "HGET sth",
    "MULTI",
    "INCR st",
    "LPUSH st y",
    "GET st",
    "EXEC",
    "MULTI",
    "GET",
    "SET st 2",
    "EXEC",
    "EXEC x",
    "CONFIG GET port",
    "CONFIG FOO",
    "CLIENT SETNAME n",
    "CLIENT GETNAME",
    "OBJECT ENCODING st",
    "OBJECT FREQ st",
    "ZADD stz 1 a",
    "ZADD stz x a",
    "SET stx abc",
    "EVAL return(redis.call('incr','stx')) 0",
    "EVAL return(redis.pcall('incr','stx')) 0",
    "EVAL return(redis.call('nosuch')) 0",
    "EVAL return(redis.call('get','stx')) 0",
    "EVALSHA 0000000000000000000000000000000000000000 0",
    "DEL st sth stz stx",
    "PING",
    "ECHO",
    "OBJECT ENCODING",
    "MEMORY USAGE",
    "CLIENT GETNAME x",
    "CONFIG GET",
    "MULTI",
    "CLIENT GETNAME x",
    "EXEC",
};

/* Sorted lines of an INFO section, usec figures masked. */
static size_t stats_lines(redisContext *c, const char *section, char lines[][160], size_t cap)
{
    redisReply *r = redisCommand(c, "INFO %s", section);
    assert_true(r && r->type == REDIS_REPLY_STRING);
    size_t n = 0;
    for (char *p = strtok(r->str, "\r\n"); p && n < cap; p = strtok(NULL, "\r\n")) {
        if (p[0] == '#')
            continue;
        char *o = lines[n];
        size_t u = 0;
        for (const char *q = p; *q && u < 150;) {
            if (!strncmp(q, "usec=", 5) || !strncmp(q, "usec_per_call=", 14)) {
                const char *eq = strchr(q, '=');
                u += (size_t)snprintf(o + u, 160 - u, "%.*s=N", (int)(eq - q), q);
                q = eq + 1;
                while (*q && *q != ',')
                    q++;
            } else {
                o[u++] = *q++;
            }
        }
        o[u] = 0;
        n++;
    }
    freeReplyObject(r);
    qsort(lines, n, 160, (int (*)(const void *, const void *))strcmp);
    return n;
}

static void test_diff_info_stats(void **state)
{
    (void)state;
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    freeReplyObject(redisCommand(dr, "CONFIG RESETSTAT"));
    freeReplyObject(redisCommand(dk, "CONFIG RESETSTAT"));
    for (size_t i = 0; i < sizeof STATS_SCRIPT / sizeof STATS_SCRIPT[0]; i++) {
        freeReplyObject(redisCommand(dr, STATS_SCRIPT[i]));
        freeReplyObject(redisCommand(dk, STATS_SCRIPT[i]));
    }
    static char a[64][160], b[64][160];
    size_t lines = 0;
    for (int sec = 0; sec < 2; sec++) {
        const char *name = sec ? "errorstats" : "commandstats";
        size_t na = stats_lines(dr, name, a, 64), nb = stats_lines(dk, name, b, 64);
        for (size_t i = 0; i < na || i < nb; i++)
            if (i >= na || i >= nb || strcmp(a[i], b[i]))
                fail_msg("INFO %s, line %zu:\n  redis:  %s\n  shmkvd: %s", name, i,
                         i < na ? a[i] : "(none)", i < nb ? b[i] : "(none)");
        lines += na;
    }
    printf("test_diff: INFO commandstats and errorstats agree with redis-server's (%zu lines, "
           "usec masked)\n",
           lines);
    redisFree(dr);
    redisFree(dk);
}

/* ---- MONITOR against redis-server ----
 *
 * A monitor on each server sees one client run the script below: what
 * is shown and in which order (a transaction's commands before its EXEC, a
 * blocking pop when it parks, the database after SELECT), what is hidden
 * (admin commands, unknown and wrong-arity ones), the argument escapes
 * and AUTH's and HELLO's redactions. Then the monitor itself: keyspace
 * commands are refused, PING is shown, RESET ends it. Timestamps and
 * addresses are masked; everything else is compared byte for byte. */

static const char *const MONITOR_SCRIPT[][8] = {
    {"SET", "k", "v"},
    {"GET", "k"},
    {"EVAL", "return redis.call('get', KEYS[1])", "1", "k"},
    {"set", "K", "\"x\ny\\z\x01 \t\r\x7f\xff\a\b"},
    {"MULTI"},
    {"INCR", "n"},
    {"GET", "n"},
    {"EXEC"},
    {"NOSUCH", "x"},
    {"GET"},
    {"CONFIG", "GET", "port"},
    {"CONFIG", "HELP"},
    {"AUTH", "foo"},
    {"HELLO", "2", "AUTH", "default", "foo"},
    {"HELLO", "2", "SETNAME", "n1", "AUTH", "u", "p"},
    {"SELECT", "3"},
    {"SET", "a", "1"},
    {"DEL", "a"},
    {"SELECT", "0"},
    {"BLPOP", "q", "0.01"},
    {"CLIENT", "SETNAME", "x"},
    {"CLIENT", "LIST", "ID", "1"},
    {"CLIENT", "GETNAME"},
    {"SLOWLOG", "LEN"},
    {"WAIT", "0", "0"},
    {"BGSAVE", "x"},
    {"PING"},
    {"ECHO", "12"},
    {"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH", "pw"},
    {"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH2", "u"},
    {"MIGRATE", "127.0.0.1", "1", "k", "0", "10", "COPY", "AUTH2"},
    {"DEL", "k", "n", "K"},
};

static void send_argv(int fd, const char *const *w)
{
    char req[1024];
    int nw = 0;
    while (nw < 8 && w[nw])
        nw++;
    size_t u = (size_t)snprintf(req, sizeof req, "*%d\r\n", nw);
    for (int i = 0; i < nw; i++)
        u += (size_t)snprintf(req + u, sizeof req - u, "$%zu\r\n%s\r\n", strlen(w[i]), w[i]);
    assert_int_equal(write(fd, req, u), (ssize_t)u);
}

/* Masks each monitor line's "+SECONDS.MICROS [DB ADDR]" as "+T [DB]". */
static size_t monitor_mask(char *p, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        bool line_start = i == 0 || p[i - 1] == '\n';
        if (line_start && p[i] == '+' && i + 1 < n && p[i + 1] >= '0' && p[i + 1] <= '9') {
            const char *lb = memchr(p + i, '[', n - i),
                       *sp = lb ? memchr(lb, ' ', (size_t)(p + n - lb)) : NULL;
            const char *rb = sp ? memchr(sp, ']', (size_t)(p + n - sp)) : NULL;
            if (rb) {
                o += (size_t)sprintf(p + o, "+T ");
                memmove(p + o, lb, (size_t)(sp - lb));
                o += (size_t)(sp - lb);
                p[o++] = ']';
                i = (size_t)(rb - p) + 1;
                continue;
            }
        }
        p[o++] = p[i++];
    }
    return o;
}

static void test_diff_monitor(void **state)
{
    (void)state;
    int mr = r3_connect(R.port), mk = r3_connect(K.port);
    int ur = r3_connect(R.port), uk = r3_connect(K.port);
    static char a[65536], b[65536];
    size_t na = 0, nb = 0, steps = sizeof MONITOR_SCRIPT / sizeof MONITOR_SCRIPT[0];
    send_line(mr, "MONITOR");
    send_line(mk, "MONITOR");
    drain_pair(mr, a, &na, sizeof a, mk, b, &nb, sizeof b);
    for (size_t s = 0; s < steps; s++) {
        send_argv(ur, MONITOR_SCRIPT[s]);
        send_argv(uk, MONITOR_SCRIPT[s]);
        static char junk[65536];
        drain(ur, junk, sizeof junk);
        drain(uk, junk, sizeof junk);
    }
    /* The monitor's own commands, then RESET: the SET after is not shown. */
    static const char *const own[] = {"GET k", "PING", "DBSIZE", "ECHO e", "MONITOR", "RESET"};
    for (size_t s = 0; s < sizeof own / sizeof own[0]; s++) {
        send_line(mr, own[s]);
        send_line(mk, own[s]);
        drain_pair(mr, a, &na, sizeof a, mk, b, &nb, sizeof b);
    }
    send_line(ur, "SET after reset");
    send_line(uk, "SET after reset");
    drain_pair(mr, a, &na, sizeof a, mk, b, &nb, sizeof b);
    na = monitor_mask(a, na);
    nb = monitor_mask(b, nb);
    if (na != nb || memcmp(a, b, na) != 0) {
        static char sa[65536], sb[65536];
        r3_show(sa, sizeof sa, a, na);
        r3_show(sb, sizeof sb, b, nb);
        fail_msg("MONITOR streams differ\n  redis:  %s\n  shmkvd: %s", sa, sb);
    }
    assert_non_null(memmem(a, na, "\"EXEC\"", 6)); /* the masking kept the lines */
    close(mr);
    close(mk);
    close(ur);
    close(uk);
    printf("test_diff: MONITOR streams identical to redis-server's over %zu commands, %zu bytes\n",
           steps, na);
}

/* CLIENT REPLY against redis-server: two connections per server, one
 * turning its replies off, skipping one, on again; a message published to
 * it while off, a blocking pop answered while off, RESET turning replies
 * back on. Everything each connection received is compared byte for byte
 * after every step. */
static const struct conn_step REPLY_SCRIPT[] = {
    {0, "SET ra 1"},
    {0, "CLIENT REPLY OFF"},
    {0, "SET rb 2"},
    {0, "GET rb"},
    {0, "NOSUCH"},
    {0, "CLIENT REPLY SKIP"},
    {0, "SUBSCRIBE rch"},
    {1, "PUBLISH rch m1"},
    {0, "UNSUBSCRIBE"},
    {0, "BLPOP rl 2"},
    {1, "RPUSH rl x"},
    {0, "CLIENT REPLY ON"},
    {0, "GET rb"},
    {0, "CLIENT REPLY SKIP"},
    {0, "GET ra"},
    {0, "GET rb"},
    {0, "CLIENT REPLY SKIP"},
    {0, "CLIENT REPLY SKIP"},
    {0, "GET ra"},
    {0, "GET rb"},
    {0, "CLIENT REPLY x"},
    {0, "CLIENT REPLY"},
    {0, "CLIENT REPLY OFF"},
    {0, "CLIENT REPLY SKIP"},
    {0, "GET ra"},
    {0, "RESET"},
    {0, "GET ra"},
    {1, "DEL ra rb rl"},
};

static void test_diff_client_reply(void **state)
{
    (void)state;
    size_t steps = sizeof REPLY_SCRIPT / sizeof REPLY_SCRIPT[0];
    size_t bytes = run_conn_script("CLIENT REPLY", REPLY_SCRIPT, steps, 2);
    printf("test_diff: CLIENT REPLY: %zu steps, %zu bytes received, identical to redis-server's\n",
           steps, bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_resp3_replies), cmocka_unit_test(test_diff_pubsub),
        cmocka_unit_test(test_diff_tracking),      cmocka_unit_test(test_diff_keyspace_events),
        cmocka_unit_test(test_diff_monitor),       cmocka_unit_test(test_diff_info_stats),
        cmocka_unit_test(test_diff_client_reply),  cmocka_unit_test(test_diff_swapdb),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
