/*
 * test_srv_debug — DEBUG: who may run it (enable-debug-command no, local,
 * yes; CONFIG SET refused), and each subcommand shmkvd has. Most tests
 * share one daemon started with enable-debug-command yes; the gating test
 * starts its own. test_diff_debug compares the replies with
 * redis-server's.
 */
#include "harness.h"

#include <ifaddrs.h>
#include <net/if.h>

static struct server S;

static int group_setup(void **state)
{
    (void)state;
    h_prepare(&S, "debug");
    /* A long flusher interval: RELOAD then has writes to drain. */
    static const char *const opts[] = {"--enable-debug-command", "yes", "--flusher-interval",
                                       "10000", NULL};
    h_start_shmkvd_opts(&S, opts);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return h_group_stop(&S);
}

static int each_setup(void **state)
{
    redisContext *c = h_connect_port(S.port);
    assert_non_null(c);
    h_expect_status(c, "OK", "FLUSHALL");
    *state = c;
    return 0;
}

static int each_teardown(void **state)
{
    redisFree(*state);
    return 0;
}

static const char REFUSED[] =
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you "
    "can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.";

/* An address of this host that is not a loopback one (the first IPv4
 * address of an interface that is up), or false when there is none. */
static bool outside_address(char *out, size_t cap)
{
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs) != 0)
        return false;
    bool found = false;
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
            (i->ifa_flags & IFF_LOOPBACK))
            continue;
        found = inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out,
                          (socklen_t)cap) != NULL;
    }
    freeifaddrs(ifs);
    return found;
}

static redisContext *connect_at(const char *host, int port)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    assert_true(c && !c->err);
    return c;
}

/* An error reply that is exactly want. */
static void expect_error_text(redisContext *c, const char *want, const char *cmd)
{
    redisReply *r = redisCommand(c, cmd);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_ERROR || strcmp(r->str, want) != 0)
        fail_msg("%s: want -%s, got type %d '%s'", cmd, want, r->type, r->str ? r->str : "");
    freeReplyObject(r);
}

/* Starts a daemon with enable-debug-command value (and requirepass pw),
 * listening on loopback and on outside (NULL: loopback only). */
static void start_gated(struct server *t, const char *value, const char *outside)
{
    h_prepare(t, "gate");
    const char *opts[] = {"--enable-debug-command",
                          value,
                          "--requirepass",
                          "pw",
                          "--bind",
                          "127.0.0.1",
                          outside,
                          NULL};
    h_start_shmkvd_opts(t, opts);
}

/* enable-debug-command: no refuses DEBUG everywhere (the arity is checked
 * first, the refusal comes before AUTH, and inside MULTI it aborts the
 * transaction); local allows the Unix socket and loopback but not another
 * address of the host; yes allows every client. CONFIG SET cannot change
 * it, as in Redis. */
static void test_debug_gating(void **state)
{
    (void)state;
    char ip[64];
    bool outside = outside_address(ip, sizeof ip);
    if (!outside)
        print_message("no address besides loopback: the remote cases are skipped\n");
    static const char *const values[] = {"no", "local", "yes"};
    for (int v = 0; v < 3; v++) {
        struct server t;
        start_gated(&t, values[v], outside ? ip : NULL);
        redisContext *tcp = h_connect_port(t.port), *unx = redisConnectUnix(t.sock);
        assert_true(tcp && unx && !unx->err);
        redisContext *far = outside ? connect_at(ip, t.port) : NULL;
        h_expect_err(tcp, "ERR wrong number of arguments for 'debug' command", "DEBUG");
        if (v == 0) {
            expect_error_text(tcp, REFUSED, "DEBUG HELP"); /* before AUTH */
            expect_error_text(unx, REFUSED, "DEBUG DIGEST");
        } else {
            h_expect_err(tcp, "NOAUTH", "DEBUG DIGEST");
        }
        h_expect_status(tcp, "OK", "AUTH pw");
        h_expect_status(unx, "OK", "AUTH pw");
        h_expect_array(tcp, A("enable-debug-command", values[v]),
                       "CONFIG GET enable-debug-command");
        h_expect_err(
            tcp,
            "ERR CONFIG SET failed (possibly related to argument 'enable-debug-command') - "
            "can't set immutable config",
            "CONFIG SET enable-debug-command yes");
        if (v == 0) {
            expect_error_text(tcp, REFUSED, "DEBUG DIGEST");
        } else {
            h_expect_status(tcp, "0000000000000000000000000000000000000000", "DEBUG DIGEST");
            h_expect_status(unx, "0000000000000000000000000000000000000000", "DEBUG DIGEST");
        }
        if (far && v == 1) { /* local: another address of this host is not local */
            expect_error_text(far, REFUSED, "DEBUG DIGEST");
            h_expect_status(far, "OK", "AUTH pw");
            h_expect_status(far, "OK", "MULTI");
            expect_error_text(far, REFUSED, "DEBUG DIGEST");
            h_expect_err(far, "EXECABORT Transaction discarded because of previous errors.",
                         "EXEC");
        } else if (far) {
            h_expect_status(far, "OK", "AUTH pw");
            if (v == 2)
                h_expect_status(far, "0000000000000000000000000000000000000000", "DEBUG DIGEST");
            else
                expect_error_text(far, REFUSED, "DEBUG DIGEST");
        }
        /* Refusals count as rejected calls. */
        redisReply *r = H_CMD(tcp, "INFO commandstats");
        assert_non_null(strstr(r->str, "cmdstat_debug:"));
        assert_null(
            strstr(r->str, "cmdstat_debug:calls=0,usec=0,usec_per_call=0.00,rejected_calls=0"));
        freeReplyObject(r);
        redisFree(tcp);
        redisFree(unx);
        if (far)
            redisFree(far);
        assert_int_equal(h_stop(&t), 0);
        h_destroy(&t);
    }
}

/* HELP and the unknown-subcommand error: Redis's wording, and a
 * subcommand with the wrong number of arguments is "unknown" too. */
static void test_debug_help(void **state)
{
    redisContext *c = *state;
    redisReply *r = H_CMD(c, "DEBUG HELP");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_string_equal(r->element[0]->str,
                        "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    assert_string_equal(r->element[r->elements - 2]->str, "HELP");
    assert_string_equal(r->element[r->elements - 1]->str, "    Prints this help.");
    static const char *const named[] = {"DIGEST",         "DIGEST-VALUE <key> [<key> ...]",
                                        "OBJECT <key>",   "SLEEP <seconds>",
                                        "CHANGE-REPL-ID", "SET-ACTIVE-EXPIRE <0|1>"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        bool seen = false;
        for (size_t j = 0; j < r->elements; j++)
            seen |= !strcmp(r->element[j]->str, named[i]);
        if (!seen)
            fail_msg("DEBUG HELP does not name %s", named[i]);
    }
    freeReplyObject(r);
    expect_error_text(
        c, "ERR unknown subcommand or wrong number of arguments for 'nosuch'. Try DEBUG HELP.",
        "DEBUG nosuch");
    expect_error_text(
        c, "ERR unknown subcommand or wrong number of arguments for 'digest'. Try DEBUG HELP.",
        "DEBUG digest x");
    expect_error_text(
        c, "ERR unknown subcommand or wrong number of arguments for 'Help'. Try DEBUG HELP.",
        "DEBUG Help x");
    expect_error_text(
        c, "ERR unknown subcommand or wrong number of arguments for 'jmap'. Try DEBUG HELP.",
        "DEBUG jmap");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* SLEEP blocks the whole server: another client's PING waits for it. */
static void test_debug_sleep(void **state)
{
    redisContext *c = *state, *other = h_connect_port(S.port);
    double t0 = now_s();
    redisAppendCommand(c, "DEBUG SLEEP 0.3");
    int done = 0;
    while (!done)
        assert_int_equal(redisBufferWrite(c, &done), REDIS_OK);
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL); /* the sleep has begun */
    h_expect_status(other, "PONG", "PING");
    double waited = now_s() - t0;
    redisReply *r;
    assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    if (waited < 0.25)
        fail_msg("PING answered after %.3f s, during DEBUG SLEEP 0.3", waited);
    t0 = now_s();
    h_expect_status(c, "OK", "DEBUG SLEEP abc"); /* no number: 0, as strtod reads it */
    h_expect_status(c, "OK", "DEBUG SLEEP -1");
    assert_true(now_s() - t0 < 0.2);
    redisFree(other);
}

struct object_line {
    unsigned long long at, lru, idle;
    int refcount;
    char enc[64];
    size_t serlen;
};

static void debug_object(redisContext *c, const char *key, struct object_line *o)
{
    redisReply *r = H_CMD(c, "DEBUG OBJECT %s", key);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    if (sscanf(r->str,
               "Value at:0x%llx refcount:%d encoding:%63s serializedlength:%zu lru:%llu "
               "lru_seconds_idle:%llu",
               &o->at, &o->refcount, o->enc, &o->serlen, &o->lru, &o->idle) != 6)
        fail_msg("DEBUG OBJECT %s: %s", key, r->str);
    freeReplyObject(r);
}

/* OBJECT: Redis's line, with OBJECT ENCODING's encoding, DUMP's payload
 * length less its type byte and footer, and the idle clock's time (a
 * RESTORE with IDLETIME sets it), lru being the 24-bit clock then. */
static void test_debug_object(void **state)
{
    redisContext *c = *state;
    expect_error_text(c, "ERR no such key", "DEBUG OBJECT nokey");
    h_expect_status(c, "OK", "SET s hello");
    h_expect_int(c, 3, "RPUSH l a b c");
    h_expect_int(c, 1, "HSET h f v");
    static const char *const keys[] = {"s", "l", "h"};
    static const size_t serlen[] = {6, 7, 5}; /* "hello"; a list of 3; a hash of one pair */
    for (size_t i = 0; i < 3; i++) {
        struct object_line o;
        debug_object(c, keys[i], &o);
        redisReply *e = H_CMD(c, "OBJECT ENCODING %s", keys[i]);
        assert_string_equal(o.enc, e->str);
        freeReplyObject(e);
        assert_int_equal(o.refcount, 1);
        assert_int_equal(o.serlen, serlen[i]);
        assert_true(o.idle <= 1);
    }
    redisReply *d = H_CMD(c, "DUMP s");
    redisReply *r = H_CMD(c, "RESTORE old 0 %b IDLETIME 1000", d->str, d->len);
    freeReplyObject(r);
    freeReplyObject(d);
    /* The idle clock keeps that back to the daemon's start (srv_idle.h). */
    redisReply *it = H_CMD(c, "OBJECT IDLETIME old");
    unsigned long long idle = (unsigned long long)it->integer;
    freeReplyObject(it);
    assert_true(idle >= 1);
    struct object_line o;
    debug_object(c, "old", &o);
    assert_true(o.idle == idle || o.idle == idle + 1);
    redisReply *t = H_CMD(c, "TIME");
    unsigned long long now = strtoull(t->element[0]->str, NULL, 10);
    freeReplyObject(t);
    unsigned long long want = (now - o.idle) & 0xffffff;
    assert_true(o.lru == want || o.lru == ((want - 1) & 0xffffff) ||
                o.lru == ((want + 1) & 0xffffff));
}

#define ZEROS "0000000000000000000000000000000000000000"

/* DIGEST: zeros for no data; the keys' order within a database does not
 * matter, their database does, an expiry does (not its time), a key's
 * name does. DIGEST-VALUE: zeros for an absent key, the value alone, and
 * Redis 7.0.15's digests for the same values. */
static void test_debug_digest(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, ZEROS, "DEBUG DIGEST");
    h_expect_status(c, "OK", "MSET a 1 b 2");
    redisReply *r = H_CMD(c, "DEBUG DIGEST");
    char ab[41];
    snprintf(ab, sizeof ab, "%s", r->str);
    freeReplyObject(r);
    assert_string_not_equal(ab, ZEROS);
    h_expect_status(c, "OK", "FLUSHALL");
    h_expect_status(c, "OK", "SET b 2");
    h_expect_status(c, "OK", "SET a 1");
    h_expect_status(c, ab, "DEBUG DIGEST");
    h_expect_int(c, 1, "EXPIRE a 1000");
    r = H_CMD(c, "DEBUG DIGEST");
    char ttl[41];
    snprintf(ttl, sizeof ttl, "%s", r->str);
    freeReplyObject(r);
    assert_string_not_equal(ttl, ab);
    h_expect_int(c, 1, "EXPIRE a 2000");
    h_expect_status(c, ttl, "DEBUG DIGEST"); /* only "has an expiry" counts */
    h_expect_int(c, 1, "PERSIST a");
    h_expect_status(c, ab, "DEBUG DIGEST");
    h_expect_int(c, 1, "MOVE a 1");
    r = H_CMD(c, "DEBUG DIGEST");
    assert_string_not_equal(r->str, ab);
    freeReplyObject(r);
    h_expect_status(c, "OK", "FLUSHALL");
    h_expect_status(c, ZEROS, "DEBUG DIGEST");

    /* DIGEST-VALUE, with digests redis-server 7.0.15 gives for them. */
    h_expect_array(c, (const char *const[]){NULL}, "DEBUG DIGEST-VALUE");
    h_expect_status(c, "OK", "SET s hello");
    h_expect_status(c, "OK", "SET t hello");
    h_expect_int(c, 3, "RPUSH l a b c");
    h_expect_int(c, 1, "HSET h f v");
    h_expect_int(c, 3, "SADD st 1 2 3");
    h_expect_int(c, 2, "ZADD z 1.5 a 2 b");
    h_expect_array(
        c,
        A("36b23a1456b2dce2c3ed252c456761301dba8060", "36b23a1456b2dce2c3ed252c456761301dba8060",
          "8bf72d812571eea9b927f3c11beb0c4165a6ff89", "90c76e9e9f4c62d642a34fc97c7dad503b51f906",
          "2a462a3f51a1db89738ebbeef0c47ce1bbc85246", "445b877af3c3ec83af30529ddbbdda3185172254",
          ZEROS),
        "DEBUG DIGEST-VALUE s t l h st z nosuch");
    h_expect_int(c, 1, "EXPIRE s 100");
    h_expect_array(c, A("d037c4eb8a8b36b602fbced4000daeab0714c1e3"), "DEBUG DIGEST-VALUE s");
    h_expect_int(c, 1, "DEL s");
    h_expect_int(c, 1, "DEL t");
    /* A data set of those five keys, as redis-server digests it. */
    h_expect_status(c, "OK", "SET s hello");
    h_expect_status(c, "477b95aff7f148e0fc8c4221463b7337e1e7b5bc", "DEBUG DIGEST");
}

/* RELOAD: write-back drained into RocksDB, the data as it was; options
 * other than Redis's three are refused. */
static void test_debug_reload(void **state)
{
    redisContext *c = *state;
    for (int i = 0; i < 50; i++)
        h_expect_status(c, "OK", "SET k%d v%d", i, i);
    h_expect_status(c, "OK", "DEBUG RELOAD");
    assert_int_equal(h_info_num(c, "writeback_pending_sets"), 0);
    h_expect_bulk(c, "v7", "GET k7");
    h_expect_int(c, 50, "DBSIZE");
    h_expect_status(c, "OK", "DEBUG RELOAD MERGE nosave NOFLUSH");
    expect_error_text(c, "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
                      "DEBUG RELOAD SAVE");
}

/* SET-ACTIVE-EXPIRE 0: cron leaves expired keys (they count in DBSIZE and
 * read as absent); 1: it deletes them again. */
static void test_debug_active_expire(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "DEBUG SET-ACTIVE-EXPIRE 0");
    long long expired = h_info_num(c, "expired_keys");
    h_expect_status(c, "OK", "SET k v PX 30");
    struct timespec ts = {0, 400 * 1000 * 1000}; /* four cron ticks */
    nanosleep(&ts, NULL);
    h_expect_nil(c, "GET k");
    h_expect_int(c, 1, "DBSIZE");
    assert_int_equal(h_info_num(c, "expired_keys"), expired);
    h_expect_status(c, "OK", "DEBUG SET-ACTIVE-EXPIRE 1");
    for (int i = 0; i < 100 && h_info_num(c, "expired_keys") == expired; i++) {
        struct timespec p = {0, 20 * 1000 * 1000};
        nanosleep(&p, NULL);
    }
    assert_int_equal(h_info_num(c, "expired_keys"), expired + 1);
    h_expect_int(c, 0, "DBSIZE");
}

/* INFO replication's master_replid. */
static void replid(redisContext *c, char out[41])
{
    redisReply *r = H_CMD(c, "INFO replication");
    const char *p = strstr(r->str, "master_replid:");
    assert_non_null(p);
    snprintf(out, 41, "%s", p + strlen("master_replid:"));
    freeReplyObject(r);
    assert_int_equal(strspn(out, "0123456789abcdef"), 40);
}

/* CHANGE-REPL-ID: a new random replication ID. */
static void test_debug_change_repl_id(void **state)
{
    redisContext *c = *state;
    char a[41], b[41];
    replid(c, a);
    h_expect_status(c, "OK", "DEBUG CHANGE-REPL-ID");
    replid(c, b);
    assert_string_not_equal(a, b);
}

/* Whether the daemon's log holds text. */
static bool log_has(const char *text)
{
    char path[300];
    static char buf[1 << 20];
    snprintf(path, sizeof path, "%s/server.log", S.dir);
    h_read_file(path, buf, sizeof buf);
    return strstr(buf, text) != NULL;
}

/* QUICKLIST-PACKED-THRESHOLD, LISTPACK, QUICKLIST, STRINGMATCH-TEST and
 * LOG: Redis's answers; the structures and the message go to the log. */
static void test_debug_layouts(void **state)
{
    redisContext *c = *state;
    static const char *const ok[] = {"0", "1", "1kb", "4095mb", "", "7B"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        h_expect_status(c, "OK", "DEBUG QUICKLIST-PACKED-THRESHOLD %s", ok[i]);
    static const char *const bad[] = {"4gb", "5gb", "-1", "abc", "1 kb", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        h_expect_err(c, "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
                     "DEBUG QUICKLIST-PACKED-THRESHOLD %s", bad[i]);
    h_expect_int(c, 2, "HSET h field1 value1 field2 value2");
    h_expect_int(c, 2, "RPUSH l elem-one elem-two");
    h_expect_status(c, "OK", "SET s x");
    h_expect_status(c, "Listpack structure printed on stdout", "DEBUG LISTPACK h");
    h_expect_err(c, "ERR Not a listpack encoded object.", "DEBUG LISTPACK l");
    h_expect_err(c, "ERR Not a listpack encoded object.", "DEBUG LISTPACK s");
    h_expect_err(c, "ERR no such key", "DEBUG LISTPACK nokey");
    h_expect_status(c, "Quicklist structure printed on stdout", "DEBUG QUICKLIST l");
    h_expect_status(c, "Quicklist structure printed on stdout", "DEBUG QUICKLIST l 1");
    h_expect_err(c, "ERR Not a quicklist encoded object.", "DEBUG QUICKLIST h");
    h_expect_err(c, "ERR no such key", "DEBUG QUICKLIST nokey 1");
    h_expect_status(c, "Apparently Redis did not crash: test passed", "DEBUG STRINGMATCH-TEST");
    h_expect_status(c, "OK", "DEBUG LOG %s", "a message for the log");
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_true(log_has("DEBUG LOG: a message for the log"));
    assert_true(log_has("value2"));   /* LISTPACK's elements */
    assert_true(log_has("elem-two")); /* QUICKLIST 1's */
}

/* MALLCTL and MALLCTL-STR: jemalloc's settings. An 8-byte integer read as
 * a string is refused, where redis-server would crash. */
static void test_debug_mallctl(void **state)
{
    redisContext *c = *state;
    redisReply *r = H_CMD(c, "DEBUG MALLCTL stats.allocated");
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_true(r->integer > 0);
    freeReplyObject(r);
    h_expect_err(c, "ERR No such file or directory", "DEBUG MALLCTL nosuch");
    h_expect_err(c, "ERR Invalid argument", "DEBUG MALLCTL arenas.narenas"); /* 4 bytes, as Redis */
    h_expect_err(c, "ERR Operation not permitted", "DEBUG MALLCTL arenas.narenas 4");
    h_expect_err(c, "ERR value is not an integer or out of range", "DEBUG MALLCTL epoch abc");
    r = H_CMD(c, "DEBUG MALLCTL-STR version");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_true(r->len > 0 && r->str[0] >= '0' && r->str[0] <= '9');
    freeReplyObject(r);
    h_expect_err(c, "ERR No such file or directory", "DEBUG MALLCTL-STR nosuch");
    h_expect_err(c, "ERR Invalid argument", "DEBUG MALLCTL-STR epoch");
    h_expect_status(c, "PONG", "PING");
}

/* ERROR, PROTOCOL (RESP2) and POPULATE. */
static void test_debug_replies(void **state)
{
    redisContext *c = *state;
    redisReply *r = H_CMD(c, "DEBUG ERROR %s", "FOO bar");
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_string_equal(r->str, "FOO bar");
    freeReplyObject(r);
    r = H_CMD(c, "DEBUG ERROR %s", "two\r\nlines");
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_string_equal(r->str, "two  lines");
    freeReplyObject(r);
    h_expect_bulk(c, "Hello World", "DEBUG PROTOCOL string");
    h_expect_int(c, 12345, "DEBUG PROTOCOL integer");
    h_expect_bulk(c, "3.141", "DEBUG PROTOCOL double");
    h_expect_nil(c, "DEBUG PROTOCOL null");
    h_expect_array(c, A("0", "0", "1", "1", "2", "0"), "DEBUG PROTOCOL map");
    h_expect_int(c, 1, "DEBUG PROTOCOL true");
    h_expect_err(c, "ERR RESP2 is not supported by this command", "DEBUG PROTOCOL push");
    h_expect_err(c, "ERR Wrong protocol type name.", "DEBUG PROTOCOL nosuch");
    h_expect_status(c, "OK", "SET key:3 mine");
    h_expect_status(c, "OK", "DEBUG POPULATE 10");
    h_expect_int(c, 10, "DBSIZE");
    h_expect_bulk(c, "value:4", "GET key:4");
    h_expect_bulk(c, "mine", "GET key:3"); /* an existing key stays */
    h_expect_status(c, "OK", "DEBUG POPULATE 2 p 3");
    h_expect_bulk(c, "val", "GET p:1");
    h_expect_status(c, "OK", "DEBUG POPULATE 2 q 10");
    r = H_CMD(c, "GET q:1");
    assert_int_equal(r->len, 10);
    assert_memory_equal(r->str, "value:1\0\0\0", 10);
    freeReplyObject(r);
    h_expect_status(c, "OK", "DEBUG POPULATE 0");
    h_expect_err(c, "ERR value is out of range, must be positive", "DEBUG POPULATE -1");
    h_expect_err(c, "ERR value is out of range, must be positive", "DEBUG POPULATE abc");
    h_expect_err(c, "ERR value is out of range, must be positive", "DEBUG POPULATE 1 x -3");
    h_expect_int(c, 14, "DBSIZE");
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, each_setup, each_teardown)
    const struct CMUnitTest tests[] = {
        T(test_debug_gating),        T(test_debug_help),           T(test_debug_sleep),
        T(test_debug_object),        T(test_debug_digest),         T(test_debug_reload),
        T(test_debug_active_expire), T(test_debug_change_repl_id), T(test_debug_layouts),
        T(test_debug_mallctl),       T(test_debug_replies),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
