/*
 * test_repl — shmkvd as a primary, with redis-server 7.0 as its replica:
 * Redis's own replication protocol end to end.
 *
 * A redis-server started with --replicaof syncs from shmkvd (PSYNC, the
 * RDB file, then the stream), and after a mixed load of all five types
 * (expiries relative and absolute, random pops, float increments, served
 * blocking pops, scripts, transactions, several databases, SWAPDB,
 * RESTORE, keys that expired before a write reached them) both hold the
 * same data: DEBUG DIGEST covers values, types and expiries of every
 * database. A dropped link continues with a partial resync, so does a
 * restart of the primary after a clean shutdown; WAIT counts the
 * replica's acknowledgements; min-replicas-to-write refuses writes when
 * the replica is gone; INFO, ROLE and CLIENT LIST show the replica.
 * FAILOVER hands the primary's role over, between two shmkvd both ways
 * and with redis-server on either side, losing nothing.
 */
#include "harness.h"

static struct server K, R;

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Whether INFO's text holds "field:value" on a line of its own. */
static bool info_has(redisContext *c, const char *section, const char *line)
{
    redisReply *r = H_CMD(c, "INFO %s", section);
    if (!r || r->type != REDIS_REPLY_STRING)
        fail_msg("INFO %s: no text", section);
    size_t n = strlen(line);
    bool found = false;
    for (const char *p = r->str; p && !found; p = strchr(p, '\n')) {
        p += *p == '\n';
        found = !strncmp(p, line, n) && (p[n] == '\r' || p[n] == '\n');
    }
    freeReplyObject(r);
    return found;
}

/* Waits (at most 30 s) until the replica says its link is up. */
static void wait_link_up(redisContext *r)
{
    for (int i = 0; i < 600; i++) {
        if (info_has(r, "replication", "master_link_status:up"))
            return;
        pause_ms(50);
    }
    fail_msg("the replica's link to shmkvd never came up");
}

/* WAIT 1 until the replica acknowledged everything written so far. */
static void wait_acked(redisContext *c)
{
    h_expect_int(c, 1, "WAIT 1 20000");
}

/* The digests agree once the primary's active expiry has sent its DELs:
 * a replica keeps keys past their expiry (its reads hide them) until its
 * primary deletes them, and redis-server's DEBUG DIGEST counts them. */
static void expect_same_digest(redisContext *c, redisContext *r, const char *when)
{
    char a[64] = "", b[64] = "";
    for (int i = 0; i < 100; i++) {
        wait_acked(c);
        redisReply *x = H_CMD(c, "DEBUG DIGEST"), *y = H_CMD(r, "DEBUG DIGEST");
        assert_int_equal(x->type, REDIS_REPLY_STATUS);
        assert_int_equal(y->type, REDIS_REPLY_STATUS);
        snprintf(a, sizeof a, "%s", x->str);
        snprintf(b, sizeof b, "%s", y->str);
        freeReplyObject(x);
        freeReplyObject(y);
        if (!strcmp(a, b))
            break;
        pause_ms(100);
    }
    if (strcmp(a, b))
        fail_msg("%s: DEBUG DIGEST of shmkvd %s, of its redis-server replica %s", when, a, b);
    assert_string_not_equal(a, "0000000000000000000000000000000000000000");
}

/* A mixed load of n commands over a few hundred keys, from seed: every
 * type, and each kind of command whose stream form differs from what the
 * client sent. Errors (a wrong type) are part of the load. */
static void mixed_load(redisContext *c, uint64_t seed, int n)
{
    uint64_t g = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int i = 0; i < n; i++) {
        char k[32];
        snprintf(k, sizeof k, "%u", (unsigned)(t_rnd(&g) % 150));
        unsigned r = (unsigned)(t_rnd(&g) % 34), x = (unsigned)(t_rnd(&g) % 100);
        redisReply *rep = NULL;
        switch (r) {
        case 0:
            rep = H_CMD(c, "SET s%s %d EX %u", k, i, 1 + x);
            break;
        case 1:
            rep = H_CMD(c, "SET s%s %d PX %u", k, i, 1 + x % 5);
            break;
        case 2:
            rep = H_CMD(c, "SET s%s %d EXAT %u", k, i, 2000000000u + x);
            break;
        case 3:
            rep = H_CMD(c, "HSET h%s f%u %d", k, x % 20, i);
            break;
        case 4:
            rep = H_CMD(c, "SADD t%s %u %u %u", k, x % 40, (x * 7) % 40, (x * 13) % 40);
            break;
        case 5:
            rep = H_CMD(c, "SPOP t%s %u", k, x % 3);
            break;
        case 6:
            rep = H_CMD(c, "SPOP t%s", k);
            break;
        case 7:
            rep = H_CMD(c, "ZADD z%s %u.5 m%u", k, x, x % 25);
            break;
        case 8:
            rep = H_CMD(c, "ZPOPMIN z%s", k);
            break;
        case 9:
            rep = H_CMD(c, "RPUSH l%s %d %u", k, i, x);
            break;
        case 10:
            rep = H_CMD(c, "LPOP l%s", k);
            break;
        case 11:
            rep = H_CMD(c, "INCRBYFLOAT f%s 0.1", k);
            break;
        case 12:
            rep = H_CMD(c, "HINCRBYFLOAT h%s fl 1.7", k);
            break;
        case 13:
            rep = H_CMD(c, "EXPIRE h%s %u", k, 1 + x);
            break;
        case 14:
            rep = H_CMD(c, "PEXPIRE t%s %u", k, 1 + x % 4);
            break;
        case 15:
            rep = H_CMD(c, "DEL z%s", k);
            break;
        case 16:
            freeReplyObject(H_CMD(c, "MULTI"));
            freeReplyObject(H_CMD(c, "INCR c%s", k));
            freeReplyObject(H_CMD(c, "LPUSH l%s x", k));
            rep = H_CMD(c, "EXEC");
            break;
        case 17:
            rep = H_CMD(c, "EVAL %s 2 e%s c%s %d",
                        "redis.call('set', KEYS[1], ARGV[1]) return redis.call('incr', KEYS[2])", k,
                        k, i);
            break;
        case 18:
            rep = H_CMD(c, "SETEX x%s 100 %d", k, i);
            break;
        case 19:
            rep = H_CMD(c, "GETEX x%s PX 50000", k);
            break;
        case 20:
            rep = H_CMD(c, "BLPOP l%s 0.01", k);
            break;
        case 21:
            rep = H_CMD(c, "LMOVE l%s m%s LEFT RIGHT", k, k);
            break;
        case 22:
            rep = H_CMD(c, "PFADD p%s %u %u", k, x, x * 31);
            break;
        case 23:
            rep = H_CMD(c, "INCR c%s", k);
            break;
        case 24:
            rep = H_CMD(c, "APPEND a%s xy", k);
            break;
        case 25:
            rep = H_CMD(c, "ZINCRBY z%s 0.25 m1", k);
            break;
        case 26:
            rep = H_CMD(c, "PERSIST x%s", k);
            break;
        case 27:
            rep = H_CMD(c, "SETRANGE a%s 3 zz", k);
            break;
        case 28:
            rep = H_CMD(c, "HDEL h%s f1 f2", k);
            break;
        case 29:
            rep = H_CMD(c, "PSETEX y%s %u v", k, 1000 + x);
            break;
        case 30:
            rep = H_CMD(c, "EXPIREAT c%s %u", k, 2000000000u + x);
            break;
        case 31: /* another database, and back */
            freeReplyObject(H_CMD(c, "SELECT %u", 1 + x % 3));
            freeReplyObject(H_CMD(c, "SET o%s %d PX %u", k, i, 100000 + x));
            rep = H_CMD(c, "SELECT 0");
            break;
        case 32:
            rep = H_CMD(c, "BZPOPMAX z%s 0.01", k);
            break;
        case 33:
            rep = H_CMD(c, "SORT l%s ALPHA STORE sorted%s", k, k);
            break;
        }
        if (!rep)
            fail_msg("connection lost in the load");
        freeReplyObject(rep);
    }
}

/* A client parked on BLPOP (and one on BLMOVE) is served by a push: the
 * stream carries the pops that happened, not the blocking commands. */
static void served_pops(redisContext *c)
{
    redisContext *b1 = h_connect_port(K.port), *b2 = h_connect_port(K.port);
    redisAppendCommand(b1, "BLPOP q1 q2 10");
    redisAppendCommand(b2, "BLMOVE q3 dst RIGHT LEFT 10");
    redisBufferWrite(b1, &(int){0});
    redisBufferWrite(b2, &(int){0});
    pause_ms(100); /* parked */
    h_expect_int(c, 2, "RPUSH q2 a b");
    h_expect_int(c, 1, "RPUSH q3 z");
    redisReply *r1, *r2;
    assert_int_equal(redisGetReply(b1, (void **)&r1), REDIS_OK);
    assert_int_equal(redisGetReply(b2, (void **)&r2), REDIS_OK);
    assert_string_equal(r1->element[0]->str, "q2");
    assert_string_equal(r2->str, "z");
    freeReplyObject(r1);
    freeReplyObject(r2);
    redisFree(b1);
    redisFree(b2);
}

/* A redis-server replica of the shmkvd on port, into s. */
static void start_redis_replica_of(struct server *s, int port)
{
    char primary[64];
    snprintf(primary, sizeof primary, "127.0.0.1 %d", port);
    h_start_redis_opts(s, "repl-r", A("--replicaof", primary, "--enable-debug-command", "yes"));
}

static void start_pair(void)
{
    h_prepare(&K, "repl-k");
    h_start_shmkvd_opts(&K, A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes",
                              "--repl-ping-replica-period", "1"));
    start_redis_replica_of(&R, K.port);
}

static void test_redis_replica(void **state)
{
    (void)state;
    start_pair();
    redisContext *c = h_connect_port(K.port), *r = h_connect_port(R.port);
    wait_link_up(r);
    mixed_load(c, 1, 3000);
    served_pops(c);
    /* A key already expired when a write reaches it: the replica, whose
     * primary's commands see keys as present, gets a DEL first. */
    h_expect_status(c, "OK", "DEBUG SET-ACTIVE-EXPIRE 0");
    h_expect_status(c, "OK", "SET gone notanumber PX 20");
    h_expect_int(c, 1, "HSET hgone f v");
    h_expect_int(c, 1, "PEXPIRE hgone 20");
    pause_ms(60);
    h_expect_int(c, 1, "INCR gone");
    h_expect_int(c, 1, "HSET hgone g w");
    h_expect_status(c, "OK", "DEBUG SET-ACTIVE-EXPIRE 1");
    /* RESTORE with a relative TTL, and databases swapped. */
    redisReply *d = H_CMD(c, "DUMP h1");
    if (d->type == REDIS_REPLY_STRING)
        h_expect_status(c, "OK", "RESTORE rh 500000 %b REPLACE", d->str, d->len);
    freeReplyObject(d);
    h_expect_status(c, "OK", "SWAPDB 1 4");
    expect_same_digest(c, r, "after the mixed load");
    h_expect_bulk(r, "1", "GET gone");

    /* What the primary shows of its replica. */
    assert_true(info_has(c, "replication", "connected_slaves:1"));
    assert_true(info_has(c, "replication", "repl_backlog_active:1"));
    assert_int_equal(h_info_num(c, "sync_full"), 1);
    redisReply *role = H_CMD(c, "ROLE");
    assert_int_equal(role->elements, 3);
    assert_string_equal(role->element[0]->str, "master");
    assert_int_equal(role->element[2]->elements, 1);
    char port[16];
    snprintf(port, sizeof port, "%d", R.port);
    assert_string_equal(role->element[2]->element[0]->element[1]->str, port);
    freeReplyObject(role);
    redisReply *cl = H_CMD(c, "CLIENT LIST TYPE replica");
    assert_non_null(strstr(cl->str, "flags=S"));
    freeReplyObject(cl);
    assert_int_equal(h_info_num(c, "master_repl_offset"), h_info_num(r, "slave_repl_offset"));

    /* A dropped link continues where it stopped. */
    h_expect_int(c, 1, "CLIENT KILL TYPE replica");
    mixed_load(c, 2, 500);
    wait_link_up(r);
    expect_same_digest(c, r, "after a dropped link");
    assert_int_equal(h_info_num(c, "sync_partial_ok"), 1);
    assert_int_equal(h_info_num(c, "sync_full"), 1);

    /* WAIT for more replicas than there are: the timeout, then the count. */
    h_expect_status(c, "OK", "SET w 1");
    h_expect_int(c, 1, "WAIT 2 100");
    /* min-replicas-to-write: refused without enough good replicas. */
    h_expect_status(c, "OK", "CONFIG SET min-replicas-to-write 2");
    h_expect_err(c, "NOREPLICAS", "SET w 2");
    h_expect_status(c, "OK", "CONFIG SET min-replicas-to-write 1");
    h_expect_status(c, "OK", "SET w 3");
    h_expect_status(c, "OK", "CONFIG SET min-replicas-to-write 0");

    /* A clean restart of the primary keeps its ID and offset: the
     * replica continues with a partial resync. */
    redisFree(c);
    assert_int_equal(h_stop(&K), 0);
    h_start_shmkvd_opts(&K, A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes",
                              "--repl-ping-replica-period", "1"));
    c = h_connect_port(K.port);
    wait_link_up(r);
    mixed_load(c, 3, 300);
    expect_same_digest(c, r, "after the primary's restart");
    assert_int_equal(h_info_num(c, "sync_partial_ok"), 1);
    assert_int_equal(h_info_num(c, "sync_full"), 0);
    redisFree(r);
    redisFree(c);
    h_destroy(&R);
    h_destroy(&K);
}

/* The backlog is a ring: a link dropped for longer than it holds needs a
 * full sync again, and gets one. */
static void test_backlog_overrun(void **state)
{
    (void)state;
    start_pair();
    redisContext *c = h_connect_port(K.port), *r = h_connect_port(R.port);
    wait_link_up(r);
    h_expect_status(c, "OK", "CONFIG SET repl-backlog-size 16384");
    h_expect_status(c, "OK", "CONFIG SET repl-diskless-sync no"); /* the file through the disk */
    h_expect_status(c, "OK", "CONFIG SET repl-ping-replica-period 1");
    mixed_load(c, 4, 200);
    wait_acked(c);
    pause_ms(1200); /* the cron resized the backlog */
    /* The replica stops; the primary writes past what the backlog holds. */
    h_expect_status(r, "OK", "CONFIG SET repl-timeout 60");
    kill(R.pid, SIGSTOP);
    h_expect_int(c, 1, "CLIENT KILL TYPE replica");
    for (int i = 0; i < 400; i++)
        h_expect_status(c, "OK", "SET big%d %0100d", i, i);
    kill(R.pid, SIGCONT);
    wait_link_up(r);
    expect_same_digest(c, r, "after a full resync");
    assert_int_equal(h_info_num(c, "sync_full"), 2);
    redisFree(r);
    redisFree(c);
    h_destroy(&R);
    h_destroy(&K);
}

/* Waits (at most 20 s) until ROLE on c says role, and for a replica that
 * it follows port, connected. */
static void wait_role(redisContext *c, const char *role, int port)
{
    for (int i = 0; i < 400; i++) {
        redisReply *r = H_CMD(c, "ROLE");
        bool ok = r && r->type == REDIS_REPLY_ARRAY && !strcmp(r->element[0]->str, role);
        if (ok && port)
            ok = r->elements >= 4 && r->element[2]->integer == port &&
                 !strcmp(r->element[3]->str, "connected");
        freeReplyObject(r);
        if (ok)
            return;
        pause_ms(50);
    }
    fail_msg("ROLE never said %s (following %d)", role, port);
}

/* FAILOVER, Redis 7.0's coordinated one: between two shmkvd, both ways,
 * and with redis-server on either side. The old primary continues from
 * the new one with a partial resync, and no write is lost. */
static void test_failover(void **state)
{
    (void)state;
    struct server A, B;
    h_prepare(&A, "fo-a");
    h_start_shmkvd_opts(&A, A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes"));
    h_prepare(&B, "fo-b");
    char primary[64];
    snprintf(primary, sizeof primary, "127.0.0.1 %d", A.port);
    h_start_shmkvd_opts(&B, A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes",
                              "--replicaof", primary));
    redisContext *a = h_connect_port(A.port), *b = h_connect_port(B.port);
    wait_link_up(b);
    h_expect_err(a, "ERR No failover in progress.", "FAILOVER ABORT");
    h_expect_err(a, "ERR FAILOVER target HOST and PORT is not a replica.",
                 "FAILOVER TO 127.0.0.1 1");
    h_expect_err(a, "ERR FAILOVER with force option requires both a timeout and target HOST",
                 "FAILOVER TO 127.0.0.1 %d FORCE", B.port);
    h_expect_err(a, "ERR FAILOVER timeout must be greater than 0", "FAILOVER TIMEOUT 0");
    h_expect_err(b, "ERR FAILOVER is not valid when server is a replica.", "FAILOVER");
    mixed_load(a, 5, 500);
    expect_same_digest(a, b, "before the failover");

    /* A to B: B leads, A follows it, having lost nothing. */
    h_expect_status(a, "OK", "FAILOVER");
    wait_role(b, "master", 0);
    wait_role(a, "slave", B.port);
    assert_true(info_has(a, "replication", "master_failover_state:no-failover"));
    assert_int_equal(h_info_num(b, "sync_partial_ok"), 1);
    assert_int_equal(h_info_num(b, "sync_full"), 0);
    h_expect_err(a, "READONLY", "SET after 1");
    mixed_load(b, 6, 300);
    expect_same_digest(b, a, "after the failover to B");

    /* And back, naming the target, with a timeout. */
    h_expect_status(b, "OK", "FAILOVER TO 127.0.0.1 %d TIMEOUT 5000", A.port);
    wait_role(a, "master", 0);
    wait_role(b, "slave", A.port);
    mixed_load(a, 7, 300);
    expect_same_digest(a, b, "after the failover back to A");
    redisFree(b);
    h_destroy(&B);

    /* A redis-server replica takes over from shmkvd, and back. */
    start_redis_replica_of(&R, A.port);
    redisContext *r = h_connect_port(R.port);
    wait_link_up(r);
    h_expect_status(a, "OK", "FAILOVER TO 127.0.0.1 %d", R.port);
    wait_role(r, "master", 0);
    wait_role(a, "slave", R.port);
    h_expect_status(r, "OK", "SET fromredis 1");
    h_expect_int(r, 1, "WAIT 1 5000");
    h_expect_bulk(a, "1", "GET fromredis");
    h_expect_status(r, "OK", "FAILOVER");
    wait_role(a, "master", 0);
    wait_role(r, "slave", A.port);
    mixed_load(a, 8, 300);
    expect_same_digest(a, r, "after failovers with redis-server");
    redisFree(r);
    redisFree(a);
    h_destroy(&R);
    h_destroy(&A);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redis_replica),
        cmocka_unit_test(test_backlog_overrun),
        cmocka_unit_test(test_failover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
