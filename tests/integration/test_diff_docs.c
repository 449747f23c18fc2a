/*
 * test_diff_docs — COMMAND DOCS, COMMAND INFO (key specs included), COMMAND
 * GETKEYS and GETKEYSANDFLAGS against Debian's redis-server: every command
 * both know, described alike, its keys found alike.
 */
#include "diff_fixture.h"

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
/* clang-format off */
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
    "command|getkeysandflags",
};
/* clang-format on */

static bool is_container(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof SUBCOMMANDS / sizeof SUBCOMMANDS[0]; i++)
        if (!strncmp(SUBCOMMANDS[i], name, n) && SUBCOMMANDS[i][n] == '|')
            return true;
    return false;
}

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

/* ---- key specs, COMMAND GETKEYS and GETKEYSANDFLAGS ---- */

static void app(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void app(char *out, size_t cap, const char *fmt, ...)
{
    size_t n = strlen(out);
    if (n + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + n, cap - n, fmt, ap);
    va_end(ap);
}

/* Appends the text of the one whole reply at p (RESP2 or RESP3 bytes,
 * NUL-terminated) to out, each element's type mark kept, and returns the
 * reply's length. The value after a "notes" name reads "<notes>" where it
 * is not empty: Redis's notes are its prose, shmkvd's its own. */
static size_t norm_reply(const char *p, char *out, size_t cap, bool notes)
{
    const char *eol = strstr(p, "\r\n");
    assert_non_null(eol);
    size_t head = (size_t)(eol - p) + 2;
    long long v = strtoll(p + 1, NULL, 10);
    switch (p[0]) {
    case '$':
        if (v < 0) {
            app(out, cap, "$nil ");
            return head;
        }
        if (notes && v > 0)
            app(out, cap, "$<notes> ");
        else
            app(out, cap, "$%.*s ", (int)v, p + head);
        return head + (size_t)v + 2;
    case '*':
    case '~':
    case '%': {
        app(out, cap, "%c%lld[ ", p[0], v);
        size_t at = head, count = v < 0 ? 0 : (size_t)v * (p[0] == '%' ? 2 : 1);
        bool after_notes = false;
        for (size_t i = 0; i < count; i++) {
            bool is_notes = !strncmp(p + at, "$5\r\nnotes\r\n", 11);
            at += norm_reply(p + at, out, cap, after_notes);
            after_notes = is_notes;
        }
        app(out, cap, "] ");
        return at;
    }
    default:
        app(out, cap, "%.*s ", (int)(head - 2), p);
        return head;
    }
}

/* Sends line and returns its reply's bytes, NUL-terminated; free() it. */
static char *call_z(int fd, const char *line, size_t *n)
{
    char *r = r3_call(fd, line, n);
    r = realloc(r, *n + 1);
    r[*n] = 0;
    return r;
}

/* Field i of the one entry of a COMMAND INFO reply. */
static const char *info_field(const char *p, size_t n, size_t i, const char *name)
{
    if (strncmp(p, "*1\r\n*10\r\n", 9) != 0)
        fail_msg("COMMAND INFO %s: not one entry of 10 fields", name);
    const char *q = p + 9;
    for (size_t j = 0; j < i; j++)
        q += r3_reply_len(q, n - (size_t)(q - p));
    return q;
}

/* A connection to each server (0: redis-server, 1: shmkvd) in each
 * protocol (0: RESP2, 1: RESP3). */
static void connect_all(int fd[2][2])
{
    int ports[2] = {R.port, K.port};
    for (int s = 0; s < 2; s++) {
        for (int proto = 0; proto < 2; proto++) {
            fd[s][proto] = r3_connect(ports[s]);
            if (proto) {
                size_t n;
                free(r3_call(fd[s][proto], "HELLO 3", &n));
            }
        }
    }
}

static void close_all(int fd[2][2])
{
    for (int s = 0; s < 2; s++)
        for (int proto = 0; proto < 2; proto++)
            close(fd[s][proto]);
}

/* Every command's and subcommand's key specs, field 8 (from 0) of its
 * COMMAND INFO entry, laid out as redis-server lays them out in RESP2 and RESP3, notes
 * aside; and a command without subcommands has an empty set of them, as
 * there. */
static void test_diff_key_specs(void **state)
{
    (void)state;
    redisContext *dk = h_connect_port(K.port);
    redisReply *list = redisCommand(dk, "COMMAND LIST");
    assert_true(list && list->type == REDIS_REPLY_ARRAY && list->elements > 100);
    int fd[2][2];
    connect_all(fd);
    static char text[2][2][32768];
    size_t compared = 0, with_specs = 0, notes = 0;
    for (size_t i = 0; i < list->elements; i++) {
        const char *name = list->element[i]->str;
        if (!strncmp(name, "shmkv.", 6))
            continue;
        char line[128];
        snprintf(line, sizeof line, "COMMAND INFO %s", name);
        for (int proto = 0; proto < 2; proto++) {
            char *reply[2];
            size_t n[2];
            for (int s = 0; s < 2; s++) {
                reply[s] = call_z(fd[s][proto], line, &n[s]);
                const char *specs = info_field(reply[s], n[s], 8, name);
                text[s][proto][0] = 0;
                norm_reply(specs, text[s][proto], sizeof text[s][proto], false);
            }
            if (strcmp(text[0][proto], text[1][proto]) != 0)
                fail_msg("COMMAND INFO %s, RESP%d, key specs\n  redis:  %s\n  shmkvd: %s", name,
                         proto + 2, text[0][proto], text[1][proto]);
            /* The subcommands: compared where Redis has none. */
            const char *sub0 = info_field(reply[0], n[0], 9, name);
            const char *sub1 = info_field(reply[1], n[1], 9, name);
            if ((!strcmp(sub0, "~0\r\n") || !strcmp(sub0, "*0\r\n")) && strcmp(sub0, sub1) != 0)
                fail_msg("COMMAND INFO %s, RESP%d: no subcommands are %.2s, redis-server's %.2s",
                         name, proto + 2, sub1, sub0);
            free(reply[0]);
            free(reply[1]);
        }
        with_specs += strncmp(text[0][0], "*0[", 3) != 0;
        notes += strstr(text[0][0], "<notes>") != NULL;
        compared++;
    }
    close_all(fd);
    assert_true(with_specs > 100); /* the comparison sees specs, not two empty lists */
    printf("test_diff: key specs of %zu commands and subcommands agree with redis-server's "
           "(%zu have keys, %zu with notes), in RESP2 and RESP3\n",
           compared, with_specs, notes);
    freeReplyObject(list);
    redisFree(dk);
}

/* Command lines, each asked of both servers as COMMAND GETKEYS and COMMAND
 * GETKEYSANDFLAGS: every command and subcommand shmkvd has (the test
 * checks), the movable and variable ones many times over, and the errors.
 * "" is the empty argument. */
/* clang-format off */
static const char *const GETKEYS_LINES[] = {
    /* errors */
    "nosuch a", "get", "get a b", "GET A", "object", "object encoding", "object encoding a b",
    "object nosuch a", "memory usage", "memory nosuch a", "client nosuch", "ping a b",
    "command getkeys get a", "command getkeysandflags get a",
    /* strings */
    "get a", "set a b", "set a b GET", "set a get", "set a b NX gEt EX 10", "set a b gets",
    "set a b EX 10 KEEPTTL", "setnx a b", "setex a 10 b", "psetex a 10 b", "mget a b c",
    "mset a 1 b 2", "mset a 1 b", "msetnx a 1 b 2", "getset a b", "getdel a", "getex a EX 10",
    "getex a PERSIST", "append a b", "strlen a", "incr a", "decr a", "incrby a 1", "decrby a 1",
    "incrbyfloat a 1.5", "getrange a 0 1", "lcs a b", "lcs a b LEN", "substr a 0 1",
    "setrange a 0 b",
    /* bitmaps */
    "setbit a 0 1", "getbit a 0", "bitcount a", "bitcount a 0 1 BIT", "bitpos a 1",
    "bitop AND d a b", "bitop NOT d a", "bitfield a", "bitfield a GET u8 0",
    "bitfield a GET u8 0 get i4 4", "bitfield a OVERFLOW WRAP GET u8 0", "bitfield a SET u8 0 1",
    "bitfield a INCRBY u8 0 1", "bitfield a GET u8 0 INCRBY u8 0 1", "bitfield a GET u8",
    "bitfield a OVERFLOW", "bitfield a FOO", "bitfield a SET u8 0", "bitfield_ro a GET u8 0",
    /* HyperLogLog */
    "pfadd a x y", "pfadd a", "pfcount a b", "pfmerge d a b", "pfmerge d",
    /* geo */
    "geoadd g 1 2 m", "geodist g a b km", "geohash g a", "geopos g a b", "georadius g 1 2 3 km",
    "georadius g 1 2 3 km STORE d", "georadius g 1 2 3 km STOREDIST d",
    "georadius g 1 2 3 km STORE d STOREDIST e", "georadius g 1 2 3 km storedist e store d",
    "georadius g 1 2 3 km STORE d STORE e", "georadius g 1 2 3 km STORE",
    "georadius g 1 2 3 km STORE STOREDIST", "georadius g 1 2 STORE km STORE d",
    "georadius_ro g 1 2 3 km", "georadius_ro g 1 2 3 km STORE d",
    "georadiusbymember g m 3 km", "georadiusbymember g m 3 km STORE d",
    "georadiusbymember g m 3 STORE STOREDIST d", "georadiusbymember g m 3 km STOREDIST",
    "georadiusbymember_ro g m 3 km", "geosearch g FROMMEMBER m BYRADIUS 1 km",
    "geosearchstore d g FROMMEMBER m BYRADIUS 1 km STOREDIST",
    /* keys */
    "del a b c", "unlink a b", "exists a b", "touch a b", "type a", "expire a 10 NX",
    "pexpire a 10", "expireat a 10", "pexpireat a 10", "expiretime a", "pexpiretime a", "ttl a",
    "pttl a", "persist a", "rename a b", "renamenx a b", "copy a b", "copy a b DB 1 REPLACE",
    "move a 1", "dump a", "restore a 0 x REPLACE", "migrate h 1 k 0", "migrate h 1 k 0 5",
    "migrate h 1 k 0 5 COPY REPLACE", "migrate h 1 \"\" 0 5", "migrate h 1 \"\" 0 5 KEYS a b",
    "migrate h 1 \"\" 0 5 keys a", "migrate h 1 \"\" 0 5 COPY AUTH pw KEYS a b",
    "migrate h 1 \"\" 0 5 AUTH keys KEYS a", "migrate h 1 \"\" 0 5 AUTH2 u keys KEYS a b",
    "migrate h 1 \"\" 0 5 AUTH2 keys", "migrate h 1 \"\" 0 5 KEYS",
    "migrate h 1 \"\" 0 5 KEYS a keys b", "migrate h 1 k 0 5 KEYS a", "migrate h 1 k 0 5 KEYS",
    "sort a", "sort a STORE d", "sort a store d STORE e", "sort a STORE", "sort a DESC STORE",
    "sort a LIMIT 0 1 STORE d", "sort a LIMIT 0 STORE d", "sort a BY STORE STORE d",
    "sort a GET store STORE d", "sort a STORE STORE d", "sort a ALPHA STORE d GET # BY x",
    "sort_ro a", "sort_ro a BY x GET y", "sort_ro a STORE d", "keys *", "scan 0 MATCH a*",
    "randomkey x", "dbsize x", "select 0", "flushdb ASYNC", "flushall SYNC",
    "object encoding a", "object freq a", "object idletime a", "object refcount a",
    "object help", "OBJECT ENCODING a",
    /* hashes */
    "hset h f v g w", "hmset h f v", "hsetnx h f v", "hget h f", "hmget h f g", "hgetall h",
    "hkeys h", "hvals h", "hdel h f", "hlen h", "hexists h f", "hstrlen h f", "hincrby h f 1",
    "hincrbyfloat h f 1.5", "hrandfield h 2 WITHVALUES", "hscan h 0",
    /* sets */
    "sadd s a b", "srem s a", "smembers s", "sismember s a", "smismember s a b", "scard s",
    "spop s 2", "srandmember s", "smove a b m", "sinter a b", "sintercard 2 a b",
    "sintercard 2 a b LIMIT 1", "sintercard 3 a b", "sintercard 0 a", "sintercard x a",
    "sintercard 1x a b", "sintercard -1 a", "sinterstore d a b", "sinterstore d a",
    "sunion a b", "sunionstore d a b", "sdiff a b", "sdiffstore d a b", "sscan s 0 MATCH x",
    /* sorted sets */
    "zadd z 1 a", "zincrby z 1 a", "zrem z a", "zscore z a", "zmscore z a b", "zcard z",
    "zcount z 0 1", "zlexcount z - +", "zrange z 0 -1", "zrangestore d z 0 -1",
    "zrangebyscore z 0 1", "zrevrangebyscore z 1 0", "zrangebylex z - +",
    "zrevrangebylex z + -", "zrevrange z 0 -1", "zrank z a", "zrevrank z a",
    "zremrangebyrank z 0 1", "zremrangebyscore z 0 1", "zremrangebylex z - +", "zpopmin z",
    "zpopmax z 2", "zrandmember z", "zunionstore d 2 a b",
    "zunionstore d 2 a b WEIGHTS 1 2 AGGREGATE MAX", "zunionstore d 1 a b",
    "zunionstore d 3 a b", "zunionstore d 0 a", "zunionstore d -1 a", "zunionstore d x a",
    "zunionstore d 2x a b", "zunionstore d +2 a b", "zunionstore d 02 a b",
    "zunionstore d \t2 a b", "zunionstore d 4294967298 a b", "zunionstore d 4294967296 a b",
    "zunionstore d 99999999999999999999 a b", "zunionstore d -4294967294 a b",
    "zunionstore d 18446744073709551618x a b", "zinterstore d 2 a b", "zinterstore d 1x a",
    "zdiffstore d 2 a b", "zdiffstore d 9 a b", "zunion 2 a b", "zunion 2 a b WITHSCORES",
    "zunion 3 a b", "zunion 2x a b", "zinter 1 a", "zinter 0 a", "zdiff 2 a b", "zdiff 1 a b",
    "zintercard 2 a b", "zintercard 2 a b LIMIT 5", "zintercard 5 a", "zmpop 1 a MIN",
    "zmpop 2 a b MAX COUNT 2", "zmpop 3 a b MIN", "zmpop 1x a MIN", "bzmpop 0 1 a MIN",
    "bzmpop 0 2 a b MAX", "bzmpop 0 3 a b MIN", "bzmpop 0 2x a b MIN", "bzpopmin a b 0",
    "bzpopmax a 0", "zscan z 0",
    /* lists */
    "lpush l a", "rpush l a b", "lpushx l a", "rpushx l a", "lpop l", "rpop l 2", "llen l",
    "lrange l 0 -1", "lindex l 0", "lset l 0 a", "lrem l 0 a", "linsert l BEFORE a b",
    "ltrim l 0 1", "lpos l a", "rpoplpush a b", "lmove a b LEFT RIGHT", "blpop a b 0",
    "brpop a 0", "blmove a b LEFT RIGHT 0", "brpoplpush a b 0", "lmpop 2 a b LEFT",
    "lmpop 1 a RIGHT COUNT 2", "lmpop 3 a b LEFT", "lmpop 0 a LEFT", "lmpop 1x a LEFT",
    "blmpop 0 2 a b LEFT", "blmpop 0 3 a b LEFT", "blmpop 0 x a LEFT",
    "blmpop 0 1 a LEFT COUNT 3",
    /* transactions */
    "multi x", "exec x", "discard x", "watch a b", "unwatch x",
    /* pub/sub: shard channels are no keys */
    "subscribe c", "unsubscribe c", "psubscribe p", "punsubscribe p", "ssubscribe c d",
    "sunsubscribe c", "publish c m", "spublish c m", "pubsub channels", "pubsub numsub c",
    "pubsub numpat", "pubsub shardchannels", "pubsub shardnumsub c", "pubsub help",
    /* connection and server */
    "echo x", "auth pw", "hello 3", "quit x", "reset x", "client list", "client id",
    "acl whoami", "acl cat", "acl getuser u", "acl deluser u", "acl dryrun u get", "acl genpass", "acl help", "acl list", "acl load", "acl save", "acl log", "acl setuser u", "acl users", "client info", "client setname n", "client getname", "client kill 1.2.3.4:5",
    "client pause 10", "client unpause", "client reply on", "client tracking on",
    "client caching yes", "client getredir", "client trackinginfo", "client unblock 1",
    "client no-evict on", "client help", "info x", "config get x", "config set a b",
    "config resetstat", "config rewrite", "config help", "command count", "command info get",
    "command docs get", "command list", "command help", "time x", "slowlog get",
    "slowlog len", "slowlog reset", "slowlog help", "lastsave x", "bgsave x", "save x",
    "role x", "replicaof a 1", "failover abort", "slaveof no one", "wait 0 0", "monitor x", "memory usage a",
    "memory usage a SAMPLES 5",
    "memory malloc-stats", "memory purge", "memory help", "latency latest",
    "latency history e", "latency reset", "latency graph e", "latency doctor",
    "latency histogram", "latency help", "shutdown x", "memory stats", "memory doctor",
    "swapdb 0 1", "module list", "module help", "module load /x.so a", "module loadex /x.so",
    "module unload m", "cluster info", "cluster help", "cluster keyslot k", "cluster nodes",
    "cluster slots", "cluster shards", "cluster myid", "cluster links", "cluster replicas n",
    "cluster slaves n", "cluster replicate n", "cluster reset", "cluster failover",
    "cluster forget n", "cluster meet h 1", "cluster addslots 1", "cluster addslotsrange 1 2",
    "cluster delslots 1", "cluster delslotsrange 1 2", "cluster flushslots",
    "cluster bumpepoch", "cluster countkeysinslot 1", "cluster getkeysinslot 1 2",
    "cluster count-failure-reports n", "cluster saveconfig", "cluster set-config-epoch 1",
    "cluster setslot 1 STABLE", "readonly", "readwrite", "asking", "lolwut", "lolwut VERSION 5",
    "debug help", "debug sleep 0", "debug object k", "debug digest", "debug digest-value a b",
    "eval s 0", "eval s 2 k1 k2 a", "eval s 1", "eval s x k", "eval s -1 k", "evalsha h 1 k a",
    "eval_ro s 1 k", "evalsha_ro h 2 k1 k2", "script load s", "script exists h",
    "script flush", "script help", "script kill", "fcall f 0", "fcall f 2 k1 k2 a", "fcall f 1",
    "fcall f x k", "fcall_ro f 1 k", "fcall_ro f 2 k1 k2 a", "function load c", "function delete l",
    "function flush", "function list", "function dump", "function restore p", "function kill",
    "function stats", "function help", "sync", "psync ? -1", "replconf listening-port 1",
};
/* clang-format on */

/* Whether a line of GETKEYS_LINES runs name ("get", "config|get"). */
static bool line_runs(const char *line, const char *name)
{
    const char *bar = strchr(name, '|');
    size_t n = bar ? (size_t)(bar - name) : strlen(name);
    if (strncasecmp(line, name, n) != 0 || (line[n] != ' ' && line[n] != 0))
        return false;
    if (!bar)
        return true;
    size_t m = strlen(bar + 1);
    return line[n] == ' ' && !strncasecmp(line + n + 1, bar + 1, m) &&
           (line[n + 1 + m] == ' ' || line[n + 1 + m] == 0);
}

/* COMMAND GETKEYS and GETKEYSANDFLAGS answer every line of GETKEYS_LINES
 * as redis-server does, byte for byte in RESP2 and RESP3: the keys, their
 * flags, and the errors. */
static void test_diff_getkeys(void **state)
{
    (void)state;
    int fd[2][2];
    connect_all(fd);
    static const char *const verbs[] = {"GETKEYS", "GETKEYSANDFLAGS"};
    /* The subcommands' own argument counts. */
    static const char *const whole[] = {"COMMAND GETKEYS", "COMMAND GETKEYSANDFLAGS",
                                        "COMMAND GETKEYSANDFLAGS get", "command getkeysandflags"};
    size_t nlines = sizeof GETKEYS_LINES / sizeof GETKEYS_LINES[0];
    size_t nwhole = sizeof whole / sizeof whole[0];
    size_t asked = 0, keyed = 0;
    static char text[2][8192];
    for (size_t i = 0; i < nlines * 2 + nwhole; i++) {
        char line[256];
        if (i < nlines * 2)
            snprintf(line, sizeof line, "COMMAND %s %s", verbs[i % 2], GETKEYS_LINES[i / 2]);
        else
            snprintf(line, sizeof line, "%s", whole[i - nlines * 2]);
        for (int proto = 0; proto < 2; proto++) {
            char *reply[2];
            size_t n[2];
            for (int s = 0; s < 2; s++)
                reply[s] = call_z(fd[s][proto], line, &n[s]);
            if (n[0] != n[1] || memcmp(reply[0], reply[1], n[0]) != 0) {
                for (int s = 0; s < 2; s++) {
                    text[s][0] = 0;
                    norm_reply(reply[s], text[s], sizeof text[s], false);
                }
                fail_msg("%s, RESP%d\n  redis:  %s\n  shmkvd: %s", line, proto + 2, text[0],
                         text[1]);
            }
            keyed += reply[0][0] == '*';
            free(reply[0]);
            free(reply[1]);
            asked++;
        }
    }
    close_all(fd);
    /* Every command and subcommand of shmkvd's is asked about. */
    redisContext *dk = h_connect_port(K.port);
    redisReply *list = redisCommand(dk, "COMMAND LIST");
    assert_true(list && list->type == REDIS_REPLY_ARRAY && list->elements > 100);
    for (size_t i = 0; i < list->elements; i++) {
        const char *name = list->element[i]->str;
        bool found = !strncmp(name, "shmkv.", 6);
        for (size_t j = 0; j < nlines && !found; j++)
            found = line_runs(GETKEYS_LINES[j], name);
        if (!found)
            fail_msg("GETKEYS_LINES asks nothing of %s", name);
    }
    /* shmkvd's own commands have no keys. */
    redisReply *r = redisCommand(dk, "COMMAND GETKEYSANDFLAGS shmkv.attach x");
    assert_true(r && r->type == REDIS_REPLY_ERROR);
    assert_string_equal(r->str, "ERR The command has no key arguments");
    freeReplyObject(r);
    assert_true(keyed > nlines); /* the comparison sees keys, not only errors */
    printf("test_diff: COMMAND GETKEYS and GETKEYSANDFLAGS answer %zu lines as redis-server "
           "does (%zu with keys), covering %zu commands and subcommands\n",
           asked, keyed, list->elements);
    freeReplyObject(list);
    redisFree(dk);
}

/* The value of name in a CONFIG GET reply, or NULL. */
static const char *conf_value(const redisReply *r, const char *name)
{
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (!strcmp(r->element[i]->str, name))
            return r->element[i + 1]->str;
    return NULL;
}

/* The reply's text: its status or error, or "(type)". */
static void reply_text(const redisReply *r, char *out, size_t cap)
{
    if (r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR))
        snprintf(out, cap, "%s", r->str);
    else
        snprintf(out, cap, "(type %d)", r ? r->type : -1);
}

/* CONFIG against redis-server: every parameter redis-server has, shmkvd
 * has too (CONFIG GET *), at the same default where shmkvd keeps it
 * without applying it; and CONFIG SET takes and refuses the same values
 * of those, with the same errors, and CONFIG GET then shows the same. */
static void test_diff_config(void **state)
{
    (void)state;
    /* What shmkvd applies: its own defaults, bounds or rules. */
    static const char *const own[] = {
        "port", "bind", "unixsocket", "unixsocketperm", "dir", "requirepass", "maxclients",
        "timeout", "proto-max-bulk-len", "databases", "loglevel", "logfile", "daemonize", "pidfile",
        "hz", "appendfsync", "io-threads", "slowlog-log-slower-than", "slowlog-max-len",
        "latency-tracking", "latency-monitor-threshold", "latency-tracking-info-percentiles",
        "notify-keyspace-events", "tracking-table-max-keys",
        /* Not snapshots: shmkv persists through RocksDB. */
        "save"};
    static const char *const vals[] = {"yes",
                                       "no",
                                       "0",
                                       "1",
                                       "-1",
                                       "100",
                                       "70000",
                                       "1kb",
                                       "10%",
                                       "abc",
                                       "",
                                       "a.b-c",
                                       "a_b",
                                       "normal 1mb 2mb 3",
                                       "pubsub 1 2",
                                       "replica 0 0 0 normal 1 2 3",
                                       "900 1",
                                       "0 200 800",
                                       "1 2",
                                       "no one",
                                       "9223372036854775807",
                                       "ip",
                                       "local0",
                                       "allkeys-lfu",
                                       "clients"};
    redisReply *rr = redisCommand(cr, "CONFIG GET *"), *rk = redisCommand(ck, "CONFIG GET *");
    assert_non_null(rr);
    assert_non_null(rk);
    size_t compared = 0;
    for (size_t i = 0; i + 1 < rr->elements; i += 2) {
        const char *name = rr->element[i]->str, *was_r = rr->element[i + 1]->str;
        const char *was_k = conf_value(rk, name);
        if (!was_k)
            fail_msg("CONFIG GET * of shmkvd lacks %s", name);
        bool applied = false;
        for (size_t j = 0; j < sizeof own / sizeof own[0]; j++)
            applied |= !strcmp(name, own[j]);
        if (applied)
            continue;
        if (strcmp(was_r, was_k))
            fail_msg("%s: redis-server's default \"%s\", shmkvd's \"%s\"", name, was_r, was_k);
        /* redis-server loads its TLS context again on any change of these,
         * which fails without certificates; and Debian's build, with the
         * system's jemalloc, cannot defragment: not rules of the directives. */
        if (!strncmp(name, "tls-", 4) || !strcmp(name, "activedefrag"))
            continue;
        for (size_t j = 0; j < sizeof vals / sizeof vals[0]; j++) {
            redisReply *a = redisCommand(cr, "CONFIG SET %s %s", name, vals[j]);
            redisReply *b = redisCommand(ck, "CONFIG SET %s %s", name, vals[j]);
            char ta[512], tb[512];
            reply_text(a, ta, sizeof ta);
            reply_text(b, tb, sizeof tb);
            if (strcmp(ta, tb))
                fail_msg("CONFIG SET %s \"%s\": redis-server %s, shmkvd %s", name, vals[j], ta, tb);
            freeReplyObject(a);
            freeReplyObject(b);
            a = redisCommand(cr, "CONFIG GET %s", name);
            b = redisCommand(ck, "CONFIG GET %s", name);
            const char *va = conf_value(a, name), *vb = conf_value(b, name);
            if (!va || !vb || strcmp(va, vb))
                fail_msg("CONFIG GET %s after \"%s\": redis-server \"%s\", shmkvd \"%s\"", name,
                         vals[j], va ? va : "-", vb ? vb : "-");
            freeReplyObject(a);
            freeReplyObject(b);
            compared++;
        }
        freeReplyObject(redisCommand(cr, "CONFIG SET %s %s", name, was_r));
        freeReplyObject(redisCommand(ck, "CONFIG SET %s %s", name, was_k));
    }
    assert_true(compared > 100);
    freeReplyObject(rr);
    freeReplyObject(rk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_command_docs), cmocka_unit_test(test_diff_command_info),
        cmocka_unit_test(test_diff_key_specs),    cmocka_unit_test(test_diff_getkeys),
        cmocka_unit_test(test_diff_config),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
