/*
 * test_client — libshmkv against a real shmkvd: every cacheable read,
 * answered from shared memory, replies exactly as the daemon does over TCP
 * (absent keys, wrong types, expiry, blind collections, list indexes);
 * writes are visible to the cache at once; AUTH guards the segment; a
 * disabled cache, MULTI, SELECT, and daemon restarts (SHUTDOWN and kill -9)
 * are handled.
 */
#include "harness.h"

#include <pthread.h>

#include "h_client.h"

static struct server S;
static redisContext *C; /* TCP: the daemon's own answers */

static int group_setup(void **state)
{
    (void)state;
    h_prepare(&S, "client");
    const char *opts[] = {"--hash-encoding", "counted", NULL};
    h_start_shmkvd_opts(&S, opts);
    C = h_connect_port(S.port);
    return C ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    redisFree(C);
    return h_group_stop(&S);
}

static shmkv *open_ok(const struct shmkv_opts *o)
{
    shmkv *h = NULL;
    int rc = shmkv_open(&h, S.sock, o);
    if (rc != SHMKV_OK)
        fail_msg("shmkv_open: %s (%s)", shmkv_strerror(rc), shmkv_errmsg());
    return h;
}

/* Runs argv through the library twice (the first may fill the cache) and
 * through TCP; the replies must agree, and the second library call must be
 * a cache hit when want_hit. */
static void cmp(shmkv *h, bool want_hit, int argc, const char **argv)
{
    shmkv_reply *a;
    assert_int_equal(shmkv_command(h, &a, argc, argv, NULL), SHMKV_OK);
    shmkv_reply_free(a);
    uint64_t before = h_lib_hits(h);
    assert_int_equal(shmkv_command(h, &a, argc, argv, NULL), SHMKV_OK);
    bool hit = h_lib_hits(h) > before;
    redisReply *b = redisCommandArgv(C, argc, argv, NULL);
    assert_non_null(b);
    char line[200] = "";
    for (int i = 0; i < argc; i++)
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s ", argv[i]);
    if (!h_same_reply(a, b))
        fail_msg("%s: the library and the daemon disagree (types %d/%d)", line, a->type, b->type);
    if (hit != want_hit)
        fail_msg("%s: %s from the cache", line, hit ? "unexpectedly served" : "not served");
    shmkv_reply_free(a);
    freeReplyObject(b);
}

#define CMP(h, hit, ...)                                                                           \
    do {                                                                                           \
        const char *argv_[] = {__VA_ARGS__};                                                       \
        cmp((h), (hit), (int)(sizeof argv_ / sizeof argv_[0]), argv_);                             \
    } while (0)

static void run(shmkv *h, const char *fmt)
{
    freeReplyObject(redisCommand(C, fmt));
    (void)h;
}

static void test_reads_agree(void **state)
{
    (void)state;
    shmkv *h = open_ok(NULL);
    assert_null(shmkv_cache_error(h));
    run(h, "FLUSHALL");
    run(h, "SET s hello");
    run(h, "SET e v PX 100000");
    run(h, "HSET h f1 v1 f2 v2");
    run(h, "SADD st m1 m2");
    run(h, "SADD is 30 -1 2");
    run(h, "ZADD z 1.5 a -2 b inf c");
    run(h, "RPUSH l x y z");
    /* strings and keys */
    CMP(h, true, "GET", "s");
    CMP(h, true, "GET", "nokey");
    CMP(h, false, "GET", "h"); /* WRONGTYPE: the daemon's words */
    CMP(h, true, "MGET", "s", "nokey", "h", "s");
    CMP(h, true, "EXISTS", "s", "nokey", "h", "s");
    CMP(h, true, "TYPE", "s");
    CMP(h, true, "TYPE", "z");
    CMP(h, true, "TYPE", "nokey");
    CMP(h, true, "TTL", "s");
    CMP(h, true, "TTL", "nokey");
    CMP(h, true, "STRLEN", "s");
    CMP(h, true, "STRLEN", "nokey");
    CMP(h, false, "STRLEN", "l");
    /* hashes */
    CMP(h, true, "HGET", "h", "f1");
    CMP(h, true, "HGET", "h", "nofield");
    CMP(h, true, "HGET", "nokey", "f");
    CMP(h, true, "HMGET", "h", "f2", "nofield", "f1");
    CMP(h, true, "HEXISTS", "h", "f1");
    CMP(h, true, "HEXISTS", "h", "nofield");
    CMP(h, true, "HLEN", "h");
    CMP(h, true, "HLEN", "nokey");
    CMP(h, false, "HGET", "s", "f");
    /* sets */
    CMP(h, true, "SISMEMBER", "st", "m1");
    CMP(h, true, "SISMEMBER", "st", "zz");
    CMP(h, true, "SMISMEMBER", "st", "zz", "m2", "m1");
    CMP(h, true, "SMISMEMBER", "nokey", "a", "b");
    CMP(h, true, "SCARD", "st");
    /* sorted sets */
    CMP(h, true, "ZSCORE", "z", "a");
    CMP(h, true, "ZSCORE", "z", "b");
    CMP(h, true, "ZSCORE", "z", "c");
    CMP(h, true, "ZSCORE", "z", "none");
    CMP(h, true, "ZMSCORE", "z", "c", "none", "a");
    CMP(h, true, "ZCARD", "z");
    CMP(h, true, "ZCARD", "nokey");
    /* lists */
    CMP(h, true, "LLEN", "l");
    CMP(h, true, "LINDEX", "l", "0");
    CMP(h, true, "LINDEX", "l", "-1");
    CMP(h, true, "LINDEX", "l", "3");
    CMP(h, true, "LINDEX", "l", "-4");
    CMP(h, true, "LINDEX", "nokey", "0");
    CMP(h, false, "LINDEX", "l", "x"); /* not an integer: the daemon's error */
    CMP(h, false, "LINDEX", "l", "01");
    /* wrong arity: the daemon's error */
    CMP(h, false, "GET", "a", "b");
    /* whole small collections, stored inline */
    CMP(h, true, "HGETALL", "h");
    CMP(h, true, "HKEYS", "h");
    CMP(h, true, "HVALS", "h");
    CMP(h, true, "HGETALL", "nokey");
    CMP(h, true, "SMEMBERS", "is");
    CMP(h, false, "SMEMBERS", "st"); /* not integers: stored per member, as Redis 7.0 */
    CMP(h, true, "ZRANGE", "z", "0", "-1", "WITHSCORES");
    CMP(h, true, "ZRANGE", "z", "0", "-1", "withscores");
    CMP(h, true, "ZRANGE", "z", "1", "5");
    CMP(h, true, "ZRANGE", "z", "-2", "-2");
    CMP(h, true, "ZRANGE", "z", "2", "1");
    CMP(h, true, "LRANGE", "l", "0", "-1");
    CMP(h, true, "LRANGE", "l", "-2", "10");
    CMP(h, true, "LRANGE", "l", "5", "1");
    CMP(h, true, "LRANGE", "nokey", "0", "-1");
    CMP(h, false, "LRANGE", "l", "x", "1");
    CMP(h, false, "ZRANGE", "z", "0", "-1", "REV");
    CMP(h, false, "HGETALL", "s");
    /* everything else goes to the daemon */
    CMP(h, false, "LPOS", "l", "y");
    shmkv_close(h);
}

/* LINDEX q i through the library, once: want_hit says whether from the
 * cache, want the element. */
static void lindex(shmkv *h, int i, bool want_hit, const char *want)
{
    char idx[16];
    snprintf(idx, sizeof idx, "%d", i);
    const char *argv[] = {"LINDEX", "q", idx};
    shmkv_reply *r;
    uint64_t before = h_lib_hits(h);
    assert_int_equal(shmkv_command(h, &r, 3, argv, NULL), SHMKV_OK);
    if ((h_lib_hits(h) > before) != want_hit)
        fail_msg("LINDEX q %d: %s from the cache", i, want_hit ? "not served" : "served");
    assert_int_equal(r->type, SHMKV_REPLY_STRING);
    assert_string_equal(r->str, want);
    shmkv_reply_free(r);
}

static void test_writes_visible(void **state)
{
    (void)state;
    shmkv *h = open_ok(NULL);
    char *v;
    size_t n;
    /* A write through the library, then through TCP: each visible to the
     * next cached read at once. */
    const char *set[] = {"SET", "w", "one"};
    shmkv_reply *r;
    assert_int_equal(shmkv_command(h, &r, 3, set, NULL), SHMKV_OK);
    assert_string_equal(r->str, "OK");
    shmkv_reply_free(r);
    for (int i = 0; i < 50; i++) {
        char want[16];
        snprintf(want, sizeof want, "v%d", i);
        freeReplyObject(redisCommand(C, "SET w %s", want));
        uint64_t before = h_lib_hits(h);
        assert_int_equal(shmkv_get(h, "w", 1, &v, &n), SHMKV_OK);
        assert_int_equal(h_lib_hits(h), before + 1);
        assert_string_equal(v, want);
        free(v);
    }
    freeReplyObject(redisCommand(C, "DEL w"));
    assert_int_equal(shmkv_get(h, "w", 1, &v, &n), SHMKV_NIL);
    freeReplyObject(redisCommand(C, "HSET w a 1"));
    assert_int_equal(shmkv_get(h, "w", 1, &v, &n), SHMKV_EREPLY);
    assert_non_null(strstr(shmkv_errmsg(), "WRONGTYPE"));
    /* HDEL leaves a negative entry; HSET fills it again. */
    CMP(h, true, "HGET", "w", "a");
    freeReplyObject(redisCommand(C, "HDEL w a"));
    CMP(h, true, "HGET", "w", "a");
    CMP(h, true, "EXISTS", "w");
    /* A small list lives in its meta record, which its push cached: its
     * elements are read from there at once. */
    freeReplyObject(redisCommand(C, "DEL q"));
    freeReplyObject(redisCommand(C, "RPUSH q a b"));
    lindex(h, 1, true, "b");
    freeReplyObject(redisCommand(C, "LPUSH q z"));
    lindex(h, 0, true, "z");
    /* List elements as records (lists past list-max-listpack-size): a
     * push fills nothing (a queue's pushes would push hotter records
     * out), a read fills, a write of a cached one refreshes it. */
    freeReplyObject(redisCommand(C, "CONFIG SET list-max-listpack-size 0"));
    freeReplyObject(redisCommand(C, "DEL q"));
    freeReplyObject(redisCommand(C, "RPUSH q a b"));
    lindex(h, 0, false, "a");
    lindex(h, 0, true, "a");
    freeReplyObject(redisCommand(C, "LSET q 0 A"));
    lindex(h, 0, true, "A");
    freeReplyObject(redisCommand(C, "LPUSH q z"));
    lindex(h, 0, false, "z");
    lindex(h, 1, true, "A");
    freeReplyObject(redisCommand(C, "LPOP q"));
    lindex(h, 0, true, "A");
    /* y A b: y lands where z was, whose cached copy LPOP left negative;
     * the put refreshes that entry. */
    freeReplyObject(redisCommand(C, "LINSERT q BEFORE A y"));
    lindex(h, 0, true, "y");
    lindex(h, 1, true, "A");
    lindex(h, 2, false, "b");
    freeReplyObject(redisCommand(C, "CONFIG SET list-max-listpack-size -2"));
    /* Expiry: a key read from the cache disappears when it expires. */
    freeReplyObject(redisCommand(C, "SET x 1 PX 1000")); /* room for a slow TSan run */
    assert_int_equal(shmkv_get(h, "x", 1, &v, &n), SHMKV_OK);
    free(v);
    struct timespec ts = {1, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(shmkv_get(h, "x", 1, &v, &n), SHMKV_NIL);
    /* FLUSHDB drops the whole database from the cache. */
    freeReplyObject(redisCommand(C, "SET y 1"));
    CMP(h, true, "GET", "y");
    freeReplyObject(redisCommand(C, "FLUSHDB"));
    CMP(h, true, "GET", "y");
    shmkv_close(h);
}

static void test_blind_and_select(void **state)
{
    (void)state;
    shmkv *h = open_ok(NULL);
    freeReplyObject(redisCommand(C, "CONFIG SET set-encoding blind"));
    freeReplyObject(redisCommand(C, "DEL bs"));
    freeReplyObject(redisCommand(C, "SADD bs a b"));
    CMP(h, false, "SCARD", "bs"); /* counted by scan: the daemon answers */
    CMP(h, true, "SISMEMBER", "bs", "a");
    CMP(h, false, "SMEMBERS", "bs"); /* stored per member, its size not kept */
    freeReplyObject(redisCommand(C, "CONFIG SET hash-encoding blind"));
    freeReplyObject(redisCommand(C, "DEL bh"));
    freeReplyObject(redisCommand(C, "HSET bh f v"));
    CMP(h, false, "HGETALL", "bh");
    freeReplyObject(redisCommand(C, "CONFIG SET hash-encoding counted"));
    freeReplyObject(redisCommand(C, "CONFIG SET set-encoding counted"));
    /* SELECT moves the handle's reads to another database. */
    freeReplyObject(redisCommand(C, "SELECT 3"));
    freeReplyObject(redisCommand(C, "SET d3 three"));
    const char *sel[] = {"SELECT", "3"};
    shmkv_reply *r;
    assert_int_equal(shmkv_command(h, &r, 2, sel, NULL), SHMKV_OK);
    shmkv_reply_free(r);
    CMP(h, true, "GET", "d3");
    freeReplyObject(redisCommand(C, "SELECT 0"));
    shmkv_close(h);
}

static void test_multi(void **state)
{
    (void)state;
    shmkv *h = open_ok(NULL);
    const char *multi[] = {"MULTI"}, *get[] = {"GET", "s"}, *exec[] = {"EXEC"};
    shmkv_reply *r;
    freeReplyObject(redisCommand(C, "SET s hello"));
    assert_int_equal(shmkv_command(h, &r, 1, multi, NULL), SHMKV_OK);
    shmkv_reply_free(r);
    assert_int_equal(shmkv_command(h, &r, 2, get, NULL), SHMKV_OK);
    assert_int_equal(r->type, SHMKV_REPLY_STATUS);
    assert_string_equal(r->str, "QUEUED");
    shmkv_reply_free(r);
    assert_int_equal(shmkv_command(h, &r, 1, exec, NULL), SHMKV_OK);
    assert_int_equal(r->type, SHMKV_REPLY_ARRAY);
    assert_string_equal(r->element[0]->str, "hello");
    shmkv_reply_free(r);
    uint64_t before = h_lib_hits(h);
    assert_int_equal(shmkv_command(h, &r, 2, get, NULL), SHMKV_OK);
    assert_int_equal(h_lib_hits(h), before + 1);
    shmkv_reply_free(r);
    shmkv_close(h);
}

/* Only a Unix-socket client gets the segment, and only after AUTH. */
/* Reads answered from shared memory count in INFO: each handle's own slot
 * (SHMKV.CLIENTS lists it with its process), the totals in Shmcache and in
 * keyspace_hits and _misses, and a closed handle's counts stay in them. */
static void test_local_counts(void **state)
{
    (void)state;
    freeReplyObject(redisCommand(C, "CONFIG RESETSTAT"));
    freeReplyObject(redisCommand(C, "SET lc:a 1"));
    freeReplyObject(redisCommand(C, "SET lc:b 2"));
    shmkv *h = open_ok(NULL);
    char *v;
    size_t n;
    for (int i = 0; i < 3; i++) { /* the first may miss and fill */
        assert_int_equal(shmkv_get(h, "lc:a", 4, &v, &n), SHMKV_OK);
        free(v);
    }
    CMP(h, true, "MGET", "lc:a", "lc:b", "lc:none");
    struct shmkv_stats st;
    shmkv_stats(h, &st);
    long long hits = h_info_num(C, "shm_local_hits");
    assert_int_equal(hits, (long long)st.hits);
    assert_int_equal(h_info_num(C, "shm_local_misses"), (long long)st.misses);
    assert_int_equal(h_info_num(C, "shm_attached_handles"), 1);
    assert_int_equal(h_info_num(C, "shm_attached_processes"), 1);
    /* GETs found lc:a each time; each MGET found 2 keys and 1 absent */
    long long kh = h_info_num(C, "shm_local_keyspace_hits"),
              km = h_info_num(C, "shm_local_keyspace_misses");
    assert_true(kh >= 2 + 2 && km >= 1);
    assert_true(h_info_num(C, "keyspace_hits") >= kh);
    assert_true(h_info_num(C, "keyspace_misses") >= km);
    redisReply *r = redisCommand(C, "SHMKV.CLIENTS");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    char want[64];
    snprintf(want, sizeof want, " pid=%d ", (int)getpid());
    if (!strstr(r->str, want) || !strstr(r->str, "hits="))
        fail_msg("SHMKV.CLIENTS: %s", r->str);
    freeReplyObject(r);
    shmkv_close(h);
    /* Its connection closed: the slot is free, its counts kept. */
    for (int i = 0; i < 100 && h_info_num(C, "shm_attached_handles") != 0; i++)
        usleep(10000);
    assert_int_equal(h_info_num(C, "shm_attached_handles"), 0);
    assert_int_equal(h_info_num(C, "shm_local_hits"), hits);
    freeReplyObject(redisCommand(C, "CONFIG RESETSTAT"));
    assert_int_equal(h_info_num(C, "shm_local_hits"), 0);
}

/* After SWAPDB a handle reads the other database's data under the same
 * number at once, from shared memory as before; and the swap outlives a
 * restart (dir/db-map). */
static void test_swapdb(void **state)
{
    (void)state;
    freeReplyObject(redisCommand(C, "FLUSHALL"));
    freeReplyObject(redisCommand(C, "SET sw:k zero"));
    freeReplyObject(redisCommand(C, "SELECT 1"));
    freeReplyObject(redisCommand(C, "SET sw:k one"));
    freeReplyObject(redisCommand(C, "SELECT 0"));
    shmkv *h = open_ok(NULL);
    CMP(h, true, "GET", "sw:k");
    h_expect_status(C, "OK", "SWAPDB 0 1");
    char *v;
    size_t n;
    assert_int_equal(shmkv_get(h, "sw:k", 4, &v, &n), SHMKV_OK);
    assert_string_equal(v, "one");
    free(v);
    CMP(h, true, "GET", "sw:k");
    CMP(h, true, "MGET", "sw:k", "sw:none");
    /* The daemon's own answers agree: TCP and library, and db 1 now. */
    h_expect_bulk(C, "one", "GET sw:k");
    shmkv_close(h);
    struct shmkv_opts o = {.db = 1};
    h = open_ok(&o);
    assert_int_equal(shmkv_get(h, "sw:k", 4, &v, &n), SHMKV_OK);
    assert_string_equal(v, "zero");
    free(v);
    shmkv_close(h);
    h_expect_status(C, "OK", "SWAPDB 0 1");
    h_expect_bulk(C, "zero", "GET sw:k");
    freeReplyObject(redisCommand(C, "FLUSHALL"));
}

static void test_attach_rules(void **state)
{
    (void)state;
    redisReply *r = redisCommand(C, "SHMKV.ATTACH");
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "Unix socket"));
    freeReplyObject(r);

    struct server P;
    h_prepare(&P, "client-auth");
    const char *opts[] = {"--requirepass", "sekret", NULL};
    h_start_shmkvd_opts(&P, opts);
    /* Without a password the connection opens, as Redis's would, but the
     * daemon refuses the segment and every command. */
    shmkv *h = NULL;
    assert_int_equal(shmkv_open(&h, P.sock, NULL), SHMKV_OK);
    assert_non_null(strstr(shmkv_cache_error(h), "NOAUTH"));
    char *v;
    size_t n;
    assert_int_equal(shmkv_get(h, "k", 1, &v, &n), SHMKV_EREPLY);
    assert_non_null(strstr(shmkv_errmsg(), "NOAUTH"));
    shmkv_close(h);
    struct shmkv_opts o = {.password = "wrong"};
    assert_int_equal(shmkv_open(&h, P.sock, &o), SHMKV_ECONNECT);
    assert_non_null(strstr(shmkv_errmsg(), "WRONGPASS"));
    o.password = "sekret";
    assert_int_equal(shmkv_open(&h, P.sock, &o), SHMKV_OK);
    assert_null(shmkv_cache_error(h));
    assert_int_equal(shmkv_get(h, "k", 1, &v, &n), SHMKV_NIL);
    /* ACL users: the segment only for one that reads every key. */
    static const char *const users[][12] = {
        {"ACL", "SETUSER", "all", "on", ">pw", "allkeys", "+@read", "+set", NULL},
        {"ACL", "SETUSER", "pr", "on", ">pw", "%R~*", "~k*", "+@read", "+set", NULL},
        {"ACL", "SETUSER", "some", "on", ">pw", "~k*", "+@read", "+set", NULL},
        {"ACL", "SETUSER", "noget", "on", ">pw", "allkeys", "+@read", "-get", "+set", NULL},
        {"ACL", "SETUSER", "sel", "on", ">pw", "~k*", "+@all", "(~* +@read)", NULL},
    };
    for (size_t i = 0; i < sizeof users / sizeof users[0]; i++) {
        int argc = 0;
        while (users[i][argc])
            argc++;
        shmkv_reply *ur;
        assert_int_equal(shmkv_command(h, &ur, argc, (const char **)users[i], NULL), SHMKV_OK);
        assert_int_equal(ur->type, SHMKV_REPLY_STATUS);
        shmkv_reply_free(ur);
    }
    const char *set_k[] = {"SET", "k1", "v1"}, *set_z[] = {"SET", "z1", "v2"};
    shmkv_reply *sr;
    assert_int_equal(shmkv_command(h, &sr, 3, set_k, NULL), SHMKV_OK);
    shmkv_reply_free(sr);
    assert_int_equal(shmkv_command(h, &sr, 3, set_z, NULL), SHMKV_OK);
    shmkv_reply_free(sr);
    shmkv_close(h);
    static const struct {
        const char *user;
        bool mapped;
    } who[] = {{"all", true}, {"pr", true}, {"some", false}, {"noget", false}, {"sel", true}};
    for (size_t i = 0; i < sizeof who / sizeof who[0]; i++) {
        struct shmkv_opts uo = {.password = "pw", .user = who[i].user};
        assert_int_equal(shmkv_open(&h, P.sock, &uo), SHMKV_OK);
        if (who[i].mapped) {
            assert_null(shmkv_cache_error(h));
        } else {
            assert_non_null(shmkv_cache_error(h));
            assert_non_null(strstr(shmkv_cache_error(h), "NOPERM"));
        }
        /* Reads answer the same either way: the socket checks each one. */
        for (int round = 0; round < 2; round++) {
            int rc = shmkv_get(h, "k1", 2, &v, &n);
            if (!strcmp(who[i].user, "noget")) {
                assert_int_equal(rc, SHMKV_EREPLY);
                assert_non_null(strstr(shmkv_errmsg(), "NOPERM"));
                continue;
            }
            assert_int_equal(rc, SHMKV_OK);
            assert_string_equal(v, "v1");
            free(v);
            rc = shmkv_get(h, "z1", 2, &v, &n);
            if (!strcmp(who[i].user, "some")) {
                assert_int_equal(rc, SHMKV_EREPLY);
                assert_non_null(strstr(shmkv_errmsg(), "NOPERM"));
            } else {
                assert_int_equal(rc, SHMKV_OK);
                free(v);
            }
        }
        if (!who[i].mapped)
            assert_int_equal(h_lib_hits(h), 0);
        else
            assert_true(h_lib_hits(h) > 0);
        shmkv_close(h);
    }
    assert_int_equal(h_stop(&P), 0);
    h_destroy(&P);

    /* Ordinary pages asked for: INFO says so, and hits are served as ever.
     * (Whether the default gets hugetlb pages depends on the host's pool;
     * test_shmc checks both ways where it can.) */
    h_prepare(&P, "client-nohuge");
    const char *nohuge[] = {"--shm-cache-huge-pages", "no", NULL};
    h_start_shmkvd_opts(&P, nohuge);
    redisContext *pc = h_connect_port(P.port);
    redisReply *info = redisCommand(pc, "INFO cache");
    assert_non_null(strstr(info->str, "cache_huge_pages:0\r\n"));
    freeReplyObject(info);
    redisFree(pc);
    assert_int_equal(shmkv_open(&h, P.sock, NULL), SHMKV_OK);
    assert_null(shmkv_cache_error(h));
    const char *setk[] = {"SET", "k", "v"};
    shmkv_reply *r3;
    assert_int_equal(shmkv_command(h, &r3, 3, setk, NULL), SHMKV_OK);
    shmkv_reply_free(r3);
    assert_int_equal(shmkv_get(h, "k", 1, &v, &n), SHMKV_OK);
    free(v);
    assert_true(h_lib_hits(h) > 0);
    shmkv_close(h);
    assert_int_equal(h_stop(&P), 0);
    h_destroy(&P);

    /* A daemon without a cache: everything through the socket. */
    h_prepare(&P, "client-nocache");
    const char *off[] = {"--shm-cache-size", "0", NULL};
    h_start_shmkvd_opts(&P, off);
    assert_int_equal(shmkv_open(&h, P.sock, NULL), SHMKV_OK);
    assert_non_null(strstr(shmkv_cache_error(h), "disabled"));
    const char *set[] = {"SET", "k", "v"};
    shmkv_reply *r2;
    assert_int_equal(shmkv_command(h, &r2, 3, set, NULL), SHMKV_OK);
    shmkv_reply_free(r2);
    assert_int_equal(shmkv_get(h, "k", 1, &v, &n), SHMKV_OK);
    assert_string_equal(v, "v");
    free(v);
    assert_int_equal(h_lib_hits(h), 0);
    shmkv_close(h);
    assert_int_equal(h_stop(&P), 0);
    h_destroy(&P);
}

/* The daemon restarts (cleanly, then killed): the handle notices on its
 * next call, reconnects and maps the new segment. */
static void test_restart(void **state)
{
    (void)state;
    struct server P;
    h_prepare(&P, "client-restart");
    h_start_shmkvd_opts(&P, NULL);
    shmkv *h;
    assert_int_equal(shmkv_open(&h, P.sock, NULL), SHMKV_OK);
    const char *set1[] = {"SET", "k", "one"}, *set2[] = {"SET", "k", "two"};
    shmkv_reply *r;
    assert_int_equal(shmkv_command(h, &r, 3, set1, NULL), SHMKV_OK);
    shmkv_reply_free(r);
    char *v;
    size_t n;
    for (int round = 0; round < 2; round++) {
        if (round == 0) {
            assert_int_equal(h_stop(&P), 0);
        } else {
            kill(P.pid, SIGKILL);
            waitpid(P.pid, NULL, 0);
            P.pid = 0;
        }
        /* No daemon: a cached read must not be served from the old segment
         * once the lease ran out. */
        struct timespec ts = {0, 400 * 1000 * 1000};
        nanosleep(&ts, NULL);
        assert_int_equal(shmkv_get(h, "k", 1, &v, &n), SHMKV_ECONNECT);
        h_start_shmkvd_opts(&P, NULL);
        redisContext *c = h_connect_port(P.port);
        freeReplyObject(redisCommandArgv(c, 3, round ? set1 : set2, NULL));
        redisFree(c);
        assert_int_equal(shmkv_get(h, "k", 1, &v, &n), SHMKV_OK);
        assert_string_equal(v, round ? "one" : "two");
        free(v);
        uint64_t before = h_lib_hits(h);
        assert_int_equal(shmkv_get(h, "k", 1, &v, &n), SHMKV_OK);
        free(v);
        assert_int_equal(h_lib_hits(h), before + 1); /* from the new segment */
    }
    struct shmkv_stats st;
    shmkv_stats(h, &st);
    assert_int_equal(st.attaches, 3);
    shmkv_close(h);
    assert_int_equal(h_stop(&P), 0);
    h_destroy(&P);
}

/* Threads sharing one handle: cache hits need no lock, the socket one at a
 * time; every thread reads back its own writes. (Under TSan in CI.) */
struct th {
    shmkv *h;
    int id;
    int bad;
};

static void *th_main(void *arg)
{
    struct th *t = arg;
    char key[32], val[32];
    for (int i = 0; i < 2000 && !t->bad; i++) {
        snprintf(key, sizeof key, "t%d:%d", t->id, i % 50);
        snprintf(val, sizeof val, "v%d", i);
        const char *set[] = {"SET", key, val};
        shmkv_reply *r;
        if (shmkv_command(t->h, &r, 3, set, NULL) != SHMKV_OK)
            t->bad = 1;
        else
            shmkv_reply_free(r);
        for (int j = 0; j < 5; j++) {
            char *v;
            size_t n;
            if (shmkv_get(t->h, key, strlen(key), &v, &n) != SHMKV_OK || strcmp(v, val) != 0)
                t->bad = 2;
            free(v);
        }
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    shmkv *h = open_ok(NULL);
    pthread_t tid[4];
    struct th t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (struct th){.h = h, .id = i};
        assert_int_equal(pthread_create(&tid[i], NULL, th_main, &t[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(tid[i], NULL);
        assert_int_equal(t[i].bad, 0);
    }
    assert_true(h_lib_hits(h) > 0);
    shmkv_close(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_agree),      cmocka_unit_test(test_writes_visible),
        cmocka_unit_test(test_blind_and_select), cmocka_unit_test(test_multi),
        cmocka_unit_test(test_threads),          cmocka_unit_test(test_attach_rules),
        cmocka_unit_test(test_restart),          cmocka_unit_test(test_local_counts),
        cmocka_unit_test(test_swapdb),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
