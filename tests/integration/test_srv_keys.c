/*
 * test_srv_keys — shmkvd over its key space: active expiry, key counts
 * (cold keys included), random picks, MIGRATE, OBJECT IDLETIME, collections
 * rewritten without their deletes, records that read as corrupt, and which
 * reads fill the shm cache (and with what).
 */
#include "enc.h"
#include "srv_fixture.h"
#include "stor.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

/* The number after field (its name and ':') in INFO section, or -1. */
static long long info_field(redisContext *c, const char *section, const char *field)
{
    redisReply *r = H_CMD(c, "INFO %s", section);
    assert_non_null(r);
    const char *p = strstr(r->str, field);
    long long v = p ? strtoll(p + strlen(field), NULL, 10) : -1;
    freeReplyObject(r);
    return v;
}

/* Until the flusher has written every write so far and the overlay has
 * forgotten them (5 s at most): reads then come from RocksDB. */
static void wait_overlay_forgot(redisContext *c)
{
    for (int i = 0; i < 500 && (info_field(c, "persistence", "writeback_pending_sets:") ||
                                info_field(c, "persistence", "writeback_overlay_entries:"));
         i++)
        usleep(10000);
    assert_int_equal(info_field(c, "persistence", "writeback_overlay_entries:"), 0);
}

static unsigned long long info_stat(redisContext *c, const char *field)
{
    char f[64];
    snprintf(f, sizeof f, "%s:", field);
    long long v = info_field(c, "stats", f);
    assert_true(v >= 0);
    return (unsigned long long)v;
}

/* Keys with a TTL go away in the background, unread: also once the walk
 * has gone to sleep after a pass that met no key with an expiry. */
static void test_srv_active_expiry(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "CONFIG SET hz 100");
    for (int i = 0; i < 100; i++)
        h_expect_status(c, "OK", "SET plain:%d v", i);
    struct timespec ts = {0, 0};
    unsigned long long before = info_stat(c, "expired_keys");
    for (int i = 0; i < 20; i++)
        h_expect_status(c, "OK", "SET vol:%d v PX 30", i);
    h_expect_int(c, 1, "HSET volh f v");
    h_expect_int(c, 1, "PEXPIRE volh 30");
    unsigned long long now = before;
    for (int i = 0; i < 100 && now < before + 21; i++) {
        ts.tv_nsec = 50 * 1000 * 1000;
        nanosleep(&ts, NULL);
        now = info_stat(c, "expired_keys");
    }
    assert_int_equal(now, before + 21);
    h_expect_int(c, 100, "DBSIZE");
    h_expect_status(c, "OK", "CONFIG SET hz 10");
}

/* DBSIZE and INFO keyspace come from counts every write keeps, not a
 * scan: checked against SCAN after writes that create, replace, retype,
 * rename, move and delete keys, blind SETs over cached and uncached keys
 * among them. */
static void test_srv_key_counts(void **state)
{
    redisContext *c = *state;
    expect_keys(c, 0, 0);
    h_expect_status(c, "OK", "SET a 1");
    h_expect_status(c, "OK", "SET a 2"); /* replaces: still one */
    expect_keys(c, 1, 0);
    h_expect_int(c, 1, "HSET h f v");
    h_expect_status(c, "OK", "SET h now-a-string"); /* a blind SET over a hash */
    expect_keys(c, 2, 0);
    h_expect_status(c, "OK", "SET t v EX 1000");
    h_expect_status(c, "OK", "MSET m1 x m2 y m1 z");
    expect_keys(c, 5, 1);
    h_expect_status(c, "OK", "SET t v"); /* a plain SET drops the expiry */
    h_expect_int(c, 1, "EXPIRE a 1000");
    expect_keys(c, 5, 1);
    h_expect_status(c, "OK", "RENAME a m1");
    expect_keys(c, 4, 1);
    h_expect_int(c, 1, "PERSIST m1");
    h_expect_int(c, 1, "MOVE m2 1");
    h_expect_int(c, 1, "COPY t t2");
    expect_keys(c, 4, 0);
    h_expect_int(c, 2, "RPUSH l a b");
    h_expect_array(c, A("b", "a"), "RPOP l 2");
    h_expect_int(c, 1, "SADD s a");
    h_expect_int(c, 1, "SMOVE s s2 a"); /* s goes, s2 comes */
    h_expect_bulk(c, "v", "GETDEL t");
    expect_keys(c, 4, 0);
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "SET x 1 PX 100000");
    h_expect_status(c, "QUEUED", "DEL x");
    h_expect_status(c, "QUEUED", "SET y 1 PX 100000");
    redisReply *r = H_CMD(c, "EXEC");
    assert_int_equal(r->elements, 3);
    freeReplyObject(r);
    expect_keys(c, 5, 1);
    /* Many new keys at once, then each one over again: the second round
     * finds every key present (the shm cache, the overlay or RocksDB). */
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3000; i++)
            redisAppendCommand(c, "SET bulk:%d %d", i, round);
        for (int i = 0; i < 3000; i++) {
            assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
            freeReplyObject(r);
        }
        expect_keys(c, 3005, 1);
    }
    /* Every key created since the fixture's FLUSHALL went into the key
     * filter; a FLUSHALL empties it and gives its memory back. */
    r = H_CMD(c, "INFO storage");
    const char *kf = strstr(r->str, "key_filter:filters=1,bytes=");
    assert_non_null(kf);
    kf = strstr(kf, "keys_added=");
    assert_non_null(kf);
    assert_true(strtoull(kf + 11, NULL, 10) >= 3005);
    freeReplyObject(r);
    h_expect_status(c, "OK", "SELECT 1");
    h_expect_int(c, 1, "DBSIZE");
    h_expect_status(c, "OK", "FLUSHDB");
    h_expect_int(c, 0, "DBSIZE");
    h_expect_status(c, "OK", "SELECT 0");
    h_expect_status(c, "OK", "FLUSHALL");
    expect_keys(c, 0, 0);
    r = H_CMD(c, "INFO storage");
    if (!strstr(r->str, "key_filter:filters=0,bytes=0,keys_added=0\r\n") ||
        !strstr(r->str, "key_filter_rebuild:in_progress=0,done=0\r\n"))
        fail_msg("%s", r->str);
    freeReplyObject(r);
}

/* SRANDMEMBER, SPOP, HRANDFIELD and ZRANDMEMBER on collections large
 * enough for a pick index (db_pick.c): replies shaped as Redis's, popped
 * members gone for every reader (the shm cache too), values and scores
 * paired with their own members. */
static void test_srv_random_picks(void **state)
{
    redisContext *c = *state;
    redisReply *r;
    for (int i = 0; i < 3000; i++) {
        redisAppendCommand(c, "SADD big m%d", i);
        redisAppendCommand(c, "HSET bigh f%d v%d", i, i);
        redisAppendCommand(c, "ZADD bigz %d z%d", i, i);
    }
    for (int i = 0; i < 3 * 3000; i++) {
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    r = H_CMD(c, "SRANDMEMBER big");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_true(r->str[0] == 'm');
    freeReplyObject(r);
    r = H_CMD(c, "SRANDMEMBER big 20");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 20);
    for (size_t i = 0; i < r->elements; i++)
        for (size_t j = i + 1; j < r->elements; j++)
            assert_string_not_equal(r->element[i]->str, r->element[j]->str);
    freeReplyObject(r);
    r = H_CMD(c, "SRANDMEMBER big -20");
    assert_int_equal(r->elements, 20);
    freeReplyObject(r);
    for (int i = 0; i < 100; i++) {
        r = H_CMD(c, "SPOP big");
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        h_expect_int(c, 0, "SISMEMBER big %s", r->str);
        freeReplyObject(r);
    }
    r = H_CMD(c, "SPOP big 7");
    assert_int_equal(r->elements, 7);
    for (size_t i = 0; i < r->elements; i++)
        h_expect_int(c, 0, "SISMEMBER big %s", r->element[i]->str);
    freeReplyObject(r);
    h_expect_int(c, 3000 - 107, "SCARD big");
    r = H_CMD(c, "HRANDFIELD bigh 5 WITHVALUES");
    assert_int_equal(r->elements, 10);
    for (size_t i = 0; i < r->elements; i += 2)
        assert_string_equal(r->element[i]->str + 1, r->element[i + 1]->str + 1);
    freeReplyObject(r);
    r = H_CMD(c, "ZRANDMEMBER bigz 5 WITHSCORES");
    assert_int_equal(r->elements, 10);
    for (size_t i = 0; i < r->elements; i += 2)
        assert_string_equal(r->element[i]->str + 1, r->element[i + 1]->str);
    freeReplyObject(r);
    h_expect_err(c, "WRONGTYPE", "SRANDMEMBER bigh");
    r = H_CMD(c, "INFO storage");
    if (!strstr(r->str, "pick_indexes:collections=3,bytes="))
        fail_msg("%s", r->str);
    freeReplyObject(r);
    h_expect_int(c, 3, "DEL big bigh bigz");
    h_expect_nil(c, "SRANDMEMBER big");
    h_expect_status(c, "OK", "FLUSHALL");
    r = H_CMD(c, "INFO storage");
    if (!strstr(r->str, "pick_indexes:collections=0,bytes=0\r\n"))
        fail_msg("%s", r->str);
    freeReplyObject(r);
}

static long long idletime(redisContext *c, const char *key)
{
    redisReply *r = H_CMD(c, "OBJECT IDLETIME %s", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* MIGRATE with a million keys after KEYS: nothing per key lives on the
 * stack (the idle clock's touches once took an array of them there, 8 MiB
 * for this command), and the reply is the target's: the port is closed. */
static void test_srv_migrate_many_keys(void **state)
{
    /* A connection of its own that waits longer than the harness's 5 s:
     * a sanitizer build takes that long to look up a million keys. */
    (void)state;
    redisContext *c = h_connect_port(S.port);
    assert_non_null(c);
    struct timeval tv = {120, 0};
    redisSetTimeout(c, tv);
    enum { N = 1100000, HEAD = 7 };
    const char **av = malloc((N + HEAD) * sizeof *av);
    size_t *al = malloc((N + HEAD) * sizeof *al);
    char(*names)[12] = malloc((size_t)N * sizeof *names);
    char port[16];
    snprintf(port, sizeof port, "%d", h_free_port());
    const char *head[HEAD] = {"MIGRATE", "127.0.0.1", port, "", "0", "100", "KEYS"};
    for (int i = 0; i < HEAD; i++)
        av[i] = head[i];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "mk%d", i);
        av[HEAD + i] = names[i];
    }
    for (int i = 0; i < N + HEAD; i++)
        al[i] = strlen(av[i]);
    h_expect_status(c, "OK", "SET mk7 v");
    redisReply *r = redisCommandArgv(c, N + HEAD, av, al);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_string_equal(r->str, "IOERR error or timeout writing to target instance");
    freeReplyObject(r);
    h_expect_int(c, 1, "DEL mk7"); /* not moved: still here */
    redisFree(c);
    free(av);
    free(al);
    free(names);
}

static void test_srv_object_idletime(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "MSET a 1 b 2 m1 x m2 y t 1");
    h_expect_int(c, 1, "HSET h f v");
    h_expect_int(c, 1, "ZADD z 1 m");
    h_expect_int(c, 1, "SADD s1 e");
    h_expect_int(c, 1, "SADD s2 e");
    h_expect_int(c, 1, "SADD s3 e");
    h_expect_int(c, 3, "RPUSH sl 3 1 2");
    h_expect_status(c, "OK", "SET sd x");
    h_expect_int(c, 1, "GEOADD g 13.361389 38.115556 Palermo");
    h_expect_status(c, "OK", "SET gd x");
    /* Just written: 0, or 1 if a second boundary passed meanwhile (the
     * idle clock counts whole seconds; CI's ASan build is slow). */
    assert_true(idletime(c, "a") <= 1);
    h_expect_nil(c, "OBJECT IDLETIME nokey");
    /* Past two second boundaries: every key above is 2 or 3 s idle. */
    struct timespec ts = {2, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    /* Looking does not count. */
    h_expect_status(c, "string", "TYPE a");
    h_expect_int(c, 1, "EXISTS a");
    h_expect_int(c, -1, "TTL a");
    h_expect_int(c, -1, "PTTL a");
    h_expect_int(c, -1, "EXPIRETIME a");
    h_expect_int(c, -1, "PEXPIRETIME a");
    h_expect_status(c, "OK", "WATCH a");
    h_expect_status(c, "OK", "UNWATCH");
    h_expect_bulk(c, "int", "OBJECT ENCODING a");
    long long a = idletime(c, "a");
    assert_true(a >= 2 && a <= 3);
    /* Using does, reads and writes alike, in every position a command
     * takes keys: a step of 2, a MULTI, a numkeys argument, a failed type
     * check. */
    h_expect_bulk(c, "1", "GET a");
    h_expect_int(c, 1, "TOUCH b nokey");
    redisReply *r;
    r = H_CMD(c, "MGET m2 nokey");
    assert_int_equal(r->elements, 2);
    freeReplyObject(r);
    h_expect_status(c, "OK", "MSET t 2 nokey2 3");
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "HGET h f");
    r = H_CMD(c, "EXEC");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    h_expect_int(c, 1, "ZUNIONSTORE dst 1 z");
    h_expect_int(c, 1, "SINTERCARD 1 s1");
    /* Movable keys found by parsing options: SORT's STORE, GEORADIUS's
     * STOREDIST (a key written anew, as Redis makes a new object). */
    h_expect_int(c, 3, "SORT sl LIMIT 0 5 STORE sd");
    h_expect_int(c, 1, "GEORADIUS g 15 37 200 km STOREDIST gd");
    r = H_CMD(c, "LLEN s3");
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    /* 0, or 1 where a second boundary passed between the use and the look
     * (the TSan build once took that long); a key not used reads 2 or 3. */
    static const char *const used[] = {"a",  "b",  "m2", "t",  "h", "dst", "z",
                                       "s1", "s3", "sl", "sd", "g", "gd"};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        if (idletime(c, used[i]) > 1)
            fail_msg("OBJECT IDLETIME %s: want 0 (or 1) after a use", used[i]);
    /* Untouched keys stay idle, beside used ones and when a key of the same
     * name is used in another database. */
    h_expect_status(c, "OK", "SELECT 1");
    h_expect_status(c, "OK", "SET m1 other");
    h_expect_status(c, "OK", "SELECT 0");
    static const char *const kept[] = {"m1", "s2"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        long long v = idletime(c, kept[i]);
        if (v < 2 || v > 3)
            fail_msg("OBJECT IDLETIME %s: %lld, want 2 or 3", kept[i], v);
    }
    /* RESTORE makes its key used now, or IDLETIME seconds ago as far back
     * as the clock's floor (here the daemon's start: an older last use
     * reads as that, as for any key not used since). */
    r = H_CMD(c, "DUMP a");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    h_expect_status(c, "OK", "RESTORE ra 0 %b IDLETIME 1", r->str, r->len);
    h_expect_status(c, "OK", "RESTORE rb 0 %b IDLETIME 1000000", r->str, r->len);
    h_expect_status(c, "OK", "RESTORE rc 0 %b FREQ 7", r->str, r->len);
    freeReplyObject(r);
    long long ra = idletime(c, "ra"), rb = idletime(c, "rb"), s2 = idletime(c, "s2");
    if (ra < 1 || ra > 2 || rb < s2 || rb >= 1000000 || idletime(c, "rc") > 1)
        fail_msg("OBJECT IDLETIME after RESTORE: %lld, %lld (s2 %lld), want 1, the floor", ra, rb,
                 s2);
    h_expect_int(c, 3, "DEL ra rb rc");
}

/* Restarts the daemon on its data with opts (h_start_shmkvd_opts), so that
 * its shm cache holds nothing; the new client goes to *state, for the
 * teardown, and is returned. */
static redisContext *restart_uncached(void **state, const char *const *opts)
{
    redisContext *c = *state;
    shutdown_and_wait(c, &S);
    redisFree(c);
    h_start_shmkvd_opts(&S, opts);
    c = h_connect_port(S.port);
    *state = c;
    return c;
}

/* Active expiry reads each due key's record before it deletes the key: a
 * key the shm cache does not hold (here: all, after a restart) is read
 * past the cache, not into it, where 300,000 keys due at once had filled
 * it with doomed records and evicted the readers' hot ones. */
static void test_srv_active_expiry_fills_no_cache(void **state)
{
    redisContext *c = *state;
    for (int i = 0; i < 50; i++)
        h_expect_status(c, "OK", "SET doomed:%d v PX 1500", i);
    h_expect_status(c, "OK", "SET kept v");
    const char *hz[] = {"--hz", "100", NULL};
    c = restart_uncached(state, hz);
    long long fills = info_field(c, "cache", "cache_fills:");
    assert_true(fills >= 0);
    struct timespec ts = {0, 50 * 1000 * 1000};
    for (int i = 0; i < 200 && info_stat(c, "expired_keys") < 50; i++)
        nanosleep(&ts, NULL);
    assert_int_equal(info_stat(c, "expired_keys"), 50);
    assert_int_equal(info_field(c, "cache", "cache_fills:"), fills);
    h_expect_int(c, 1, "DBSIZE");
}

/* A meta record that cannot be decoded (type 9), planted past the daemon
 * as a damaged disk would leave it: every command that reads it replies an
 * error, commands of many keys included, and a DEL of many deletes none.
 * MGET's reply, begun before the read failed, is taken back whole, so the
 * replies after it stay in step. */
static void test_srv_corrupt_record_errors(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "SET good v");
    shutdown_and_wait(c, &S);
    redisFree(c);
    char data[300], mk[64];
    snprintf(data, sizeof data, "%s/data", S.dir);
    struct stor_opts so = {.dir = data, .block_cache_bytes = 8u << 20, .background_jobs = 2};
    struct stor *st;
    const char *err = NULL;
    assert_int_equal(stor_open(&st, &so, &err), 0);
    struct stor_batch b;
    stor_batch_init(&b);
    size_t mkn = enc_meta_key(mk, 0, enc_slot("bad", 3), "bad", 3);
    stor_batch_put(&b, STOR_CF_META, mk, mkn, "\x09\0\0\0\0\0\0\0\0", 9);
    assert_int_equal(stor_commit(st, &b), 0);
    stor_batch_destroy(&b);
    stor_close(st);
    h_start_shmkvd_opts(&S, NULL);
    c = h_connect_port(S.port);
    *state = c;
    h_expect_err(c, "ERR", "GET bad");
    h_expect_err(c, "ERR", "MGET good bad good");
    h_expect_status(c, "PONG", "PING");
    h_expect_err(c, "ERR", "EXISTS good bad");
    h_expect_err(c, "ERR", "DEL good bad");
    h_expect_err(c, "ERR", "SMISMEMBER bad a b");
    h_expect_bulk(c, "v", "GET good");
    h_expect_int(c, 1, "DEL good");
}

/* A key about to be deleted is read past the shm cache: filling it would
 * only have the delete turn the entry negative, evicting others for it. */
static void test_srv_delete_fills_no_cache(void **state)
{
    redisContext *c = *state;
    for (int i = 0; i < 50; i++)
        h_expect_status(c, "OK", "SET gone:%d v", i);
    h_expect_status(c, "OK", "SET gd v");
    h_expect_status(c, "OK", "SET rn v");
    h_expect_int(c, 2, "HSET wrong a 1 b 2");
    c = restart_uncached(state, NULL);
    long long fills = info_field(c, "cache", "cache_fills:");
    assert_true(fills >= 0);
    for (int i = 0; i < 50; i++)
        h_expect_int(c, 1, "DEL gone:%d", i);
    h_expect_int(c, 0, "DEL never-was");
    h_expect_bulk(c, "v", "GETDEL gd");
    h_expect_err(c, "WRONGTYPE", "GETDEL wrong");
    h_expect_status(c, "OK", "RENAME rn rn2");
    assert_int_equal(info_field(c, "cache", "cache_fills:"), fills);
    h_expect_nil(c, "GET gone:7");
    h_expect_nil(c, "GET gd");
    h_expect_nil(c, "GET rn");
    h_expect_bulk(c, "v", "GET rn2");
    h_expect_int(c, 2, "DBSIZE");
}

/* A key, field or member a write adds is read first, to know it is new
 * and to count it: the absence found then is not cached, since the
 * write's own put fills the entry at its commit (a negative entry first
 * would only be replaced). A read still caches an absence. */
static void test_srv_added_fields_fill_no_negative(void **state)
{
    redisContext *c = *state;
    /* Records, not inline collections: an inline one's absent fields are
     * answered from its meta record, with nothing to cache. */
    h_expect_status(c, "OK",
                    "CONFIG SET hash-max-listpack-entries 0 zset-max-listpack-entries 0 "
                    "set-max-intset-entries 0 list-max-listpack-size 0");
    long long neg = info_field(c, "cache", "cache_negative_fills:");
    assert_true(neg >= 0);
    h_expect_int(c, 1, "HSET nf:h seed 1");
    h_expect_int(c, 1, "SADD nf:s seed");
    h_expect_int(c, 1, "SADD nf:t seed");
    h_expect_int(c, 1, "ZADD nf:z 1 seed");
    h_expect_int(c, 1, "LPUSH nf:l seed");
    for (int i = 0; i < 20; i++) {
        h_expect_int(c, 1, "HSET nf:h f%d v%d", i, i);
        h_expect_int(c, 1, "SADD nf:s m%d", i);
        h_expect_int(c, 1, "ZADD nf:z %d m%d", i, i);
        h_expect_int(c, i + 2, "RPUSH nf:l e%d", i);
    }
    h_expect_int(c, 0, "HSETNX nf:h f3 other");
    h_expect_int(c, 1, "SMOVE nf:s nf:t m0");
    h_expect_bulk(c, "1", "ZINCRBY nf:z 1 new");
    assert_int_equal(info_field(c, "cache", "cache_negative_fills:"), neg);
    h_expect_bulk(c, "v7", "HGET nf:h f7");
    h_expect_bulk(c, "v3", "HGET nf:h f3");
    h_expect_int(c, 1, "SISMEMBER nf:s m7");
    h_expect_int(c, 0, "SISMEMBER nf:s m0");
    h_expect_int(c, 1, "SISMEMBER nf:t m0");
    h_expect_bulk(c, "7", "ZSCORE nf:z m7");
    h_expect_bulk(c, "e19", "LINDEX nf:l -1");
    h_expect_int(c, 21, "HLEN nf:h");
    h_expect_int(c, 20, "SCARD nf:s");
    h_expect_int(c, 22, "ZCARD nf:z");
    h_expect_int(c, 0, "HEXISTS nf:h nosuch");
    h_expect_nil(c, "ZSCORE nf:z nosuch");
    h_expect_nil(c, "GET nf:nosuch");
    assert_int_equal(info_field(c, "cache", "cache_negative_fills:"), neg + 3);
    h_expect_status(c, "OK",
                    "CONFIG SET hash-max-listpack-entries 512 zset-max-listpack-entries 128 "
                    "set-max-intset-entries 512 list-max-listpack-size -2");
}

/* A key written once, deleted and flushed since, that the cache lacks: the
 * key filter says it may exist, so the commit's key count would read it
 * from RocksDB (deferring the count to the resolver) unless the cache
 * knows. Its re-creation therefore still caches the absence it read. */
static void test_srv_recreated_key_counted_from_cache(void **state)
{
    redisContext *c = *state;
    for (int i = 0; i < 20; i++)
        h_expect_int(c, 1, "SADD rc:%d m", i);
    c = restart_uncached(state, NULL);
    for (int i = 0; i < 20; i++)
        h_expect_int(c, 1, "DEL rc:%d", i);
    wait_overlay_forgot(c); /* the deletes too */
    long long neg = info_field(c, "cache", "cache_negative_fills:");
    long long deferred = info_field(c, "storage", "key_counts_deferred:outstanding=0,total=");
    long long keys = info_field(c, "keyspace", "db0:keys=");
    if (keys < 0)
        keys = 0; /* no db0 line: the keyspace is empty */
    assert_true(neg >= 0 && deferred >= 0);
    for (int i = 0; i < 20; i++)
        h_expect_int(c, 1, "SADD rc:%d m2", i);
    assert_int_equal(info_field(c, "cache", "cache_negative_fills:"), neg + 20);
    assert_int_equal(info_field(c, "storage", "key_counts_deferred:outstanding=0,total="),
                     deferred);
    assert_int_equal(info_field(c, "keyspace", "db0:keys="), keys + 20);
    h_expect_int(c, 0, "SISMEMBER rc:7 m");
    h_expect_int(c, 1, "SISMEMBER rc:7 m2");
}

/* With the shm cache off, a write of a key the overlay has forgotten (the
 * flusher wrote it) learns whether the key existed only from RocksDB: the
 * write-back resolves that off the event loop (storage.md, "Writes of cold
 * keys"), and DBSIZE, INFO keyspace and SCAN still agree. */
static void test_srv_key_counts_cold(void **state)
{
    (void)state;
    struct server t;
    h_prepare(&t, "cold");
    const char *opts[] = {"--shm-cache-size", "0", "--flusher-interval", "5", NULL};
    h_start_shmkvd_opts(&t, opts);
    redisContext *c = h_connect_port(t.port);
    assert_non_null(c);
    redisReply *r;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 2000; i++)
            if (round == 0 && i % 4 == 0)
                redisAppendCommand(c, "SET cold:%d %d EX 1000", i, round);
            else if (round == 2 && i % 10 == 0)
                redisAppendCommand(c, "DEL cold:%d", i);
            else
                redisAppendCommand(c, "SET cold:%d %d", i, round);
        for (int i = 0; i < 2000; i++) {
            assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
            assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
            freeReplyObject(r);
        }
        wait_overlay_forgot(c);
    }
    expect_keys(c, 1800, 0); /* the second round dropped the expiries */
    /* DBSIZE settled them all; both later rounds were deferred. */
    assert_true(info_field(c, "storage", "key_counts_deferred:outstanding=0,total=") >= 3800);
    /* Once more, the deleted tenth coming back (a maybe in the key filter,
     * absent in RocksDB), and straight to SHUTDOWN: the saved counts must
     * take in what the shutdown's drain resolved (as much as the cron has
     * not folded by then). */
    for (int i = 0; i < 2000; i++)
        redisAppendCommand(c, "SET cold:%d again", i);
    for (int i = 0; i < 2000; i++) {
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    shutdown_and_wait(c, &t);
    redisFree(c);
    h_start_shmkvd_opts(&t, opts);
    c = h_connect_port(t.port);
    assert_non_null(c);
    r = H_CMD(c, "INFO storage");
    if (!strstr(r->str, "key_counts_from:shutdown\r\n"))
        fail_msg("%s", r->str);
    freeReplyObject(r);
    expect_keys(c, 2000, 0);
    h_expect_status(c, "OK", "FLUSHALL");
    expect_keys(c, 0, 0);
    redisFree(c);
    h_destroy(&t);
}

/* A hash left with a few fields among thousands deleted is rewritten under
 * a new version after the walk that met the deletes (storage/db_tidy.c):
 * its replies and TTL stay, and a WATCH on it is not disturbed. */
static void test_srv_tidy(void **state)
{
    redisContext *c = *state;
    redisReply *r;
    for (int i = 0; i < 3000; i++)
        redisAppendCommand(c, "HSET th f%d v%d", i, i);
    for (int i = 0; i < 3000; i++)
        if (i % 1000)
            redisAppendCommand(c, "HDEL th f%d", i);
    for (int i = 0; i < 3000 + 2997; i++) {
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        freeReplyObject(r);
    }
    h_expect_int(c, 1, "EXPIRE th 1000");
    long long before = info_field(c, "storage", "collections_rewritten:");
    assert_true(before >= 0);
    h_expect_status(c, "OK", "WATCH th");
    const char *want[] = {"f0", "v0", "f1000", "v1000", "f2000", "v2000", NULL};
    h_expect_array(c, want, "HGETALL th");
    assert_int_equal(info_field(c, "storage", "collections_rewritten:"), before + 1);
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "HSET th f1 x");
    r = H_CMD(c, "EXEC");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY); /* not nil: nobody changed th */
    freeReplyObject(r);
    const char *want2[] = {"f0", "v0", "f1", "x", "f1000", "v1000", "f2000", "v2000", NULL};
    h_expect_array(c, want2, "HGETALL th");
    r = H_CMD(c, "TTL th");
    assert_true(r->type == REDIS_REPLY_INTEGER && r->integer > 990 && r->integer <= 1000);
    freeReplyObject(r);
    h_expect_int(c, 4, "HLEN th");
    assert_int_equal(info_field(c, "storage", "collections_rewritten:"), before + 1);
}

/* SWAPDB's map is saved before the reply: a restart finds each database
 * under the number the swap gave it, a checkpoint carries the map, and a
 * damaged map file stops the start, saying why. */
static void test_srv_swapdb_kept(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "SET k zero");
    h_expect_status(c, "OK", "SELECT 1");
    h_expect_status(c, "OK", "SET k one");
    h_expect_status(c, "OK", "SWAPDB 0 1");
    h_expect_status(c, "OK", "SHMKV.CHECKPOINT");
    c = restart_uncached(state, NULL);
    h_expect_bulk(c, "one", "GET k");
    h_expect_status(c, "OK", "SELECT 1");
    h_expect_bulk(c, "zero", "GET k");
    char path[600];
    snprintf(path, sizeof path, "%s/data/checkpoints", S.dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    struct dirent *e;
    int maps = 0;
    while ((e = readdir(d))) {
        char p[900];
        snprintf(p, sizeof p, "%s/%s/db-map", path, e->d_name);
        maps += e->d_name[0] != '.' && access(p, F_OK) == 0;
    }
    closedir(d);
    assert_int_equal(maps, 1);
    /* Damaged: the daemon does not start, and says why. */
    shutdown_and_wait(c, &S);
    redisFree(c);
    *state = NULL;
    snprintf(path, sizeof path, "%s/data/db-map", S.dir);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fputc('x', f), 'x');
    fclose(f);
    char port[16], data[400], log[600];
    snprintf(port, sizeof port, "%d", S.port);
    snprintf(data, sizeof data, "%s/data", S.dir);
    snprintf(log, sizeof log, "%s/refused.log", S.dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(SHMKVD_PATH, SHMKVD_PATH, "--port", port, "--bind", "127.0.0.1", "--dir", data,
              "--unixsocket", S.sock, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    for (int i = 0; i < 2000 && waitpid(pid, &st, WNOHANG) == 0; i++)
        usleep(10 * 1000);
    if (waitpid(pid, &st, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        fail_msg("shmkvd started on a damaged db-map");
    }
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    char text[4096];
    h_read_file(log, text, sizeof text);
    assert_non_null(strstr(text, "db-map is damaged"));
    /* Removed: it starts with no database swapped. */
    assert_int_equal(unlink(path), 0);
    h_start_shmkvd_opts(&S, NULL);
    c = h_connect_port(S.port);
    *state = c;
    h_expect_bulk(c, "zero", "GET k");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, each_setup, each_teardown)
    const struct CMUnitTest tests[] = {
        T(test_srv_active_expiry),
        T(test_srv_key_counts),
        cmocka_unit_test(test_srv_key_counts_cold),
        T(test_srv_random_picks),
        T(test_srv_tidy),
        T(test_srv_object_idletime),
        T(test_srv_migrate_many_keys),
        T(test_srv_active_expiry_fills_no_cache),
        T(test_srv_delete_fills_no_cache),
        T(test_srv_added_fields_fill_no_negative),
        T(test_srv_recreated_key_counted_from_cache),
        T(test_srv_corrupt_record_errors),
        T(test_srv_swapdb_kept),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
