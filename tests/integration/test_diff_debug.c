/*
 * test_diff_debug — DEBUG against Debian's redis-server, both started with
 * enable-debug-command yes: DIGEST and DIGEST-VALUE of the same data (the
 * five types, expiries, several databases, seeded random writes), the
 * subcommands' replies and errors, PROTOCOL's bytes in RESP2 and RESP3,
 * OBJECT's encoding; and what servers left at the default answer.
 */
#include "diff_fixture.h"

static const char *const DEBUG_ON[] = {"--enable-debug-command", "yes", NULL};

static int debug_setup(void **state)
{
    (void)state;
    return diff_setup(DEBUG_ON, DEBUG_ON);
}

/* Sends argv to both servers; fails unless the replies are the same. */
static void both_argv(int ac, const char **av, const size_t *al)
{
    redisReply *a = redisCommandArgv(cr, ac, av, al), *b = redisCommandArgv(ck, ac, av, al);
    if (!a || !b || !same(a, b)) {
        char ra[1024], rb[1024], line[256];
        size_t u = 0;
        for (int i = 0; i < ac && u < sizeof line - 1; i++)
            u += (size_t)snprintf(line + u, sizeof line - u, "%s%.*s", i ? " " : "",
                                  (int)(al[i] < 40 ? al[i] : 40), av[i]);
        fail_msg("%s: redis-server %s, shmkvd %s", line, show(a, ra, sizeof ra),
                 show(b, rb, sizeof rb));
    }
    freeReplyObject(a);
    freeReplyObject(b);
}

/* The same for a command written as words separated by spaces. */
static void both(const char *line)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", line);
    const char *av[64];
    size_t al[64];
    int ac = 0;
    for (char *t = strtok(buf, " "); t && ac < 64; t = strtok(NULL, " ")) {
        av[ac] = t;
        al[ac++] = strlen(t);
    }
    both_argv(ac, av, al);
}

/* DIGEST, and DIGEST-VALUE of every key of databases 0 to 7 (and one that
 * is absent), the same on both servers. */
static void same_digests(const char *what)
{
    redisReply *a = redisCommand(cr, "DEBUG DIGEST"), *b = redisCommand(ck, "DEBUG DIGEST");
    assert_true(a && b && a->type == REDIS_REPLY_STATUS);
    if (!same(a, b))
        fail_msg("%s: DEBUG DIGEST: redis-server %s, shmkvd %s", what, a->str, b->str);
    freeReplyObject(a);
    freeReplyObject(b);
    for (int db = 0; db < 8; db++) {
        freeReplyObject(redisCommand(cr, "SELECT %d", db));
        freeReplyObject(redisCommand(ck, "SELECT %d", db));
        redisReply *keys = redisCommand(cr, "KEYS *");
        const char **av = malloc((keys->elements + 3) * sizeof *av);
        size_t *al = malloc((keys->elements + 3) * sizeof *al);
        av[0] = "DEBUG", av[1] = "DIGEST-VALUE", av[2] = "absent-key";
        al[0] = 5, al[1] = 12, al[2] = 10;
        for (size_t i = 0; i < keys->elements; i++) {
            av[i + 3] = keys->element[i]->str;
            al[i + 3] = keys->element[i]->len;
        }
        both_argv((int)keys->elements + 3, av, al);
        free(av);
        free(al);
        freeReplyObject(keys);
    }
    freeReplyObject(redisCommand(cr, "SELECT 0"));
    freeReplyObject(redisCommand(ck, "SELECT 0"));
}

/* A score written as "%.17g" writes it, from a seeded mix of integers,
 * fractions, tiny and huge magnitudes, and the infinities. */
static void rnd_score(char *out, size_t cap)
{
    switch (pick(6)) {
    case 0:
        snprintf(out, cap, "%d", pick(2001) - 1000);
        break;
    case 1:
        snprintf(out, cap, "%.17g", (double)(pick(2000001) - 1000000) / (double)(1 + pick(999)));
        break;
    case 2:
        snprintf(out, cap, "%.17g", ((double)rnd() / 18446744073709551616.0) * 1e-300);
        break;
    case 3:
        snprintf(out, cap, "%.17g", ((double)rnd() / 18446744073709551616.0 - 0.5) * 1e300);
        break;
    case 4:
        snprintf(out, cap, "%s", pick(2) ? "inf" : "-inf");
        break;
    default:
        snprintf(out, cap, "%.17g", (double)(pick(1000)) / 10.0);
    }
}

/* Both servers get the same data set: strings (an integer, an empty one,
 * binary bytes), lists, hashes, sets (intset and not), sorted sets
 * (listpack and skiplist sizes, scores of every form), some with
 * expiries, in databases 0, 1 and 7; then it changes, and is flushed. The
 * digests agree at each step. */
static void test_diff_digest_dataset(void **state)
{
    (void)state;
    rng = 0x444947; /* "DIG" */
    same_digests("empty");
    h_expect_status(ck, "0000000000000000000000000000000000000000", "DEBUG DIGEST");
    static const char *const lines[] = {
        "SET s1 hello",
        "SET n1 123",
        "SET n2 -9007199254740993",
        "RPUSH l1 a b c 1 2 a",
        "HSET h1 f v f2 v2 3 4",
        "SADD st1 1 2 3 -7",
        "SADD st2 a b c 1",
        "ZADD z1 0.1 a 1.5 b -0 c inf d -inf e 1e300 f 3 g 1e-7 h 123456789.123 i",
        "SETEX ttl1 1000 v",
        "RPUSH ttl2 x y",
        "EXPIRE ttl2 5000",
        "HSET ttl3 a b",
        "PEXPIRE ttl3 100000",
        "SELECT 1",
        "SET s1 hello",
        "SADD st1 1 2 3 -7",
        "SELECT 7",
        "ZADD z1 2 b 1 a",
        "SELECT 0",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        both(lines[i]);
    const char *bin[] = {"SET", "bin", "\x00\xff\r\n x"};
    both_argv(3, bin, (size_t[]){3, 3, 6});
    const char *empty[] = {"SET", "empty", ""};
    both_argv(3, empty, (size_t[]){3, 5, 0});
    same_digests("small values");
    /* Collections past Redis's listpack and intset sizes. */
    char m[64], sc[64];
    for (int i = 0; i < 700; i++) {
        snprintf(m, sizeof m, "m%d", pick(100000));
        rnd_score(sc, sizeof sc);
        const char *za[] = {"ZADD", "z2", sc, m};
        both_argv(4, za, (size_t[]){4, 2, strlen(sc), strlen(m)});
        const char *ha[] = {"HSET", "h2", m, sc};
        both_argv(4, ha, (size_t[]){4, 2, strlen(m), strlen(sc)});
        const char *sa[] = {"SADD", i % 2 ? "st3" : "st4", i % 2 ? m : m + 1};
        both_argv(3, sa, (size_t[]){4, 3, strlen(sa[2])});
        const char *la[] = {"RPUSH", "l2", m};
        both_argv(3, la, (size_t[]){5, 2, strlen(m)});
    }
    both("EXPIRE z2 9999");
    same_digests("large collections");
    static const char *const changes[] = {
        "DEL s1",        "HDEL h1 f",    "LPOP l1",           "ZINCRBY z1 0.25 a",
        "PERSIST ttl1",  "SREM st1 2",   "RENAME n1 n3",      "MOVE st2 7",
        "EXPIRE l1 100", "SET s1 other", "LSET l2 5 changed",
    };
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++)
        both(changes[i]);
    same_digests("changed");
    both("SWAPDB 0 7"); /* the digest mixes each database's number in */
    same_digests("swapped");
    both("SWAPDB 0 7");
    both("FLUSHDB");
    same_digests("db 0 flushed");
    both("FLUSHALL");
    same_digests("flushed");
    h_expect_status(ck, "0000000000000000000000000000000000000000", "DEBUG DIGEST");
}

/* Seeded random writes over a few keys of each type in three databases,
 * the replies compared as they come and the digests every 40 steps. */
static void test_diff_digest_random(void **state)
{
    (void)state;
    rng = 0x52414e44; /* "RAND" */
    size_t checks = 0;
    for (int step = 1; step <= 2000; step++) {
        char key[16], a1[64], a2[64];
        /* s strings, l lists, h hashes, t sets, z sorted sets */
        int type = pick(5);
        snprintf(key, sizeof key, "%c%d", "slhtz"[type], pick(6));
        snprintf(a1, sizeof a1, "e%d", pick(12));
        rnd_score(a2, sizeof a2);
        const char *av[5];
        size_t al[5];
        int ac = 0;
        static const int first[] = {0, 10, 14, 5, 17}, count[] = {3, 4, 3, 3, 4};
        int op = pick(10) == 0 ? 100 : first[type] + pick(count[type]);
        switch (op) {
        case 100: /* any type, now and then */
            ac = 3, av[0] = "EXPIRE", av[2] = "1000";
            break;
        case 0:
            ac = 3, av[0] = "SET", av[2] = a1;
            break;
        case 1:
            ac = 3, av[0] = "APPEND", av[2] = a1;
            break;
        case 2:
            ac = 2, av[0] = "INCR";
            break;
        case 5:
            ac = 3, av[0] = "SADD", av[2] = a1;
            break;
        case 6:
            ac = 3, av[0] = "SREM", av[2] = a1;
            break;
        case 7:
            ac = 2, av[0] = "PERSIST";
            break;
        case 10:
        case 11:
            ac = 3, av[0] = step % 2 ? "RPUSH" : "LPUSH", av[2] = a1;
            break;
        case 12:
            ac = 2, av[0] = "LPOP";
            break;
        case 13:
            ac = 2, av[0] = "PERSIST";
            break;
        case 14:
            ac = 4, av[0] = "HSET", av[2] = a1, av[3] = a2;
            break;
        case 15:
            ac = 3, av[0] = "HDEL", av[2] = a1;
            break;
        case 16:
            ac = 4, av[0] = "HINCRBY", av[2] = a1, av[3] = "3";
            break;
        case 17:
        case 18:
            ac = 4, av[0] = "ZADD", av[2] = a2, av[3] = a1;
            break;
        case 19:
            ac = 3, av[0] = "ZREM", av[2] = a1;
            break;
        default:
            ac = 4, av[0] = "ZINCRBY", av[2] = "0.5", av[3] = a1;
        }
        av[1] = key;
        for (int i = 0; i < ac; i++)
            al[i] = strlen(av[i]);
        if (step % 97 == 0) {
            char sel[16];
            snprintf(sel, sizeof sel, "SELECT %d", pick(3));
            both(sel);
        }
        both_argv(ac, av, al);
        if (step % 40 == 0) {
            same_digests("random writes");
            checks++;
        }
    }
    printf("test_diff: DEBUG DIGEST and DIGEST-VALUE agree after 2000 random writes (%zu checks)\n",
           checks);
    both("FLUSHALL");
}

/* The subcommands' answers and errors, as redis-server gives them. */
static void test_diff_debug_replies(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "DEBUG nosuch",
        "DEBUG jmap",
        "DEBUG Help x",
        "DEBUG digest x",
        "DEBUG sleep",
        "DEBUG sleep abc",
        "DEBUG sleep 0.01",
        "DEBUG sleep -1",
        "DEBUG sleep 1 2",
        "DEBUG object",
        "DEBUG object nokey",
        "DEBUG object a b",
        "DEBUG reload x",
        "DEBUG reload",
        "DEBUG reload merge NOFLUSH",
        "DEBUG set-active-expire",
        "DEBUG set-active-expire abc",
        "DEBUG set-active-expire 1",
        "DEBUG quicklist-packed-threshold",
        "DEBUG quicklist-packed-threshold abc",
        "DEBUG quicklist-packed-threshold 0",
        "DEBUG quicklist-packed-threshold -1",
        "DEBUG quicklist-packed-threshold 5gb",
        "DEBUG quicklist-packed-threshold 4gb",
        "DEBUG quicklist-packed-threshold 4095mb",
        "DEBUG quicklist-packed-threshold 4096mb",
        "DEBUG quicklist-packed-threshold 1KB",
        "DEBUG quicklist-packed-threshold 99999999999999999999999",
        "DEBUG change-repl-id x",
        "DEBUG change-repl-id",
        "DEBUG listpack",
        "DEBUG listpack nokey",
        "DEBUG quicklist nokey",
        "DEBUG quicklist nokey 1 2",
        "DEBUG stringmatch-test x",
        "DEBUG mallctl",
        "DEBUG mallctl nosuch",
        "DEBUG mallctl arenas.narenas",
        "DEBUG mallctl arenas.narenas 4",
        "DEBUG mallctl arenas.narenas abc",
        "DEBUG mallctl-str nosuch",
        "DEBUG log hello",
        "DEBUG error hello",
        "DEBUG error",
        "DEBUG populate",
        "DEBUG populate abc",
        "DEBUG populate -1",
        "DEBUG populate 0",
        "DEBUG populate 30",
        "DEBUG populate 20 p 3",
        "DEBUG populate 20 q 12",
        "DEBUG populate 2 pre -3",
        "DEBUG populate 2 pre abc",
        "DBSIZE",
        "GET q:7",
        "RPUSH l a b c",
        "HSET h f v",
        "SADD s a",
        "SET str x",
        "DEBUG listpack h",
        "DEBUG listpack l",
        "DEBUG listpack s",
        "DEBUG listpack str",
        "DEBUG quicklist l",
        "DEBUG quicklist l 1",
        "DEBUG quicklist h",
        "DEBUG protocol string",
        "DEBUG protocol integer",
        "DEBUG protocol double",
        "DEBUG protocol bignum",
        "DEBUG protocol null",
        "DEBUG protocol array",
        "DEBUG protocol set",
        "DEBUG protocol map",
        "DEBUG protocol attrib",
        "DEBUG protocol push",
        "DEBUG protocol verbatim",
        "DEBUG protocol true",
        "DEBUG protocol false",
        "DEBUG protocol nosuch",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        both(lines[i]);
    same_digests("after POPULATE");
    /* Line breaks in ERROR's text become spaces; neither counts it as an
     * error in INFO. */
    both("CONFIG RESETSTAT");
    const char *err[] = {"DEBUG", "ERROR", "two\r\nlines"};
    both_argv(3, err, (size_t[]){5, 5, 11});
    both("INFO errorstats");
    /* OBJECT's encoding, and Redis's field names in Redis's order. */
    static const char *const keys[] = {"l", "h", "s", "str", "q:7", "key:1"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        redisReply *a = redisCommand(cr, "DEBUG OBJECT %s", keys[i]);
        redisReply *b = redisCommand(ck, "DEBUG OBJECT %s", keys[i]);
        assert_true(a->type == REDIS_REPLY_STATUS && b->type == REDIS_REPLY_STATUS);
        char ea[64] = "", eb[64] = "", na[256] = "", nb[256] = "";
        sscanf(strstr(a->str, "encoding:"), "encoding:%63s", ea);
        sscanf(strstr(b->str, "encoding:"), "encoding:%63s", eb);
        if (strcmp(ea, eb))
            fail_msg("DEBUG OBJECT %s: redis-server %s, shmkvd %s", keys[i], a->str, b->str);
        /* The names of the first six fields. */
        const char *src[2] = {a->str, b->str};
        char *dst[2] = {na, nb};
        for (int k = 0; k < 2; k++) {
            const char *p = src[k];
            for (int f = 0; f < 6 && p; f++) {
                const char *colon = strchr(p, ':');
                strncat(dst[k], p, (size_t)(colon - p + 1));
                p = strchr(colon, ' ');
                p = p ? p + 1 : NULL;
            }
        }
        assert_string_equal(na, nb);
        freeReplyObject(a);
        freeReplyObject(b);
    }
    both("FLUSHALL");
}

/* Reads exactly `replies` whole replies to line from fd, raw. */
static char *raw_replies(int fd, const char *line, int replies, size_t *len)
{
    send_line(fd, line);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        size_t at = 0;
        int got = 0;
        for (size_t l; got < replies && (l = r3_reply_len(buf + at, n - at)); got++)
            at += l;
        if (got == replies && at == n) {
            *len = n;
            return buf;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r <= 0)
            fail_msg("%s: no whole reply (%zu bytes)", line, n);
        n += (size_t)r;
    }
}

/* PROTOCOL's bytes, in RESP2 and then RESP3 (push: a push, then a reply). */
static void test_diff_debug_protocol(void **state)
{
    (void)state;
    static const char *const types[] = {"string",   "integer", "double", "bignum", "null",
                                        "array",    "set",     "map",    "attrib", "push",
                                        "verbatim", "true",    "false",  "nosuch"};
    int fr = r3_connect(R.port), fk = r3_connect(K.port);
    for (int resp = 2; resp <= 3; resp++) {
        if (resp == 3) {
            size_t n;
            free(r3_call(fr, "HELLO 3", &n));
            free(r3_call(fk, "HELLO 3", &n));
        }
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
            char line[64];
            snprintf(line, sizeof line, "DEBUG PROTOCOL %s", types[i]);
            /* A push is two replies; an attribute is read as its four parts. */
            int replies = resp < 3                      ? 1
                          : !strcmp(types[i], "push")   ? 2
                          : !strcmp(types[i], "attrib") ? 4
                                                        : 1;
            size_t na, nk;
            char *a = raw_replies(fr, line, replies, &na), *b = raw_replies(fk, line, replies, &nk);
            if (na != nk || memcmp(a, b, na))
                fail_msg("RESP%d %s: redis-server %.*s, shmkvd %.*s", resp, line, (int)na, a,
                         (int)nk, b);
            free(a);
            free(b);
        }
    }
    close(fr);
    close(fk);
}

/* Servers left at the default refuse DEBUG alike, before and inside
 * MULTI, and neither lets CONFIG SET change that. */
static void test_diff_debug_refused(void **state)
{
    (void)state;
    struct server r2, k2;
    h_start_redis(&r2, "redis-nodebug");
    h_prepare(&k2, "nodebug");
    h_start_shmkvd_opts(&k2, NULL);
    redisContext *a = h_connect_port(r2.port), *b = h_connect_port(k2.port);
    assert_true(a && b);
    static const char *const lines[] = {
        "DEBUG",
        "DEBUG HELP",
        "DEBUG DIGEST",
        "DEBUG nosuch",
        "CONFIG GET enable-debug-command",
        "CONFIG SET enable-debug-command yes",
        "CONFIG SET enable-debug-command local",
        "MULTI",
        "DEBUG SLEEP 0",
        "EXEC",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        redisReply *x = redisCommand(a, lines[i]), *y = redisCommand(b, lines[i]);
        if (!x || !y || !same(x, y)) {
            char rx[1024], ry[1024];
            fail_msg("%s: redis-server %s, shmkvd %s", lines[i], show(x, rx, sizeof rx),
                     show(y, ry, sizeof ry));
        }
        freeReplyObject(x);
        freeReplyObject(y);
    }
    redisFree(a);
    redisFree(b);
    assert_int_equal(h_stop(&k2), 0);
    h_destroy(&k2);
    h_destroy(&r2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_digest_dataset), cmocka_unit_test(test_diff_digest_random),
        cmocka_unit_test(test_diff_debug_replies),  cmocka_unit_test(test_diff_debug_protocol),
        cmocka_unit_test(test_diff_debug_refused),
    };
    return cmocka_run_group_tests(tests, debug_setup, group_teardown);
}
