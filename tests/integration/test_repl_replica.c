/*
 * test_repl_replica — shmkvd as a replica, speaking Redis's replication
 * protocol.
 *
 * Against a redis-server primary: the full synchronization and the
 * stream (all five types, expiries, several databases, transactions and
 * scripts) leave both with the same DEBUG DIGEST; a libshmkv reader on the
 * replica sees the primary's later writes; a dropped link resumes with a
 * partial resynchronization (sync_partial_ok on the primary); REPLICAOF,
 * ROLE, INFO, CONFIG and the replica's refusals answer as Redis 7.0's.
 *
 * Against a primary played by the test itself: while an RDB file is on
 * its way, the old data is what clients read; the new one replaces it
 * whole; GETACK is answered with the offset before it; a damaged file is
 * refused, the old data stays and the replica tries again.
 */
#include "harness.h"

#include <poll.h>

#include "shmkv.h"

static struct server K, R;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* An INFO field as text into out ("" when absent). */
static void info_str(redisContext *c, const char *field, char *out, size_t cap)
{
    redisReply *r = H_CMD(c, "INFO replication");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    out[0] = '\0';
    size_t fl = strlen(field);
    for (const char *p = r->str; p; p = strchr(p, '\n')) {
        p += *p == '\n';
        if (!strncmp(p, field, fl) && p[fl] == ':') {
            size_t n = strcspn(p + fl + 1, "\r\n");
            if (n >= cap)
                n = cap - 1;
            memcpy(out, p + fl + 1, n);
            out[n] = '\0';
            break;
        }
    }
    freeReplyObject(r);
}

/* Waits (up to 20 s) for an INFO replication field to read want. */
static void wait_info(redisContext *c, const char *field, const char *want)
{
    char v[128];
    for (int i = 0; i < 400; i++) {
        info_str(c, field, v, sizeof v);
        if (!strcmp(v, want))
            return;
        sleep_ms(50);
    }
    fail_msg("INFO %s is '%s', not '%s' after 20 s", field, v, want);
}

/* Waits until the replica has applied everything the primary sent. */
static void wait_caught_up(redisContext *m, redisContext *r)
{
    long long mo = -1, ro = -2;
    for (int i = 0; i < 400; i++) {
        mo = h_info_num(m, "master_repl_offset");
        ro = h_info_num(r, "slave_repl_offset");
        if (mo == ro)
            return;
        sleep_ms(50);
    }
    fail_msg("the replica is at offset %lld, the primary at %lld after 20 s", ro, mo);
}

static void expect_same_digest(redisContext *m, redisContext *r, const char *when)
{
    redisReply *a = H_CMD(m, "DEBUG DIGEST"), *b = H_CMD(r, "DEBUG DIGEST");
    assert_int_equal(a->type, REDIS_REPLY_STATUS);
    assert_int_equal(b->type, REDIS_REPLY_STATUS);
    if (strcmp(a->str, b->str))
        fail_msg("DEBUG DIGEST %s: primary %s, replica %s", when, a->str, b->str);
    assert_string_not_equal(a->str, "0000000000000000000000000000000000000000");
    freeReplyObject(a);
    freeReplyObject(b);
}

/* The data before the replica connects: what the RDB file carries. */
static void load_before(redisContext *c)
{
    static const char bin[] = "k\0\r\nbin";
    h_expect_status(c, "OK", "SET s plain");
    h_expect_status(c, "OK", "SET %b %b", bin, sizeof bin - 1, bin, sizeof bin - 1);
    h_expect_status(c, "OK", "SET ttl v PX 600000");
    h_expect_int(c, 2, "HSET h a 1 b 2");
    h_expect_int(c, 3, "SADD si 1 2 3");
    h_expect_int(c, 4, "ZADD z 1.5 a 2 b -inf lo inf hi");
    h_expect_int(c, 3, "RPUSH l x y z");
    h_expect_int(c, 1, "PEXPIRE h 700000");
    for (int i = 0; i < 300; i++) {
        freeReplyObject(H_CMD(c, "HSET hbig f%d %d", i, i * 7));
        freeReplyObject(H_CMD(c, "SADD sbig m%d", i));
        freeReplyObject(H_CMD(c, "ZADD zbig %d.25 m%d", i, i));
        freeReplyObject(H_CMD(c, "RPUSH lbig e%d", i));
    }
    h_expect_status(c, "OK", "SELECT 3");
    h_expect_status(c, "OK", "SET in3 three");
    h_expect_status(c, "OK", "SELECT 0");
    h_expect_bulk(c, "lib", "FUNCTION LOAD %s",
                  "#!lua name=lib\nredis.register_function('f', function(keys, args) return "
                  "redis.call('incr', keys[1]) end)");
}

/* The stream: every type, expiries absolute and relative, deletions,
 * another database, a transaction, a script, a function, keys that
 * expire on the primary (its DELs follow). */
static void load_stream(redisContext *c, int round)
{
    for (int i = 0; i < 200; i++) {
        freeReplyObject(H_CMD(c, "SET str%d v%d", i % 50, i + round));
        freeReplyObject(H_CMD(c, "INCRBY ctr %d", i));
        freeReplyObject(H_CMD(c, "APPEND app x%d", i));
        freeReplyObject(H_CMD(c, "HSET hash%d f%d %d", i % 7, i, i));
        freeReplyObject(H_CMD(c, "HINCRBY hbig f%d 1", i));
        freeReplyObject(H_CMD(c, "SADD set%d m%d", i % 5, i));
        freeReplyObject(H_CMD(c, "SREM sbig m%d", i));
        freeReplyObject(H_CMD(c, "ZADD zs%d %d.5 m%d", i % 3, i, i));
        freeReplyObject(H_CMD(c, "ZINCRBY zbig 2 m%d", i));
        freeReplyObject(H_CMD(c, "RPUSH list%d e%d", i % 4, i));
        if (i % 3 == 0)
            freeReplyObject(H_CMD(c, "LPOP lbig"));
        if (i % 10 == 0) {
            freeReplyObject(H_CMD(c, "EXPIRE hash%d 900", i % 7));
            freeReplyObject(H_CMD(c, "SET short%d v PX 100", i));
            freeReplyObject(H_CMD(c, "SET long%d v EX 1000", i));
            freeReplyObject(H_CMD(c, "DEL str%d", (i + 1) % 50));
        }
    }
    freeReplyObject(H_CMD(c, "PERSIST ttl"));
    freeReplyObject(H_CMD(c, "SPOP si"));
    freeReplyObject(H_CMD(c, "LINSERT l BEFORE y w"));
    freeReplyObject(H_CMD(c, "RENAME s s2"));
    h_expect_status(c, "OK", "SELECT 3");
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "SET in3b b");
    h_expect_status(c, "QUEUED", "INCR in3c");
    freeReplyObject(H_CMD(c, "EXEC"));
    freeReplyObject(H_CMD(c, "EVAL %s 1 scripted",
                          "redis.call('set', KEYS[1], 'x') return "
                          "redis.call('lpush', KEYS[1] .. 'l', 1)"));
    h_expect_status(c, "OK", "SELECT 0");
    freeReplyObject(H_CMD(c, "FCALL f 1 fcalled"));
    h_expect_status(c, "OK", "SELECT 5");
    h_expect_status(c, "OK", "SET in5 five");
    h_expect_status(c, "OK", "FLUSHDB");
    h_expect_status(c, "OK", "SET in5 again");
    h_expect_status(c, "OK", "SELECT 0");
}

/* Keys whose expiry passed, read on the primary: its lazy expiry sends
 * their DELs, so both sides hold the same keys. */
static void expire_short(redisContext *c)
{
    sleep_ms(250);
    for (int i = 0; i < 200; i += 10)
        freeReplyObject(H_CMD(c, "EXISTS short%d", i));
}

/* Full sync, stream, a libshmkv reader, then a partial resync. */
static void test_repl_replica_redis_primary(void **state)
{
    (void)state;
    h_start_redis_opts(&R, "repl-m",
                       A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes",
                         "--repl-diskless-sync-delay", "0"));
    redisContext *m = h_connect_port(R.port);
    load_before(m);
    char of[64];
    snprintf(of, sizeof of, "127.0.0.1 %d", R.port);
    h_prepare(&K, "repl-r");
    h_start_shmkvd_opts(&K, A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes",
                              "--replicaof", of));
    redisContext *r = h_connect_port(K.port);
    wait_info(r, "master_link_status", "up");
    wait_caught_up(m, r);
    expect_same_digest(m, r, "after the full sync");
    h_expect_status(r, "OK", "SELECT 3");
    h_expect_bulk(r, "three", "GET in3");
    h_expect_status(r, "OK", "SELECT 0");

    /* libshmkv on the replica: a cached read, then the primary's write
     * reaches the cache through the commit point. */
    shmkv *h = NULL;
    if (shmkv_open(&h, K.sock, NULL) != SHMKV_OK)
        fail_msg("shmkv_open: %s", shmkv_errmsg());
    char *v;
    size_t vn;
    assert_int_equal(shmkv_get(h, "s", 1, &v, &vn), SHMKV_OK);
    assert_memory_equal(v, "plain", 5);
    free(v);
    assert_int_equal(shmkv_get(h, "s", 1, &v, &vn), SHMKV_OK);
    free(v);

    load_stream(m, 0);
    expire_short(m);
    wait_caught_up(m, r);
    expect_same_digest(m, r, "after the stream");
    h_expect_int(r, 0, "EXISTS short0");
    h_expect_int(r, 1, "EXISTS long0");

    h_expect_status(m, "OK", "SET lib-read fresh");
    wait_caught_up(m, r);
    struct shmkv_stats st0, st1;
    assert_int_equal(shmkv_get(h, "lib-read", 8, &v, &vn), SHMKV_OK);
    free(v);
    shmkv_stats(h, &st0);
    assert_int_equal(shmkv_get(h, "lib-read", 8, &v, &vn), SHMKV_OK);
    assert_memory_equal(v, "fresh", 5);
    free(v);
    h_expect_status(m, "OK", "SET lib-read newer");
    wait_caught_up(m, r);
    assert_int_equal(shmkv_get(h, "lib-read", 8, &v, &vn), SHMKV_OK);
    assert_int_equal(vn, 5);
    assert_memory_equal(v, "newer", 5);
    free(v);
    shmkv_stats(h, &st1);
    assert_true(st1.hits > st0.hits); /* from shared memory, not the socket */
    shmkv_close(h);

    /* ROLE, INFO, the link as a client, the refusals. */
    redisReply *role = H_CMD(r, "ROLE");
    assert_int_equal(role->elements, 5);
    assert_string_equal(role->element[0]->str, "slave");
    assert_string_equal(role->element[1]->str, "127.0.0.1");
    assert_int_equal(role->element[2]->integer, R.port);
    assert_string_equal(role->element[3]->str, "connected");
    assert_int_equal(role->element[4]->integer, h_info_num(m, "master_repl_offset"));
    freeReplyObject(role);
    redisReply *cl = H_CMD(r, "CLIENT LIST");
    assert_non_null(strstr(cl->str, "flags=M"));
    freeReplyObject(cl);
    h_expect_err(r, "READONLY You can't write against a read only replica.", "SET x y");
    h_expect_status(r, "OK", "MULTI");
    h_expect_status(r, "QUEUED", "GET s2");
    h_expect_err(r, "READONLY", "SET x y"); /* refused when queued, as Redis does */
    h_expect_err(r, "EXECABORT", "EXEC");
    h_expect_status(r, "OK Already connected to specified master", "REPLICAOF 127.0.0.1 %d",
                    R.port);
    redisReply *cg = H_CMD(r, "CONFIG GET replicaof");
    assert_int_equal(cg->elements, 2);
    assert_string_equal(cg->element[1]->str, of);
    freeReplyObject(cg);

    /* A dropped link: the writes made meanwhile come by a partial resync. */
    /* The stream had selected database 3 when the link dropped: what
     * follows, without a SELECT, goes there. */
    long long partial = h_info_num(m, "sync_partial_ok");
    h_expect_status(m, "OK", "SELECT 3");
    h_expect_status(m, "OK", "SET pre3 x");
    wait_caught_up(m, r);
    freeReplyObject(H_CMD(m, "CLIENT KILL TYPE replica"));
    h_expect_status(m, "OK", "SET post3 y");
    h_expect_status(m, "OK", "SELECT 0");
    load_stream(m, 1);
    wait_info(r, "master_link_status", "up");
    wait_caught_up(m, r);
    expire_short(m);
    wait_caught_up(m, r);
    expect_same_digest(m, r, "after a partial resync");
    assert_int_equal(h_info_num(m, "sync_partial_ok"), partial + 1);
    assert_int_equal(h_info_num(m, "sync_full"), 1);
    h_expect_status(r, "OK", "SELECT 3");
    h_expect_bulk(r, "y", "GET post3");
    h_expect_status(r, "OK", "SELECT 0");

    /* The replica restarts cleanly: it keeps its primary's ID and its
     * offset, and continues with a partial resync. */
    redisFree(r);
    assert_int_equal(h_stop(&K), 0);
    h_expect_status(m, "OK", "SET while-down 1");
    h_start_shmkvd_opts(&K, A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes",
                              "--replicaof", of));
    r = h_connect_port(K.port);
    wait_info(r, "master_link_status", "up");
    wait_caught_up(m, r);
    assert_int_equal(h_info_num(m, "sync_partial_ok"), partial + 2);
    assert_int_equal(h_info_num(m, "sync_full"), 1);
    expect_same_digest(m, r, "after the replica's restart");

    /* REPLICAOF NO ONE: the data stays, writes are taken. */
    h_expect_status(r, "OK", "REPLICAOF NO ONE");
    h_expect_status(r, "OK", "SET x y");
    redisReply *ro = H_CMD(r, "ROLE");
    assert_string_equal(ro->element[0]->str, "master");
    freeReplyObject(ro);
    cg = H_CMD(r, "CONFIG GET replicaof");
    assert_string_equal(cg->element[1]->str, "");
    freeReplyObject(cg);
    h_expect_bulk(r, "plain", "GET s2");
    redisFree(r);
    redisFree(m);
    assert_int_equal(h_stop(&K), 0); /* a clean exit (under ASan: no leak) */
    h_destroy(&K);
    h_destroy(&R);
}

/* A shmkvd primary, a shmkvd replica, and a replica of that replica: the
 * stream passes down the chain unchanged, offsets agree, and when the
 * middle one is promoted the last one continues from it partially. */
static void test_repl_replica_shmkvd_chain(void **state)
{
    (void)state;
    struct server P, K2;
    h_prepare(&P, "repl-p");
    h_start_shmkvd_opts(&P, A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes"));
    redisContext *m = h_connect_port(P.port);
    load_before(m);
    char of[64];
    snprintf(of, sizeof of, "127.0.0.1 %d", P.port);
    h_prepare(&K, "repl-k");
    h_start_shmkvd_opts(&K, A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes",
                              "--replicaof", of));
    redisContext *r = h_connect_port(K.port);
    snprintf(of, sizeof of, "127.0.0.1 %d", K.port);
    h_prepare(&K2, "repl-k2");
    h_start_shmkvd_opts(&K2, A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes",
                               "--replicaof", of));
    redisContext *r2 = h_connect_port(K2.port);
    wait_info(r, "master_link_status", "up");
    wait_info(r2, "master_link_status", "up");
    load_stream(m, 0);
    expire_short(m);
    wait_caught_up(m, r);
    wait_caught_up(r, r2);
    expect_same_digest(m, r, "shmkvd -> shmkvd");
    expect_same_digest(m, r2, "shmkvd -> shmkvd -> shmkvd");
    /* the primary drops its replica: a partial resync */
    long long partial = h_info_num(m, "sync_partial_ok");
    freeReplyObject(H_CMD(m, "CLIENT KILL TYPE replica"));
    load_stream(m, 1);
    wait_info(r, "master_link_status", "up");
    expire_short(m);
    wait_caught_up(m, r);
    wait_caught_up(r, r2);
    expect_same_digest(m, r2, "after a partial resync in the chain");
    assert_int_equal(h_info_num(m, "sync_partial_ok"), partial + 1);
    /* The primary restarts cleanly: the replica goes on with a partial
     * resync (the primary kept its ID and offset). */
    assert_int_equal(h_stop(&P), 0);
    redisFree(m);
    h_start_shmkvd_opts(&P, A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes"));
    m = h_connect_port(P.port);
    for (int i = 0; i < 400 && h_info_num(m, "sync_partial_ok") < 1; i++)
        sleep_ms(50);
    assert_int_equal(h_info_num(m, "sync_partial_ok"), 1);
    assert_int_equal(h_info_num(m, "sync_full"), 0);
    h_expect_status(m, "OK", "SET after-restart 1");
    wait_info(r, "master_link_status", "up");
    wait_caught_up(m, r);
    wait_caught_up(r, r2);
    expect_same_digest(m, r2, "after the primary's restart");
    /* The middle one promoted, and its replica's link dropped: the
     * replica asks for the old history, which the promoted one still
     * serves (PSYNC2's second ID), and takes the new ID (+CONTINUE id). */
    long long r_partial = h_info_num(r, "sync_partial_ok");
    h_expect_status(r, "OK", "REPLICAOF NO ONE");
    freeReplyObject(H_CMD(r, "CLIENT KILL TYPE replica"));
    for (int i = 0; i < 400 && h_info_num(r, "sync_partial_ok") == r_partial; i++)
        sleep_ms(50);
    assert_int_equal(h_info_num(r, "sync_partial_ok"), r_partial + 1);
    wait_info(r2, "master_link_status", "up");
    assert_int_equal(h_info_num(r, "sync_full"), 1);
    char id_r[64], id_r2[64];
    info_str(r, "master_replid", id_r, sizeof id_r);
    info_str(r2, "master_replid", id_r2, sizeof id_r2);
    assert_string_equal(id_r, id_r2);
    h_expect_status(r, "OK", "SET after-promotion 1");
    wait_caught_up(r, r2);
    expect_same_digest(r, r2, "after the promotion");
    redisFree(r2);
    redisFree(r);
    redisFree(m);
    assert_int_equal(h_stop(&K2), 0);
    assert_int_equal(h_stop(&K), 0);
    assert_int_equal(h_stop(&P), 0);
    h_destroy(&K2);
    h_destroy(&K);
    h_destroy(&P);
}

/* REPLICAOF's errors, and a replica whose primary is unreachable. */
static void test_repl_replica_commands(void **state)
{
    (void)state;
    h_prepare(&K, "repl-c");
    h_start_shmkvd_opts(&K, NULL);
    redisContext *c = h_connect_port(K.port);
    h_expect_err(c, "ERR Invalid master port", "REPLICAOF 127.0.0.1 x");
    h_expect_err(c, "ERR Invalid master port", "SLAVEOF 127.0.0.1 70000");
    h_expect_err(c, "ERR wrong number of arguments for 'replicaof' command", "REPLICAOF x");
    h_expect_status(c, "OK", "REPLICAOF NO ONE");
    h_expect_err(c, "ERR This Redis command is not allowed from script", "EVAL %s 0",
                 "return redis.call('replicaof', 'no', 'one')");
    h_expect_status(c, "OK", "SET k v");
    int dead = h_free_port();
    h_expect_status(c, "OK", "SLAVEOF 127.0.0.1 %d", dead);
    redisReply *role = H_CMD(c, "ROLE");
    assert_string_equal(role->element[0]->str, "slave");
    assert_int_equal(role->element[4]->integer, -1);
    freeReplyObject(role);
    char v[64];
    info_str(c, "role", v, sizeof v);
    assert_string_equal(v, "slave");
    info_str(c, "master_link_status", v, sizeof v);
    assert_string_equal(v, "down");
    info_str(c, "master_link_down_since_seconds", v, sizeof v);
    assert_string_equal(v, "-1");
    info_str(c, "slave_priority", v, sizeof v);
    assert_string_equal(v, "100");
    h_expect_bulk(c, "v", "GET k"); /* stale data served by default */
    h_expect_err(c, "READONLY You can't write against a read only replica.", "SET k v2");
    /* a script without flags: refused at its first write */
    h_expect_err(c, "READONLY You can't write against a read only replica.", "EVAL %s 0",
                 "return redis.call('set', 'k', 'v3')");
    h_expect_bulk(c, "v", "EVAL %s 0", "return redis.call('get', 'k')");
    h_expect_status(c, "OK", "CONFIG SET replica-serve-stale-data no");
    h_expect_err(c,
                 "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
                 "GET k");
    h_expect_err(c, "MASTERDOWN", "PING"); /* as Redis 7.0: PING is not "stale" */
    h_expect_status(c, "OK", "CONFIG SET replica-read-only no");
    h_expect_status(c, "OK", "CONFIG SET replica-serve-stale-data yes");
    h_expect_status(c, "OK", "SET k2 v2"); /* a writable replica */
    h_expect_status(c, "OK", "REPLICAOF NO ONE");
    redisFree(c);
    assert_int_equal(h_stop(&K), 0); /* a clean exit (under ASan: no leak) */
    h_destroy(&K);
}

/* The replicaof directive in a config file starts a replica; REPLICAOF
 * changes what CONFIG REWRITE writes back, and NO ONE removes the line. */
static void test_repl_replica_config_file(void **state)
{
    (void)state;
    h_prepare(&K, "repl-f");
    int dead1 = h_free_port(), dead2 = dead1 + 1;
    char text[256], conf[400];
    snprintf(text, sizeof text, "# a replica\nreplicaof 127.0.0.1 %d\n", dead1);
    h_write_file(&K, "r.conf", text, conf, sizeof conf);
    char port[16], data[300];
    snprintf(port, sizeof port, "%d", K.port);
    snprintf(data, sizeof data, "%s/data", K.dir);
    char *const argv[] = {SHMKVD_PATH, conf, "--port",       port,   "--bind", "127.0.0.1",
                          "--dir",     data, "--unixsocket", K.sock, NULL};
    h_spawn(&K, argv);
    redisContext *c = h_connect_port(K.port);
    char v[64];
    info_str(c, "master_port", v, sizeof v);
    assert_int_equal(atoi(v), dead1);
    h_expect_status(c, "OK", "REPLICAOF 127.0.0.1 %d", dead2);
    h_expect_status(c, "OK", "CONFIG REWRITE");
    char file[4096], want[64];
    h_read_file(conf, file, sizeof file);
    snprintf(want, sizeof want, "\nreplicaof 127.0.0.1 %d\n", dead2);
    if (!strstr(file, want))
        fail_msg("rewritten file:\n%s", file);
    h_expect_status(c, "OK", "REPLICAOF NO ONE");
    h_expect_status(c, "OK", "CONFIG REWRITE");
    h_read_file(conf, file, sizeof file);
    assert_null(strstr(file, "replicaof"));
    redisFree(c);
    assert_int_equal(h_stop(&K), 0);
    h_destroy(&K);
}

/* A primary with a password: masterauth; and what the replica announces
 * of itself reaches the primary's INFO. */
static void test_repl_replica_auth_announce(void **state)
{
    (void)state;
    h_start_redis_opts(&R, "repl-a", A("--requirepass", "sekret", "--repl-diskless-sync", "no"));
    redisContext *m = h_connect_port(R.port);
    h_expect_status(m, "OK", "AUTH sekret");
    h_expect_status(m, "OK", "SET guarded yes");
    h_prepare(&K, "repl-a");
    char of[64];
    snprintf(of, sizeof of, "127.0.0.1 %d", R.port);
    h_start_shmkvd_opts(&K, A("--replicaof", of, "--replica-announce-ip", "10.1.2.3",
                              "--replica-announce-port", "4242"));
    redisContext *r = h_connect_port(K.port);
    sleep_ms(300); /* the handshake fails on AUTH meanwhile: no masterauth */
    char v[64];
    info_str(r, "master_link_status", v, sizeof v);
    assert_string_equal(v, "down");
    h_expect_status(r, "OK", "CONFIG SET masterauth sekret");
    wait_info(r, "master_link_status", "up");
    h_expect_bulk(r, "yes", "GET guarded");
    info_str(m, "slave0", v, sizeof v);
    assert_non_null(strstr(v, "ip=10.1.2.3,port=4242,"));
    redisFree(r);
    redisFree(m);
    assert_int_equal(h_stop(&K), 0);
    h_destroy(&K);
    h_destroy(&R);
}

/* ---- a primary played by the test ---- */

struct fake {
    int lfd, fd, port;
    char in[65536];
    size_t n;
};

static void fake_listen(struct fake *f)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->port = h_free_port();
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(f->lfd, (struct sockaddr *)&sa, sizeof sa) || listen(f->lfd, 4))
        fail_msg("fake primary: %s", strerror(errno));
}

static void fake_accept(struct fake *f)
{
    struct pollfd p = {.fd = f->lfd, .events = POLLIN};
    if (poll(&p, 1, 10000) != 1)
        fail_msg("the replica did not connect to the fake primary within 10 s");
    if (f->fd >= 0)
        close(f->fd);
    f->fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
    f->n = 0;
    assert_true(f->fd >= 0);
}

/* Reads until what came holds want; drops what came up to its end. */
static void fake_expect(struct fake *f, const char *want)
{
    for (int i = 0; i < 200; i++) {
        f->in[f->n] = '\0';
        char *at = memmem(f->in, f->n, want, strlen(want));
        if (at) {
            size_t used = (size_t)(at - f->in) + strlen(want);
            memmove(f->in, f->in + used, f->n - used);
            f->n -= used;
            return;
        }
        struct pollfd p = {.fd = f->fd, .events = POLLIN};
        if (poll(&p, 1, 50) == 1) {
            ssize_t r = read(f->fd, f->in + f->n, sizeof f->in - 1 - f->n);
            if (r <= 0)
                fail_msg("the replica closed the link waiting for '%s'", want);
            f->n += (size_t)r;
        }
    }
    f->in[f->n] = '\0';
    fail_msg("the replica did not send '%s' (it sent '%s')", want, f->in);
}

static void fake_send(struct fake *f, const void *p, size_t n)
{
    assert_int_equal(write(f->fd, p, n), (ssize_t)n);
}

/* The handshake, answered; PSYNC gets +FULLRESYNC at offset 100. */
static void fake_handshake(struct fake *f)
{
    fake_accept(f);
    fake_expect(f, "PING\r\n");
    fake_send(f, "+PONG\r\n", 7);
    fake_expect(f, "listening-port\r\n");
    fake_expect(f, "\r\n");
    fake_send(f, "+OK\r\n", 5);
    fake_expect(f, "psync2\r\n");
    fake_send(f, "+OK\r\n", 5);
    fake_expect(f, "PSYNC\r\n");
    static const char full[] = "+FULLRESYNC 1111111111222222222233333333334444444444 100\r\n";
    fake_send(f, full, sizeof full - 1);
}

static void test_repl_replica_load(void **state)
{
    (void)state;
    /* The file: a redis-server's, with keys "new" and "big". */
    h_start_redis(&R, "repl-src");
    redisContext *m = h_connect_port(R.port);
    h_expect_status(m, "OK", "SET new arrived");
    for (int i = 0; i < 2000; i++)
        freeReplyObject(H_CMD(m, "HSET big f%d %d", i, i));
    char file[512];
    snprintf(file, sizeof file, "%s/src.rdb", R.dir);
    if (sh("timeout 60 redis-cli -p %d --rdb %s >/dev/null 2>&1", R.port, file))
        fail_msg("redis-cli --rdb failed");
    redisFree(m);
    FILE *fp = fopen(file, "rb");
    assert_non_null(fp);
    static char rdb[1 << 20];
    size_t len = fread(rdb, 1, sizeof rdb, fp);
    fclose(fp);
    assert_true(len > 1000 && len < sizeof rdb);

    h_prepare(&K, "repl-l");
    h_start_shmkvd_opts(&K, NULL);
    redisContext *c = h_connect_port(K.port);
    h_expect_status(c, "OK", "SET old here");
    struct fake f;
    fake_listen(&f);
    h_expect_status(c, "OK", "REPLICAOF 127.0.0.1 %d", f.port);
    fake_handshake(&f);
    char hdr[64];
    int hn = snprintf(hdr, sizeof hdr, "$%zu\r\n", len);
    fake_send(&f, hdr, (size_t)hn);
    fake_send(&f, rdb, len / 2);
    /* Half the file in: the old data is what clients read. */
    char v[64];
    snprintf(v, sizeof v, "%zu", len / 2);
    wait_info(c, "master_sync_read_bytes", v);
    wait_info(c, "master_sync_in_progress", "1");
    h_expect_bulk(c, "here", "GET old");
    h_expect_int(c, 0, "EXISTS new");
    redisReply *role = H_CMD(c, "ROLE");
    assert_string_equal(role->element[3]->str, "sync");
    freeReplyObject(role);
    /* The rest, and the first command of the stream with it. */
    static const char set[] = "*3\r\n$3\r\nSET\r\n$1\r\nq\r\n$1\r\nr\r\n";
    fake_send(&f, rdb + len / 2, len - len / 2);
    fake_send(&f, set, sizeof set - 1);
    wait_info(c, "master_link_status", "up");
    h_expect_bulk(c, "arrived", "GET new");
    h_expect_int(c, 0, "EXISTS old");
    h_expect_int(c, 2000, "HLEN big");
    h_expect_bulk(c, "r", "GET q");
    h_expect_int(c, 3, "DBSIZE");
    /* A key past its expiry on this replica's clock is still there for
     * the primary's commands, as on a Redis replica: the INCR finds 10,
     * and the PERSIST keeps 11. Clients meanwhile read it as gone. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char ttl[160];
    long long at = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 + 30;
    int tn = snprintf(ttl, sizeof ttl,
                      "*5\r\n$3\r\nSET\r\n$3\r\nttl\r\n$2\r\n10\r\n$4\r\nPXAT\r\n$%d\r\n%lld\r\n",
                      snprintf(NULL, 0, "%lld", at), at);
    fake_send(&f, ttl, (size_t)tn);
    sleep_ms(80);
    h_expect_nil(c, "GET ttl");
    static const char incr[] = "*2\r\n$4\r\nINCR\r\n$3\r\nttl\r\n",
                      persist[] = "*2\r\n$7\r\nPERSIST\r\n$3\r\nttl\r\n",
                      del[] = "*2\r\n$3\r\nDEL\r\n$3\r\nttl\r\n";
    fake_send(&f, incr, sizeof incr - 1);
    fake_send(&f, persist, sizeof persist - 1);
    long long off = 100 + (long long)(sizeof set - 1) + tn + (long long)(sizeof incr - 1) +
                    (long long)(sizeof persist - 1);
    for (int i = 0; i < 100 && h_info_num(c, "slave_repl_offset") < off; i++)
        sleep_ms(20);
    h_expect_bulk(c, "11", "GET ttl");
    fake_send(&f, del, sizeof del - 1);
    off += (long long)(sizeof del - 1);
    /* GETACK: the ACK names the offset before it. */
    static const char getack[] = "*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";
    fake_send(&f, getack, sizeof getack - 1);
    char want[64];
    snprintf(want, sizeof want, "ACK\r\n$%d\r\n%lld\r\n", snprintf(NULL, 0, "%lld", off), off);
    fake_expect(&f, want);
    assert_int_equal(h_info_num(c, "slave_repl_offset"), off + (long long)(sizeof getack - 1));

    /* A protocol error in the stream: the replica closes the link without
     * a reply (a primary gets none), and connects again. */
    static const char bad[] = "*1\r\n$x\r\n";
    fake_send(&f, bad, sizeof bad - 1);
    bool closed = false;
    for (int i = 0; i < 200 && !closed; i++) {
        struct pollfd p = {.fd = f.fd, .events = POLLIN};
        if (poll(&p, 1, 50) != 1)
            continue;
        ssize_t r = read(f.fd, f.in, sizeof f.in - 1);
        closed = r <= 0;
        f.in[r > 0 ? r : 0] = '\0';
        assert_null(strstr(f.in, "Protocol error"));
    }
    assert_true(closed);
    h_expect_bulk(c, "r", "GET q");

    static char log[1 << 16];
    char path[600];
    /* A silent primary: past repl-timeout the replica gives the link up
     * and connects again. */
    fake_handshake(&f);
    fake_send(&f, hdr, (size_t)hn);
    fake_send(&f, rdb, len);
    fake_send(&f, set, sizeof set - 1);
    wait_info(c, "master_link_status", "up");
    for (int i = 0; i < 200 && h_info_num(c, "slave_repl_offset") < 100 + (long long)sizeof set - 1;
         i++)
        sleep_ms(50);
    h_expect_bulk(c, "r", "GET q");
    h_expect_status(c, "OK", "CONFIG SET repl-timeout 1");
    fake_accept(&f); /* within 10 s */
    h_expect_status(c, "OK", "CONFIG SET repl-timeout 60");
    snprintf(path, sizeof path, "%s/server.log", K.dir);
    h_read_file(path, log, sizeof log);
    assert_non_null(strstr(log, "MASTER timeout: no data nor PING received"));

    /* The link drops; the next file is damaged: refused, the data stays,
     * and the replica tries again. */
    close(f.fd);
    f.fd = -1;
    fake_handshake(&f);
    rdb[len / 2] ^= 0x5a;
    rdb[len / 2 + 1] ^= 0x5a;
    fake_send(&f, hdr, (size_t)hn);
    fake_send(&f, rdb, len);
    fake_accept(&f); /* the retry */
    h_expect_bulk(c, "arrived", "GET new");
    h_expect_bulk(c, "r", "GET q");
    h_expect_int(c, 3, "DBSIZE");
    h_read_file(path, log, sizeof log);
    assert_non_null(strstr(log, "Failed trying to load the MASTER synchronization DB"));
    /* A file cut short: the link closes in the middle of it. */
    close(f.fd);
    f.fd = -1;
    fake_handshake(&f);
    fake_send(&f, hdr, (size_t)hn);
    fake_send(&f, rdb, len / 3);
    close(f.fd);
    f.fd = -1;
    fake_accept(&f);
    h_expect_bulk(c, "arrived", "GET new");
    close(f.fd);
    close(f.lfd);
    h_expect_status(c, "OK", "REPLICAOF NO ONE");
    redisFree(c);
    assert_int_equal(h_stop(&K), 0); /* a clean exit (under ASan: no leak) */
    h_destroy(&K);
    h_destroy(&R);
}

/* A redis-server's RDB file of n keys "key:<i>" (DEBUG POPULATE), malloc'd
 * into *out; its length. R is left running. */
static size_t big_rdb(int n, char **out)
{
    h_start_redis_opts(&R, "repl-big",
                       A("--repl-diskless-sync-delay", "0", "--enable-debug-command", "yes"));
    redisContext *m = h_connect_port(R.port);
    h_expect_status(m, "OK", "DEBUG POPULATE %d key 64", n);
    char file[512];
    snprintf(file, sizeof file, "%s/big.rdb", R.dir);
    if (sh("timeout 60 redis-cli -p %d --rdb %s >/dev/null 2>&1", R.port, file))
        fail_msg("redis-cli --rdb failed");
    redisFree(m);
    FILE *fp = fopen(file, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    size_t len = (size_t)ftell(fp);
    rewind(fp);
    *out = malloc(len);
    assert_int_equal(fread(*out, 1, len, fp), len);
    fclose(fp);
    return len;
}

/* While the keys of a large file go in, clients are served the old data,
 * and a write is refused with LOADING (a writable replica here, so that
 * READONLY does not answer first). */
static void test_repl_replica_reads_during_load(void **state)
{
    (void)state;
    char *rdb;
    size_t len = big_rdb(200000, &rdb);

    h_prepare(&K, "repl-big-r");
    h_start_shmkvd_opts(&K, A("--replica-read-only", "no"));
    redisContext *c = h_connect_port(K.port);
    h_expect_status(c, "OK", "SET old here");
    struct fake f;
    fake_listen(&f);
    h_expect_status(c, "OK", "REPLICAOF 127.0.0.1 %d", f.port);
    fake_handshake(&f);
    char hdr[64];
    int hn = snprintf(hdr, sizeof hdr, "$%zu\r\n", len);
    fake_send(&f, hdr, (size_t)hn);
    fake_send(&f, rdb, len);
    free(rdb);
    int during = 0, refused = 0;
    char a[32], b[32], st[32];
    for (int i = 0; i < 2000; i++) {
        info_str(c, "master_sync_left_bytes", a, sizeof a);
        redisReply *g = H_CMD(c, "GET old");
        redisReply *s = H_CMD(c, "SET other x");
        info_str(c, "master_sync_left_bytes", b, sizeof b);
        if (!strcmp(a, "0") && !strcmp(b, "0")) { /* the file whole, not yet switched */
            assert_int_equal(g->type, REDIS_REPLY_STRING);
            assert_string_equal(g->str, "here");
            during++;
            assert_int_equal(s->type, REDIS_REPLY_ERROR);
            assert_string_equal(s->str, "LOADING Redis is loading the dataset in memory");
            refused++;
        }
        freeReplyObject(g);
        freeReplyObject(s);
        info_str(c, "master_link_status", st, sizeof st);
        if (!strcmp(st, "up"))
            break;
        sleep_ms(5);
    }
    assert_string_equal(st, "up");
    if (!during)
        fail_msg("no read was answered while the file loaded");
    assert_true(refused > 0);
    h_expect_int(c, 0, "EXISTS old");
    h_expect_int(c, 1, "EXISTS key:199999");
    print_message("test_repl_replica: %d reads and %d refused writes while the file loaded\n",
                  during, refused);
    close(f.fd);
    close(f.lfd);
    redisFree(c);
    assert_int_equal(h_stop(&K), 0);
    h_destroy(&K);
    h_destroy(&R);
}

/* A replica killed while it loads: the next start drops what the load
 * left in the spare databases, and the old data is whole. */
static void test_repl_replica_killed_load(void **state)
{
    (void)state;
    char *rdb;
    size_t len = big_rdb(200000, &rdb);
    h_prepare(&K, "repl-kill");
    h_start_shmkvd_opts(&K, NULL);
    redisContext *c = h_connect_port(K.port);
    h_expect_status(c, "OK", "SET old here");
    struct fake f;
    fake_listen(&f);
    h_expect_status(c, "OK", "REPLICAOF 127.0.0.1 %d", f.port);
    fake_handshake(&f);
    char hdr[64];
    int hn = snprintf(hdr, sizeof hdr, "$%zu\r\n", len);
    fake_send(&f, hdr, (size_t)hn);
    fake_send(&f, rdb, len);
    free(rdb);
    wait_info(c, "master_sync_left_bytes", "0"); /* the file whole: loading */
    redisFree(c);
    kill(K.pid, SIGKILL);
    waitpid(K.pid, NULL, 0);
    K.pid = 0;
    close(f.fd);
    close(f.lfd);
    h_start_shmkvd_opts(&K, NULL);
    c = h_connect_port(K.port);
    h_expect_bulk(c, "here", "GET old");
    h_expect_int(c, 1, "DBSIZE");
    char log[1 << 16], path[600];
    snprintf(path, sizeof path, "%s/server.log", K.dir);
    h_read_file(path, log, sizeof log);
    assert_non_null(strstr(log, "A full sync's load was cut short"));
    redisFree(c);
    assert_int_equal(h_stop(&K), 0);
    /* the restart after that counts one key, none left in the spares */
    h_start_shmkvd_opts(&K, NULL);
    h_read_file(path, log, sizeof log);
    assert_non_null(strstr(log, "Key space open: 1 keys"));
    assert_int_equal(h_stop(&K), 0);
    h_destroy(&K);
    h_destroy(&R);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repl_replica_commands),
        cmocka_unit_test(test_repl_replica_config_file),
        cmocka_unit_test(test_repl_replica_auth_announce),
        cmocka_unit_test(test_repl_replica_redis_primary),
        cmocka_unit_test(test_repl_replica_shmkvd_chain),
        cmocka_unit_test(test_repl_replica_load),
        cmocka_unit_test(test_repl_replica_reads_during_load),
        cmocka_unit_test(test_repl_replica_killed_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
