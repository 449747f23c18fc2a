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
 * Keyspace notifications: the run enables notify-keyspace-events KEAn on
 * both servers, with a subscriber to every keyspace and keyevent channel
 * on each; every few commands the two event streams so far are compared,
 * in order (diff_fixture.h, as the GEO and HyperLogLog runs of
 * test_diff_values do).
 *
 * The other differential programs: test_diff_values (HyperLogLog, LCS,
 * GEO, DUMP/RESTORE, MIGRATE, churn), test_diff_docs (COMMAND DOCS and
 * INFO) and test_diff_conn (RESP3, pub/sub, tracking, MONITOR, ...).
 */
#include "diff_fixture.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_random_commands),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
