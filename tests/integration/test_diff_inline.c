/*
 * test_diff_inline — small hashes, sets, sorted sets and lists across
 * Redis's encoding thresholds, against redis-server: collections grow one
 * element at a time past hash-max-listpack-entries, set-max-intset-entries,
 * zset-max-listpack-entries and list-max-listpack-size, take elements
 * longer than the -value limits or a set's first non-integer, shrink again
 * (no conversion back), and change under CONFIG SET of those limits in
 * between. After every write
 * the reply, OBJECT ENCODING, the whole collection, its size, and the
 * reads libshmkv serves from the shared-memory cache (against
 * redis-server's replies) are compared.
 */
#include "diff_fixture.h"

static size_t compared, probed, served, whole, whole_served;

static void fail_cmd(int ac, const char **av, const char *what, const redisReply *a,
                     const redisReply *b)
{
    char ra[2048], rb[2048], cmd[512];
    size_t u = 0;
    for (int i = 0; i < ac && u < sizeof cmd - 80; i++)
        u += (size_t)snprintf(cmd + u, sizeof cmd - u, "%.60s ", av[i]);
    fail_msg("after %zu: %s%s: redis-server %s, shmkvd %s", compared, what, cmd,
             show(a, ra, sizeof ra), show(b, rb, sizeof rb));
}

/* Sends av to both servers and compares the replies, groups of stride
 * elements sorted first when sorted (a hash's or set's order is its
 * encoding's). */
static void cmp_argv(int ac, const char **av, size_t stride)
{
    redisReply *a = redisCommandArgv(cr, ac, av, NULL), *b = redisCommandArgv(ck, ac, av, NULL);
    assert_true(a && b);
    if (stride) {
        sort_groups(a, stride);
        sort_groups(b, stride);
    }
    if (!same(a, b))
        fail_cmd(ac, av, "", a, b);
    freeReplyObject(a);
    freeReplyObject(b);
    compared++;
}

/* A command from a format (words separated by one space), compared. */
static void cmpf(size_t stride, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    const char *av[32];
    cmp_argv(diff_words(line, av, 32), av, stride);
}

/* The read line through libshmkv and from peer (redis-server's
 * connection, or shmkvd's own socket for whole-collection reads, whose
 * order differs from Redis's for hashes and sets: cmpf compares the two
 * servers' contents sorted); counts into *n and, if it was served from
 * the cache, *served_n. */
static void probe_on(redisContext *peer, size_t *n, size_t *served_n, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    const char *av[32];
    int ac = diff_words(line, av, 32);
    uint64_t before = h_lib_hits(pk);
    shmkv_reply *a;
    if (shmkv_command(pk, &a, ac, av, NULL) != SHMKV_OK)
        fail_msg("libshmkv: %s", shmkv_errmsg());
    *served_n += h_lib_hits(pk) > before;
    redisReply *b = redisCommandArgv(peer, ac, av, NULL);
    if (!h_same_reply(a, b)) {
        char rb[1024];
        fail_msg("after %zu: libshmkv %s: type %d '%s', %zu elements; %s %s", compared, line,
                 a->type, a->str ? a->str : "", a->elements, peer == ck ? "shmkvd" : "redis-server",
                 show(b, rb, sizeof rb));
    }
    shmkv_reply_free(a);
    freeReplyObject(b);
    (*n)++;
}

static void probe(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    probe_on(cr, &probed, &served, fmt, ap);
    va_end(ap);
}

static void probe_whole(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    probe_on(ck, &whole, &whole_served, fmt, ap);
    va_end(ap);
}

/* Every view of key compared: encoding, contents, size; and field f
 * through the cache. */
static void check(const char *key, int type, const char *f)
{
    cmpf(0, "OBJECT ENCODING %s", key);
    cmpf(0, "TYPE %s", key);
    switch (type) {
    case 'h':
        cmpf(2, "HGETALL %s", key);
        cmpf(0, "HLEN %s", key);
        probe("HGET %s %s", key, f);
        probe("HMGET %s %s nosuch", key, f);
        probe("HEXISTS %s %s", key, f);
        probe("HLEN %s", key);
        probe_whole("HGETALL %s", key);
        probe_whole("HKEYS %s", key);
        probe_whole("HVALS %s", key);
        break;
    case 's':
        cmpf(1, "SMEMBERS %s", key);
        cmpf(0, "SCARD %s", key);
        probe("SISMEMBER %s %s", key, f);
        probe("SMISMEMBER %s %s nosuch", key, f);
        probe("SCARD %s", key);
        probe_whole("SMEMBERS %s", key);
        break;
    default:
        cmpf(0, "ZRANGE %s 0 -1 WITHSCORES", key);
        cmpf(0, "ZCARD %s", key);
        probe("ZSCORE %s %s", key, f);
        probe("ZMSCORE %s %s nosuch", key, f);
        probe("ZCARD %s", key);
        probe_whole("ZRANGE %s 0 -1 WITHSCORES", key);
        probe_whole("ZRANGE %s %d %d", key, pick(5) - 2, pick(9) - 4);
    }
}

/* Both servers' thresholds. */
static void limits(int hash_entries, int hash_value, int intset, int zset_entries, int zset_value)
{
    cmpf(0,
         "CONFIG SET hash-max-listpack-entries %d hash-max-listpack-value %d "
         "set-max-intset-entries %d zset-max-listpack-entries %d zset-max-listpack-value %d",
         hash_entries, hash_value, intset, zset_entries, zset_value);
}

/* Grows a key of each type to past the entries limit one element at a
 * time, then shrinks it: the encoding changes once, at the limit. */
static void test_diff_inline_grow(void **state)
{
    (void)state;
    limits(8, 16, 8, 8, 16);
    cmpf(0, "DEL h s z");
    for (int i = 0; i < 12; i++) {
        char f[16];
        snprintf(f, sizeof f, "%d", i * 7 - 20);
        cmpf(0, "HSET h f%s v%d", f, i);
        check("h", 'h', "f0");
        cmpf(0, "SADD s %s", f);
        check("s", 's', f);
        cmpf(0, "ZADD z %d m%s", i % 3, f);
        check("z", 'z', "m-20");
    }
    for (int i = 0; i < 11; i++) {
        char f[16];
        snprintf(f, sizeof f, "%d", i * 7 - 20);
        cmpf(0, "HDEL h f%s", f);
        check("h", 'h', "f50");
        cmpf(0, "SREM s %s", f);
        check("s", 's', "57");
        cmpf(0, "ZREM z m%s", f);
        check("z", 'z', "m57");
    }
    /* Shrunk below the limit, a collection stays in its large form until
     * it is deleted; a new one starts small. */
    cmpf(0, "DEL h s z");
    cmpf(0, "HSET h a 1");
    cmpf(0, "SADD s 1");
    cmpf(0, "ZADD z 1 a");
    check("h", 'h', "a");
    check("s", 's', "1");
    check("z", 'z', "a");
    printf("test_diff_inline_grow: %zu replies compared, %zu cache reads (%zu served)\n", compared,
           probed, served);
}

/* Elements too long for the small forms, and a set's non-integers. */
static void test_diff_inline_long(void **state)
{
    (void)state;
    limits(8, 16, 8, 8, 16);
    static const char *const members[] = {
        "01", "+1", " 1", "-0", "1.0", "9223372036854775808", "-9223372036854775808", "x"};
    for (size_t i = 0; i < sizeof members / sizeof *members; i++) {
        cmpf(0, "DEL s");
        cmpf(0, "SADD s 5 -3");
        const char *av[] = {"SADD", "s", members[i]};
        cmp_argv(3, av, 0);
        check("s", 's', "5");
    }
    /* a field of 16 bytes fits, 17 do not; the same for a value */
    cmpf(0, "DEL h h2 z");
    cmpf(0, "HSET h aaaaaaaaaaaaaaaa 1 b 2");
    check("h", 'h', "aaaaaaaaaaaaaaaa");
    cmpf(0, "HSET h c bbbbbbbbbbbbbbbbb");
    check("h", 'h', "c");
    cmpf(0, "HSET h2 x 1");
    cmpf(0, "HSETNX h2 y 12345678901234567");
    check("h2", 'h', "y");
    cmpf(0, "DEL h2");
    cmpf(0, "HSET h2 x 1");
    cmpf(0, "HINCRBY h2 x 5");
    cmpf(0, "HINCRBYFLOAT h2 f 1.5");
    check("h2", 'h', "f");
    cmpf(0, "ZADD z 1 a 2 mmmmmmmmmmmmmmmm");
    check("z", 'z', "mmmmmmmmmmmmmmmm");
    cmpf(0, "ZINCRBY z 5 a");
    check("z", 'z', "a");
    cmpf(0, "ZADD z 3 nnnnnnnnnnnnnnnnn");
    check("z", 'z', "nnnnnnnnnnnnnnnnn");
}

/* The stores and copies make new collections by the same rules. */
static void test_diff_inline_stores(void **state)
{
    (void)state;
    limits(8, 16, 8, 8, 16);
    cmpf(0, "DEL a b d e z1 z2 zd");
    cmpf(0, "SADD a 1 2 3 4 5 6");
    cmpf(0, "SADD b 4 5 6 7 8 9");
    cmpf(0, "SINTERSTORE d a b");
    check("d", 's', "5");
    cmpf(0, "SUNIONSTORE d a b");
    check("d", 's', "9");
    cmpf(0, "SDIFFSTORE d a b");
    check("d", 's', "1");
    cmpf(0, "SADD e x");
    cmpf(0, "SUNIONSTORE d a e");
    check("d", 's', "x");
    cmpf(0, "SMOVE a e2 1");
    check("e2", 's', "1");
    cmpf(0, "SMOVE e e2 x");
    check("e2", 's', "x");
    cmpf(0, "ZADD z1 1 a 2 b 3 c");
    cmpf(0, "ZADD z2 4 c 5 d");
    cmpf(0, "ZUNIONSTORE zd 2 z1 z2");
    check("zd", 'z', "c");
    cmpf(0, "ZINTERSTORE zd 2 z1 z2 WEIGHTS 2 3");
    check("zd", 'z', "c");
    cmpf(0, "ZRANGESTORE zd z1 0 1");
    check("zd", 'z', "a");
    cmpf(0, "ZADD z1 4 d 5 e 6 f 7 g 8 h 9 i");
    cmpf(0, "ZUNIONSTORE zd 2 z1 z2");
    check("zd", 'z', "i");
    cmpf(0, "COPY z2 zc");
    check("zc", 'z', "d");
    cmpf(0, "RENAME zc zr");
    check("zr", 'z', "d");
    cmpf(0, "HSET hh a 1 b 2");
    cmpf(0, "COPY hh hc");
    check("hc", 'h', "a");
    /* a copy keeps its source's encoding under limits lowered since */
    limits(1, 16, 1, 1, 16);
    cmpf(0, "COPY hh hc2");
    check("hc2", 'h', "b");
    cmpf(0, "RENAME hc2 hc3");
    check("hc3", 'h', "b");
    cmpf(0, "HSET hc3 b 3");
    check("hc3", 'h', "b");
    /* a new score moves a member, which Redis does not count as adding
     * one: no conversion, even past a lowered limit; a new member does */
    cmpf(0, "ZINCRBY zr 1 c");
    cmpf(0, "ZADD zr 9 d");
    check("zr", 'z', "d");
    cmpf(0, "ZADD zr 1 new");
    check("zr", 'z', "new");
    /* a scan of a small encoding returns it whole, whatever the cursor */
    limits(8, 16, 8, 8, 16);
    cmpf(0, "DEL sc");
    cmpf(0, "SADD sc 1 2 3 4 5");
    cmpf(0, "SSCAN sc 0 COUNT 2");
    cmpf(0, "SSCAN sc 3 COUNT 2");
    cmpf(0, "HSCAN hh 7");
}

/* Random writes to a few keys of each type while the limits change. */
static void test_diff_inline_random(void **state)
{
    (void)state;
    rng = 0x494e4c494e45ull; /* "INLINE" */
    cmpf(0, "FLUSHALL");
    static const char *const keys[] = {"h0", "h1", "s0", "s1", "z0", "z1"};
    for (int step = 0; step < 3000; step++) {
        if (step % 500 == 0)
            limits(4 + pick(40), 4 + pick(40), 4 + pick(40), 4 + pick(40), 4 + pick(40));
        const char *k = keys[pick(6)];
        int m = pick(60), len = pick(12) ? 1 + pick(8) : 30 + pick(20);
        char f[64];
        if (k[0] == 's' && pick(20))
            snprintf(f, sizeof f, "%d", m - 20);
        else
            snprintf(f, sizeof f, "%0*d", len, m);
        int op = pick(10);
        switch (k[0]) {
        case 'h':
            if (op < 6)
                cmpf(0, "HSET %s %s %0*d", k, f, pick(8) ? 2 : 40, pick(100));
            else if (op < 8)
                cmpf(0, "HDEL %s %s", k, f);
            else if (op < 9)
                cmpf(0, "HINCRBY %s n%d 3", k, pick(3));
            else
                cmpf(0, pick(10) ? "HSETNX %s %s x" : "DEL %s", k, f);
            check(k, 'h', f);
            break;
        case 's':
            if (op < 6)
                cmpf(0, "SADD %s %s", k, f);
            else if (op < 8)
                cmpf(0, "SREM %s %s", k, f);
            else if (op < 9)
                cmpf(0, "SMOVE %s %s %s", k, k[1] == '0' ? "s1" : "s0", f);
            else
                cmpf(0, pick(10) ? "SPOP %s 0" : "DEL %s", k);
            check(k, 's', f);
            break;
        default:
            if (op < 6)
                cmpf(0, "ZADD %s %d %s", k, pick(5), f);
            else if (op < 8)
                cmpf(0, "ZREM %s %s", k, f);
            else if (op < 9)
                cmpf(0, "ZINCRBY %s 1 %s", k, f);
            else
                cmpf(0, pick(10) ? "ZPOPMIN %s" : "DEL %s", k);
            check(k, 'z', f);
        }
    }
    printf("test_diff_inline: %zu replies compared, %zu cache reads (%zu served from it), %zu "
           "whole-collection reads (%zu served)\n",
           compared, probed, served, whole, whole_served);
    assert_true(served > probed / 4);
    assert_true(whole_served > whole / 8); /* large sets are per element: the daemon answers */
}

/* Lists: OBJECT ENCODING is quicklist at every size in Redis 7.0, so the
 * contents and the reads libshmkv serves are what is compared, while
 * lists cross list-max-listpack-size both ways (by count and by bytes). */
static void test_diff_inline_lists(void **state)
{
    (void)state;
    rng = 0x4c4953545321ull; /* "LISTS!" */
    cmpf(0, "FLUSHALL");
    static const char *const sizes[] = {"4", "9", "-1", "-2"};
    for (int step = 0; step < 4000; step++) {
        if (step % 400 == 0)
            cmpf(0, "CONFIG SET list-max-listpack-size %s", sizes[pick(4)]);
        const char *k = pick(2) ? "l0" : "l1";
        int len = pick(20) ? 1 + pick(6) : 300 + pick(1200);
        char v[1600];
        snprintf(v, sizeof v, "%0*d", len, pick(50));
        switch (pick(14)) {
        case 0:
        case 1:
            cmpf(0, "LPUSH %s %s", k, v);
            break;
        case 2:
        case 3:
            cmpf(0, "RPUSH %s %s %d", k, v, pick(9));
            break;
        case 4:
            cmpf(0, "LPOP %s", k);
            break;
        case 5:
            cmpf(0, "RPOP %s %d", k, 1 + pick(3));
            break;
        case 6:
            cmpf(0, "LINSERT %s %s %d %s", k, pick(2) ? "BEFORE" : "AFTER", pick(9), v);
            break;
        case 7:
            cmpf(0, "LREM %s %d %d", k, pick(5) - 2, pick(9));
            break;
        case 8:
            cmpf(0, "LSET %s %d %s", k, pick(10) - 5, v);
            break;
        case 9:
            cmpf(0, "LTRIM %s %d %d", k, pick(4), pick(20) - 4);
            break;
        case 10:
            cmpf(0, "LMOVE %s %s %s %s", k, pick(2) ? "l0" : "l1", pick(2) ? "LEFT" : "RIGHT",
                 pick(2) ? "LEFT" : "RIGHT");
            break;
        case 11:
            cmpf(0, "LPOS %s %d RANK %d", k, pick(9), pick(2) ? 1 : -1);
            break;
        case 12:
            cmpf(0, pick(20) ? "LRANGE %s 1 -2" : "DEL %s", k);
            break;
        default:
            cmpf(0, "RPUSHX %s %d", k, pick(9));
        }
        cmpf(0, "LRANGE %s 0 -1", k);
        cmpf(0, "OBJECT ENCODING %s", k);
        probe("LLEN %s", k);
        probe("LINDEX %s %d", k, pick(8) - 4);
        probe_whole("LRANGE %s 0 -1", k);
        probe_whole("LRANGE %s %d %d", k, pick(8) - 4, pick(12) - 6);
    }
    printf("test_diff_inline_lists: %zu replies compared, %zu cache reads (%zu served), %zu "
           "whole-collection reads (%zu served)\n",
           compared, probed, served, whole, whole_served);
    assert_true(whole_served > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_inline_grow),   cmocka_unit_test(test_diff_inline_long),
        cmocka_unit_test(test_diff_inline_stores), cmocka_unit_test(test_diff_inline_random),
        cmocka_unit_test(test_diff_inline_lists),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
