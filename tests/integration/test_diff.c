/*
 * test_diff — differential test: seeded random command sequences over the
 * five types and the key space, sent to Debian's redis-server and to shmkvd,
 * replies compared.
 *
 *   SHMKV_DIFF_SEED=n   the seed (default 1)
 *   SHMKV_DIFF_COUNT=n  commands per run (default 20000)
 *   SHMKV_DIFF_TRACE=1  print every command, numbered (to study a mismatch)
 *
 * Replies are compared exactly, except where Redis leaves the order
 * unspecified (SMEMBERS, HGETALL, set algebra, KEYS, SCAN: as multisets),
 * where a value is random by definition (SRANDMEMBER & co.: by length), and
 * where time passes between the two servers (TTLs: within a tolerance).
 * Commands whose outcome depends on randomness (SPOP) only ever take all.
 *
 * The shm cache: after every command, a cacheable read of the key it named
 * (GET, HMGET, SISMEMBER, ZSCORE, LINDEX, TYPE, ...) goes through libshmkv,
 * which answers from shared memory when it can, and is compared with
 * redis-server's answer: so the cache never disagrees with storage after
 * any write command. The run reports how many of those reads the cache
 * served.
 *
 * Keyspace notifications: the random run (and the GEO and HyperLogLog
 * runs) enable notify-keyspace-events KEAn on both servers, with a
 * subscriber to every keyspace and keyevent channel on each; every few
 * commands the two event streams so far are compared, in order.
 *
 * DUMP and RESTORE: values move both ways between the servers, and
 * payloads in the encodings only older Redis writes (tests/t_rdb.h) are
 * restored into both.
 */
#include "harness.h"

#include <stdint.h>

#include "h_client.h"
#include "t_rdb.h"

static struct server R, K; /* redis-server, shmkvd */
static redisContext *cr, *ck;
static redisContext *pr; /* redis-server, for the cache probes */
static shmkv *pk;        /* shmkvd through libshmkv */

/* ---- random generation ---- */

static uint64_t rng;

static uint64_t rnd(void)
{
    return t_rnd(&rng);
}

static int pick(int n)
{
    return (int)(rnd() % (uint64_t)n);
}

/* The command being built: argv strings in a small arena. */
static char arena[8192];
static size_t used;
static const char *argv[64];
static size_t argl[64];
static int argc;

static void add(const char *s)
{
    size_t n = strlen(s);
    memcpy(arena + used, s, n + 1);
    argv[argc] = arena + used;
    argl[argc++] = n;
    used += n + 1;
}

static void addf(const char *fmt, long long v)
{
    char b[64];
    snprintf(b, sizeof b, fmt, v);
    add(b);
}

/* Each type family draws mostly from its own keys, sometimes from the shared
 * ones, so type clashes happen without drowning everything in WRONGTYPE. */
static const char *const keys[] = {"k0", "k1", "k2", "{t}a", "{t}b"};
static char fam; /* 's' strings, 'h' hashes, 'S' sets, 'z' zsets, 'l' lists, 0 any */
static const char *const lexkeys[] = {"L0", "L1"}; /* zsets where every score is 0 */
static const char *const mems[] = {"a", "b", "c", "d", "e", "1", "2", "10", "-3", ""};
static const char *const scores[] = {"0",  "1",    "2",    "2.5",  "-1.5",
                                     "10", "-inf", "+inf", "1e-5", "3"};
static const char *const floats[] = {"1.5", "-0.25", "10", "1e2", "abc", "0", "3.0e-3"};

/* The argument the cache probe reads after a command: its first key. */
static int probe_arg;

static void key(void)
{
    static const char fams[] = "shSzl";
    char f = fam ? fam : fams[pick(5)];
    if (pick(5) == 0) {
        add(keys[pick(5)]);
        return;
    }
    char k[8] = {f, (char)('0' + pick(4)), 0};
    add(k);
}

static void mem(void)
{
    add(mems[pick(10)]);
}

static void small_int(int lo, int hi)
{
    addf("%lld", lo + pick(hi - lo + 1));
}

static void value(void)
{
    static const char *const v[] = {"v", "hello", "12", "-7", "3.5", "", "x y", "0"};
    add(v[pick(8)]);
}

static void score_bound(void)
{
    static const char *const b[] = {"-inf", "+inf", "0", "(0", "1", "(1", "2.5", "(2.5", "10"};
    add(b[pick(9)]);
}

static void lex_bound(void)
{
    static const char *const b[] = {"-", "+", "[a", "(a", "[c", "(c", "[e", "(b", "[", "(zz"};
    add(b[pick(10)]);
}

/* How a reply pair is compared. */
enum cmp { EXACT, UNORDERED, PAIRS, LENGTH, TTL_S, TTL_MS, SCAN };

/* The less common commands, one in twenty draws. */
static enum cmp gen_extra(void)
{
    fam = 0;
    switch (pick(20)) {
    case 0:
        fam = 's', add("SETEX"), key(), add("1000"), value();
        return EXACT;
    case 1:
        fam = 's', add("PSETEX"), key(), add(pick(2) ? "1000000" : "0"), value();
        return EXACT;
    case 2:
        fam = 'h', add("HMSET"), key(), mem(), value(), mem(), value();
        return EXACT;
    case 3:
        fam = 's', add("SUBSTR"), key(), small_int(-4, 4), small_int(-4, 4);
        return EXACT;
    case 4:
        add("UNLINK"), key(), key();
        return EXACT;
    case 5: {
        /* Absolute times far ahead: both servers store the same instants,
         * so GT and LT compare the same way on both. */
        static const char *const secs[] = {"4102444800", "4102444900", "4102445000"};
        static const char *const msecs[] = {"4102444800123", "4102444850000", "4102445000000"};
        static const char *const f[] = {NULL, "NX", "XX", "GT", "LT"};
        add(pick(2) ? "EXPIREAT" : "PEXPIREAT"), key();
        add(argv[0][0] == 'E' ? secs[pick(3)] : msecs[pick(3)]);
        const char *fl = f[pick(5)];
        if (fl)
            add(fl);
        return EXACT;
    }
    case 6:
        add("PEXPIRETIME"), key();
        return TTL_MS; /* relative EXPIREs land a millisecond apart */
    case 7:
        fam = 'S', add("SSCAN"), key(), add("0"), add("COUNT"), add("1000");
        if (pick(2))
            add("MATCH"), add("[a-c]");
        return SCAN;
    case 8:
        fam = 'z', add("ZSCAN"), key(), add("0"), add("COUNT"), add("1000");
        return SCAN;
    case 9:
        add("RANDOMKEY");
        return LENGTH;
    case 10: {
        /* LMPOP/ZMPOP, or their blocking forms a tenth of the time (a
         * timeout costs redis-server a tick). */
        fam = pick(2) ? 'l' : 'z';
        bool block = pick(10) == 0;
        if (block)
            add(fam == 'l' ? "BLMPOP" : "BZMPOP"), add("0.01");
        else
            add(fam == 'l' ? "LMPOP" : "ZMPOP");
        int n = 1 + pick(2);
        addf("%lld", n);
        probe_arg = argc;
        for (int j = 0; j < n; j++)
            key();
        if (fam == 'l')
            add(pick(2) ? "LEFT" : "RIGHT");
        else
            add(pick(2) ? "MIN" : "MAX");
        if (pick(2))
            add("COUNT"), small_int(0, 3);
        return EXACT;
    }
    case 11:
        fam = 'z', add(pick(2) ? "BZPOPMIN" : "BZPOPMAX"), key();
        if (pick(2))
            key();
        add(pick(2) ? "0.01" : "-1");
        return EXACT;
    case 12: {
        fam = 'z', add("ZINTERCARD");
        int n = 1 + pick(3);
        addf("%lld", n);
        for (int j = 0; j < n; j++)
            key();
        if (pick(2))
            add("LIMIT"), small_int(0, 2);
        return EXACT;
    }
    case 13:
        add("MOVE"), key(), small_int(0, 2);
        return EXACT;
    case 14:
        /* Bits of the strings' values ("12", "hello", ...) and beyond. */
        fam = 's';
        if (pick(2))
            add("SETBIT"), key(), small_int(-1, 70), small_int(0, pick(8) ? 1 : 2);
        else
            add("GETBIT"), key(), small_int(-1, 70);
        return EXACT;
    case 15: {
        fam = 's';
        bool pos = pick(2);
        add(pos ? "BITPOS" : "BITCOUNT"), key();
        if (pos)
            small_int(0, pick(8) ? 1 : 2);
        int n = pick(4); /* start, end, unit: each needs the one before */
        if (n >= 1)
            small_int(-12, 12);
        if (n >= 2 || (!pos && n == 1))
            small_int(-12, 40);
        if (n == 3)
            add(pick(2) ? "BIT" : "BYTE");
        return EXACT;
    }
    case 19: {
        /* DUMP (compared as nil or not: each server writes its own
         * encodings), or RESTORE of what DUMP gives for a key on the same
         * server: the payload argument is a placeholder, "\1" and the key,
         * replaced by each server's DUMP when sent (send_gen()). */
        if (pick(4) == 0) {
            add("DUMP"), key();
            return LENGTH;
        }
        static const char *const ttls[] = {"0", "0", "100000", "1"};
        int t = pick(4);
        add("RESTORE"), key(), add(ttls[t]);
        key();
        char ph[16];
        snprintf(ph, sizeof ph, "\1%s", argv[--argc]);
        used -= strlen(ph);
        add(ph);
        if (pick(2))
            add("REPLACE");
        if (t == 3)
            add("ABSTTL"); /* long past: nothing is kept */
        if (pick(6) == 0)
            add("IDLETIME"), add("0");
        return EXACT;
    }
    case 18: {
        /* BITFIELD: small signed and unsigned fields over the strings'
         * values, each overflow rule, now and then an argument error. */
        static const char *const types[] = {"u1", "i1",  "u4",  "i5",  "u8",
                                            "i8", "i16", "u63", "i64", "u64"};
        static const char *const rules[] = {"WRAP", "SAT", "FAIL"};
        static const char *const vals[] = {"0",
                                           "1",
                                           "-1",
                                           "7",
                                           "100",
                                           "-100",
                                           "300",
                                           "9223372036854775807",
                                           "-9223372036854775808",
                                           "x"};
        fam = 's';
        bool ro = pick(5) == 0;
        add(ro ? "BITFIELD_RO" : "BITFIELD"), key();
        for (int n = 1 + pick(3); n > 0; n--) {
            int op = ro ? 0 : pick(3);
            if (op && pick(2))
                add("OVERFLOW"), add(rules[pick(3)]);
            add(op == 0 ? "GET" : op == 1 ? "SET" : "INCRBY");
            add(types[pick(pick(10) ? 9 : 10)]);
            if (pick(4) == 0)
                addf("#%lld", pick(4));
            else
                small_int(0, 40);
            if (op)
                add(vals[pick(pick(10) ? 9 : 10)]);
        }
        return EXACT;
    }
    case 17: {
        /* SORT: by the elements or by string keys "s<element>" (equal
         * weights fall back to the elements' bytes); GET from those and
         * from hash fields. Left out, as Redis's order is open there:
         * ALPHA with BY (ties), and BY nosort unless stored, since any key
         * may hold a set (RENAME, COPY), whose order Redis leaves to its
         * hash seed unless the result is stored. */
        static const char fams[] = "lSz";
        fam = fams[pick(3)];
        bool ro = pick(4) == 0, alpha = pick(2), by = pick(3) == 0;
        bool store = !ro && (by ? pick(2) : pick(4) == 0);
        add(ro ? "SORT_RO" : "SORT"), key();
        if (by && (store || !alpha))
            add("BY"), add(store && (alpha || pick(2)) ? "nosort" : "s*");
        if (pick(3) == 0)
            add("LIMIT"), small_int(-1, 2), small_int(-1, 3);
        for (int g = pick(3); g > 0; g--)
            add("GET"), add(pick(3) == 0 ? "#" : pick(2) ? "s*" : "h*->a");
        if (pick(2))
            add(pick(2) ? "ASC" : "DESC");
        if (alpha)
            add("ALPHA");
        if (store)
            add("STORE"), fam = 'l', key();
        return EXACT;
    }
    case 16: {
        static const char *const ops[] = {"AND", "OR", "XOR", "NOT"};
        fam = 's';
        int op = pick(4);
        add("BITOP"), add(ops[op]), key(), key();
        if (op != 3 || pick(8) == 0)
            key();
        return EXACT;
    }
    default:
        fam = 'z', add("ZRANGESTORE"), key(), key();
        if (pick(2))
            score_bound(), score_bound(), add("BYSCORE");
        else
            small_int(-3, 3), small_int(-3, 3);
        if (pick(2))
            add("REV");
        return EXACT;
    }
}

/* Builds one random command into argv; returns how to compare it. */
static enum cmp gen(void)
{
    used = 0;
    argc = 0;
    probe_arg = 1;
    if (pick(20) == 0)
        return gen_extra();
    int which = pick(100);
    fam = which < 17   ? 's'
          : which < 27 ? 0
          : which < 39 ? 'h'
          : which < 49 ? 'S'
          : which < 67 ? 'z'
          : which < 83 ? 'l'
                       : 0;
    /* Strings */
    if (which < 4) {
        add("SET"), key(), value();
        int o = pick(8);
        if (o == 1)
            add("NX");
        else if (o == 2)
            add("XX");
        else if (o == 3)
            add("GET");
        else if (o == 4)
            add("EX"), add("1000");
        else if (o == 5)
            add("KEEPTTL");
        else if (o == 6)
            add("PX"), add("0");
        return EXACT;
    }
    if (which < 7) {
        add("GET"), key();
        return EXACT;
    }
    if (which < 9) {
        static const char *const c[] = {"INCR", "DECR", "STRLEN", "GETDEL"};
        add(c[pick(4)]), key();
        return EXACT;
    }
    if (which < 11) {
        static const char *const c[] = {"INCRBY", "DECRBY", "APPEND", "SETNX", "GETSET"};
        int i = pick(5);
        add(c[i]), key();
        if (i < 2)
            small_int(-100, 100);
        else
            value();
        return EXACT;
    }
    if (which < 12) {
        add("INCRBYFLOAT"), key(), add(floats[pick(7)]);
        return EXACT;
    }
    if (which < 13) {
        add("GETRANGE"), key(), small_int(-6, 6), small_int(-6, 6);
        return EXACT;
    }
    if (which < 14) {
        add("SETRANGE"), key(), small_int(0, 8), value();
        return EXACT;
    }
    if (which < 15) {
        add(pick(2) ? "MSET" : "MSETNX");
        for (int i = 0, n = 1 + pick(3); i < n; i++)
            key(), value();
        return EXACT;
    }
    if (which < 16) {
        add("MGET");
        for (int i = 0, n = 1 + pick(4); i < n; i++)
            key();
        return EXACT;
    }
    if (which < 17) {
        add("GETEX"), key();
        if (pick(2))
            add(pick(2) ? "PERSIST" : "EX"), (argv[argc - 1][0] == 'E' ? add("500") : (void)0);
        return EXACT;
    }
    /* Keys */
    if (which < 19) {
        static const char *const c[] = {"DEL", "EXISTS", "TOUCH"};
        add(c[pick(3)]);
        for (int i = 0, n = 1 + pick(3); i < n; i++)
            key();
        return EXACT;
    }
    if (which < 20) {
        add("TYPE"), key();
        return EXACT;
    }
    if (which < 22) {
        static const char *const c[] = {"EXPIRE", "PEXPIRE", "PERSIST"};
        int i = pick(3);
        add(c[i]), key();
        if (i < 2) {
            addf("%lld", (i ? 1000000 : 1000) + pick(3) * (i ? 1000 : 1));
            /* No GT/LT with relative times: equal deadlines set a moment
             * apart compare by whether each server's clock ticked between
             * them. GT/LT go with absolute times (gen_extra). */
            static const char *const f[] = {NULL, "NX", "XX"};
            const char *fl = f[pick(3)];
            if (fl)
                add(fl);
        }
        return EXACT;
    }
    if (which < 23) {
        int i = pick(4);
        static const char *const c[] = {"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"};
        add(c[i]), key();
        return i % 2 ? TTL_MS : TTL_S;
    }
    if (which < 24) {
        add(pick(2) ? "RENAME" : "RENAMENX"), key(), key();
        return EXACT;
    }
    if (which < 25) {
        add("COPY"), key(), key();
        if (pick(2))
            add("REPLACE");
        return EXACT;
    }
    if (which < 26) {
        if (pick(2))
            add("DBSIZE");
        else
            add("KEYS"), add(pick(2) ? "*" : "z*");
        return UNORDERED;
    }
    if (which < 27) {
        add("SCAN"), add("0"), add("COUNT"), add("1000");
        if (pick(2))
            add("MATCH"), add("[hk][0-2]*");
        if (pick(2)) {
            static const char *const t[] = {"string", "hash", "set", "zset", "list"};
            add("TYPE"), add(t[pick(5)]);
        }
        return SCAN;
    }
    /* Hashes */
    if (which < 31) {
        add(pick(4) ? "HSET" : "HSETNX"), key();
        int pairs = argv[0][4] == 'N' ? 1 : 1 + pick(3);
        for (int i = 0; i < pairs; i++)
            mem(), value();
        return EXACT;
    }
    if (which < 34) {
        static const char *const c[] = {"HGET", "HEXISTS", "HSTRLEN", "HDEL"};
        add(c[pick(4)]), key(), mem();
        return EXACT;
    }
    if (which < 35) {
        add("HMGET"), key(), mem(), mem();
        return EXACT;
    }
    if (which < 36) {
        int i = pick(4);
        static const char *const c[] = {"HGETALL", "HKEYS", "HVALS", "HLEN"};
        add(c[i]), key();
        return i == 0 ? PAIRS : UNORDERED;
    }
    if (which < 37) {
        add(pick(2) ? "HINCRBY" : "HINCRBYFLOAT"), key(), mem();
        if (argv[0][7] == 'F')
            add(floats[pick(7)]);
        else
            small_int(-5, 5);
        return EXACT;
    }
    if (which < 38) {
        add("HRANDFIELD"), key(), small_int(-4, 4);
        if (pick(2))
            add("WITHVALUES");
        return LENGTH;
    }
    if (which < 39) {
        add("HSCAN"), key(), add("0"), add("COUNT"), add("1000");
        return SCAN;
    }
    /* Sets */
    if (which < 43) {
        add(pick(3) ? "SADD" : "SREM"), key();
        for (int i = 0, n = 1 + pick(3); i < n; i++)
            mem();
        return EXACT;
    }
    if (which < 45) {
        int i = pick(5);
        static const char *const c[] = {"SMEMBERS", "SCARD", "SISMEMBER", "SMISMEMBER", "SPOP"};
        add(c[i]), key();
        if (i == 2)
            mem();
        if (i == 3)
            mem(), mem();
        if (i == 4)
            add("100"); /* all of it: the outcome is not random */
        return i == 0 || i == 4 ? UNORDERED : EXACT;
    }
    if (which < 46) {
        add("SRANDMEMBER"), key(), small_int(-4, 4);
        return LENGTH;
    }
    if (which < 47) {
        add("SMOVE"), key(), key(), mem();
        return EXACT;
    }
    if (which < 49) {
        static const char *const c[] = {"SINTER",      "SUNION",     "SDIFF",     "SINTERSTORE",
                                        "SUNIONSTORE", "SDIFFSTORE", "SINTERCARD"};
        int i = pick(7);
        add(c[i]);
        if (i == 6)
            add("2");
        for (int j = 0, n = i == 6 ? 2 : 1 + pick(3); j < n; j++)
            key();
        return i < 3 ? UNORDERED : EXACT;
    }
    /* Sorted sets */
    if (which < 54) {
        add("ZADD"), key();
        static const char *const f[] = {NULL, NULL, "NX", "XX", "GT", "LT", "CH", "INCR"};
        const char *fl = f[pick(8)];
        if (fl)
            add(fl);
        for (int i = 0, n = fl && fl[0] == 'I' ? 1 : 1 + pick(3); i < n; i++)
            add(scores[pick(10)]), mem();
        return EXACT;
    }
    if (which < 56) {
        int i = pick(6);
        static const char *const c[] = {"ZSCORE", "ZRANK", "ZREVRANK", "ZREM", "ZCARD", "ZINCRBY"};
        add(c[i]), key();
        if (i == 5)
            add(scores[pick(10)]);
        if (i != 4)
            mem();
        return EXACT;
    }
    if (which < 58) {
        add("ZRANGE"), key();
        int by = pick(2); /* rank or score; lex has its own keys */
        if (by)
            score_bound(), score_bound(), add("BYSCORE");
        else
            small_int(-4, 4), small_int(-4, 4);
        if (pick(2))
            add("REV");
        if (by && pick(2))
            add("LIMIT"), small_int(-1, 2), small_int(-1, 3);
        if (pick(2))
            add("WITHSCORES");
        return EXACT;
    }
    if (which < 59) {
        static const char *const c[] = {"ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZCOUNT",
                                        "ZREMRANGEBYSCORE"};
        int i = pick(4);
        add(c[i]), key(), score_bound(), score_bound();
        if (i < 2 && pick(2))
            add("WITHSCORES");
        return EXACT;
    }
    if (which < 60) {
        static const char *const c[] = {"ZREVRANGE", "ZREMRANGEBYRANK"};
        add(c[pick(2)]), key(), small_int(-3, 3), small_int(-3, 3);
        return EXACT;
    }
    if (which < 62) {
        /* Lex ranges only mean something where all scores are equal. */
        int i = pick(7);
        static const char *const c[] = {"ZADD",      "ZRANGEBYLEX",    "ZREVRANGEBYLEX",
                                        "ZLEXCOUNT", "ZREMRANGEBYLEX", "ZRANGE",
                                        "ZREM"};
        add(c[i]), add(lexkeys[pick(2)]);
        if (i == 0)
            add("0"), mem(), add("0"), mem();
        else if (i == 6)
            mem();
        else
            lex_bound(), lex_bound();
        if (i == 5) {
            add("BYLEX");
            if (pick(2))
                add("REV");
        }
        if ((i == 1 || i == 2 || i == 5) && pick(2))
            add("LIMIT"), small_int(0, 2), small_int(-1, 3);
        return EXACT;
    }
    if (which < 63) {
        add(pick(2) ? "ZPOPMIN" : "ZPOPMAX"), key();
        if (pick(2))
            small_int(0, 3);
        return EXACT;
    }
    if (which < 64) {
        add("ZRANDMEMBER"), key(), small_int(-3, 3);
        return LENGTH;
    }
    if (which < 66) {
        static const char *const c[] = {"ZUNION",      "ZINTER",     "ZDIFF",  "ZUNIONSTORE",
                                        "ZINTERSTORE", "ZDIFFSTORE", "ZMSCORE"};
        int i = pick(7);
        add(c[i]);
        if (i == 6) {
            key(), mem(), mem();
            return EXACT;
        }
        if (i >= 3)
            key();
        int n = 1 + pick(3);
        addf("%lld", n);
        for (int j = 0; j < n; j++)
            key();
        if (i % 3 != 2 && pick(2)) {
            add("WEIGHTS");
            for (int j = 0; j < n; j++)
                add(floats[pick(4)]);
        }
        if (i % 3 != 2 && pick(2)) {
            static const char *const a[] = {"SUM", "MIN", "MAX"};
            add("AGGREGATE"), add(a[pick(3)]);
        }
        if (i < 3 && pick(2))
            add("WITHSCORES");
        return EXACT;
    }
    if (which < 67) {
        add("ZRANGESTORE"), key(), key(), small_int(-3, 3), small_int(-3, 3);
        return EXACT;
    }
    /* Lists */
    if (which < 72) {
        static const char *const c[] = {"LPUSH", "RPUSH", "LPUSHX", "RPUSHX"};
        add(c[pick(4)]), key();
        for (int i = 0, n = 1 + pick(3); i < n; i++)
            mem();
        return EXACT;
    }
    if (which < 75) {
        static const char *const c[] = {"LPOP", "RPOP", "LLEN"};
        int i = pick(3);
        add(c[i]), key();
        if (i < 2 && pick(2))
            small_int(0, 3);
        return EXACT;
    }
    if (which < 78) {
        add("LRANGE"), key(), small_int(-5, 5), small_int(-5, 5);
        return EXACT;
    }
    if (which < 80) {
        int i = pick(5);
        static const char *const c[] = {"LINDEX", "LSET", "LREM", "LINSERT", "LTRIM"};
        add(c[i]), key();
        if (i == 0)
            small_int(-4, 4);
        else if (i == 1)
            small_int(-4, 4), mem();
        else if (i == 2)
            small_int(-2, 2), mem();
        else if (i == 3)
            add(pick(2) ? "BEFORE" : "AFTER"), mem(), mem();
        else
            small_int(-4, 4), small_int(-4, 4);
        return EXACT;
    }
    if (which < 81) {
        add("LPOS"), key(), mem();
        if (pick(2))
            add("RANK"), small_int(-2, 2);
        if (pick(2))
            add("COUNT"), small_int(0, 2);
        if (pick(2))
            add("MAXLEN"), small_int(0, 4);
        return EXACT;
    }
    if (which < 83) {
        if (pick(2)) {
            add("RPOPLPUSH"), key(), key();
        } else {
            add("LMOVE"), key(), key();
            add(pick(2) ? "LEFT" : "RIGHT"), add(pick(2) ? "LEFT" : "RIGHT");
        }
        return EXACT;
    }
    /* Errors and oddities: wrong arity, bad numbers, unknown commands. TTLs
     * stay far off, as everywhere here: a key expiring mid-run makes DBSIZE
     * differ, since Redis counts an expired key until it is reaped. */
    if (which < 86) {
        static const char *const c[][4] = {
            {"GET", NULL},
            {"SET", "k0", NULL},
            {"INCRBY", "k0", "x", NULL},
            {"ZADD", "k0", "nan", "a"},
            {"LRANGE", "k0", "a", "b"},
            {"EXPIRE", "k0", "1000", "NX"},
            {"HSET", "k0", "f", NULL},
            {"ZRANGEBYSCORE", "k0", "x", "1"},
            {"ZRANGEBYLEX", "k0", "a", "b"},
            {"NOSUCHCMD", "a", NULL},
        };
        int i = pick(10);
        for (int j = 0; j < 4 && c[i][j]; j++)
            add(c[i][j]);
        return EXACT;
    }
    if (which < 87) {
        add("SELECT"), small_int(0, 2);
        return EXACT;
    }
    if (which < 88 && pick(10) == 0) {
        add("FLUSHDB");
        return EXACT;
    }
    add("EXISTS"), key();
    return EXACT;
}

/* ---- comparison ---- */

static char *show(const redisReply *r, char *buf, size_t cap)
{
    if (!r) {
        snprintf(buf, cap, "(no reply)");
        return buf;
    }
    switch (r->type) {
    case REDIS_REPLY_STRING:
        snprintf(buf, cap, "\"%.*s\"", (int)r->len, r->str);
        break;
    case REDIS_REPLY_STATUS:
        snprintf(buf, cap, "+%s", r->str);
        break;
    case REDIS_REPLY_ERROR:
        snprintf(buf, cap, "-%s", r->str);
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(buf, cap, ":%lld", r->integer);
        break;
    case REDIS_REPLY_NIL:
        snprintf(buf, cap, "(nil)");
        break;
    case REDIS_REPLY_ARRAY: {
        size_t u = (size_t)snprintf(buf, cap, "[");
        for (size_t i = 0; i < r->elements && u < cap - 8; i++) {
            char sub[512];
            u += (size_t)snprintf(buf + u, cap - u, "%s%s", i ? ", " : "",
                                  show(r->element[i], sub, sizeof sub));
        }
        snprintf(buf + (u < cap ? u : cap - 1), cap - (u < cap ? u : cap - 1), "]");
        break;
    }
    default:
        snprintf(buf, cap, "(type %d)", r->type);
    }
    return buf;
}

static bool same(const redisReply *a, const redisReply *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    case REDIS_REPLY_INTEGER:
        return a->integer == b->integer;
    case REDIS_REPLY_ARRAY:
        if (a->elements != b->elements)
            return false;
        for (size_t i = 0; i < a->elements; i++)
            if (!same(a->element[i], b->element[i]))
                return false;
        return true;
    default:
        return true;
    }
}

/* Sorts groups of `stride` elements by their first string, for multiset
 * comparison (pairs stay together for HGETALL). */
static int cmp_str(const void *x, const void *y)
{
    const redisReply *a = *(redisReply *const *)x, *b = *(redisReply *const *)y;
    if (!a->str || !b->str)
        return (a->str != NULL) - (b->str != NULL);
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->str, b->str, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static void sort_groups(redisReply *r, size_t stride)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 || r->elements % stride)
        return;
    size_t n = r->elements / stride;
    redisReply **tmp = malloc(r->elements * sizeof *tmp);
    size_t *idx = malloc(n * sizeof *idx);
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    /* insertion sort on group keys: replies are small */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i;
             j > 0 && cmp_str(&r->element[idx[j - 1] * stride], &r->element[idx[j] * stride]) > 0;
             j--) {
            size_t t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < stride; k++)
            tmp[i * stride + k] = r->element[idx[i] * stride + k];
    memcpy(r->element, tmp, r->elements * sizeof *tmp);
    free(tmp);
    free(idx);
}

static bool equivalent(enum cmp how, redisReply *a, redisReply *b)
{
    if (!a || !b)
        return false;
    switch (how) {
    case UNORDERED:
        sort_groups(a, 1), sort_groups(b, 1);
        return same(a, b);
    case PAIRS:
        sort_groups(a, 2), sort_groups(b, 2);
        return same(a, b);
    case LENGTH:
        return a->type == b->type && (a->type != REDIS_REPLY_ARRAY || a->elements == b->elements);
    case SCAN:
        if (a->type != REDIS_REPLY_ARRAY || b->type != REDIS_REPLY_ARRAY)
            return same(a, b);
        if (a->elements != 2 || b->elements != 2)
            return false;
        /* Both must finish in one call (COUNT 1000 over a small key space). */
        if (strcmp(a->element[0]->str, "0") || strcmp(b->element[0]->str, "0"))
            return false;
        /* HSCAN and ZSCAN return pairs. */
        size_t stride = argv[0][0] == 'H' || argv[0][0] == 'Z' ? 2 : 1;
        sort_groups(a->element[1], stride);
        sort_groups(b->element[1], stride);
        return same(a->element[1], b->element[1]);
    case TTL_S:
    case TTL_MS:
        if (a->type == REDIS_REPLY_INTEGER && b->type == REDIS_REPLY_INTEGER && a->integer >= 0 &&
            b->integer >= 0) {
            long long d = a->integer - b->integer, tol = how == TTL_S ? 2 : 2000;
            return d >= -tol && d <= tol;
        }
        return same(a, b);
    default:
        return same(a, b);
    }
}

/* ---- cache probes ---- */

static uint64_t prng;

static const char *ppick(const char *const *v, int n)
{
    return v[t_rnd(&prng) % (uint64_t)n];
}

/* A cacheable read of key, fitting the type its name suggests (the shared
 * keys get any): what libshmkv can answer from shared memory. */
static int probe_cmd(const char *key, const char **pv)
{
    static const char *const idx[] = {"0", "1", "-1", "-2", "5"};
    static const char *const any[] = {"TYPE", "EXISTS", "GET",   "STRLEN",
                                      "HLEN", "SCARD",  "ZCARD", "LLEN"};
    char f = key[0];
    if (strchr("shSzl", f) == NULL || key[1] < '0' || key[1] > '9')
        f = "shSzl"[t_rnd(&prng) % 5];
    int n = 0;
    pv[n++] = NULL;
    pv[n++] = key;
    switch (t_rnd(&prng) % 3 == 0 ? 0 : f) {
    case 's':
        pv[0] = ppick((const char *const[]){"GET", "STRLEN", "MGET"}, 3);
        if (pv[0][0] == 'M')
            pv[n++] = ppick(keys, 5), pv[n++] = key;
        break;
    case 'h':
        pv[0] = ppick((const char *const[]){"HGET", "HEXISTS", "HMGET", "HLEN"}, 4);
        if (pv[0][1] != 'L')
            pv[n++] = ppick(mems, 10);
        if (pv[0][1] == 'M')
            pv[n++] = ppick(mems, 10);
        break;
    case 'S':
        pv[0] = ppick((const char *const[]){"SISMEMBER", "SMISMEMBER", "SCARD"}, 3);
        if (pv[0][1] != 'C')
            pv[n++] = ppick(mems, 10);
        if (pv[0][1] == 'M')
            pv[n++] = ppick(mems, 10);
        break;
    case 'z':
        pv[0] = ppick((const char *const[]){"ZSCORE", "ZMSCORE", "ZCARD"}, 3);
        if (pv[0][1] != 'C')
            pv[n++] = ppick(mems, 10);
        if (pv[0][1] == 'M')
            pv[n++] = ppick(mems, 10);
        break;
    case 'l':
        pv[0] = ppick((const char *const[]){"LLEN", "LINDEX"}, 2);
        if (pv[0][1] == 'I')
            pv[n++] = ppick(idx, 5);
        break;
    default:
        pv[0] = ppick(any, 8);
    }
    return n;
}

/* Reads the key command i named through the cache and through redis. */
static void probe(uint64_t seed, long i, long *served)
{
    const char *pv[8];
    const char *key = argc > probe_arg ? argv[probe_arg] : keys[t_rnd(&prng) % 5];
    int n = probe_cmd(key, pv);
    uint64_t before = h_lib_hits(pk);
    shmkv_reply *a;
    if (shmkv_command(pk, &a, n, pv, NULL) != SHMKV_OK)
        fail_msg("seed %llu, after command %ld: libshmkv: %s", (unsigned long long)seed, i,
                 shmkv_errmsg());
    *served += h_lib_hits(pk) > before;
    redisReply *b = redisCommandArgv(pr, n, pv, NULL);
    if (!h_same_reply(a, b)) {
        char line[256] = "", rb[1024];
        for (int j = 0; j < n; j++)
            snprintf(line + strlen(line), sizeof line - strlen(line), " '%s'", pv[j]);
        fail_msg("seed %llu, after command %ld (%s): cache read%s: libshmkv type %d '%s', "
                 "redis %s",
                 (unsigned long long)seed, i, argv[0], line, a->type, a->str ? a->str : "",
                 show(b, rb, sizeof rb));
    }
    shmkv_reply_free(a);
    freeReplyObject(b);
}

static int group_setup(void **state)
{
    (void)state;
    if (access(REDIS_SERVER_PATH, X_OK) != 0) {
        fprintf(stderr, "test_diff: %s not found: nothing to compare against\n", REDIS_SERVER_PATH);
        return -1;
    }
    h_start_redis(&R, "redis");
    h_prepare(&K, "diff");
    h_start_shmkvd_opts(&K, NULL);
    cr = h_connect_port(R.port);
    ck = h_connect_port(K.port);
    pr = h_connect_port(R.port);
    if (shmkv_open(&pk, K.sock, NULL) != SHMKV_OK || shmkv_cache_error(pk)) {
        fprintf(stderr, "test_diff: libshmkv: %s\n", pk ? shmkv_cache_error(pk) : shmkv_errmsg());
        return -1;
    }
    return cr && ck && pr ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    redisFree(cr);
    redisFree(ck);
    redisFree(pr);
    shmkv_close(pk);
    int rc = h_stop(&K);
    h_destroy(&K);
    h_destroy(&R);
    return rc == 0 ? 0 : -1;
}

/* ---- keyspace notifications ---- */

/* A subscriber on each server to every __keyspace@*__ and __keyevent@*__
 * channel, and to a sync channel: to compare the events of the commands
 * sent since the last check, each command connection publishes a mark on
 * the sync channel, and each subscriber's messages are read up to it (a
 * server's messages to one subscriber keep their order). */
struct evwatch {
    redisContext *sub[2]; /* redis-server's, shmkvd's */
    redisContext *cmd[2]; /* the connections the commands go through */
    long marks, events, steps;
    char recent[16][256]; /* the last commands, shown on a mismatch */
    size_t nrecent;
};

static void ev_start(struct evwatch *w, redisContext *rc, redisContext *kc)
{
    memset(w, 0, sizeof *w);
    w->cmd[0] = rc;
    w->cmd[1] = kc;
    int ports[2] = {R.port, K.port};
    for (int i = 0; i < 2; i++) {
        redisReply *r = redisCommand(w->cmd[i], "CONFIG SET notify-keyspace-events KEAn");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
        w->sub[i] = h_connect_port(ports[i]);
        assert_non_null(w->sub[i]);
        r = redisCommand(w->sub[i], "PSUBSCRIBE __key*@*__:*");
        assert_non_null(r);
        freeReplyObject(r);
        r = redisCommand(w->sub[i], "SUBSCRIBE diff-sync");
        assert_non_null(r);
        freeReplyObject(r);
    }
}

static void ev_check(struct evwatch *w, const char *what);

/* After each command (ac words av): remembers it for a mismatch report,
 * and compares the events every 8 commands. */
static void ev_step(struct evwatch *w, const char *what, int ac, const char *const *av)
{
    char *line = w->recent[w->nrecent++ % 16];
    size_t u = (size_t)snprintf(line, 256, "%ld:", w->steps);
    for (int j = 0; j < ac && u < 250; j++)
        u += (size_t)snprintf(line + u, 256 - u, " '%s'", av[j]);
    if (++w->steps % 8 == 0)
        ev_check(w, what);
}

/* Reads sub's messages up to the sync mark into buf as "channel message"
 * lines; false if the mark did not come. */
static bool ev_collect(redisContext *sub, const char *mark, char *buf, size_t cap, long *n)
{
    size_t u = 0;
    buf[0] = '\0';
    for (;;) {
        redisReply *r;
        if (redisGetReply(sub, (void **)&r) != REDIS_OK || !r)
            return false;
        bool ok = r->type == REDIS_REPLY_ARRAY && r->elements >= 3;
        if (ok && r->elements == 3 && !strcmp(r->element[1]->str, "diff-sync")) {
            bool done = !strcmp(r->element[2]->str, mark);
            freeReplyObject(r);
            if (done)
                return true;
            continue;
        }
        if (ok && r->elements == 4 && u < cap - 1) {
            u += (size_t)snprintf(buf + u, cap - u, "%.*s %.*s\n", (int)r->element[2]->len,
                                  r->element[2]->str, (int)r->element[3]->len, r->element[3]->str);
            (*n)++;
        }
        freeReplyObject(r);
    }
}

/* Compares the events since the last check; fails with both streams and
 * the last commands when they differ. */
static void ev_check(struct evwatch *w, const char *what)
{
    static char got[2][16384];
    char mark[32];
    snprintf(mark, sizeof mark, "%ld", ++w->marks);
    long n[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        redisReply *r = redisCommand(w->cmd[i], "PUBLISH diff-sync %s", mark);
        assert_non_null(r);
        freeReplyObject(r);
        if (!ev_collect(w->sub[i], mark, got[i], sizeof got[i], &n[i]))
            fail_msg("%s: %s's keyspace events did not arrive", what,
                     i ? "shmkvd" : "redis-server");
    }
    if (strcmp(got[0], got[1])) {
        printf("%s: keyspace events differ after these commands:\n", what);
        for (size_t j = w->nrecent > 16 ? w->nrecent - 16 : 0; j < w->nrecent; j++)
            printf("  %s\n", w->recent[j % 16]);
        fail_msg("redis-server:\n%sshmkvd:\n%s", got[0], got[1]);
    }
    w->events += n[0];
    w->nrecent = 0;
}

/* Compares what is left, then turns the events off. */
static void ev_stop(struct evwatch *w, const char *what)
{
    ev_check(w, what);
    for (int i = 0; i < 2; i++) {
        redisReply *r = redisCommand(w->cmd[i], "CONFIG SET notify-keyspace-events %s", "");
        freeReplyObject(r);
        redisFree(w->sub[i]);
    }
}

/* The current command on c, a RESTORE's placeholder payload ("\1" and
 * a key: gen_extra) replaced by DUMP of that key on c ("x" if absent). */
static redisReply *send_gen(redisContext *c)
{
    const char *av[64];
    size_t al[64];
    redisReply *d = NULL;
    for (int j = 0; j < argc; j++) {
        av[j] = argv[j];
        al[j] = argl[j];
        if (argv[j][0] == '\1') {
            d = redisCommand(c, "DUMP %s", argv[j] + 1);
            assert_non_null(d);
            bool got = d->type == REDIS_REPLY_STRING;
            av[j] = got ? d->str : "x";
            al[j] = got ? d->len : 1;
        }
    }
    redisReply *r = redisCommandArgv(c, argc, av, al);
    freeReplyObject(d);
    return r;
}

static void test_diff_random_commands(void **state)
{
    (void)state;
    const char *s = getenv("SHMKV_DIFF_SEED"), *n = getenv("SHMKV_DIFF_COUNT");
    uint64_t seed = s ? strtoull(s, NULL, 10) : 1;
    long count = n ? atol(n) : 20000;
    rng = seed * 0x9e3779b97f4a7c15ull + 1;
    prng = seed * 0xbf58476d1ce4e5b9ull + 7;
    long compared = 0, kinds[8] = {0}, probes = 0, served = 0;
    bool trace = getenv("SHMKV_DIFF_TRACE") != NULL;
    struct evwatch ev;
    ev_start(&ev, cr, ck);
    for (long i = 0; i < count; i++) {
        enum cmp how = gen();
        if (trace) {
            printf("%ld:", i);
            for (int j = 0; j < argc; j++)
                printf(" '%s'", argv[j]);
            printf("\n");
        }
        redisReply *a = send_gen(cr), *b = send_gen(ck);
        if (!equivalent(how, a, b)) {
            char line[1024] = "", ra[4096], rb[4096];
            size_t u = 0;
            for (int j = 0; j < argc && u < sizeof line - 2; j++)
                u += (size_t)snprintf(line + u, sizeof line - u, "%s'%s'", j ? " " : "", argv[j]);
            fail_msg("seed %llu, command %ld: %s\n  redis:  %s\n  shmkvd: %s",
                     (unsigned long long)seed, i, line, show(a, ra, sizeof ra),
                     show(b, rb, sizeof rb));
        }
        /* What was compared: errors, nils, integers, strings/status, and
         * empty and non-empty arrays. */
        int k = a->type == REDIS_REPLY_ERROR     ? 0
                : a->type == REDIS_REPLY_NIL     ? 1
                : a->type == REDIS_REPLY_INTEGER ? 2
                : a->type == REDIS_REPLY_ARRAY   ? (a->elements ? 5 : 4)
                                                 : 3;
        kinds[k]++;
        freeReplyObject(a);
        freeReplyObject(b);
        compared++;
        probe(seed, i, &served);
        probes++;
        ev_step(&ev, "random commands", argc, argv);
    }
    ev_stop(&ev, "random commands");
    printf("test_diff: seed %llu, %ld commands compared, all equivalent (replies: %ld errors, "
           "%ld nil, %ld integers, %ld strings, %ld empty arrays, %ld non-empty arrays)\n",
           (unsigned long long)seed, compared, kinds[0], kinds[1], kinds[2], kinds[3], kinds[4],
           kinds[5]);
    printf("test_diff: %ld cache reads after those commands agreed with redis-server, %ld of "
           "them served from shared memory\n",
           probes, served);
    printf("test_diff: %ld keyspace events, identical in content and order\n", ev.events);
    assert_true(ev.events > count / 2);
    assert_true(served > probes / 3);
    /* A run that compared nothing interesting proves nothing. */
    assert_true(kinds[2] > count / 10 && kinds[5] > count / 20 && kinds[0] > count / 50);
}

/* ---- COMMAND DOCS against redis-server ---- */

/* A RESP2 map (a flat array) entry, or NULL. */
static const redisReply *map_get(const redisReply *m, const char *key)
{
    if (!m || m->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < m->elements; i += 2)
        if (m->element[i]->type == REDIS_REPLY_STRING && !strcmp(m->element[i]->str, key))
            return m->element[i + 1];
    return NULL;
}

static void put(char *buf, size_t cap, const char *fmt, const char *s)
{
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, fmt, s ? s : "-");
}

static const char *str_of(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) ? r->str : NULL;
}

/* What a client reads from an argument tree: names, types (a number is a
 * number: Redis documents some float arguments as integers), tokens,
 * flags, key indexes and nesting. Summaries, complexities and history are
 * prose, not compared. */
static void norm_args(const redisReply *args, char *buf, size_t cap)
{
    put(buf, cap, "%s", "[");
    for (size_t i = 0; args && i < args->elements; i++) {
        const redisReply *a = args->element[i];
        const char *type = str_of(map_get(a, "type"));
        if (type && !strcmp(type, "double"))
            type = "integer";
        put(buf, cap, "{%s", str_of(map_get(a, "name")));
        put(buf, cap, " %s", type);
        put(buf, cap, " %s", str_of(map_get(a, "token")));
        const redisReply *ksi = map_get(a, "key_spec_index");
        put(buf, cap, " %s", ksi && ksi->type == REDIS_REPLY_INTEGER ? "key" : "-");
        const redisReply *fl = map_get(a, "flags");
        for (size_t j = 0; fl && j < fl->elements; j++)
            if (strcmp(fl->element[j]->str, "multiple_token") != 0)
                put(buf, cap, " %s", fl->element[j]->str);
        norm_args(map_get(a, "arguments"), buf, cap);
        put(buf, cap, "%s", "}");
    }
    put(buf, cap, "%s", "]");
}

static void norm_doc(const redisReply *d, char *buf, size_t cap)
{
    buf[0] = 0;
    put(buf, cap, "since %s", str_of(map_get(d, "since")));
    put(buf, cap, " group %s", str_of(map_get(d, "group")));
    put(buf, cap, " deprecated %s", str_of(map_get(d, "deprecated_since")));
    norm_args(map_get(d, "arguments"), buf, cap);
}

static void compare_docs(const char *name, const redisReply *dr, const redisReply *dk)
{
    static char a[16384], b[16384];
    assert_non_null(dr);
    assert_non_null(dk);
    assert_non_null(str_of(map_get(dk, "summary")));
    assert_non_null(str_of(map_get(dk, "complexity")));
    norm_doc(dr, a, sizeof a);
    norm_doc(dk, b, sizeof b);
    if (strcmp(a, b) != 0)
        fail_msg("COMMAND DOCS %s\n  redis:  %s\n  shmkvd: %s", name, a, b);
}

/* The containers' subcommands that shmkvd documents, each asked for alone:
 * a container's whole documentation holds COMMAND LIST, which has no
 * FILTERBY in shmkvd. */
static const char *const SUBCOMMANDS[] = {
    "client|id",       "client|setname",  "client|getname",       "client|list",
    "client|info",     "client|help",     "client|unblock",       "client|no-evict",
    "client|reply",    "client|pause",    "client|unpause",       "client|tracking",
    "client|caching",  "client|getredir", "client|trackinginfo",  "client|kill",
    "command|count",   "command|info",    "command|docs",         "command|help",
    "command|getkeys", "config|get",      "config|set",           "config|resetstat",
    "config|rewrite",  "config|help",     "object|encoding",      "object|freq",
    "object|idletime", "object|refcount", "object|help",          "slowlog|get",
    "slowlog|len",     "slowlog|reset",   "slowlog|help",         "pubsub|channels",
    "pubsub|numsub",   "pubsub|numpat",   "pubsub|shardchannels", "pubsub|shardnumsub",
    "pubsub|help",     "memory|usage",    "memory|malloc-stats",  "memory|purge",
    "memory|help",     "latency|latest",  "latency|history",      "latency|reset",
    "latency|graph",   "latency|doctor",  "latency|histogram",    "latency|help",
};

static bool is_container(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof SUBCOMMANDS / sizeof SUBCOMMANDS[0]; i++)
        if (!strncmp(SUBCOMMANDS[i], name, n) && SUBCOMMANDS[i][n] == '|')
            return true;
    return false;
}

static int r3_connect(int port);
static char *r3_call(int fd, const char *line, size_t *len);

/* A reply tree built from raw RESP2 bytes as hiredis builds one, but with no
 * depth limit: COMMAND DOCS BITPOS nests deeper than Debian's hiredis reads
 * (7 levels). Freed with freeReplyObject. */
static redisReply *raw_tree(const char **p)
{
    redisReply *r = calloc(1, sizeof *r);
    const char *eol = strchr(*p, '\r');
    char t = **p;
    long long v = strtoll(*p + 1, NULL, 10);
    size_t linelen = (size_t)(eol - *p) - 1;
    const char *line = *p + 1;
    *p = eol + 2;
    switch (t) {
    case '$':
        r->type = v < 0 ? REDIS_REPLY_NIL : REDIS_REPLY_STRING;
        if (v >= 0) {
            r->str = strndup(*p, (size_t)v);
            r->len = (size_t)v;
            *p += v + 2;
        }
        break;
    case '*':
        r->type = v < 0 ? REDIS_REPLY_NIL : REDIS_REPLY_ARRAY;
        r->elements = v < 0 ? 0 : (size_t)v;
        r->element = calloc(r->elements + 1, sizeof *r->element);
        for (size_t i = 0; i < r->elements; i++)
            r->element[i] = raw_tree(p);
        break;
    case ':':
        r->type = REDIS_REPLY_INTEGER;
        r->integer = v;
        break;
    default: /* + or - */
        r->type = t == '-' ? REDIS_REPLY_ERROR : REDIS_REPLY_STATUS;
        r->str = strndup(line, linelen);
        r->len = linelen;
    }
    return r;
}

/* COMMAND DOCS name from both servers over raw RESP2 connections. */
static void compare_docs_of(int fr, int fk, const char *name)
{
    char line[128];
    snprintf(line, sizeof line, "COMMAND DOCS %s", name);
    size_t na, nk;
    char *a = r3_call(fr, line, &na), *b = r3_call(fk, line, &nk);
    a = realloc(a, na + 1);
    b = realloc(b, nk + 1);
    a[na] = b[nk] = 0; /* raw_tree's line ends are found by strchr */
    const char *pa = a, *pb = b;
    redisReply *r = raw_tree(&pa), *k = raw_tree(&pb);
    free(a);
    free(b);
    if (r->elements != 2 || k->elements != 2)
        fail_msg("COMMAND DOCS %s: not one entry", name);
    assert_string_equal(k->element[0]->str, name);
    compare_docs(name, r->element[1], k->element[1]);
    freeReplyObject(r);
    freeReplyObject(k);
}

/* Every command's documented arguments agree with redis-server's: what
 * redis-cli 7.2+ builds its hints from. */
static void test_diff_command_docs(void **state)
{
    (void)state;
    /* Connections of their own: the random commands may leave a MULTI open. */
    redisContext *dk = h_connect_port(K.port);
    assert_non_null(dk);
    redisReply *list = redisCommand(dk, "COMMAND LIST");
    assert_true(list && list->type == REDIS_REPLY_ARRAY && list->elements > 100);
    size_t compared = 0;
    int fr = r3_connect(R.port), fk = r3_connect(K.port);
    for (size_t i = 0; i < list->elements; i++) {
        const char *name = list->element[i]->str;
        if (!strncmp(name, "shmkv.", 6) || is_container(name))
            continue; /* shmkvd's own; containers below */
        compare_docs_of(fr, fk, name);
        compared++;
    }
    for (size_t i = 0; i < sizeof SUBCOMMANDS / sizeof SUBCOMMANDS[0]; i++, compared++)
        compare_docs_of(fr, fk, SUBCOMMANDS[i]);
    close(fr);
    close(fk);
    /* Unknown names are left out. */
    redisReply *some = redisCommand(dk, "COMMAND DOCS nosuch GET client|nosuch");
    assert_int_equal(some->elements, 2);
    assert_string_equal(some->element[0]->str, "get");
    freeReplyObject(some);
    printf("test_diff: COMMAND DOCS of %zu commands and subcommands agree with redis-server's\n",
           compared);
    freeReplyObject(list);
    redisFree(dk);
}

/* COMMAND INFO: arity, key positions, ACL categories and the flags shmkvd
 * reports (a client routes and retries by them), against redis-server's. Redis has
 * flags shmkvd never reports (denyoom, noscript, ...); those are not
 * compared. */
static void test_diff_command_info(void **state)
{
    (void)state;
    static const char *const FLAGS[] = {"write", "readonly", "admin",      "no_auth",
                                        "fast",  "blocking", "movablekeys"};
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    redisReply *list = redisCommand(dk, "COMMAND LIST");
    assert_true(list && list->type == REDIS_REPLY_ARRAY);
    size_t compared = 0, subs = 0;
    for (size_t i = 0; i < list->elements; i++) {
        const char *name = list->element[i]->str;
        if (!strncmp(name, "shmkv.", 6))
            continue;
        redisReply *r = redisCommand(dr, "COMMAND INFO %s", name);
        redisReply *k = redisCommand(dk, "COMMAND INFO %s", name);
        assert_true(r && k && r->elements == 1 && k->elements == 1);
        const redisReply *a = r->element[0], *b = k->element[0];
        assert_true(a->type == REDIS_REPLY_ARRAY && b->type == REDIS_REPLY_ARRAY);
        for (int j = 1; j <= 5; j++) {
            if (j == 2)
                continue; /* flags: below */
            if (a->element[j]->integer != b->element[j]->integer)
                fail_msg("COMMAND INFO %s: field %d is %lld, redis-server says %lld", name, j,
                         b->element[j]->integer, a->element[j]->integer);
        }
        /* ACL categories, in order (a container's own only). */
        const redisReply *ca = a->element[6], *cb = b->element[6];
        bool same_cats = ca->elements == cb->elements;
        for (size_t j = 0; same_cats && j < ca->elements; j++)
            same_cats = !strcmp(ca->element[j]->str, cb->element[j]->str);
        if (!same_cats)
            fail_msg(
                "COMMAND INFO %s: ACL categories %zu (first %s), redis-server's %zu (first %s)",
                name, cb->elements, cb->elements ? cb->element[0]->str : "-", ca->elements,
                ca->elements ? ca->element[0]->str : "-");
        for (size_t f = 0; f < sizeof FLAGS / sizeof FLAGS[0]; f++) {
            bool in_a = false, in_b = false;
            for (size_t j = 0; j < a->element[2]->elements; j++)
                in_a |= !strcmp(a->element[2]->element[j]->str, FLAGS[f]);
            for (size_t j = 0; j < b->element[2]->elements; j++)
                in_b |= !strcmp(b->element[2]->element[j]->str, FLAGS[f]);
            if (in_a != in_b)
                fail_msg("COMMAND INFO %s: flag %s %s, redis-server's %s", name, FLAGS[f],
                         in_b ? "set" : "not set", in_a ? "set" : "not set");
        }
        /* A container's subcommands: each of shmkvd's is one of Redis's. */
        const redisReply *sa = a->element[9], *sb = b->element[9];
        for (size_t j = 0; j < sb->elements; j++) {
            bool found = false;
            for (size_t m = 0; m < sa->elements && !found; m++)
                found = !strcmp(sa->element[m]->element[0]->str, sb->element[j]->element[0]->str);
            if (!found)
                fail_msg("COMMAND INFO %s: subcommand %s is not redis-server's", name,
                         sb->element[j]->element[0]->str);
        }
        subs += sb->elements;
        freeReplyObject(r);
        freeReplyObject(k);
        compared++;
    }
    /* COMMAND LIST and its filters: shmkvd lists exactly the names it has
     * among those redis-server lists. */
    static const char *const filters[][2] = {
        {NULL, NULL},
        {"PATTERN", "ob*"},
        {"PATTERN", "*|HELP"},
        {"PATTERN", "c?ient*"},
        {"ACLCAT", "keyspace"},
        {"ACLCAT", "READ"},
        {"ACLCAT", "write"},
        {"ACLCAT", "admin"},
        {"ACLCAT", "dangerous"},
        {"ACLCAT", "connection"},
        {"ACLCAT", "slow"},
        {"ACLCAT", "fast"},
        {"ACLCAT", "pubsub"},
        {"ACLCAT", "string"},
        {"ACLCAT", "blocking"},
        {"ACLCAT", "@read"},
        {"ACLCAT", "nosuch"},
        {"MODULE", "x"},
    };
    size_t listed = 0;
    for (size_t f = 0; f < sizeof filters / sizeof filters[0]; f++) {
        redisReply *lr, *lk;
        if (filters[f][0]) {
            lr = redisCommand(dr, "COMMAND LIST FILTERBY %s %s", filters[f][0], filters[f][1]);
            lk = redisCommand(dk, "COMMAND LIST FILTERBY %s %s", filters[f][0], filters[f][1]);
        } else {
            lr = redisCommand(dr, "COMMAND LIST");
            lk = redisCommand(dk, "COMMAND LIST");
        }
        assert_true(lr && lk && lr->type == REDIS_REPLY_ARRAY && lk->type == REDIS_REPLY_ARRAY);
        size_t have = 0;
        for (size_t i = 0; i < lr->elements; i++) {
            redisReply *q = redisCommand(dk, "COMMAND INFO %s", lr->element[i]->str);
            bool known = q->element[0]->type == REDIS_REPLY_ARRAY, in = false;
            freeReplyObject(q);
            for (size_t j = 0; j < lk->elements && !in; j++)
                in = !strcmp(lk->element[j]->str, lr->element[i]->str);
            if (known != in)
                fail_msg("COMMAND LIST %s %s: %s is %s shmkvd's list",
                         filters[f][0] ? filters[f][0] : "", filters[f][1] ? filters[f][1] : "",
                         lr->element[i]->str, in ? "in" : "not in");
            have += in;
        }
        size_t own = 0; /* shmkvd's own commands, which redis-server lacks */
        for (size_t j = 0; j < lk->elements; j++)
            own += !strncmp(lk->element[j]->str, "shmkv.", 6);
        if (have + own != lk->elements)
            fail_msg("COMMAND LIST %s %s: shmkvd lists %zu names redis-server does not",
                     filters[f][0] ? filters[f][0] : "", filters[f][1] ? filters[f][1] : "",
                     lk->elements - have - own);
        listed += lk->elements;
        freeReplyObject(lr);
        freeReplyObject(lk);
    }
    redisReply *bad = redisCommand(dk, "COMMAND LIST FILTERBY PATTERN");
    assert_int_equal(bad->type, REDIS_REPLY_ERROR);
    assert_string_equal(bad->str, "ERR syntax error");
    freeReplyObject(bad);
    printf("test_diff: COMMAND INFO of %zu commands and subcommands agrees with redis-server's "
           "(%zu subcommands in their containers' entries); COMMAND LIST with %zu filters, "
           "%zu names\n",
           compared, subs, sizeof filters / sizeof filters[0], listed);
    freeReplyObject(list);
    redisFree(dr);
    redisFree(dk);
}

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

static int r3_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* The length of the one whole reply at p[0..n), or 0 if it is not all there. */
static size_t r3_reply_len(const char *p, size_t n)
{
    const char *eol = memchr(p, '\n', n);
    if (!eol)
        return 0;
    size_t head = (size_t)(eol - p) + 1;
    long long v = strtoll(p + 1, NULL, 10);
    switch (p[0]) {
    case '$':
    case '=':
    case '!': /* a length, then that many bytes */
        if (v < 0)
            return head;
        return n >= head + (size_t)v + 2 ? head + (size_t)v + 2 : 0;
    case '*':
    case '~':
    case '>':
    case '%': { /* v elements, or v pairs */
        size_t at = head, count = v < 0 ? 0 : (size_t)v * (p[0] == '%' ? 2 : 1);
        for (size_t i = 0; i < count; i++) {
            size_t len = r3_reply_len(p + at, n - at);
            if (!len)
                return 0;
            at += len;
        }
        return at;
    }
    default: /* + - : , # _ ( : one line */
        return head;
    }
}

/* Sends one command, its words split on spaces, as a RESP array. */
static void send_line(int fd, const char *line)
{
    char req[512], words[256];
    snprintf(words, sizeof words, "%s", line);
    const char *w[32];
    int nw = 0;
    for (char *t = strtok(words, " "); t && nw < 32; t = strtok(NULL, " "))
        w[nw++] = t;
    size_t u = (size_t)snprintf(req, sizeof req, "*%d\r\n", nw);
    for (int i = 0; i < nw; i++)
        u += (size_t)snprintf(req + u, sizeof req - u, "$%zu\r\n%s\r\n", strlen(w[i]), w[i]);
    assert_int_equal(write(fd, req, u), (ssize_t)u);
}

/* Sends one command (words split on spaces) and returns its reply's bytes. */
static char *r3_call(int fd, const char *line, size_t *len)
{
    send_line(fd, line);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (!(*len = r3_reply_len(buf, n))) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r <= 0)
            fail_msg("RESP3 %s: no whole reply (%zu bytes)", line, n);
        n += (size_t)r;
    }
    assert_int_equal(*len, n); /* one command, one reply */
    return buf;
}

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

/* LCS against redis-server: seeded pairs of strings over two- to
 * four-letter alphabets (many equal-length subsequences, so the tie rule
 * decides which one and which runs), empty and absent keys, each asked
 * plain, LEN, and IDX with or without MINMATCHLEN and WITHMATCHLEN. */
static void test_diff_lcs(void **state)
{
    (void)state;
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    uint64_t r = 0x4c4353; /* "LCS" */
    size_t compared = 0;
    for (int pair = 0; pair < 150; pair++) {
        char s[2][64];
        unsigned letters = 2 + (unsigned)(t_rnd(&r) % 3);
        for (int k = 0; k < 2; k++) {
            size_t n = t_rnd(&r) % 40;
            for (size_t i = 0; i < n; i++)
                s[k][i] = (char)('a' + t_rnd(&r) % letters);
            s[k][n] = 0;
            redisContext *both[2] = {dr, dk};
            for (int sv = 0; sv < 2; sv++)
                freeReplyObject(pair % 25 == 7 && k == 1
                                    ? redisCommand(both[sv], "DEL lcs%d", k)
                                    : redisCommand(both[sv], "SET lcs%d %s", k, s[k]));
        }
        static const char *const forms[] = {
            "LCS lcs0 lcs1",
            "LCS lcs0 lcs1 LEN",
            "LCS lcs0 lcs1 IDX",
            "LCS lcs0 lcs1 IDX WITHMATCHLEN",
            "LCS lcs0 lcs1 IDX MINMATCHLEN 2",
            "LCS lcs0 lcs1 IDX MINMATCHLEN 3 WITHMATCHLEN",
            "LCS lcs1 lcs0 IDX WITHMATCHLEN",
        };
        for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
            redisReply *a = redisCommand(dr, forms[f]), *b = redisCommand(dk, forms[f]);
            if (!same(a, b)) {
                char ra[2048], rb[2048];
                fail_msg("%s with \"%s\", \"%s\": redis-server %s, shmkvd %s", forms[f], s[0], s[1],
                         show(a, ra, sizeof ra), show(b, rb, sizeof rb));
            }
            freeReplyObject(a);
            freeReplyObject(b);
            compared++;
        }
    }
    freeReplyObject(redisCommand(dr, "DEL lcs0 lcs1"));
    freeReplyObject(redisCommand(dk, "DEL lcs0 lcs1"));
    printf("test_diff: %zu LCS replies identical to redis-server's\n", compared);
    redisFree(dr);
    redisFree(dk);
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
    "DEL st sth stz",
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

/* HyperLogLog against redis-server: seeded PFADD (up to 3,000 elements, so
 * sketches turn dense), PFCOUNT over one to three keys, PFMERGE, and GET
 * of the sketches' bytes, which must be identical, sparse and dense; then
 * the errors: another type, a string that is not a sketch, a corrupt
 * sparse one. Its keys are its own: the random test's string commands
 * would corrupt sketches, where Redis's sparse reader is lenient in ways
 * shmkvd does not copy (it reports the corruption). */
static void test_diff_hyperloglog(void **state)
{
    (void)state;
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    static const size_t sizes[] = {0, 1, 3, 50, 400, 3000};
    enum { STEPS = 600, MAXARGS = 3002 };
    const char **av = malloc(MAXARGS * sizeof *av);
    size_t *al = malloc(MAXARGS * sizeof *al);
    char(*words)[16] = malloc(MAXARGS * sizeof *words);
    uint64_t r = 0x4c4c5948; /* "HYLL" */
    size_t compared = 0, dense = 0;
    struct evwatch ev;
    ev_start(&ev, dr, dk);
    for (int step = 0; step < STEPS; step++) {
        int ac = 0, op = (int)(t_rnd(&r) % 20);
        const char *name = op < 11 ? "PFADD" : op < 16 ? "PFCOUNT" : op < 18 ? "PFMERGE" : "GET";
        av[ac++] = name;
        size_t n = op < 11   ? sizes[t_rnd(&r) % 6]
                   : op < 16 ? 1 + t_rnd(&r) % 3
                   : op < 18 ? 1 + t_rnd(&r) % 3
                             : 1;
        for (size_t i = 0; i < n; i++) {
            if (op < 11 && i > 0)
                snprintf(words[ac], sizeof words[ac], "e%llu",
                         (unsigned long long)(t_rnd(&r) % 200000));
            else
                snprintf(words[ac], sizeof words[ac], "hll%llu",
                         (unsigned long long)(t_rnd(&r) % 5));
            av[ac] = words[ac];
            ac++;
        }
        if (op < 11 && n == 0) { /* PFADD with a key and no elements */
            snprintf(words[ac], sizeof words[ac], "hll%llu", (unsigned long long)(t_rnd(&r) % 5));
            av[ac] = words[ac];
            ac++;
        }
        for (int i = 0; i < ac; i++)
            al[i] = strlen(av[i]);
        redisReply *a = redisCommandArgv(dr, ac, av, al), *b = redisCommandArgv(dk, ac, av, al);
        assert_true(a && b);
        if (!same(a, b)) {
            char ra[256], rb[256];
            fail_msg("HLL step %d: %s %s (%d args): redis-server %s, shmkvd %s", step, av[0], av[1],
                     ac, show(a, ra, sizeof ra), show(b, rb, sizeof rb));
        }
        if (op >= 18 && a->type == REDIS_REPLY_STRING && a->len > 4 && a->str[4] == 0)
            dense++;
        freeReplyObject(a);
        freeReplyObject(b);
        compared++;
        ev_step(&ev, "HyperLogLog", ac, av);
    }
    ev_stop(&ev, "HyperLogLog");
    /* The errors, and a sketch written as a plain string. */
    static const char *script[][4] = {
        {"SET", "hs", "not a sketch"},
        {"PFADD", "hs", "x"},
        {"PFCOUNT", "hs"},
        {"PFMERGE", "hll0", "hs"},
        {"RPUSH", "hl", "x"},
        {"PFADD", "hl", "x"},
        {"PFCOUNT", "hll1", "hl"},
        {"PFMERGE", "hl"},
        {"PFMERGE", "hnew"},
        {"GET", "hnew"},
        {"PFADD", "hnew2"},
        {"GET", "hnew2"},
        {"PFCOUNT", "nokey"},
        {"PFCOUNT", "nokey", "hll2"},
        {"PFADD"},
        {"PFCOUNT"},
        {"PFMERGE"},
    };
    for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) {
        int ac = 0;
        while (ac < 4 && script[i][ac])
            ac++;
        redisReply *a = redisCommandArgv(dr, ac, script[i], NULL);
        redisReply *b = redisCommandArgv(dk, ac, script[i], NULL);
        if (!same(a, b)) {
            char ra[256], rb[256];
            fail_msg("HLL: %s %s: redis-server %s, shmkvd %s", script[i][0],
                     script[i][1] ? script[i][1] : "", show(a, ra, sizeof ra),
                     show(b, rb, sizeof rb));
        }
        freeReplyObject(a);
        freeReplyObject(b);
        compared++;
    }
    /* Sparse opcodes that cover too few registers, and a dense sketch of
     * the wrong length: PFCOUNT's errors agree. */
    static const char bad_sparse[] = "HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x7f\xff";
    static const char bad_dense[] = "HYLL\0\0\0\0\0\0\0\0\0\0\0\x80";
    const char *bad[] = {bad_sparse, bad_dense};
    size_t badn[] = {sizeof bad_sparse - 1, sizeof bad_dense - 1};
    for (int i = 0; i < 2; i++) {
        freeReplyObject(redisCommand(dr, "SET hbad %b", bad[i], badn[i]));
        freeReplyObject(redisCommand(dk, "SET hbad %b", bad[i], badn[i]));
        redisReply *a = redisCommand(dr, "PFCOUNT hbad"), *b = redisCommand(dk, "PFCOUNT hbad");
        if (!same(a, b)) {
            char ra[256], rb[256];
            fail_msg("HLL: PFCOUNT of a bad sketch: redis-server %s, shmkvd %s",
                     show(a, ra, sizeof ra), show(b, rb, sizeof rb));
        }
        freeReplyObject(a);
        freeReplyObject(b);
        compared++;
    }
    assert_true(dense > 0); /* the dense layout was compared too */
    printf("test_diff: %zu HyperLogLog commands (%zu GETs of dense sketches) identical to "
           "redis-server's, sketch bytes included; %ld keyspace events identical\n",
           compared, dense, ev.events);
    assert_true(ev.events > 100);
    free(av);
    free(al);
    free(words);
    redisFree(dr);
    redisFree(dk);
}

/* ---- geo against redis-server ----
 *
 * Three indexes (points all over the globe, clusters a few kilometres
 * wide, and points near the poles and the date line, where cells wrap and
 * the search coarsens) take seeded random GEOADDs, then random searches of
 * every form — circles and boxes around coordinates and members, each
 * unit, sorted or in Redis's cell order, COUNT with and without ANY, the
 * WITH options, STORE/STOREDIST read back with their scores — plus
 * GEODIST, GEOPOS and GEOHASH. Every reply is compared exactly: the order
 * of an unsorted search and the 17-digit coordinates included. */

struct gargs {
    int n;
    const char *v[40];
    char w[40][48];
};

static void ga_add(struct gargs *g, const char *s)
{
    g->v[g->n++] = s;
}

static void ga_addf(struct gargs *g, const char *fmt, double x)
{
    snprintf(g->w[g->n], sizeof g->w[g->n], fmt, x);
    g->v[g->n] = g->w[g->n];
    g->n++;
}

/* A point of index k: uniform, clustered, or near the grid's edges. */
static void geo_point(uint64_t *r, int k, double *lon, double *lat)
{
    double u = (double)(t_rnd(r) % 1000001) / 1e6, v = (double)(t_rnd(r) % 1000001) / 1e6;
    static const double centres[3][2] = {{13.36, 38.11}, {-73.98, 40.75}, {151.2, -33.86}};
    if (k == 0) {
        *lon = -180 + 360 * u;
        *lat = -85 + 170 * v;
    } else if (k == 1) {
        const double *c = centres[t_rnd(r) % 3];
        *lon = c[0] + (u - 0.5) * 0.2;
        *lat = c[1] + (v - 0.5) * 0.2;
    } else {
        *lon = t_rnd(r) % 2 ? 179.9 - 2 * u : -179.9 + 2 * u;
        *lat = t_rnd(r) % 2 ? 84.9 - 6 * v : -84.9 + 6 * v;
    }
}

static struct evwatch *geo_ev; /* the GEO run's event comparison */

static void geo_compare(redisContext *dr, redisContext *dk, struct gargs *g, size_t *n)
{
    redisReply *a = redisCommandArgv(dr, g->n, g->v, NULL);
    redisReply *b = redisCommandArgv(dk, g->n, g->v, NULL);
    assert_true(a && b);
    if (!same(a, b)) {
        char cmd[512] = "", ra[4096], rb[4096];
        for (int i = 0; i < g->n; i++)
            put(cmd, sizeof cmd, " %s", g->v[i]);
        fail_msg("GEO%s: redis-server %s, shmkvd %s", cmd, show(a, ra, sizeof ra),
                 show(b, rb, sizeof rb));
    }
    freeReplyObject(a);
    freeReplyObject(b);
    (*n)++;
    ev_step(geo_ev, "GEO", g->n, g->v);
}

static void test_diff_geo(void **state)
{
    (void)state;
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    static const char *const keys3[] = {"geo0", "geo1", "geo2"};
    static const char *const units[] = {"m", "km", "ft", "mi", "KM"};
    static const double scale[] = {1, 1000, 0.3048, 1609.34, 1000};
    uint64_t r = 0x47454f; /* "GEO" */
    size_t compared = 0, hits = 0;
    struct gargs g;
    struct evwatch ev;
    ev_start(&ev, dr, dk);
    geo_ev = &ev;
    for (int k = 0; k < 3; k++) {
        for (int batch = 0; batch < 40; batch++) {
            g.n = 0;
            ga_add(&g, "GEOADD");
            ga_add(&g, keys3[k]);
            if (batch % 7 == 3)
                ga_add(&g, t_rnd(&r) % 2 ? "NX" : "XX");
            if (batch % 5 == 2)
                ga_add(&g, "CH");
            for (int i = 0; i < 10 && g.n + 3 <= 40; i++) {
                double lon, lat;
                geo_point(&r, k, &lon, &lat);
                ga_addf(&g, "%.6f", lon);
                ga_addf(&g, "%.6f", lat);
                ga_addf(&g, "p%.0f", (double)(t_rnd(&r) % 350));
            }
            geo_compare(dr, dk, &g, &compared);
        }
    }
    for (int step = 0; step < 700; step++) {
        int k = (int)(t_rnd(&r) % 3), op = (int)(t_rnd(&r) % 20);
        const char *key = keys3[k];
        char m1[16], m2[16];
        snprintf(m1, sizeof m1, "p%u", (unsigned)(t_rnd(&r) % 360)); /* a few are absent */
        snprintf(m2, sizeof m2, "p%u", (unsigned)(t_rnd(&r) % 360));
        g.n = 0;
        if (op < 2) {
            ga_add(&g, "GEODIST");
            ga_add(&g, key);
            ga_add(&g, m1);
            ga_add(&g, m2);
            if (op)
                ga_add(&g, units[t_rnd(&r) % 5]);
            geo_compare(dr, dk, &g, &compared);
            continue;
        }
        if (op < 4) {
            ga_add(&g, op == 2 ? "GEOPOS" : "GEOHASH");
            ga_add(&g, key);
            ga_add(&g, m1);
            ga_add(&g, m2);
            geo_compare(dr, dk, &g, &compared);
            continue;
        }
        /* A search: its centre, shape and unit. */
        int u = (int)(t_rnd(&r) % 5);
        double lon, lat;
        geo_point(&r, k, &lon, &lat);
        /* Sizes from metres to half the globe, in the unit's terms. */
        double metres = k == 1 ? 200.0 * (double)(1 + t_rnd(&r) % 100)
                               : 1000.0 * (double)(1 + t_rnd(&r) % 3000);
        if (t_rnd(&r) % 10 == 0)
            metres = (double)(t_rnd(&r) % 20000) * 1000.0;
        double size = metres / scale[u];
        bool bymember = t_rnd(&r) % 3 == 0, box = t_rnd(&r) % 2;
        bool store = t_rnd(&r) % 6 == 0;
        int form = op < 12 ? 0 : op < 16 ? 1 : 2; /* GEOSEARCH, GEORADIUS, _RO */
        if (form == 0) {
            ga_add(&g, store ? "GEOSEARCHSTORE" : "GEOSEARCH");
            if (store)
                ga_add(&g, "geodst");
            ga_add(&g, key);
            if (bymember) {
                ga_add(&g, "FROMMEMBER");
                ga_add(&g, m1);
            } else {
                ga_add(&g, "FROMLONLAT");
                ga_addf(&g, "%.6f", lon);
                ga_addf(&g, "%.6f", lat);
            }
            if (box) {
                ga_add(&g, "BYBOX");
                ga_addf(&g, "%.3f", size);
                ga_addf(&g, "%.3f", size * (double)(1 + t_rnd(&r) % 4) / 2);
            } else {
                ga_add(&g, "BYRADIUS");
                ga_addf(&g, "%.3f", size);
            }
            ga_add(&g, units[u]);
        } else {
            bool ro = form == 2;
            ga_add(&g, bymember ? (ro ? "GEORADIUSBYMEMBER_RO" : "GEORADIUSBYMEMBER")
                                : (ro ? "GEORADIUS_RO" : "GEORADIUS"));
            ga_add(&g, key);
            if (bymember) {
                ga_add(&g, m1);
            } else {
                ga_addf(&g, "%.6f", lon);
                ga_addf(&g, "%.6f", lat);
            }
            ga_addf(&g, "%.3f", size);
            ga_add(&g, units[u]);
            store = store && !ro;
        }
        unsigned sort = (unsigned)(t_rnd(&r) % 3);
        if (sort)
            ga_add(&g, sort == 1 ? "ASC" : "DESC");
        if (t_rnd(&r) % 3 == 0) {
            ga_add(&g, "COUNT");
            ga_addf(&g, "%.0f", (double)(1 + t_rnd(&r) % 12));
            if (t_rnd(&r) % 2)
                ga_add(&g, "ANY");
        }
        if (store) {
            if (form == 0) {
                if (t_rnd(&r) % 2)
                    ga_add(&g, "STOREDIST");
            } else {
                ga_add(&g, t_rnd(&r) % 2 ? "STORE" : "STOREDIST");
                ga_add(&g, "geodst");
            }
        } else {
            if (t_rnd(&r) % 2)
                ga_add(&g, "WITHDIST");
            if (t_rnd(&r) % 3 == 0)
                ga_add(&g, "WITHHASH");
            if (t_rnd(&r) % 3 == 0)
                ga_add(&g, "WITHCOORD");
        }
        redisReply *peek = redisCommandArgv(dr, g.n, g.v, NULL);
        hits += peek && peek->type == REDIS_REPLY_ARRAY     ? peek->elements
                : peek && peek->type == REDIS_REPLY_INTEGER ? (size_t)peek->integer
                                                            : 0;
        freeReplyObject(peek);
        /* The same to shmkvd, so the keyspace events stay in step. */
        freeReplyObject(redisCommandArgv(dk, g.n, g.v, NULL));
        geo_compare(dr, dk, &g, &compared);
        if (store) {
            struct gargs z = {.n = 0};
            ga_add(&z, "ZRANGE");
            ga_add(&z, "geodst");
            ga_add(&z, "0");
            ga_add(&z, "-1");
            ga_add(&z, "WITHSCORES");
            geo_compare(dr, dk, &z, &compared);
        }
    }
    /* Errors, absent keys and members, other types, odd scores. */
    static const char *const script[][16] = {
        {"GEOADD", "geo0", "200", "10", "x"},
        {"GEOADD", "geo0", "10", "86", "x"},
        {"GEOADD", "geo0", "abc", "10", "x"},
        {"GEOADD", "geo0", "1e999", "10", "x"},
        {"GEOADD", "geo0", "NX", "XX", "1", "1", "x"},
        {"GEOADD", "geo0", "CH", "1", "2", "x", "1"},
        {"GEOADD", "geo0", "NX", "CH", "XX"},
        {"GEOADD", "geo0", "GT", "1", "2", "x"},
        {"GEOADD", "geo0", "180", "85.05112878", "edge1", "-180", "-85.05112878", "edge2"},
        {"GEOPOS", "geo0", "edge1", "edge2"},
        {"GEOHASH", "geo0", "edge1", "edge2"},
        {"ZADD", "geo0", "-1", "neg", "1.5", "frac", "1e300", "big", "-inf", "ninf", "inf", "pinf"},
        {"GEOPOS", "geo0", "neg", "frac", "big", "ninf", "pinf"},
        {"GEOHASH", "geo0", "neg", "frac", "big", "ninf", "pinf"},
        {"GEODIST", "geo0", "neg", "big", "km"},
        {"GEODIST", "geo0", "p1", "p2", "parsec"},
        {"GEODIST", "geo0", "p1", "p2", "km", "x"},
        {"GEODIST", "nokey", "a", "b"},
        {"GEOPOS", "nokey", "a", "b"},
        {"GEOHASH", "nokey", "a"},
        {"GEORADIUS", "geo0", "15", "37", "-1", "km"},
        {"GEORADIUS", "geo0", "15", "37", "abc", "km"},
        {"GEORADIUS", "geo0", "15", "37", "1", "parsecs"},
        {"GEORADIUS", "geo0", "200", "37", "1", "km"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "COUNT", "0"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "COUNT", "x"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "STORE"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "foo"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "STORE", "x", "WITHDIST"},
        {"GEORADIUS", "geo0", "15", "37", "200", "km", "ANY"},
        {"GEORADIUS_RO", "geo0", "15", "37", "200", "km", "STORE", "x"},
        {"GEORADIUSBYMEMBER", "nokey", "m", "-5", "km"},
        {"GEORADIUSBYMEMBER", "nokey", "m", "5", "km", "STORE", "geodst"},
        {"EXISTS", "geodst"},
        {"GEORADIUSBYMEMBER", "geo0", "nom", "5", "km"},
        {"GEORADIUSBYMEMBER", "geo0", "edge1", "x", "km"},
        {"GEOSEARCH", "geo0", "FROMMEMBER", "edge1", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km"},
        {"GEOSEARCH", "geo0", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km", "FROMLONLAT", "1",
         "2"},
        {"GEOSEARCH", "geo0", "FROMMEMBER", "edge1", "BYBOX", "-1", "2", "km"},
        {"GEOSEARCH", "geo0", "FROMMEMBER", "edge1", "BYBOX", "1", "x", "km"},
        {"GEOSEARCH", "geo0", "FROMMEMBER", "edge1", "BYBOX", "x", "1", "km"},
        {"GEOSEARCH", "geo0", "FROMMEMBER", "nope", "BYRADIUS", "1", "km"},
        {"GEOSEARCH", "nokey", "FROMMEMBER", "nope", "BYRADIUS", "1", "km"},
        {"GEOSEARCH", "geo0", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "STORE", "x"},
        {"GEOSEARCH", "geo0", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "STOREDIST"},
        {"GEOSEARCH", "geo0", "FROMLONLAT", "1", "2", "COUNT", "1"},
        {"GEOSEARCH", "geo0", "BYRADIUS", "1", "km", "WITHDIST"},
        {"GEOSEARCHSTORE", "geodst", "geo0", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km",
         "WITHHASH"},
        {"GEOSEARCHSTORE", "geodst", "nokey", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km"},
        {"SET", "geostr", "x"},
        {"GEOADD", "geostr", "1", "1", "m"},
        {"GEOPOS", "geostr", "m"},
        {"GEOHASH", "geostr", "m"},
        {"GEODIST", "geostr", "a", "b"},
        {"GEORADIUS", "geostr", "1", "1", "1", "xx"},
        {"GEOSEARCH", "geostr", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "m"},
        {"GEOSEARCHSTORE", "geodst", "geostr", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "m"},
        {"GEOSEARCHSTORE", "geostr", "geo0", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"},
        {"EXISTS", "geostr"},
        {"GEOPOS"},
        {"GEOADD", "geo0", "1", "1"},
        {"GEOSEARCH", "geo0", "FROMLONLAT", "1", "1"},
        {"COMMAND", "GETKEYS", "GEORADIUS", "g", "1", "2", "3", "km", "STORE", "a", "STOREDIST",
         "b", "STORE", "c"},
        {"COMMAND", "GETKEYS", "GEORADIUSBYMEMBER", "g", "m", "3", "km", "STOREDIST", "b"},
        {"COMMAND", "GETKEYS", "GEOSEARCHSTORE", "d", "s", "FROMLONLAT", "1", "2", "BYRADIUS", "1",
         "m"},
    };
    for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) {
        g.n = 0;
        while (g.n < 16 && script[i][g.n]) {
            g.v[g.n] = script[i][g.n];
            g.n++;
        }
        geo_compare(dr, dk, &g, &compared);
    }
    assert_true(hits > 1000); /* the searches found things */
    freeReplyObject(redisCommand(dr, "DEL geo0 geo1 geo2 geodst geostr"));
    freeReplyObject(redisCommand(dk, "DEL geo0 geo1 geo2 geodst geostr"));
    ev_stop(&ev, "GEO");
    geo_ev = NULL;
    printf("test_diff: %zu GEO commands identical to redis-server's (%zu members found), "
           "%ld keyspace events identical\n",
           compared, hits, ev.events);
    assert_true(ev.events > 100);
    redisFree(dr);
    redisFree(dk);
}

/* ---- DUMP and RESTORE ---- */

/* key's value on c, comparable: a hash's pairs and a set's members sorted;
 * *type gets its TYPE. */
static redisReply *value_of(redisContext *c, const char *key, char *type, size_t cap)
{
    redisReply *t = redisCommand(c, "TYPE %s", key);
    assert_true(t && t->type == REDIS_REPLY_STATUS);
    snprintf(type, cap, "%s", t->str);
    freeReplyObject(t);
    redisReply *v;
    if (!strcmp(type, "string")) {
        v = redisCommand(c, "GET %s", key);
    } else if (!strcmp(type, "hash")) {
        v = redisCommand(c, "HGETALL %s", key);
        sort_groups(v, 2);
    } else if (!strcmp(type, "set")) {
        v = redisCommand(c, "SMEMBERS %s", key);
        sort_groups(v, 1);
    } else if (!strcmp(type, "zset")) {
        v = redisCommand(c, "ZRANGE %s 0 -1 WITHSCORES", key);
    } else if (!strcmp(type, "list")) {
        v = redisCommand(c, "LRANGE %s 0 -1", key);
    } else {
        v = redisCommand(c, "EXISTS %s", key);
    }
    assert_non_null(v);
    return v;
}

/* a's key ka and b's key kb hold the same value. */
static void same_value(redisContext *a, const char *ka, redisContext *b, const char *kb,
                       const char *what)
{
    char ta[16], tb[16];
    redisReply *va = value_of(a, ka, ta, sizeof ta), *vb = value_of(b, kb, tb, sizeof tb);
    if (strcmp(ta, tb) || !same(va, vb)) {
        char ra[512], rb[512];
        fail_msg("%s: %s %s is %s %s, %s %s", what, ka, tb, kb, show(vb, rb, sizeof rb), ta,
                 show(va, ra, sizeof ra));
    }
    freeReplyObject(va);
    freeReplyObject(vb);
}

/* The same command on both servers (av[i] of length al[i]); the replies
 * must be identical. */
static void dr_both(redisContext *dr, redisContext *dk, int ac, const char **av, const size_t *al,
                    const char *what, size_t *compared)
{
    redisReply *a = redisCommandArgv(dr, ac, av, al), *b = redisCommandArgv(dk, ac, av, al);
    assert_true(a && b);
    if (!same(a, b)) {
        char ra[256], rb[256];
        fail_msg("%s: %s %s: redis-server %s, shmkvd %s", what, av[0], ac > 1 ? av[1] : "",
                 show(a, ra, sizeof ra), show(b, rb, sizeof rb));
    }
    freeReplyObject(a);
    freeReplyObject(b);
    (*compared)++;
}

/* Element i of a value in one of four styles: integers (an intset, or
 * listpack integers), short strings, strings long enough for Redis's
 * hashtable and skiplist encodings, and binary ones. Distinct per i. */
static size_t dr_elem(char *buf, size_t cap, int style, size_t i)
{
    switch (style) {
    case 0:
        return (size_t)snprintf(buf, cap, "%lld",
                                i % 3 == 2 ? (long long)i + (1LL << 40) : (long long)i * 7 - 500);
    case 1:
        return (size_t)snprintf(buf, cap, "e%zu", i);
    case 2: {
        int n = snprintf(buf, cap, "%zu:", i);
        size_t len = i % 4 ? (size_t)n : 90;
        memset(buf + n, 'w', len - (size_t)n);
        return len;
    }
    default: {
        size_t len = 3 + i % 5;
        buf[0] = 0;
        buf[1] = (char)0xff;
        snprintf(buf + 2, cap - 2, "%05zu", i);
        return len + 3;
    }
    }
}

/* key on both servers: a fresh value of type t (0 string, 1 hash, 2 set,
 * 3 zset, 4 list) with n elements, written by commands of at most 50. */
static void dr_build(redisContext *dr, redisContext *dk, const char *key, int t, size_t n,
                     int style, size_t *compared, struct evwatch *ev)
{
    enum { BATCH = 50 };
    static const char *const cmds[] = {"SET", "HSET", "SADD", "ZADD", "RPUSH"};
    static char store[2 * BATCH][128];
    const char *av[2 + 2 * BATCH];
    size_t al[2 + 2 * BATCH];
    av[0] = "DEL";
    av[1] = key;
    al[0] = 3;
    al[1] = strlen(key);
    dr_both(dr, dk, 2, av, al, "DUMP build", compared);
    if (t == 0) { /* one string: an integer, short, compressible, or binary */
        static char big[600];
        size_t len;
        if (style == 2) {
            for (size_t j = 0; j < sizeof big; j++)
                big[j] = (char)('a' + j / 50);
            len = sizeof big;
        } else {
            len = dr_elem(big, sizeof big, style, n);
        }
        av[0] = "SET";
        av[2] = big;
        al[0] = 3;
        al[2] = len;
        dr_both(dr, dk, 3, av, al, "DUMP build", compared);
        ev_step(ev, "DUMP", 2, av);
        return;
    }
    for (size_t i = 0; i < n;) {
        int ac = 2;
        av[0] = cmds[t];
        al[0] = strlen(cmds[t]);
        for (size_t b = 0; b < BATCH && i < n; b++, i++) {
            if (t == 3) { /* a score first */
                static const char *const sc[] = {"0", "-1.5", "1e300", "-inf", "+inf", "7"};
                int m = i % 7 == 0 ? snprintf(store[2 * b], 128, "%s", sc[i / 7 % 6])
                                   : snprintf(store[2 * b], 128, "%.17g", (double)i * 0.25 - 3);
                av[ac] = store[2 * b];
                al[ac++] = (size_t)m;
            }
            al[ac] = dr_elem(store[2 * b + 1], 128, style, i);
            av[ac] = store[2 * b + 1];
            ac++;
            if (t == 1) { /* a value after each field */
                av[ac] = store[2 * b + 1];
                al[ac] = al[ac - 1] / (1 + i % 3);
                ac++;
            }
        }
        dr_both(dr, dk, ac, av, al, "DUMP build", compared);
        ev_step(ev, "DUMP", 2, av);
    }
}

/* RESTORE key ttl payload REPLACE on both servers, replies compared. */
static void dr_restore(redisContext *dr, redisContext *dk, const char *key, const char *ttl,
                       const void *p, size_t n, size_t *compared, struct evwatch *ev)
{
    const char *av[] = {"RESTORE", key, ttl, p, "REPLACE"};
    size_t al[] = {7, strlen(key), strlen(ttl), n, 7};
    dr_both(dr, dk, 5, av, al, "RESTORE", compared);
    ev_step(ev, "DUMP", 2, av);
}

/* DUMP key on c: a bulk string, or nil. */
static redisReply *dr_dump(redisContext *c, const char *key)
{
    redisReply *r = redisCommand(c, "DUMP %s", key);
    assert_true(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL));
    return r;
}

/* The payloads of the tests' writer (t_rdb.h): each restored into both. */
static size_t dr_crafted(redisContext *dr, redisContext *dk, size_t *compared, struct evwatch *ev)
{
    struct t_buf b[24] = {{0}};
    size_t nb = 0, good;
    static const int64_t ints[] = {
        0,      12,      13,       -1,         127,           -128,      300,
        -32768, 8388607, -8388608, 2147483647, -2147483648LL, 1LL << 40, INT64_MIN};
    const size_t ni = sizeof ints / sizeof ints[0];
    char long_str[300];
    memset(long_str, 'z', sizeof long_str);
    struct t_zl z;
    struct t_lp l;
    /* a ziplist list (10), and two ziplist nodes in a quicklist (14) */
    tz_begin(&z);
    for (size_t i = 0; i < ni; i++)
        tz_int(&z, ints[i]);
    tz_str(&z, long_str, sizeof long_str);
    tz_str(&z, "after the long one", 18);
    tz_end(&z);
    tb_byte(&b[nb], 10);
    tb_str(&b[nb], z.b.p, z.b.n);
    tb_footer(&b[nb++], 9);
    tb_byte(&b[nb], 14);
    tb_len(&b[nb], 2);
    tb_str(&b[nb], z.b.p, z.b.n);
    tb_str(&b[nb], z.b.p, z.b.n);
    tb_footer(&b[nb++], 9);
    free(z.b.p);
    /* a ziplist hash (13) and sorted set (12) */
    for (int kind = 13; kind >= 12; kind--) {
        tz_begin(&z);
        for (size_t i = 0; i < ni; i++) {
            char f[16];
            tz_str(&z, f, (size_t)snprintf(f, sizeof f, "f%zu", i));
            if (kind == 13)
                tz_int(&z, ints[i]);
            else if (i % 2) /* a sorted set's entries come in score order */
                tz_str(&z, f, (size_t)snprintf(f, sizeof f, "%.1f", (double)i * 10 - 49.5));
            else
                tz_int(&z, (int64_t)i * 10 - 50);
        }
        tz_end(&z);
        tb_byte(&b[nb], (unsigned)kind);
        tb_str(&b[nb], z.b.p, z.b.n);
        tb_footer(&b[nb++], 9);
        free(z.b.p);
    }
    /* a listpack hash (16) and sorted set (17), and a quicklist of a plain
     * node and a packed one (18) */
    for (int kind = 16; kind <= 18; kind++) {
        tl_begin(&l);
        for (size_t i = 0; i < ni; i++) {
            char f[16];
            tl_str(&l, f, (size_t)snprintf(f, sizeof f, "m%zu", i));
            if (kind != 17)
                tl_int(&l, ints[i]);
            else if (i % 2)
                tl_str(&l, f, (size_t)snprintf(f, sizeof f, "%.1f", (double)i * 1000 - 4999.5));
            else
                tl_int(&l, (int64_t)i * 1000 - 5000);
        }
        tl_end(&l);
        tb_byte(&b[nb], (unsigned)kind);
        if (kind == 18) {
            tb_len(&b[nb], 2);
            tb_len(&b[nb], 1);
            tb_str(&b[nb], long_str, 100);
            tb_len(&b[nb], 2);
        }
        tb_str(&b[nb], l.b.p, l.b.n);
        tb_footer(&b[nb++], 10);
        free(l.b.p);
    }
    /* intsets (11) of each width */
    static const int64_t sorted[] = {-70000, -3, 0, 5, 40000};
    for (int w = 2; w <= 8; w *= 2) {
        struct t_buf is = {0};
        ti_build(&is, w == 2 ? sorted + 1 : sorted, w == 2 ? 3 : 5, w);
        tb_byte(&b[nb], 11);
        tb_str(&b[nb], is.p, is.n);
        tb_footer(&b[nb++], 8);
        free(is.p);
    }
    /* text scores (3), a linked list (1), integer and LZF strings (0) */
    tb_byte(&b[nb], 3);
    tb_len(&b[nb], 3);
    tb_str(&b[nb], "a", 1);
    tb_str(&b[nb], "1.25", 4);
    tb_str(&b[nb], "b", 1);
    tb_byte(&b[nb], 254);
    tb_str(&b[nb], "c", 1);
    tb_byte(&b[nb], 255);
    tb_footer(&b[nb++], 6);
    tb_byte(&b[nb], 1);
    tb_len(&b[nb], 3);
    tb_intstr(&b[nb], -200);
    tb_str(&b[nb], "", 0);
    tb_intstr(&b[nb], 70000);
    tb_footer(&b[nb++], 7);
    tb_byte(&b[nb], 0);
    tb_put(&b[nb],
           "\xc3\x06\x0c\x01"
           "ab"
           "\xe0\x01\x01",
           9);
    tb_footer(&b[nb++], 10);
    good = nb;
    /* refused by both: a newer version, a wrong CRC, too short, an empty
     * set, members twice, a NaN score, an unknown quicklist node. (A hash
     * field twice is refused too, but Redis takes a small hash's without
     * sanitize-dump-payload, and makes a corrupt value of it.) */
    tb_byte(&b[nb], 2);
    tb_len(&b[nb], 1);
    tb_str(&b[nb], "a", 1);
    tb_footer(&b[nb++], 11);
    tb_byte(&b[nb], 2);
    tb_len(&b[nb], 1);
    tb_str(&b[nb], "a", 1);
    tb_footer(&b[nb], 10);
    b[nb].p[b[nb].n - 1] ^= 1;
    nb++;
    tb_put(&b[nb++], "\x00\x01", 2);
    static const struct {
        const char *body;
        size_t n;
    } bad[] = {
        {"\x02\x00", 2},
        {"\x02\x02\x01"
         "a\x01"
         "a",
         6},
        {"\x05\x02\x01"
         "m"
         "\0\0\0\0\0\0\0\0"
         "\x01"
         "m"
         "\0\0\0\0\0\0\0\0",
         22},
        {"\x05\x01\x01"
         "m"
         "\0\0\0\0\0\0\xf8\x7f",
         12},
        {"\x03\x01\x01"
         "m\xfd",
         5},
        {"\x12\x01\x03\x01"
         "x",
         5},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tb_put(&b[nb], bad[i].body, bad[i].n);
        tb_footer(&b[nb++], 10);
    }
    assert_true(nb <= sizeof b / sizeof b[0]);
    for (size_t i = 0; i < nb; i++) {
        char key[32];
        snprintf(key, sizeof key, "dcraft%zu", i);
        dr_restore(dr, dk, key, "0", b[i].p, b[i].n, compared, ev);
        if (i < good)
            same_value(dr, key, dk, key, "a crafted payload");
        free(b[i].p);
    }
    return good;
}
/* DUMP and RESTORE against redis-server: values of every type, size and
 * style (so that Redis writes each of its encodings: listpacks, intsets,
 * quicklists, hashtables, skiplists, integer and LZF strings) go from
 * each server into both; crafted payloads in older encodings are restored
 * into both; then RESTORE's options and errors, replies compared byte for
 * byte and keyspace events in order throughout. */
static void test_diff_dump_restore(void **state)
{
    (void)state;
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    struct evwatch ev;
    ev_start(&ev, dr, dk);
    static const size_t sizes[] = {1, 3, 60, 130, 600};
    uint64_t r = 0x44554d50; /* "DUMP" */
    size_t compared = 0, moved = 0;
    for (int round = 0; round < 150; round++) {
        int t = round % 5, style = (int)(t_rnd(&r) % 4);
        size_t n = sizes[t_rnd(&r) % 5];
        dr_build(dr, dk, "dsrc", t, n, style, &compared, &ev);
        redisReply *fr = dr_dump(dr, "dsrc"), *fk = dr_dump(dk, "dsrc");
        assert_true(fr->type == REDIS_REPLY_STRING && fk->type == REDIS_REPLY_STRING);
        const char *ttl = round % 7 == 3 ? "100000" : "0";
        /* Redis's payload into both, shmkvd's into both */
        dr_restore(dr, dk, "dfromr", ttl, fr->str, fr->len, &compared, &ev);
        same_value(dr, "dfromr", dk, "dfromr", "redis-server's payload");
        same_value(dr, "dsrc", dr, "dfromr", "redis-server's payload");
        dr_restore(dr, dk, "dfromk", ttl, fk->str, fk->len, &compared, &ev);
        same_value(dr, "dfromk", dr, "dsrc", "shmkvd's payload");
        same_value(dk, "dfromk", dk, "dsrc", "shmkvd's payload");
        moved += 4;
        if (*ttl != '0') {
            redisReply *a = redisCommand(dr, "TTL dfromk"), *b = redisCommand(dk, "TTL dfromk");
            assert_true(a->integer >= 99 && a->integer <= 100);
            assert_true(b->integer >= 99 && b->integer <= 100);
            freeReplyObject(a);
            freeReplyObject(b);
        }
        freeReplyObject(fr);
        freeReplyObject(fk);
    }
    size_t crafted = dr_crafted(dr, dk, &compared, &ev);

    /* RESTORE's options and errors, in Redis's order of checks; P stands
     * for a valid payload. */
    redisReply *pl = dr_dump(dr, "dsrc");
    static const char *script[][10] = {
        {"SET", "dex", "1"},
        {"DUMP", "dnosuch"},
        {"RESTORE", "dx", "0", "garbage"},
        {"RESTORE", "dx", "-1", "P"},
        {"RESTORE", "dex", "0", "P"},
        {"RESTORE", "dex", "-1", "garbage"},
        {"RESTORE", "dx", "abc", "P"},
        {"RESTORE", "dx", "0", "P", "IDLETIME", "10", "FREQ", "5"},
        {"RESTORE", "dx", "0", "P", "FREQ", "5", "IDLETIME", "10"},
        {"RESTORE", "dx", "0", "P", "IDLETIME", "-1"},
        {"RESTORE", "dx", "0", "P", "IDLETIME", "x"},
        {"RESTORE", "dx", "0", "P", "FREQ", "256"},
        {"RESTORE", "dx", "0", "P", "FREQ", "-1"},
        {"RESTORE", "dx", "0", "P", "IDLETIME"},
        {"RESTORE", "dx", "0", "P", "BOGUS"},
        {"RESTORE", "dex", "0", "P", "BOGUS"},
        {"RESTORE", "dx", "1", "P", "ABSTTL"},
        {"EXISTS", "dx"},
        {"RESTORE", "dex", "1", "P", "ABSTTL", "REPLACE"},
        {"EXISTS", "dex"},
        {"RESTORE", "dx", "9223372036854775807", "P"},
        {"EXISTS", "dx"},
        {"RESTORE", "dx", "0", "P", "REPLACE", "ABSTTL", "IDLETIME", "0", "REPLACE"},
        {"OBJECT", "IDLETIME", "dx"},
        {"RESTORE", "dx", "0", "P", "REPLACE", "FREQ", "100"},
        {"RESTORE", "dy", "99999999999999", "P", "ABSTTL"},
        {"PEXPIRETIME", "dy"},
        {"RESTORE", "dx", "0", ""},
        {"RESTORE", "dz", "0", ""},
        {"RESTORE", "dz"},
        {"DUMP"},
        {"DUMP", "dx", "dy"},
        {"MULTI"},
        {"RESTORE", "dz", "0", "P"},
        {"DUMP", "dz"},
        {"RESTORE", "dz", "0", "P"},
        {"EXEC"},
        {"DEL", "dz", "dx", "dy", "dex", "dsrc", "dfromr", "dfromk"},
    };
    bool in_multi = false;
    for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) {
        const char *av[10];
        size_t al[10];
        int ac = 0;
        for (; ac < 10 && script[i][ac]; ac++) {
            bool p = !strcmp(script[i][ac], "P");
            av[ac] = p ? pl->str : script[i][ac];
            al[ac] = p ? pl->len : strlen(script[i][ac]);
        }
        if (!strcmp(av[0], "DUMP") && ac == 2 && !strcmp(av[1], "dz")) {
            /* inside MULTI: QUEUED on both; the payloads differ */
            dr_both(dr, dk, ac, av, al, "RESTORE script", &compared);
            continue;
        }
        if (!strcmp(av[0], "EXEC")) { /* [OK, payload, BUSYKEY]: all but the payload */
            redisReply *a = redisCommand(dr, "EXEC"), *b = redisCommand(dk, "EXEC");
            assert_true(a && b && a->elements == 3 && b->elements == 3);
            assert_true(same(a->element[0], b->element[0]) && same(a->element[2], b->element[2]));
            assert_string_equal(b->element[2]->str, "BUSYKEY Target key name already exists.");
            freeReplyObject(a);
            freeReplyObject(b);
            in_multi = false;
            continue;
        }
        dr_both(dr, dk, ac, av, al, "RESTORE script", &compared);
        in_multi |= !strcmp(av[0], "MULTI");
        if (!in_multi) /* a check's PUBLISH would be queued */
            ev_step(&ev, "DUMP", ac, av);
    }
    freeReplyObject(pl);
    for (int i = 0; i < 2; i++) /* dcraft* */
        freeReplyObject(redisCommand(i ? dk : dr, "FLUSHDB"));
    ev_stop(&ev, "DUMP");
    printf("test_diff: DUMP/RESTORE: %zu values moved between the servers, %zu crafted "
           "payloads, %zu replies identical, %ld keyspace events identical\n",
           moved, crafted, compared, ev.events);
    assert_true(ev.events > 300);
    redisFree(dr);
    redisFree(dk);
}

/* MIGRATE from each server into a third (a redis-server), redis-server's
 * keys into database 1, shmkvd's into 2, each step's replies compared and
 * then the two databases; and from redis-server into shmkvd. */
static void test_diff_migrate(void **state)
{
    (void)state;
    struct server T;
    h_start_redis(&T, "target");
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    redisContext *t1 = h_connect_port(T.port), *t2 = h_connect_port(T.port);
    assert_true(dr && dk && t1 && t2);
    freeReplyObject(redisCommand(t1, "SELECT 1"));
    freeReplyObject(redisCommand(t2, "SELECT 2"));
    struct evwatch ev;
    ev_start(&ev, dr, dk);
    size_t compared = 0;
    static const char *const setup[] = {
        "SET ms v PX 100000", "HSET mh f 1 g 2", "SADD mset a b 1",
        "RPUSH ml x y z",     "SET ex 1",        "SET k1 v1",
    };
    for (size_t i = 0; i < sizeof setup / sizeof setup[0]; i++) {
        redisReply *a = redisCommand(dr, setup[i]), *b = redisCommand(dk, setup[i]);
        assert_true(a && b && same(a, b));
        freeReplyObject(a);
        freeReplyObject(b);
    }
    for (int i = 0; i < 200; i++) { /* a sorted set too big for one listpack */
        freeReplyObject(redisCommand(dr, "ZADD mz %d m%d", i, i));
        freeReplyObject(redisCommand(dk, "ZADD mz %d m%d", i, i));
    }
    char tport[16], closed[16];
    snprintf(tport, sizeof tport, "%d", T.port);
    snprintf(closed, sizeof closed, "%d", h_free_port());
    /* DB is the target database: 1 for redis-server's, 2 for shmkvd's. */
    static const char *const script[][12] = {
        {"MIGRATE", "127.0.0.1", "PORT", "ms", "DB", "5000"},
        {"MIGRATE", "127.0.0.1", "PORT", "", "DB", "5000", "KEYS", "mh", "mset", "nosuch"},
        {"MIGRATE", "127.0.0.1", "PORT", "nosuch", "DB", "5000"},
        {"MIGRATE", "127.0.0.1", "PORT", "", "DB", "5000", "KEYS"},
        {"MIGRATE", "127.0.0.1", "PORT", "mz", "DB", "5000", "COPY"},
        {"MIGRATE", "127.0.0.1", "PORT", "mz", "DB", "5000", "COPY"},
        {"MIGRATE", "127.0.0.1", "PORT", "mz", "DB", "0", "COPY", "REPLACE"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "AUTH", "pw"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "AUTH2", "user", "pw"},
        {"MIGRATE", "127.0.0.1", "CLOSED", "ml", "DB", "200"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "x", "5000"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "x"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "KEYS", "a"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "BOGUS"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "AUTH"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "DB", "5000", "AUTH2", "u"},
        {"MIGRATE", "127.0.0.1", "PORT", "ml", "99", "5000"},
        {"MIGRATE", "127.0.0.1", "PORT", "", "DB", "5000", "REPLACE", "KEYS", "ml", "ex"},
        {"EXISTS", "ms", "mh", "mset", "mz", "ml", "ex", "k1"},
        {"COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "KEYS", "a", "b"},
        {"COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "5"},
        {"COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "5", "KEYS", "a"},
        {"COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "COPY"},
        {"MIGRATE"},
    };
    for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) {
        redisReply *r[2];
        for (int sv = 0; sv < 2; sv++) {
            const char *av[12];
            int ac = 0;
            for (; ac < 12 && script[i][ac]; ac++) {
                const char *w = script[i][ac];
                av[ac] = !strcmp(w, "PORT")     ? tport
                         : !strcmp(w, "CLOSED") ? closed
                         : !strcmp(w, "DB")     ? (sv ? "2" : "1")
                                                : w;
            }
            r[sv] = redisCommandArgv(sv ? dk : dr, ac, av, NULL);
            assert_non_null(r[sv]);
            if (sv)
                ev_step(&ev, "MIGRATE", ac, av);
        }
        if (!same(r[0], r[1])) {
            char ra[512], rb[512];
            fail_msg("MIGRATE step %zu: redis-server %s, shmkvd %s", i, show(r[0], ra, sizeof ra),
                     show(r[1], rb, sizeof rb));
        }
        freeReplyObject(r[0]);
        freeReplyObject(r[1]);
        compared++;
    }
    /* What each moved: the same values, the TTL kept. */
    static const char *const moved[] = {"ms", "mh", "mset", "mz", "ml", "ex"};
    for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++)
        same_value(t1, moved[i], t2, moved[i], "MIGRATE's target");
    redisReply *a = redisCommand(t1, "PTTL ms"), *b = redisCommand(t2, "PTTL ms");
    assert_true(a->integer > 90000 && b->integer > 90000);
    freeReplyObject(a);
    freeReplyObject(b);
    a = redisCommand(t1, "DBSIZE");
    b = redisCommand(t2, "DBSIZE");
    assert_int_equal(a->integer, 6);
    assert_int_equal(b->integer, 6);
    freeReplyObject(a);
    freeReplyObject(b);
    ev_stop(&ev, "MIGRATE"); /* what follows differs by design */
    /* redis-server's MIGRATE into shmkvd: RESTOREs that shmkvd takes */
    freeReplyObject(redisCommand(dr, "RPUSH back p q"));
    char kport[16];
    snprintf(kport, sizeof kport, "%d", K.port);
    const char *mv[] = {"MIGRATE", "127.0.0.1", kport,  "",     "3",
                        "5000",    "COPY",      "KEYS", "back", "k1"};
    a = redisCommandArgv(dr, 10, mv, NULL);
    assert_true(a && a->type == REDIS_REPLY_STATUS && !strcmp(a->str, "OK"));
    freeReplyObject(a);
    redisContext *k3 = h_connect_port(K.port);
    freeReplyObject(redisCommand(k3, "SELECT 3"));
    same_value(dr, "back", k3, "back", "redis-server's MIGRATE into shmkvd");
    same_value(dr, "k1", k3, "k1", "redis-server's MIGRATE into shmkvd");
    freeReplyObject(redisCommand(k3, "FLUSHDB"));
    redisFree(k3);
    freeReplyObject(redisCommand(dr, "FLUSHDB"));
    freeReplyObject(redisCommand(dk, "FLUSHDB"));
    printf("test_diff: MIGRATE: %zu steps identical to redis-server's, the values moved equal, "
           "%ld keyspace events identical\n",
           compared, ev.events);
    redisFree(dr);
    redisFree(dk);
    redisFree(t1);
    redisFree(t2);
    h_destroy(&T);
}

/* Collections emptied member by member, as queues and caches empty them:
 * each round builds a hash, set or sorted set of 1,200-3,000 members on
 * both servers, gives some an expiry, removes most members (HDEL, SREM,
 * ZREM in commands of 50, ZREMRANGEBYSCORE, ZPOPMIN, SPOP), then reads it
 * back whole, by HSCAN/SSCAN/ZSCAN to the end, by ranges, ranks and
 * lengths. shmkvd rewrites such a collection under a new version after the
 * walk that met the deletes (storage/db_tidy.c), so the reads before and
 * after that rewrite must agree with redis-server's; INFO storage says how
 * many were rewritten. Replies whose order Redis leaves unspecified are
 * sorted first. */
static void churn_cmp(redisContext *dr, redisContext *dk, int ac, const char **av, size_t stride,
                      size_t *compared)
{
    redisReply *a = redisCommandArgv(dr, ac, av, NULL), *b = redisCommandArgv(dk, ac, av, NULL);
    assert_true(a && b);
    if (stride) {
        sort_groups(a, stride);
        sort_groups(b, stride);
    }
    if (!same(a, b)) {
        char ra[512], rb[512];
        fail_msg("churn: %s %s %s: redis-server %s, shmkvd %s", av[0], ac > 1 ? av[1] : "",
                 ac > 2 ? av[2] : "", show(a, ra, sizeof ra), show(b, rb, sizeof rb));
    }
    freeReplyObject(a);
    freeReplyObject(b);
    (*compared)++;
}

/* Every item a full SCAN-style iteration of key gives (cmd HSCAN, SSCAN or
 * ZSCAN), as one array reply built by hand, sorted by groups of stride. */
static redisReply *churn_scan_all(redisContext *c, const char *cmd, const char *key, size_t stride)
{
    redisReply *all = calloc(1, sizeof *all);
    all->type = REDIS_REPLY_ARRAY;
    char cursor[32] = "0";
    do {
        redisReply *r = redisCommand(c, "%s %s %s COUNT 7", cmd, key, cursor);
        assert_true(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        redisReply *items = r->element[1];
        all->element =
            realloc(all->element, (all->elements + items->elements) * sizeof *all->element);
        for (size_t i = 0; i < items->elements; i++) {
            all->element[all->elements++] = items->element[i];
            items->element[i] = NULL;
        }
        items->elements = 0;
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    /* A SCAN may give an element twice; a collection that does not change
     * meanwhile gives each once on both servers. */
    sort_groups(all, stride);
    return all;
}

static void test_diff_churn(void **state)
{
    (void)state;
    redisContext *dr = h_connect_port(R.port), *dk = h_connect_port(K.port);
    assert_true(dr && dk);
    redisReply *info = redisCommand(dk, "INFO storage");
    const char *p = strstr(info->str, "collections_rewritten:");
    assert_non_null(p);
    long long before = atoll(p + strlen("collections_rewritten:"));
    freeReplyObject(info);
    uint64_t r = 0x4348524e; /* "CHRN" */
    size_t compared = 0;
    enum { ROUNDS = 12, BATCH = 50 };
    static char words[2 * BATCH + 2][48];
    const char *av[2 * BATCH + 4];
    for (int round = 0; round < ROUNDS; round++) {
        int t = round % 3; /* 0 hash, 1 set, 2 zset */
        const char *key = t == 0 ? "churn:h" : t == 1 ? "churn:s" : "churn:z";
        size_t n = 1200 + t_rnd(&r) % 1801;
        av[0] = "DEL";
        av[1] = key;
        churn_cmp(dr, dk, 2, av, 0, &compared);
        for (size_t i = 0; i < n;) {
            int ac = 2;
            av[0] = t == 0 ? "HSET" : t == 1 ? "SADD" : "ZADD";
            for (int b = 0; b < BATCH && i < n; b++, i++) {
                if (t == 2) {
                    snprintf(words[ac], sizeof words[ac], "%d", (int)(t_rnd(&r) % 1000));
                    av[ac] = words[ac];
                    ac++;
                }
                snprintf(words[ac], sizeof words[ac], "m%zu", i);
                av[ac] = words[ac];
                ac++;
                if (t == 0) {
                    snprintf(words[ac], sizeof words[ac], "v%zu", i * 7);
                    av[ac] = words[ac];
                    ac++;
                }
            }
            churn_cmp(dr, dk, ac, av, 0, &compared);
        }
        if (round % 2) {
            av[0] = "EXPIRE";
            av[2] = "100000";
            churn_cmp(dr, dk, 3, av, 0, &compared);
        }
        /* Remove all but about 1 in keep, in random order of batches. */
        size_t keep = 20 + t_rnd(&r) % 200;
        for (size_t i = 0; i < n;) {
            int ac = 2;
            av[0] = t == 0 ? "HDEL" : t == 1 ? "SREM" : "ZREM";
            for (int b = 0; b < BATCH && i < n; i++) {
                if (t_rnd(&r) % keep == 0)
                    continue;
                snprintf(words[ac], sizeof words[ac], "m%zu", i);
                av[ac] = words[ac];
                ac++, b++;
            }
            if (ac > 2)
                churn_cmp(dr, dk, ac, av, 0, &compared);
        }
        if (t == 2 && round % 2 == 0) {
            const char *ra[] = {"ZREMRANGEBYSCORE", key, "900", "+inf"};
            churn_cmp(dr, dk, 4, ra, 0, &compared);
            const char *pa[] = {"ZPOPMIN", key, "2"};
            churn_cmp(dr, dk, 3, pa, 0, &compared);
        }
        /* The reads, twice: the first walk meets the deletes. */
        for (int pass = 0; pass < 2; pass++) {
            if (t == 0) {
                const char *a1[] = {"HGETALL", key};
                churn_cmp(dr, dk, 2, a1, 2, &compared);
                const char *a2[] = {"HLEN", key};
                churn_cmp(dr, dk, 2, a2, 0, &compared);
                const char *a3[] = {"HMGET", key, "m0", "m1", "m2", "m999", "m1999"};
                churn_cmp(dr, dk, 7, a3, 0, &compared);
            } else if (t == 1) {
                const char *a1[] = {"SMEMBERS", key};
                churn_cmp(dr, dk, 2, a1, 1, &compared);
                const char *a2[] = {"SCARD", key};
                churn_cmp(dr, dk, 2, a2, 0, &compared);
                const char *a3[] = {"SMISMEMBER", key, "m0", "m1", "m500", "m2999"};
                churn_cmp(dr, dk, 6, a3, 0, &compared);
            } else {
                const char *a1[] = {"ZRANGE", key, "0", "-1", "WITHSCORES"};
                churn_cmp(dr, dk, 5, a1, 0, &compared);
                const char *a2[] = {"ZRANGEBYSCORE", key,     "(100", "800",
                                    "WITHSCORES",    "LIMIT", "1",    "5"};
                churn_cmp(dr, dk, 8, a2, 0, &compared);
                const char *a3[] = {"ZREVRANGE", key, "0", "3"};
                churn_cmp(dr, dk, 4, a3, 0, &compared);
                const char *a4[] = {"ZCOUNT", key, "-inf", "500"};
                churn_cmp(dr, dk, 4, a4, 0, &compared);
                const char *a5[] = {"ZCARD", key};
                churn_cmp(dr, dk, 2, a5, 0, &compared);
            }
            const char *scan = t == 0 ? "HSCAN" : t == 1 ? "SSCAN" : "ZSCAN";
            size_t stride = t == 1 ? 1 : 2;
            redisReply *a = churn_scan_all(dr, scan, key, stride);
            redisReply *b = churn_scan_all(dk, scan, key, stride);
            if (!same(a, b)) {
                char ra[512], rb[512];
                fail_msg("churn: %s %s to the end: redis-server %s, shmkvd %s", scan, key,
                         show(a, ra, sizeof ra), show(b, rb, sizeof rb));
            }
            freeReplyObject(a);
            freeReplyObject(b);
            compared++;
            const char *tl[] = {"TTL", key};
            redisReply *x = redisCommandArgv(dr, 2, tl, NULL),
                       *y = redisCommandArgv(dk, 2, tl, NULL);
            assert_true(x && y && x->type == REDIS_REPLY_INTEGER && y->type == REDIS_REPLY_INTEGER);
            assert_true((x->integer < 0) == (y->integer < 0) &&
                        llabs(x->integer - y->integer) <= 1);
            freeReplyObject(x);
            freeReplyObject(y);
        }
    }
    info = redisCommand(dk, "INFO storage");
    p = strstr(info->str, "collections_rewritten:");
    long long rewritten = atoll(p + strlen("collections_rewritten:")) - before;
    freeReplyObject(info);
    assert_true(rewritten > 0);
    printf("test_diff: %zu replies over %d collections emptied member by member identical to "
           "redis-server's (%lld rewritten by shmkvd)\n",
           compared, ROUNDS, rewritten);
    redisFree(dr);
    redisFree(dk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_random_commands),
        cmocka_unit_test(test_diff_command_docs),
        cmocka_unit_test(test_diff_command_info),
        cmocka_unit_test(test_diff_resp3_replies),
        cmocka_unit_test(test_diff_pubsub),
        cmocka_unit_test(test_diff_tracking),
        cmocka_unit_test(test_diff_keyspace_events),
        cmocka_unit_test(test_diff_hyperloglog),
        cmocka_unit_test(test_diff_monitor),
        cmocka_unit_test(test_diff_lcs),
        cmocka_unit_test(test_diff_info_stats),
        cmocka_unit_test(test_diff_client_reply),
        cmocka_unit_test(test_diff_geo),
        cmocka_unit_test(test_diff_dump_restore),
        cmocka_unit_test(test_diff_migrate),
        cmocka_unit_test(test_diff_churn),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
