/*
 * test_diff_info — what the servers say about themselves, against Debian's
 * redis-server: the keyspace hits and misses each read command counts,
 * and the INFO fields monitoring reads.
 */
#include "diff_fixture.h"

static void both(const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    freeReplyObject(redisvCommand(cr, fmt, ap));
    freeReplyObject(redisvCommand(ck, fmt, aq));
    va_end(aq);
    va_end(ap);
}

/* Every read command, on present, absent, expired and wrong-typed keys:
 * each counts the same hits and misses on both servers. */
static void test_diff_keyspace_hits(void **state)
{
    (void)state;
    both("FLUSHALL");
    both("SET s hello");
    both("SET n 10");
    both("HSET h f v g w");
    both("SADD st a b c");
    both("SADD st2 b c d");
    both("ZADD z 1 a 2 b 3 c");
    both("RPUSH l a b c");
    both("PFADD hll a b");
    both("GEOADD g 13.36 38.11 pa");
    both("SET gone x PX 1");
    usleep(20000);
    static const char *const cmds[] = {"GET s",
                                       "GET nokey",
                                       "GET h",
                                       "GET gone",
                                       "MGET s nokey h n",
                                       "STRLEN s",
                                       "GETRANGE s 0 2",
                                       "SUBSTR s 0 2",
                                       "GETBIT s 1",
                                       "BITCOUNT s",
                                       "BITPOS s 1",
                                       "BITFIELD_RO s GET u8 0",
                                       "LCS s n",
                                       "EXISTS s nokey h",
                                       "TYPE s",
                                       "TYPE nokey",
                                       "TTL s",
                                       "PTTL nokey",
                                       "EXPIRETIME s",
                                       "PEXPIRETIME nokey",
                                       "OBJECT ENCODING s",
                                       "OBJECT REFCOUNT nokey",
                                       "DUMP s",
                                       "DUMP nokey",
                                       "TOUCH s nokey",
                                       "HGET h f",
                                       "HGET h x",
                                       "HGET nokey f",
                                       "HGET s f",
                                       "HMGET h f x",
                                       "HGETALL h",
                                       "HKEYS nokey",
                                       "HVALS h",
                                       "HLEN h",
                                       "HEXISTS h f",
                                       "HSTRLEN h f",
                                       "HRANDFIELD h",
                                       "HSCAN h 0",
                                       "SMEMBERS st",
                                       "SISMEMBER st a",
                                       "SMISMEMBER st a z",
                                       "SCARD nokey",
                                       "SRANDMEMBER st",
                                       "SINTER st st2 nokey",
                                       "SUNION st st2",
                                       "SDIFF st st2",
                                       "SINTERCARD 2 st st2",
                                       "SSCAN st 0",
                                       "ZSCORE z a",
                                       "ZMSCORE z a q",
                                       "ZCARD z",
                                       "ZRANK z b",
                                       "ZREVRANK z q",
                                       "ZRANGE z 0 -1",
                                       "ZRANGEBYSCORE z 1 2",
                                       "ZREVRANGEBYSCORE z 2 1",
                                       "ZRANGEBYLEX z - +",
                                       "ZCOUNT z 1 2",
                                       "ZLEXCOUNT z - +",
                                       "ZRANDMEMBER z",
                                       "ZSCAN z 0",
                                       "ZUNION 2 z nokey",
                                       "ZINTER 2 z nokey",
                                       "ZDIFF 2 z nokey",
                                       "ZINTERCARD 2 z nokey",
                                       "LRANGE l 0 -1",
                                       "LINDEX l 1",
                                       "LLEN l",
                                       "LPOS l b",
                                       "LLEN nokey",
                                       "PFCOUNT hll nokey",
                                       "GEOPOS g pa",
                                       "GEODIST g pa pa",
                                       "GEOHASH g pa",
                                       "GEOSEARCH g FROMLONLAT 13 38 BYRADIUS 100 km",
                                       "GEORADIUS_RO g 13 38 100 km",
                                       "SORT_RO l ALPHA",
                                       "SORT_RO nokey",
                                       "DBSIZE",
                                       "RANDOMKEY",
                                       "SCAN 0",
                                       "KEYS *",
                                       "OBJECT FREQ s"};
    char fails[4096] = "";
    size_t fu = 0;
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        long long h[2], m[2];
        redisContext *cc[2] = {cr, ck};
        for (int s = 0; s < 2; s++) {
            long long h0 = h_info_num(cc[s], "keyspace_hits"),
                      m0 = h_info_num(cc[s], "keyspace_misses");
            freeReplyObject(redisCommand(cc[s], cmds[i]));
            h[s] = h_info_num(cc[s], "keyspace_hits") - h0;
            m[s] = h_info_num(cc[s], "keyspace_misses") - m0;
        }
        if ((h[0] != h[1] || m[0] != m[1]) && fu < sizeof fails - 128)
            fu += (size_t)snprintf(fails + fu, sizeof fails - fu,
                                   "\n  %s: redis-server %lld hits %lld misses, shmkvd %lld/%lld",
                                   cmds[i], h[0], m[0], h[1], m[1]);
    }
    if (fu)
        fail_msg("keyspace hits and misses differ:%s", fails);
    both("FLUSHALL");
}

/* The field names of INFO EVERYTHING (the per-command, per-error and per-db
 * lines left out: they depend on what ran), one per line, in buf. */
static void info_fields(redisContext *c, char *buf, size_t cap)
{
    redisReply *r = redisCommand(c, "INFO everything");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    size_t u = 0;
    buf[0] = '\0';
    for (const char *p = r->str; *p;) {
        const char *eol = strchr(p, '\n'), *colon = strchr(p, ':');
        if (!eol)
            eol = p + strlen(p);
        if (colon && colon < eol && *p != '#' && strncmp(p, "cmdstat_", 8) &&
            strncmp(p, "errorstat_", 10) && strncmp(p, "latency_percentiles_usec_", 25) &&
            !(p[0] == 'd' && p[1] == 'b' && p[2] >= '0' && p[2] <= '9') && u + 80 < cap)
            u += (size_t)snprintf(buf + u, cap - u, "\n%.*s\n", (int)(colon - p), p);
        p = *eol ? eol + 1 : eol;
    }
    freeReplyObject(r);
}

/* Every field redis-server's INFO gives, shmkvd's gives, but for those
 * with no meaning here: active defragmentation (shmkvd does not move
 * allocations), forks and their copy-on-write (it never forks), modules,
 * AOF buffers, cluster links, client eviction (maxmemory-clients), reply
 * buffer resizing, lazy freeing (a DEL is O(1) already); and, until
 * shmkvd has it, replication's own. */
static void test_diff_info_fields(void **state)
{
    (void)state;
    static const char *const none[] = {
        "active_defrag_hits", "active_defrag_key_hits", "active_defrag_key_misses",
        "active_defrag_misses", "active_defrag_running", "current_active_defrag_time",
        "total_active_defrag_time", "current_cow_peak", "current_cow_size", "current_cow_size_age",
        "current_fork_perc", "current_save_keys_processed", "current_save_keys_total",
        "module_fork_in_progress", "module_fork_last_cow_size", "mem_aof_buffer",
        "mem_cluster_links", "evicted_clients", "current_eviction_exceeded_time",
        "total_eviction_exceeded_time", "reply_buffer_expands", "reply_buffer_shrinks",
        "lazyfreed_objects", "expired_stale_perc",
        /* replication */
        "instantaneous_input_repl_kbps", "instantaneous_output_repl_kbps",
        "mem_replication_backlog", "mem_total_replication_buffers", "total_net_repl_input_bytes",
        "total_net_repl_output_bytes", "rdb_last_load_keys_expired", "rdb_last_load_keys_loaded"};
    static char fr[32768], fk[32768];
    info_fields(cr, fr, sizeof fr);
    info_fields(ck, fk, sizeof fk);
    char missing[4096] = "";
    size_t mu = 0;
    for (const char *p = fr; (p = strchr(p, '\n')) && p[1];) {
        const char *e = strchr(p + 1, '\n');
        char name[80];
        snprintf(name, sizeof name, "%.*s", (int)(e - p - 1), p + 1);
        p = e + 1;
        char probe[96];
        snprintf(probe, sizeof probe, "\n%s\n", name);
        if (strstr(fk, probe))
            continue;
        bool skip = false;
        for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
            skip |= !strcmp(name, none[i]);
        if (!skip && mu < sizeof missing - 100)
            mu += (size_t)snprintf(missing + mu, sizeof missing - mu, " %s", name);
    }
    if (mu)
        fail_msg("INFO fields redis-server gives and shmkvd does not:%s", missing);
}

/* Replies that compare between the servers, from both connections. */
static void compare_all(const char *const *cmds, size_t n, const char *what)
{
    char fails[4096] = "";
    size_t fu = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *a = redisCommand(cr, cmds[i]), *b = redisCommand(ck, cmds[i]);
        char ta[512], tb[512];
        if (!same(a, b) && fu < sizeof fails - 600)
            fu += (size_t)snprintf(fails + fu, sizeof fails - fu, "\n  %s: redis %s, shmkvd %s",
                                   cmds[i], show(a, ta, sizeof ta), show(b, tb, sizeof tb));
        freeReplyObject(a);
        freeReplyObject(b);
    }
    if (fu)
        fail_msg("%s: replies differ:%s", what, fails);
}

/* The features shmkvd does not have answer as redis-server's do with them
 * off: modules, cluster mode; and LOLWUT's version line, MEMORY's
 * subcommands. */
static void test_diff_features_off(void **state)
{
    (void)state;
    static const char *const cmds[] = {"MODULE LIST",
                                       "MODULE LOAD /nonexistent/mod.so",
                                       "MODULE LOADEX /nonexistent/mod.so",
                                       "MODULE UNLOAD mymod",
                                       "MODULE NOSUCH",
                                       "MODULE",
                                       "MODULE LIST x",
                                       "CLUSTER INFO",
                                       "CLUSTER NODES",
                                       "CLUSTER SLOTS",
                                       "CLUSTER SHARDS",
                                       "CLUSTER KEYSLOT k",
                                       "CLUSTER HELP",
                                       "CLUSTER MYID",
                                       "CLUSTER NOSUCH",
                                       "CLUSTER",
                                       "CLUSTER INFO x",
                                       "CLUSTER SETSLOT 1",
                                       "READONLY",
                                       "READWRITE",
                                       "ASKING",
                                       "READONLY x",
                                       "LOLWUT VERSION 1",
                                       "LOLWUT VERSION x",
                                       "MEMORY NOSUCH",
                                       "MEMORY STATS x",
                                       "MEMORY DOCTOR x"};
    compare_all(cmds, sizeof cmds / sizeof cmds[0], "features off");
    /* MEMORY STATS: the same fields in the same order (the values are
     * each server's own). */
    both("SET ms:k v");
    redisReply *a = redisCommand(cr, "MEMORY STATS"), *b = redisCommand(ck, "MEMORY STATS");
    assert_int_equal(a->type, REDIS_REPLY_ARRAY);
    assert_int_equal(b->type, REDIS_REPLY_ARRAY);
    assert_int_equal(a->elements, b->elements);
    for (size_t i = 0; i < a->elements; i += 2)
        if (strcmp(a->element[i]->str, b->element[i]->str))
            fail_msg("MEMORY STATS field %zu: redis %s, shmkvd %s", i / 2, a->element[i]->str,
                     b->element[i]->str);
    freeReplyObject(a);
    freeReplyObject(b);
    b = redisCommand(ck, "MEMORY DOCTOR");
    assert_int_equal(b->type, REDIS_REPLY_STRING);
    freeReplyObject(b);
    both("DEL ms:k");
}

/* maxmemory: over it, the commands that may grow what is stored get OOM,
 * the others run, MULTI queues nothing new and EXEC of a transaction that
 * holds one is aborted; and OBJECT FREQ and IDLETIME answer by policy. */
static void test_diff_maxmemory(void **state)
{
    (void)state;
    both("FLUSHALL");
    both("SET mm:s v");
    both("RPUSH mm:l a b c");
    both("SADD mm:t x y");
    static const char *const over[] = {"CONFIG SET maxmemory 1",
                                       "SET mm:s w",
                                       "SET mm:new v",
                                       "APPEND mm:s x",
                                       "RPUSH mm:l d",
                                       "LPOP mm:l",
                                       "SADD mm:t z",
                                       "SREM mm:t x",
                                       "GET mm:s",
                                       "DEL mm:s",
                                       "EXPIRE mm:l 100",
                                       "PERSIST mm:l",
                                       "INCR mm:n",
                                       "PING",
                                       "MULTI",
                                       "GET mm:l",
                                       "EXEC",
                                       "MULTI",
                                       "DEL mm:t",
                                       "EXEC",
                                       "CONFIG SET maxmemory 0",
                                       "SET mm:s w",
                                       "MULTI",
                                       "SET mm:x 1",
                                       "CONFIG SET maxmemory 1",
                                       "EXEC",
                                       "CONFIG SET maxmemory 0"};
    compare_all(over, sizeof over / sizeof over[0], "over maxmemory");
    both("SET mm:s v");
    static const char *const pol[] = {"OBJECT FREQ mm:s",
                                      "OBJECT FREQ mm:none",
                                      "CONFIG SET maxmemory-policy allkeys-lfu",
                                      "OBJECT IDLETIME mm:s",
                                      "OBJECT IDLETIME mm:none",
                                      "OBJECT FREQ mm:none",
                                      "CONFIG SET maxmemory-policy volatile-lfu",
                                      "OBJECT IDLETIME mm:s",
                                      "CONFIG SET maxmemory-policy allkeys-random",
                                      "OBJECT FREQ mm:s",
                                      "CONFIG GET maxmemory-policy",
                                      "CONFIG SET maxmemory-policy nosuch",
                                      "CONFIG SET maxmemory-policy noeviction",
                                      "CONFIG SET lfu-log-factor 3",
                                      "CONFIG GET lfu-log-factor",
                                      "CONFIG SET lfu-log-factor 10",
                                      "CONFIG SET lfu-decay-time -1"};
    compare_all(pol, sizeof pol / sizeof pol[0], "policies");
    /* RESTORE ... FREQ sets the counter under an LFU policy. */
    both("CONFIG SET maxmemory-policy allkeys-lfu");
    redisContext *cc[2] = {cr, ck};
    for (int i = 0; i < 2; i++) {
        redisReply *d = redisCommand(cc[i], "DUMP mm:s");
        assert_int_equal(d->type, REDIS_REPLY_STRING);
        h_expect_status(cc[i], "OK", "RESTORE mm:r 0 %b FREQ 100", d->str, d->len);
        h_expect_int(cc[i], 100, "OBJECT FREQ mm:r");
        freeReplyObject(d);
    }
    both("CONFIG SET maxmemory-policy noeviction");
    both("FLUSHALL");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_keyspace_hits),
        cmocka_unit_test(test_diff_info_fields),
        cmocka_unit_test(test_diff_features_off),
        cmocka_unit_test(test_diff_maxmemory),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
