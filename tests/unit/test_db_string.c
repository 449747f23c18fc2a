/*
 * test_db_string — strings and the key space (TYPE, DEL, EXPIRE family,
 * RENAME, COPY, SCAN, DBSIZE, FLUSHDB) with Redis 7 semantics.
 */
#include "fixture.h"

#include <math.h>

static void assert_getn(struct db *d, unsigned dbi, const char *k, size_t kn, const char *want,
                        size_t wn)
{
    char *v;
    size_t vn;
    assert_int_equal(db_get(d, dbi, k, kn, &v, &vn), 0);
    assert_int_equal(vn, wn);
    assert_memory_equal(v, want, vn);
    free(v);
}

static void assert_get(struct db *d, unsigned dbi, const char *k, size_t kn, const char *want)
{
    assert_getn(d, dbi, k, kn, want, strlen(want));
}

/* A value with zero bytes in it, given as a literal. */
#define assert_bytes(d, k, lit) assert_getn(d, 0, K(k), lit, sizeof(lit) - 1)

static void test_db_string_set_get(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char *v, *old;
    size_t vn, oldn;
    assert_int_equal(db_get(d, 0, K("k"), &v, &vn), KV_ENOTFOUND);
    assert_int_equal(db_set(d, 0, K("k"), K("v1"), 0, 0, NULL, NULL), 1);
    assert_get(d, 0, K("k"), "v1");
    /* NX refuses an existing key, XX an absent one. */
    assert_int_equal(db_set(d, 0, K("k"), K("v2"), 0, DB_SET_NX, NULL, NULL), 0);
    assert_int_equal(db_set(d, 0, K("nokey"), K("v2"), 0, DB_SET_XX, NULL, NULL), 0);
    assert_int_equal(db_exists(d, 0, K("nokey")), 0);
    /* GET returns the old value, also when NX refuses. */
    assert_int_equal(db_set(d, 0, K("k"), K("v3"), 0, DB_SET_GET, &old, &oldn), 1);
    assert_memory_equal(old, "v1", 2);
    free(old);
    assert_int_equal(db_set(d, 0, K("k"), K("v4"), 0, DB_SET_GET | DB_SET_NX, &old, &oldn), 0);
    assert_memory_equal(old, "v3", 2);
    free(old);
    assert_int_equal(db_set(d, 0, K("fresh"), K("x"), 0, DB_SET_GET, &old, &oldn), 1);
    assert_null(old);
    /* Binary-safe keys and values, and the empty string. */
    assert_int_equal(db_set(d, 0, "a\0b", 3, "\0\xff", 2, 0, 0, NULL, NULL), 1);
    assert_int_equal(db_get(d, 0, "a\0b", 3, &v, &vn), 0);
    assert_int_equal(vn, 2);
    assert_memory_equal(v, "\0\xff", 2);
    free(v);
    assert_int_equal(db_set(d, 0, K("empty"), "", 0, 0, 0, NULL, NULL), 1);
    assert_get(d, 0, K("empty"), "");
    /* Databases are separate key spaces. */
    assert_int_equal(db_get(d, 1, K("k"), &v, &vn), KV_ENOTFOUND);
}

static void test_db_string_set_replaces_other_types(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str fv[] = {S("f"), S("v")};
    assert_int_equal(db_hset(d, 0, K("h"), fv, 1, 0, &n), 0);
    char *old;
    size_t oldn;
    /* SET ... GET on another type is WRONGTYPE and writes nothing. */
    assert_int_equal(db_set(d, 0, K("h"), K("s"), 0, DB_SET_GET, &old, &oldn), KV_EWRONGTYPE);
    int type;
    assert_int_equal(db_type(d, 0, K("h"), &type), 0);
    assert_int_equal(type, ENC_TYPE_HASH);
    /* Plain SET replaces it; the hash is gone. */
    assert_int_equal(db_set(d, 0, K("h"), K("s"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_type(d, 0, K("h"), &type), 0);
    assert_int_equal(type, ENC_TYPE_STRING);
    char *v;
    size_t vn;
    assert_int_equal(db_hget(d, 0, K("h"), K("f"), &v, &vn), KV_EWRONGTYPE);
    assert_int_equal(db_get(d, 0, K("h"), &v, &vn), 0);
    free(v);
    assert_int_equal(db_get(d, 0, K("nothing"), &v, &vn), KV_ENOTFOUND);
    uint64_t len;
    assert_int_equal(db_hset(d, 0, K("h2"), fv, 1, 0, &n), 0);
    assert_int_equal(db_get(d, 0, K("h2"), &v, &vn), KV_EWRONGTYPE);
    assert_int_equal(db_append(d, 0, K("h2"), K("x"), &len), KV_EWRONGTYPE);
    assert_int_equal(db_strlen(d, 0, K("h2"), &len), KV_EWRONGTYPE);
}

static void test_db_string_expiry(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000000;
    uint64_t e;
    assert_int_equal(db_set(d, 0, K("k"), K("v"), 1005000, 0, NULL, NULL), 1);
    assert_int_equal(db_expiretime(d, 0, K("k"), &e), 0);
    assert_true(e == 1005000);
    /* KEEPTTL keeps it; a plain SET clears it. */
    assert_int_equal(db_set(d, 0, K("k"), K("v2"), 0, DB_SET_KEEPTTL, NULL, NULL), 1);
    assert_int_equal(db_expiretime(d, 0, K("k"), &e), 0);
    assert_true(e == 1005000);
    stor_clock_override = 1004999;
    assert_get(d, 0, K("k"), "v2");
    stor_clock_override = 1005000; /* at the expiry instant the key is gone */
    char *v;
    size_t vn;
    assert_int_equal(db_get(d, 0, K("k"), &v, &vn), KV_ENOTFOUND);
    assert_int_equal(db_exists(d, 0, K("k")), 0);
    assert_int_equal(db_expiretime(d, 0, K("k"), &e), KV_ENOTFOUND);
    /* An expired key is absent for NX too. */
    assert_int_equal(db_set(d, 0, K("k"), K("v3"), 0, DB_SET_NX, NULL, NULL), 1);
    assert_int_equal(db_expiretime(d, 0, K("k"), &e), 0);
    assert_true(e == 0);
    /* SET with an expiry already past leaves no key. */
    assert_int_equal(db_set(d, 0, K("past"), K("v"), 1, 0, NULL, NULL), 1);
    assert_int_equal(db_exists(d, 0, K("past")), 0);
    /* INCR on an expired key starts from zero. */
    int64_t i;
    assert_int_equal(db_set(d, 0, K("n"), K("41"), 1006000, 0, NULL, NULL), 1);
    assert_int_equal(db_incrby(d, 0, K("n"), 1, &i), 0);
    assert_int_equal(i, 42);
    assert_int_equal(db_expiretime(d, 0, K("n"), &e), 0);
    assert_true(e == 1006000); /* INCR keeps the TTL */
    stor_clock_override = 1006000;
    assert_int_equal(db_incrby(d, 0, K("n"), 1, &i), 0);
    assert_int_equal(i, 1);
}

static void test_db_string_getdel_getex(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 5000;
    char *v;
    size_t vn;
    uint64_t e;
    assert_int_equal(db_set(d, 0, K("k"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_getex(d, 0, K("k"), DB_GETEX_SET, 9000, &v, &vn), 1);
    free(v);
    assert_int_equal(db_expiretime(d, 0, K("k"), &e), 0);
    assert_true(e == 9000);
    assert_int_equal(db_getex(d, 0, K("k"), DB_GETEX_PERSIST, 0, &v, &vn), 1);
    free(v);
    assert_int_equal(db_expiretime(d, 0, K("k"), &e), 0);
    assert_true(e == 0);
    /* PERSIST of a key with no expiry changes nothing */
    assert_int_equal(db_getex(d, 0, K("k"), DB_GETEX_PERSIST, 0, &v, &vn), 0);
    free(v);
    assert_int_equal(db_getex(d, 0, K("k"), DB_GETEX_KEEP, 0, &v, &vn), 0);
    free(v);
    /* a time not in the future deletes the key, and the value is returned */
    assert_int_equal(db_set(d, 0, K("p"), K("w"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_getex(d, 0, K("p"), DB_GETEX_SET, 5000, &v, &vn), 2);
    assert_memory_equal(v, "w", 1);
    free(v);
    assert_int_equal(db_exists(d, 0, K("p")), 0);
    assert_int_equal(db_getdel(d, 0, K("k"), &v, &vn), 0);
    assert_memory_equal(v, "v", 1);
    free(v);
    assert_int_equal(db_getdel(d, 0, K("k"), &v, &vn), KV_ENOTFOUND);
    assert_int_equal(db_getex(d, 0, K("k"), DB_GETEX_KEEP, 0, &v, &vn), KV_ENOTFOUND);
}

static void test_db_string_mset(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    struct db_str kv[] = {S("a"), S("1"), S("b"), S("2"), S("a"), S("3")};
    assert_int_equal(db_mset(d, 0, kv, 3, 0), 1);
    assert_get(d, 0, K("a"), "3"); /* the last of duplicate keys wins */
    assert_get(d, 0, K("b"), "2");
    struct db_str nx[] = {S("c"), S("1"), S("b"), S("9")};
    assert_int_equal(db_mset(d, 0, nx, 2, 1), 0); /* b exists: nothing is set */
    assert_int_equal(db_exists(d, 0, K("c")), 0);
    assert_get(d, 0, K("b"), "2");
    struct db_str nx2[] = {S("c"), S("1"), S("d"), S("2")};
    assert_int_equal(db_mset(d, 0, nx2, 2, 1), 1);
    assert_get(d, 0, K("d"), "2");
    /* Past one batch of reads: the one key that exists is in the second. */
    char names[100][16];
    struct db_str keys[100], many[200];
    fx_names(names, keys, 100, "nx");
    for (int i = 0; i < 100; i++) {
        many[2 * i] = keys[i];
        many[2 * i + 1] = S("v");
    }
    assert_int_equal(db_set(d, 0, keys[90].p, keys[90].n, K("x"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_mset(d, 0, many, 100, 1), 0);
    assert_int_equal(db_exists(d, 0, keys[0].p, keys[0].n), 0);
    assert_int_equal(db_del(d, 0, keys[90].p, keys[90].n), 1);
    assert_int_equal(db_mset(d, 0, many, 100, 1), 1);
    assert_get(d, 0, keys[90].p, keys[90].n, "v");
}

/* MGET reads as db_get does, key by key: absent keys, other types, expired
 * keys, keys of another db and repeated keys, over more keys than one batch
 * takes; from the overlay or memtable, then from SST files after a reopen. */
struct mget_got {
    int n;
    char *v[160];
    size_t vn[160];
};

static void mget_each(void *arg, const char *v, size_t vn)
{
    struct mget_got *g = arg;
    g->v[g->n] = v ? strndup(v, vn) : NULL;
    g->vn[g->n++] = vn;
}

static void mget_check(struct db *d)
{
    char names[150][16];
    struct db_str keys[150];
    fx_names(names, keys, 150, "mg");
    struct mget_got g = {0};
    uint64_t present = 0, count;
    for (int j = 0; j < 150; j++) /* EXISTS counts the hashes too, and repeats */
        present += (j * 7 % 100) % 5 == 1 || (j * 7 % 100) % 5 == 2 || (j * 7 % 100) % 5 == 4;
    for (size_t pre = 0; pre <= 16; pre += 16) {
        assert_int_equal(db_exists_many(d, 0, keys, 150, pre, &count), 0);
        assert_int_equal(count, present);
        g.n = 0;
        db_mget(d, 0, keys, 150, pre, mget_each, &g);
        assert_int_equal(g.n, 150);
        for (int j = 0; j < 150; j++) {
            char *v;
            size_t vn;
            int i = j * 7 % 100;
            if (i % 5 == 1 || i % 5 == 4) {
                assert_int_equal(db_get(d, 0, keys[j].p, keys[j].n, &v, &vn), 0);
                assert_non_null(g.v[j]);
                assert_int_equal(g.vn[j], vn);
                assert_memory_equal(g.v[j], v, vn);
                free(v);
            } else {
                assert_int_not_equal(db_get(d, 0, keys[j].p, keys[j].n, &v, &vn), 0);
                assert_null(g.v[j]);
            }
            free(g.v[j]);
        }
    }
}

static void test_db_string_mget(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000;
    for (int i = 0; i < 100; i++) {
        char k[16], v[24];
        size_t kn = (size_t)snprintf(k, sizeof k, "mg%d", i);
        size_t vn = (size_t)snprintf(v, sizeof v, "value-%d", i * 31);
        struct db_str fv[] = {S("f"), S("1")};
        uint64_t added;
        switch (i % 5) {
        case 0: /* absent in db 0 */
            assert_int_equal(db_set(d, 1, k, kn, v, vn, 0, 0, NULL, NULL), 1);
            break;
        case 1:
            assert_int_equal(db_set(d, 0, k, kn, v, vn, 0, 0, NULL, NULL), 1);
            break;
        case 2:
            assert_int_equal(db_hset(d, 0, k, kn, fv, 1, 0, &added), 0);
            break;
        case 3:
            assert_int_equal(db_set(d, 0, k, kn, v, vn, 1500, 0, NULL, NULL), 1);
            break;
        case 4:
            assert_int_equal(db_set(d, 0, k, kn, v, vn, 9000, 0, NULL, NULL), 1);
            break;
        }
    }
    stor_clock_override = 1500; /* the i % 5 == 3 keys expire */
    mget_check(d);
    fx_reopen(f);
    mget_check(d);
}

static void test_db_string_incr(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    int64_t v;
    assert_int_equal(db_incrby(d, 0, K("n"), 1, &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(db_incrby(d, 0, K("n"), -11, &v), 0);
    assert_int_equal(v, -10);
    assert_get(d, 0, K("n"), "-10");
    assert_int_equal(db_set(d, 0, K("max"), K("9223372036854775807"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_incrby(d, 0, K("max"), 1, &v), KV_EOVERFLOW);
    assert_get(d, 0, K("max"), "9223372036854775807");
    assert_int_equal(db_set(d, 0, K("min"), K("-9223372036854775808"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_incrby(d, 0, K("min"), -1, &v), KV_EOVERFLOW);
    assert_int_equal(db_incrby(d, 0, K("min"), 1, &v), 0);
    /* Redis's strict integer format. */
    const char *bad[] = {"",
                         " 1",
                         "1 ",
                         "+1",
                         "01",
                         "-0",
                         "1.0",
                         "abc",
                         "9223372036854775808",
                         "-9223372036854775809",
                         "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(db_set(d, 0, K("bad"), bad[i], strlen(bad[i]), 0, 0, NULL, NULL), 1);
        assert_int_equal(db_incrby(d, 0, K("bad"), 1, &v), KV_ENOTINT);
    }
}

static void test_db_string_incrbyfloat(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char out[KV_LDSTR_MAX];
    size_t n;
    assert_int_equal(db_incrbyfloat(d, 0, K("f"), 10.5L, out, &n), 0);
    assert_string_equal(out, "10.5");
    assert_int_equal(db_incrbyfloat(d, 0, K("f"), 0.1L, out, &n), 0);
    assert_string_equal(out, "10.6");
    assert_int_equal(db_incrbyfloat(d, 0, K("f"), -10.6L, out, &n), 0);
    assert_string_equal(out, "0");
    assert_int_equal(db_set(d, 0, K("e"), K("5.0e3"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_incrbyfloat(d, 0, K("e"), 2.0e2L, out, &n), 0);
    assert_string_equal(out, "5200");
    assert_int_equal(db_incrbyfloat(d, 0, K("e"), INFINITY, out, &n), KV_ENANINF);
    assert_get(d, 0, K("e"), "5200");
    assert_int_equal(db_set(d, 0, K("s"), K("abc"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_incrbyfloat(d, 0, K("s"), 1, out, &n), KV_ENOTFLOAT);
}

static void test_db_string_append_ranges(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t len;
    assert_int_equal(db_append(d, 0, K("s"), K("Hello"), &len), 0);
    assert_int_equal(len, 5);
    assert_int_equal(db_append(d, 0, K("s"), K(" World"), &len), 0);
    assert_int_equal(len, 11);
    assert_int_equal(db_strlen(d, 0, K("s"), &len), 0);
    assert_int_equal(len, 11);
    assert_int_equal(db_strlen(d, 0, K("none"), &len), 0);
    assert_int_equal(len, 0);
    char *v;
    size_t vn;
    struct {
        int64_t s, e;
        const char *want;
    } cases[] = {{0, 4, "Hello"},   {-5, -1, "World"}, {0, -1, "Hello World"},
                 {6, 100, "World"}, {-100, 1, "He"},   {5, 3, ""},
                 {-1, -5, ""},      {11, 20, ""},      {-3, -2, "rl"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(db_getrange(d, 0, K("s"), cases[i].s, cases[i].e, &v, &vn), 0);
        assert_int_equal(vn, strlen(cases[i].want));
        assert_memory_equal(v, cases[i].want, vn);
        free(v);
    }
    assert_int_equal(db_getrange(d, 0, K("none"), 0, -1, &v, &vn), 0);
    assert_int_equal(vn, 0);
    free(v);
    assert_int_equal(db_setrange(d, 0, K("s"), 6, K("Redis"), &len), 0);
    assert_int_equal(len, 11);
    assert_get(d, 0, K("s"), "Hello Redis");
    assert_int_equal(db_setrange(d, 0, K("pad"), 3, K("x"), &len), 0);
    assert_int_equal(len, 4);
    assert_int_equal(db_get(d, 0, K("pad"), &v, &vn), 0);
    assert_memory_equal(v, "\0\0\0x", 4);
    free(v);
    /* An empty write creates nothing and changes nothing. */
    assert_int_equal(db_setrange(d, 0, K("nokey"), 10, "", 0, &len), 0);
    assert_int_equal(len, 0);
    assert_int_equal(db_exists(d, 0, K("nokey")), 0);
    /* Past the size limit. */
    assert_int_equal(db_setrange(d, 0, K("s"), 512ull << 20, K("x"), &len), KV_ETOOBIG);
}

static void test_db_string_setbit_bitop(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    int old = -1;
    /* Bit 0 is the first byte's high bit; the string grows with zeros and
     * keeps its expiry. */
    assert_int_equal(db_setbit(d, 0, K("b"), 1, 1, &old), 1);
    assert_int_equal(old, 0);
    assert_int_equal(db_setbit(d, 0, K("b"), 17, 1, &old), 1);
    assert_bytes(d, "b", "\x40\x00\x40");
    /* the same value again: no change, nothing written */
    assert_int_equal(db_setbit(d, 0, K("b"), 17, 1, &old), 0);
    assert_int_equal(old, 1);
    /* a clear bit past the end still grows the string */
    assert_int_equal(db_setbit(d, 0, K("g"), 15, 0, &old), 1);
    assert_int_equal(old, 0);
    uint64_t glen;
    assert_int_equal(db_strlen(d, 0, K("g"), &glen), 0);
    assert_int_equal(glen, 2);
    assert_int_equal(db_del(d, 0, K("g")), 1);
    assert_int_equal(db_expire(d, 0, K("b"), stor_now_ms() + 100000, 0), 1);
    assert_int_equal(db_setbit(d, 0, K("b"), 1, 0, &old), 1);
    assert_int_equal(old, 1);
    assert_bytes(d, "b", "\x00\x00\x40");
    uint64_t exp;
    assert_int_equal(db_expiretime(d, 0, K("b"), &exp), 0);
    assert_true(exp > 0);
    assert_int_equal(db_setbit(d, 0, K("b"), (512ull << 20) * 8, 1, &old), KV_ETOOBIG);
    uint64_t n;
    struct db_str m[] = {S("x")};
    assert_int_equal(db_sadd(d, 0, K("set"), m, 1, &n), 0);
    assert_int_equal(db_setbit(d, 0, K("set"), 0, 1, &old), KV_EWRONGTYPE);

    /* BITOP: shorter and absent sources read as zeros; the result has no
     * expiry; an empty result deletes the destination. */
    assert_int_equal(db_set(d, 0, K("x"), K("\xf0\x0f\xff"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("y"), K("\x3c"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("dst"), K("old"), stor_now_ms() + 100000, 0, NULL, NULL), 1);
    struct db_str xy[] = {S("x"), S("y"), S("nokey")};
    uint64_t len;
    assert_int_equal(db_bitop(d, 0, DB_BITOP_AND, K("dst"), xy, 2, &len), 0);
    assert_int_equal(len, 3);
    assert_bytes(d, "dst", "\x30\x00\x00");
    assert_int_equal(db_expiretime(d, 0, K("dst"), &exp), 0);
    assert_int_equal(exp, 0);
    assert_int_equal(db_bitop(d, 0, DB_BITOP_OR, K("dst"), xy, 3, &len), 0);
    assert_bytes(d, "dst", "\xfc\x0f\xff");
    assert_int_equal(db_bitop(d, 0, DB_BITOP_XOR, K("dst"), xy, 2, &len), 0);
    assert_bytes(d, "dst", "\xcc\x0f\xff");
    assert_int_equal(db_bitop(d, 0, DB_BITOP_NOT, K("dst"), xy + 1, 1, &len), 0);
    assert_bytes(d, "dst", "\xc3");
    /* The destination may be a source. */
    assert_int_equal(db_bitop(d, 0, DB_BITOP_NOT, K("y"), xy + 1, 1, &len), 0);
    assert_bytes(d, "y", "\xc3");
    assert_int_equal(db_bitop(d, 0, DB_BITOP_OR, K("dst"), xy + 2, 1, &len), 0);
    assert_int_equal(len, 0);
    assert_int_equal(db_exists(d, 0, K("dst")), 0);
    struct db_str bad[] = {S("x"), S("set")};
    assert_int_equal(db_bitop(d, 0, DB_BITOP_AND, K("dst"), bad, 2, &len), KV_EWRONGTYPE);
    assert_int_equal(db_exists(d, 0, K("dst")), 0);
}

static void test_db_string_bitfield(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    int64_t out[4];
    bool nil[4];
    /* GETs alone write nothing, even on an absent key. */
    struct db_bfop get = {.op = DB_BF_GET, .bits = 8, .offset = 0};
    assert_int_equal(db_bitfield(d, 0, K("b"), &get, 1, out, nil), 0);
    assert_int_equal(out[0], 0);
    assert_int_equal(db_exists(d, 0, K("b")), 0);
    /* A refused write still grows the string to its field (Redis's order),
     * yet counts as no change (0). */
    struct db_bfop fail = {
        .op = DB_BF_INCRBY, .bits = 8, .offset = 100, .value = 300, .overflow = DB_BF_FAIL};
    assert_int_equal(db_bitfield(d, 0, K("b"), &fail, 1, out, nil), 0);
    assert_true(nil[0]);
    uint64_t len;
    assert_int_equal(db_strlen(d, 0, K("b"), &len), 0);
    assert_int_equal(len, 14);
    /* A signed 5-bit field across a byte boundary: wrap, saturate, fail. */
    struct db_bfop ops[] = {
        {.op = DB_BF_SET, .sign = 1, .bits = 5, .offset = 6, .value = 100},
        {.op = DB_BF_INCRBY, .sign = 1, .bits = 5, .offset = 6, .value = 20, .overflow = DB_BF_SAT},
        {.op = DB_BF_INCRBY,
         .sign = 1,
         .bits = 5,
         .offset = 6,
         .value = -100,
         .overflow = DB_BF_FAIL},
        {.op = DB_BF_GET, .sign = 0, .bits = 5, .offset = 6},
    };
    assert_int_equal(db_bitfield(d, 0, K("b"), ops, 4, out, nil), 1);
    assert_int_equal(out[0], 0);  /* SET answers the old value; 100 wraps to 4 */
    assert_int_equal(out[1], 15); /* 4 + 20 saturates at 15 */
    assert_true(nil[2]);          /* 15 - 100 < -16: refused */
    assert_int_equal(out[3], 15); /* 01111 read unsigned */
    char *v;
    size_t vn;
    assert_int_equal(db_get(d, 0, K("b"), &v, &vn), 0);
    assert_int_equal((unsigned char)v[0], 0x01); /* bits 6-10: 01, then 111 */
    assert_int_equal((unsigned char)v[1], 0xe0);
    free(v);
    /* i64 wraps like two's complement; u63 saturates at 2^63-1. */
    struct db_bfop big[] = {
        {.op = DB_BF_SET, .sign = 1, .bits = 64, .offset = 0, .value = INT64_MAX},
        {.op = DB_BF_INCRBY, .sign = 1, .bits = 64, .offset = 0, .value = 1},
        {.op = DB_BF_SET, .sign = 0, .bits = 63, .offset = 64, .value = -1, .overflow = DB_BF_SAT},
        {.op = DB_BF_GET, .sign = 0, .bits = 63, .offset = 64},
    };
    assert_int_equal(db_bitfield(d, 0, K("c"), big, 4, out, nil), 1);
    assert_true(out[1] == INT64_MIN);
    assert_true(out[3] == INT64_MAX);
    /* Redis's test wraps for extreme values: SAT stores the maximum for
     * the most negative one (the differential test found it). */
    struct db_bfop quirk[] = {
        {.op = DB_BF_SET,
         .sign = 1,
         .bits = 5,
         .offset = 0,
         .value = INT64_MIN,
         .overflow = DB_BF_SAT},
        {.op = DB_BF_GET, .sign = 1, .bits = 5, .offset = 0},
        {.op = DB_BF_SET, .sign = 1, .bits = 5, .offset = 0, .value = -100, .overflow = DB_BF_SAT},
        {.op = DB_BF_GET, .sign = 1, .bits = 5, .offset = 0},
    };
    assert_int_equal(db_bitfield(d, 0, K("q"), quirk, 4, out, nil), 1);
    assert_int_equal(out[1], 15);
    assert_int_equal(out[3], -16);
    /* Writing the value a field already holds changes nothing: 0. */
    assert_int_equal(db_bitfield(d, 0, K("q"), quirk + 2, 1, out, nil), 0);
    assert_int_equal(out[0], -16);
}

static void test_db_keys_del_type_exists(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t n;
    struct db_str m[] = {S("a")};
    int type;
    assert_int_equal(db_type(d, 0, K("x"), &type), 0);
    assert_int_equal(type, ENC_TYPE_NONE);
    assert_int_equal(db_sadd(d, 0, K("x"), m, 1, &n), 0);
    assert_int_equal(db_type(d, 0, K("x"), &type), 0);
    assert_int_equal(type, ENC_TYPE_SET);
    assert_int_equal(db_exists(d, 0, K("x")), 1);
    assert_int_equal(db_del(d, 0, K("x")), 1);
    assert_int_equal(d->last_commit_ops, 1);
    assert_int_equal(db_del(d, 0, K("x")), 0);
    assert_int_equal(db_exists(d, 0, K("x")), 0);
    /* A re-created key of the same name starts empty (new version). */
    struct db_str m2[] = {S("b")};
    assert_int_equal(db_sadd(d, 0, K("x"), m2, 1, &n), 0);
    assert_int_equal(db_sismember(d, 0, K("x"), K("a")), 0);
    assert_int_equal(db_scard(d, 0, K("x"), &n), 0);
    assert_int_equal(n, 1);
}

static void test_db_keys_expire_flags(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000;
    uint64_t e;
    assert_int_equal(db_set(d, 0, K("k"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_expire(d, 0, K("none"), 5000, 0), 0);
    assert_int_equal(db_expire(d, 0, K("k"), 5000, DB_EXP_XX), 0); /* has no TTL */
    assert_int_equal(db_expire(d, 0, K("k"), 5000, DB_EXP_GT), 0); /* none = infinite */
    assert_int_equal(db_expire(d, 0, K("k"), 5000, DB_EXP_LT), 1);
    assert_int_equal(db_expire(d, 0, K("k"), 6000, DB_EXP_NX), 0);
    assert_int_equal(db_expire(d, 0, K("k"), 4000, DB_EXP_GT), 0);
    assert_int_equal(db_expire(d, 0, K("k"), 6000, DB_EXP_GT), 1);
    assert_int_equal(db_expire(d, 0, K("k"), 7000, DB_EXP_LT), 0);
    assert_int_equal(db_expire(d, 0, K("k"), 3000, DB_EXP_LT | DB_EXP_XX), 1);
    assert_int_equal(db_expiretime(d, 0, K("k"), &e), 0);
    assert_true(e == 3000);
    assert_int_equal(db_persist(d, 0, K("k")), 1);
    assert_int_equal(db_persist(d, 0, K("k")), 0);
    assert_int_equal(db_persist(d, 0, K("none")), 0);
    /* An expiry not in the future deletes the key. */
    assert_int_equal(db_expire(d, 0, K("k"), 1000, 0), 2);
    assert_int_equal(db_exists(d, 0, K("k")), 0);
}

static void test_db_keys_rename_copy(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    stor_clock_override = 1000;
    uint64_t n, e;
    struct db_str fv[] = {S("f1"), S("v1"), S("f2"), S("v2")};
    assert_int_equal(db_hset(d, 0, K("h"), fv, 2, 0, &n), 0);
    assert_int_equal(db_expire(d, 0, K("h"), 9000, 0), 1);
    assert_int_equal(db_rename(d, 0, K("h"), K("h2"), 0), 1);
    assert_int_equal(db_exists(d, 0, K("h")), 0);
    assert_int_equal(db_hlen(d, 0, K("h2"), &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(db_expiretime(d, 0, K("h2"), &e), 0);
    assert_true(e == 9000); /* RENAME keeps the TTL */
    assert_int_equal(db_rename(d, 0, K("missing"), K("x"), 0), KV_ENOTFOUND);
    assert_int_equal(db_rename(d, 0, K("h2"), K("h2"), 0), 1);
    assert_int_equal(db_rename(d, 0, K("h2"), K("h2"), 1), 0);
    assert_int_equal(db_set(d, 0, K("s"), K("str"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_rename(d, 0, K("h2"), K("s"), 1), 0); /* RENAMENX: s exists */
    assert_int_equal(db_rename(d, 0, K("h2"), K("s"), 0), 1); /* RENAME replaces it */
    int type;
    assert_int_equal(db_type(d, 0, K("s"), &type), 0);
    assert_int_equal(type, ENC_TYPE_HASH);

    /* COPY: to another db, refusing an existing target unless REPLACE. */
    struct db_str z[] = {S("a"), S("b")};
    double sc[] = {1, 2};
    assert_int_equal(db_zadd(d, 0, K("z"), sc, z, 2, 0, &n, NULL), 0);
    assert_int_equal(db_copy(d, 0, K("z"), 3, K("z"), 0), 1);
    assert_int_equal(db_copy(d, 0, K("z"), 3, K("z"), 0), 0);
    assert_int_equal(db_copy(d, 0, K("z"), 3, K("z"), 1), 1);
    double got;
    assert_int_equal(db_zscore(d, 3, K("z"), K("b"), &got), 0);
    assert_true(got == 2);
    /* The copy is independent of its source. */
    struct db_str only_a[] = {S("a")};
    assert_int_equal(db_zrem(d, 0, K("z"), only_a, 1, &n), 0);
    assert_int_equal(db_zcard(d, 3, K("z"), &n), 0);
    assert_int_equal(n, 2);
    struct db_str l[] = {S("x"), S("y")};
    assert_int_equal(db_push(d, 0, K("l"), 0, l, 2, 0, &n), 0);
    assert_int_equal(db_copy(d, 0, K("l"), 0, K("l2"), 0), 1);
    struct db_vec v;
    db_vec_init(&v);
    assert_int_equal(db_lrange(d, 0, K("l2"), 0, -1, &v), 0);
    assert_int_equal(v.n, 2);
    assert_item(&v, 0, "x");
    assert_item(&v, 1, "y");
    db_vec_destroy(&v);

    /* MOVE: the list leaves db 0 for db 5 whole; not over a key already
     * there; an absent key is KV_ENOTFOUND. */
    assert_int_equal(db_move(d, 0, 5, K("l")), 1);
    assert_int_equal(db_exists(d, 0, K("l")), 0);
    assert_int_equal(db_llen(d, 5, K("l"), &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(db_push(d, 0, K("l"), 0, l, 1, 0, &n), 0);
    assert_int_equal(db_move(d, 0, 5, K("l")), 0);
    assert_int_equal(db_llen(d, 0, K("l"), &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(db_move(d, 0, 5, K("nokey")), KV_ENOTFOUND);
}

static void test_db_keys_scan_dbsize_flush(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char k[16];
    for (int i = 0; i < 100; i++) {
        int n = snprintf(k, sizeof k, "key:%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
    }
    uint64_t n;
    struct db_str m[] = {S("m")};
    assert_int_equal(db_sadd(d, 0, K("set:1"), m, 1, &n), 0);
    assert_int_equal(db_set(d, 1, K("other"), K("v"), 0, 0, NULL, NULL), 1);
    fx_assert_keys(d, 0, 101, 0);
    fx_assert_keys(d, 1, 1, 0);
    /* A full cursor walk returns every key exactly once. */
    struct db_vec v;
    db_vec_init(&v);
    char *cur = NULL;
    size_t curn = 0;
    int steps = 0;
    do {
        char *next;
        size_t nextn;
        assert_int_equal(db_scan(d, 0, cur, curn, NULL, 0, 0, 7, &v, &next, &nextn), 0);
        free(cur);
        cur = next;
        curn = nextn;
        steps++;
    } while (cur);
    assert_int_equal(v.n, 101);
    assert_true(steps >= 14);
    db_vec_clear(&v);
    /* MATCH and TYPE filter. */
    char *next;
    size_t nextn;
    assert_int_equal(db_scan(d, 0, NULL, 0, K("key:1?"), 0, 1000, &v, &next, &nextn), 0);
    assert_null(next);
    assert_int_equal(v.n, 10);
    db_vec_clear(&v);
    assert_int_equal(db_scan(d, 0, NULL, 0, NULL, 0, ENC_TYPE_SET, 1000, &v, &next, &nextn), 0);
    assert_int_equal(v.n, 1);
    assert_item(&v, 0, "set:1");
    db_vec_destroy(&v);

    char *rk;
    size_t rkn;
    assert_int_equal(db_randomkey(d, 1, &rk, &rkn), 0);
    assert_memory_equal(rk, "other", 5);
    free(rk);
    assert_int_equal(db_randomkey(d, 7, &rk, &rkn), KV_ENOTFOUND);

    assert_int_equal(db_flushdb(d, 0), 0);
    fx_assert_keys(d, 0, 0, 0);
    assert_int_equal(db_sismember(d, 0, K("set:1"), K("m")), 0);
    fx_assert_keys(d, 1, 1, 0);
    assert_int_equal(db_flushall(d), 0);
    fx_assert_keys(d, 1, 0, 0);
    /* A db emptied by deletes answers RANDOMKEY and SCAN from its count,
     * without a walk over the tombstones. */
    for (int i = 0; i < 1000; i++) {
        int kn = snprintf(k, sizeof k, "gone:%d", i);
        assert_int_equal(db_set(d, 2, k, (size_t)kn, K("v"), 0, 0, NULL, NULL), 1);
    }
    assert_int_equal(db_randomkey(d, 2, &rk, &rkn), 0);
    free(rk);
    for (int i = 0; i < 1000; i++) {
        int kn = snprintf(k, sizeof k, "gone:%d", i);
        assert_int_equal(db_del(d, 2, k, (size_t)kn), 1);
    }
    fx_assert_keys(d, 2, 0, 0);
    assert_int_equal(db_randomkey(d, 2, &rk, &rkn), KV_ENOTFOUND);
    db_vec_init(&v);
    assert_int_equal(db_scan(d, 2, NULL, 0, NULL, 0, 0, 10, &v, &next, &nextn), 0);
    assert_int_equal(v.n, 0);
    assert_null(next);
    db_vec_destroy(&v);
}

/* A full SCAN over db 0 with COUNT count: which keys of the test below it
 * returned, anything else it returned, and its number of calls. */
struct scan_seen {
    unsigned char t[60000], tag[4000], fresh[50];
    int calls, other;
};

static void scan_note(struct scan_seen *ss, const char *k, size_t kn)
{
    char buf[32];
    int i;
    if (kn >= sizeof buf)
        goto other;
    memcpy(buf, k, kn);
    buf[kn] = 0;
    if (sscanf(buf, "t:%d", &i) == 1 && i >= 0 && i < 60000)
        ss->t[i] = 1;
    else if (sscanf(buf, "{tag}:%d", &i) == 1 && i >= 0 && i < 4000)
        ss->tag[i] = 1;
    else if (sscanf(buf, "fresh:%d", &i) == 1 && i >= 0 && i < 50)
        ss->fresh[i] = 1;
    else
        goto other;
    return;
other:
    ss->other++;
}

static void scan_full(struct db *d, uint64_t count, struct scan_seen *ss)
{
    memset(ss, 0, sizeof *ss);
    struct db_vec v;
    db_vec_init(&v);
    char *cur = NULL;
    size_t curn = 0;
    do {
        char *next;
        size_t nextn;
        assert_int_equal(db_scan(d, 0, cur, curn, NULL, 0, 0, count, &v, &next, &nextn), 0);
        for (size_t i = 0; i < v.n; i++) {
            scan_note(ss, db_vec_ptr(&v, i), db_vec_len(&v, i));
        }
        db_vec_clear(&v);
        free(cur);
        cur = next;
        curn = nextn;
        ss->calls++;
        assert_true(ss->calls < 100000);
    } while (cur);
    db_vec_destroy(&v);
}

/* SCAN over a key space mostly deleted, whose tombstones RocksDB keeps
 * until compaction: every live key comes back, no deleted one, and a call
 * stops short of walking them all (db_scan's ranges). With write-back,
 * keys that only the overlay holds are spread among them. */
static void test_db_scan_over_tombstones(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char k[32];
    for (int i = 0; i < 60000; i++) {
        int n = snprintf(k, sizeof k, "t:%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
    }
    for (int i = 0; i < 4000; i++) { /* one slot: more than a range may pass */
        int n = snprintf(k, sizeof k, "{tag}:%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
    }
    if (fx_writeback)
        assert_int_equal(stor_drain(f->s), 0);
    for (int i = 0; i < 60000; i++) {
        if (i % 600 == 0)
            continue;
        int n = snprintf(k, sizeof k, "t:%d", i);
        assert_int_equal(db_del(d, 0, k, (size_t)n), 1);
    }
    for (int i = 0; i < 4000; i++) {
        if (i % 1000 == 999)
            continue;
        int n = snprintf(k, sizeof k, "{tag}:%d", i);
        assert_int_equal(db_del(d, 0, k, (size_t)n), 1);
    }
    if (fx_writeback) {
        assert_int_equal(stor_drain(f->s), 0);
        for (int i = 0; i < 50; i++) { /* pending, in the overlay */
            int n = snprintf(k, sizeof k, "fresh:%d", i);
            assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
        }
    }
    for (int r = 0; r < 2; r++) {
        struct scan_seen *ss = malloc(sizeof *ss);
        scan_full(d, r ? 1000 : 10, ss);
        for (int i = 0; i < 60000; i++)
            if (ss->t[i] != (i % 600 == 0))
                fail_msg("count %d: t:%d %s", r ? 1000 : 10, i,
                         ss->t[i] ? "deleted, returned" : "missed");
        for (int i = 0; i < 4000; i++)
            assert_int_equal(ss->tag[i], i % 1000 == 999);
        for (int i = 0; i < 50; i++)
            assert_int_equal(ss->fresh[i], fx_writeback != 0);
        assert_int_equal(ss->other, 0);
        /* 105-155 keys and 63,896 tombstones: one walk would take over
         * 10 ms; a call stops after 1 ms. */
        if (r)
            assert_true(ss->calls >= 2);
        print_message("scan over tombstones, count %d: %d calls\n", r ? 1000 : 10, ss->calls);
        free(ss);
    }
}

/* SCAN over keys that all wait in the write-back for their order (no
 * flusher): the first call orders a narrow range's bands, not all of them
 * (db_scan's SCAN_FIRST_NARROW), and the whole scan still returns every
 * key, with writes of new keys and rewrites between its calls. */
static void test_db_scan_waiting(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char k[32];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(k, sizeof k, "t:%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
    }
    size_t w0 = stor_waiting(f->s, STOR_CF_META);
    assert_true(w0 >= 20000);
    struct scan_seen *ss = calloc(1, sizeof *ss);
    struct db_vec v;
    db_vec_init(&v);
    char *cur = NULL;
    size_t curn = 0;
    int calls = 0;
    do {
        char *next;
        size_t nextn;
        assert_int_equal(db_scan(d, 0, cur, curn, NULL, 0, 0, 50, &v, &next, &nextn), 0);
        if (calls == 0) {
            size_t w1 = stor_waiting(f->s, STOR_CF_META);
            if (v.n == 0 || !next || w1 < w0 - w0 / 8)
                fail_msg("the first call: %zu keys, ordered %zu of %zu waiting records", v.n,
                         w0 - w1, w0);
        }
        for (size_t i = 0; i < v.n; i++)
            scan_note(ss, db_vec_ptr(&v, i), db_vec_len(&v, i));
        db_vec_clear(&v);
        free(cur);
        cur = next;
        curn = nextn;
        int n = snprintf(k, sizeof k, "t:%d", calls * 7 % 20000); /* a rewrite */
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("w"), 0, 0, NULL, NULL), 1);
        n = snprintf(k, sizeof k, "new:%d", calls); /* a new key */
        assert_int_equal(db_set(d, 0, k, (size_t)n, K("v"), 0, 0, NULL, NULL), 1);
        assert_true(++calls < 100000);
    } while (cur);
    db_vec_destroy(&v);
    for (int i = 0; i < 20000; i++)
        if (!ss->t[i])
            fail_msg("t:%d missed", i);
    print_message("scan of waiting records: %d calls\n", calls);
    free(ss);
}

static void test_db_keys_glob(void **state)
{
    (void)state;
    struct {
        const char *p, *s;
        int want;
    } c[] = {{"*", "", 1},
             {"*", "abc", 1},
             {"a*", "abc", 1},
             {"a*c", "abbbc", 1},
             {"a*c", "abcd", 0},
             {"h?llo", "hello", 1},
             {"h?llo", "hllo", 0},
             {"h[ae]llo", "hallo", 1},
             {"h[ae]llo", "hillo", 0},
             {"h[^e]llo", "hallo", 1},
             {"h[^e]llo", "hello", 0},
             {"h[a-b]llo", "hbllo", 1},
             {"h[b-a]llo", "hallo", 1},
             {"h\\*llo", "h*llo", 1},
             {"h\\*llo", "hello", 0},
             {"*a*b*c*", "xaxbxcx", 1},
             {"*a*b*c*", "xaxcxbx", 0},
             {"a**", "a", 1},
             {"[abc", "a", 1},
             {"", "", 1},
             {"", "a", 0}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        assert_int_equal(db_glob_match(c[i].p, strlen(c[i].p), c[i].s, strlen(c[i].s), 0),
                         c[i].want);
    assert_int_equal(db_glob_match(K("HELLO"), K("hello"), 1), 1);
    assert_int_equal(db_glob_match(K("HELLO"), K("hello"), 0), 0);
}

static void test_db_keys_persist_across_reopen(void **state)
{
    struct fx *f = *state;
    uint64_t n;
    struct db_str fv[] = {S("f"), S("v")};
    assert_int_equal(db_set(&f->d, 0, K("s"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_hset(&f->d, 0, K("h"), fv, 1, 0, &n), 0);
    fx_reopen(f);
    char *v;
    size_t vn;
    assert_int_equal(db_get(&f->d, 0, K("s"), &v, &vn), 0);
    free(v);
    assert_int_equal(db_hget(&f->d, 0, K("h"), K("f"), &v, &vn), 0);
    assert_memory_equal(v, "v", 1);
    free(v);
    /* Versions keep increasing across a reopen: a new hash never sees old fields. */
    assert_int_equal(db_del(&f->d, 0, K("h")), 1);
    struct db_str fv2[] = {S("g"), S("w")};
    assert_int_equal(db_hset(&f->d, 0, K("h"), fv2, 1, 0, &n), 0);
    assert_int_equal(db_hexists(&f->d, 0, K("h"), K("f")), 0);
}

/* Writes raw bytes as the meta record of key in db 0. */
static void plant_meta(struct fx *f, const char *key, size_t klen, const char *v, size_t vn)
{
    char mk[64];
    size_t mkn = enc_meta_key(mk, 0, enc_slot(key, klen), key, klen);
    struct stor_batch b;
    stor_batch_init(&b);
    stor_batch_put(&b, STOR_CF_META, mk, mkn, v, vn);
    assert_int_equal(stor_commit(f->s, &b), 0);
    stor_batch_destroy(&b);
}

static void test_db_keys_corrupt_records_are_errors(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    plant_meta(f, K("short"), "\x01\x00", 2);                  /* shorter than flags+expiry */
    plant_meta(f, K("badtype"), "\x09\0\0\0\0\0\0\0\0", 9);    /* type 9 */
    plant_meta(f, K("badhash"), "\x02\0\0\0\0\0\0\0\0\1", 10); /* hash without its tail */
    fx_reopen(f); /* counted at open, like any record */
    fx_assert_keys(d, 0, 3, 0);
    char *v;
    size_t vn;
    uint64_t n;
    int type;
    const char *keys[] = {"short", "badtype", "badhash"};
    for (int i = 0; i < 3; i++) {
        size_t kl = strlen(keys[i]);
        assert_int_equal(db_get(d, 0, keys[i], kl, &v, &vn), KV_ECORRUPT);
        assert_int_equal(db_type(d, 0, keys[i], kl, &type), KV_ECORRUPT);
        assert_int_equal(db_hlen(d, 0, keys[i], kl, &n), KV_ECORRUPT);
        assert_int_equal(db_del(d, 0, keys[i], kl), KV_ECORRUPT);
        struct db_str m = S("m");
        assert_int_equal(db_sadd(d, 0, keys[i], kl, &m, 1, &n), KV_ECORRUPT);
    }
    /* Reads of many keys report the damage too, and a DEL of many deletes
     * none of them. */
    assert_int_equal(db_set(d, 0, K("good"), K("v"), 0, 0, NULL, NULL), 1);
    struct db_str many[] = {S("good"), S("short"), S("badtype"), S("badhash")};
    struct mget_got g = {0};
    unsigned char del[4];
    assert_int_equal(db_mget(d, 0, many, 4, 0, mget_each, &g), KV_ECORRUPT);
    assert_int_equal(g.n, 4);
    for (int i = 0; i < 4; i++)
        free(g.v[i]);
    assert_int_equal(db_exists_many(d, 0, many, 4, 0, &n), KV_ECORRUPT);
    assert_int_equal(db_del_many(d, 0, many, 4, 0, del), KV_ECORRUPT);
    assert_int_equal(del[0], 0);
    assert_get(d, 0, K("good"), "v");
    unsigned char is[1];
    double sc[1];
    assert_int_equal(db_smismember(d, 0, K("badhash"), many, 1, is), KV_ECORRUPT);
    assert_int_equal(db_zmscore(d, 0, K("short"), many, 1, sc), KV_ECORRUPT);
    assert_int_equal(db_del(d, 0, K("good")), 1);
    /* SET replaces a corrupt record without reading it. Scans skip records
     * whose header is unreadable, but list one with a damaged tail: the key
     * exists, and every access to it reports the damage. */
    assert_int_equal(db_set(d, 0, K("short"), K("fixed"), 0, 0, NULL, NULL), 1);
    assert_get(d, 0, K("short"), "fixed");
    fx_assert_keys(d, 0, 3, 0); /* a record counts whatever its bytes */
}

/* Every kind of write, at random over a few keys in three dbs, with time
 * moving on and reopens: after each, the kept key and expiry counts equal
 * a scan's. Blind SETs, MSET naming a key twice, RENAME onto itself, MOVE
 * and COPY across dbs, writes to expired keys and active expiry included. */
static void test_db_keycount_kept(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    uint64_t rng = 0x5eed5eedull, n;
    stor_clock_override = 1000000;
#define RND(m)                                                                                     \
    ((unsigned)((rng = rng * 6364136223846793005ull + 1442695040888963407ull) >> 33) % (m))
    struct db_vec out;
    db_vec_init(&out);
    unsigned deferred = 0; /* steps that left a write's prior state to resolve */
    for (int step = 0; step < 3000; step++) {
        char k1[8], k2[8];
        unsigned db1 = RND(3), db2 = RND(3);
        snprintf(k1, sizeof k1, "k%u", RND(8));
        snprintf(k2, sizeof k2, "k%u", RND(8));
        size_t n1 = strlen(k1), n2 = strlen(k2);
        uint64_t now = stor_clock_override;
        uint64_t exp = RND(3) == 0 ? 0 : now + 1 + RND(50);
        char *v = NULL;
        size_t vn;
        struct db_str m[] = {S("a"), S("b")};
        struct db_str kv[] = {{k1, n1}, S("x"), {k2, n2}, S("y"), {k1, n1}, S("z")};
        double sc[] = {1, 2};
        int rc;
        switch (RND(23)) {
        case 0:
            rc = db_set(d, db1, k1, n1, K("v"), exp, 0, NULL, NULL);
            break;
        case 1:
            rc = db_set(d, db1, k1, n1, K("v"), exp, RND(2) ? DB_SET_NX : DB_SET_XX, NULL, NULL);
            break;
        case 2:
            rc = db_set(d, db1, k1, n1, K("v"), 0, DB_SET_KEEPTTL, NULL, NULL);
            break;
        case 3:
            rc = db_del(d, db1, k1, n1);
            break;
        case 4:
            rc = db_hset(d, db1, k1, n1, m, 1, 0, &n);
            break;
        case 5:
            rc = db_hdel(d, db1, k1, n1, m, 2, &n);
            break;
        case 6:
            rc = db_sadd(d, db1, k1, n1, m, 1 + RND(2), &n);
            break;
        case 7:
            rc = db_spop(d, db1, k1, n1, 1, &out);
            break;
        case 8:
            rc = db_zadd(d, db1, k1, n1, sc, m, 2, 0, &n, NULL);
            break;
        case 9:
            rc = db_zrem(d, db1, k1, n1, m, 1, &n);
            break;
        case 10:
            rc = db_push(d, db1, k1, n1, 1, m, 1, 0, &n);
            break;
        case 11:
            rc = db_pop(d, db1, k1, n1, 0, 1, &out);
            break;
        case 12:
            rc = db_expire(d, db1, k1, n1, RND(4) ? exp : now - 1, 0);
            break;
        case 13:
            rc = db_persist(d, db1, k1, n1);
            break;
        case 14:
            rc = db_rename(d, db1, k1, n1, k2, n2, (int)RND(2));
            break;
        case 15:
            rc = db_copy(d, db1, k1, n1, db2, k2, n2, (int)RND(2));
            break;
        case 16:
            rc = db1 == db2 ? 0 : db_move(d, db1, db2, k1, n1);
            break;
        case 17:
            rc = db_mset(d, db1, kv, 3, (int)RND(2));
            break;
        case 18:
            rc = db_getdel(d, db1, k1, n1, &v, &vn);
            break;
        case 19:
            rc = db_smove(d, db1, k1, n1, k2, n2, K("a"));
            break;
        case 21: {
            unsigned char del[3];
            struct db_str ks[] = {{k1, n1}, {k2, n2}, {k1, n1}};
            rc = db_del_many(d, db1, ks, 3, 0, del);
            assert_true(rc != 0 || !del[2]);
            break;
        }
        case 20:
            stor_clock_override += 1 + RND(20); /* some keys expire */
            rc = db_reap(d, RND(2) ? 1000 : 2, &n, &(bool){false});
            break;
        default:
            if (RND(20) == 0)
                rc = db_flushdb(d, db1);
            else if (RND(10) == 0) {
                fx_reopen(f);
                rc = 0;
            } else
                rc = db_getex(d, db1, k1, n1, DB_GETEX_SET, exp ? exp : now - 1, &v, &vn);
            break;
        }
        assert_true(rc >= 0 || rc == KV_ENOTFOUND || rc == KV_EWRONGTYPE);
        free(v);
        db_vec_clear(&out);
        for (unsigned dbi = 0; dbi < 3; dbi++)
            deferred += d->defer_out[dbi] != 0;
        if (stor_can_defer(f->s) && step % 7 == 0) {
            /* The flusher resolves what it writes: once drained, folding
             * alone makes the counts exact, and the overlay is empty, so
             * the next writes of these keys are deferred again. */
            assert_int_equal(stor_drain(f->s), 0);
            assert_int_equal(db_counts_settle(d, false), 0);
            for (unsigned dbi = 0; dbi < 3; dbi++) {
                uint64_t sk, se;
                assert_int_equal(d->defer_out[dbi], 0);
                assert_int_equal(db_keycount_scan(d, dbi, &sk, &se), 0);
                assert_int_equal(d->nkeys[dbi], sk);
                assert_int_equal(d->nexpires[dbi], se);
            }
        }
        for (unsigned dbi = 0; dbi < 3; dbi++) {
            uint64_t k, e, sk, se;
            assert_int_equal(db_keycount(d, dbi, &k, &e), 0);
            assert_int_equal(db_keycount_scan(d, dbi, &sk, &se), 0);
            if (k != sk || e != se)
                fail_msg("step %d db %u: kept %llu keys %llu expires, scan %llu %llu", step, dbi,
                         (unsigned long long)k, (unsigned long long)e, (unsigned long long)sk,
                         (unsigned long long)se);
        }
    }
#undef RND
    db_vec_destroy(&out);
    if (stor_can_defer(f->s))
        assert_true(deferred > 100);
    else
        assert_int_equal(deferred, 0);
}

/* DEL of more keys than one batch reads: strings, hashes, keys with an
 * expiry (some due), absent keys, keys of another db, each named up to
 * twice. Each live key is deleted once, the counts agree with a scan, and
 * with write-back, where the flusher has taken every record from the
 * overlay, the counts take what the delete read: nothing is left to
 * resolve later. */
static void test_db_del_many(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char names[150][16];
    struct db_str keys[150];
    unsigned char del[150];
    uint64_t added;
    stor_clock_override = 1000;
    fx_names(names, keys, 150, "dl");
    for (int i = 0; i < 100; i++) {
        char key[16];
        size_t kn = (size_t)snprintf(key, sizeof key, "dl%d", i);
        struct db_str fv[] = {S("f"), S("1")};
        switch (i % 5) {
        case 0: /* absent in db 0 */
            assert_int_equal(db_set(d, 1, key, kn, K("v"), 0, 0, NULL, NULL), 1);
            break;
        case 1:
            assert_int_equal(db_set(d, 0, key, kn, K("v"), 0, 0, NULL, NULL), 1);
            break;
        case 2:
            assert_int_equal(db_hset(d, 0, key, kn, fv, 1, 0, &added), 0);
            break;
        case 3:
            assert_int_equal(db_set(d, 0, key, kn, K("v"), 1500, 0, NULL, NULL), 1);
            break;
        case 4:
            assert_int_equal(db_set(d, 0, key, kn, K("v"), 9000, 0, NULL, NULL), 1);
            break;
        }
    }
    if (stor_can_defer(f->s))
        assert_int_equal(stor_drain(f->s), 0);
    stor_clock_override = 1500;                   /* the i % 5 == 3 keys expire */
    struct db_str twice[] = {S("dl1"), S("dl1")}; /* in one batch */
    assert_int_equal(db_del_many(d, 0, twice, 2, 0, del), 0);
    assert_int_equal(del[0], 1);
    assert_int_equal(del[1], 0);
    assert_int_equal(db_del_many(d, 0, keys, 150, 16, del), 0);
    bool seen[100] = {[1] = true};
    for (int j = 0; j < 150; j++) {
        int i = j * 7 % 100;
        bool live = i % 5 == 1 || i % 5 == 2 || i % 5 == 4;
        assert_int_equal(del[j], live && !seen[i]);
        seen[i] = true;
        assert_int_equal(db_exists(d, 0, keys[j].p, keys[j].n), 0);
        assert_int_equal(db_exists(d, 1, keys[j].p, keys[j].n), i % 5 == 0);
    }
    assert_int_equal(d->defer_out[0], 0);
    fx_assert_keys(d, 0, 20, 20); /* the expired ones, until reaped */
    fx_assert_keys(d, 1, 20, 0);
    assert_int_equal(db_del_many(d, 0, keys, 150, 0, del), 0);
    for (int j = 0; j < 150; j++)
        assert_int_equal(del[j], 0);
    fx_reopen(f);
    for (int j = 0; j < 150; j++)
        assert_int_equal(db_exists(d, 0, keys[j].p, keys[j].n), 0);
}

/* GETDEL, RENAME's source and MOVE's read the key they delete: with
 * write-back, on keys the flusher has taken from the overlay, the counts
 * take that read, leaving nothing to resolve later. */
static void test_db_read_priors(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char *v;
    size_t vn;
    uint64_t later = stor_now_ms() + 600000;
    assert_int_equal(db_set(d, 0, K("gd"), K("v"), later, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("rn"), K("v"), later, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("mv"), K("v"), 0, 0, NULL, NULL), 1);
    assert_int_equal(db_set(d, 0, K("kept"), K("v"), 0, 0, NULL, NULL), 1);
    if (stor_can_defer(f->s))
        assert_int_equal(stor_drain(f->s), 0);
    assert_int_equal(db_getdel(d, 0, K("gd"), &v, &vn), 0);
    free(v);
    assert_int_equal(db_rename(d, 0, K("rn"), K("rn2"), 0), 1);
    assert_int_equal(db_move(d, 0, 1, K("mv")), 1);
    assert_int_equal(d->defer_out[0], 0);
    assert_int_equal(d->defer_out[1], 0);
    fx_assert_keys(d, 0, 2, 1);
    fx_assert_keys(d, 1, 1, 0);
}

/* Writes whose keys the overlay no longer holds leave their prior state to
 * the write-back: counted once resolved, by the flusher or by a settle, and
 * a FLUSHDB in between leaves nothing to land on its zeroed counts. */
static void test_db_counts_deferred(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    char k[32];
    for (int i = 0; i < 150; i++) {
        int kn = snprintf(k, sizeof k, "dk:%d", i);
        assert_int_equal(db_set(d, i < 100 ? 0 : 1, k, (size_t)kn, K("v"),
                                i < 100 ? 0 : stor_now_ms() + 600000, 0, NULL, NULL),
                         1);
    }
    assert_int_equal(stor_drain(f->s), 0); /* RocksDB has them; the overlay forgets */
    for (int i = 0; i < 150; i++) {
        int kn = snprintf(k, sizeof k, "dk:%d", i);
        assert_int_equal(db_set(d, i < 100 ? 0 : 1, k, (size_t)kn, K("w"), 0, 0, NULL, NULL), 1);
    }
    assert_int_equal(d->defer_out[0], 100);
    assert_int_equal(d->defer_out[1], 50);
    assert_int_equal(d->nkeys[0], 100); /* unchanged until resolved */
    assert_int_equal(d->nexpires[1], 50);
    assert_int_equal(db_flushdb(d, 0), 0);
    assert_int_equal(d->defer_out[0], 0);
    assert_int_equal(d->defer_out[1], 0);
    fx_assert_keys(d, 0, 0, 0);
    fx_assert_keys(d, 1, 50, 0); /* the expiries went with the rewrite */
    /* The flusher's resolutions, folded with no read of our own. */
    for (int i = 0; i < 50; i++) {
        int kn = snprintf(k, sizeof k, "dk:%d", 100 + i);
        assert_int_equal(db_del(d, 1, k, (size_t)kn), 1);
    }
    for (int i = 0; i < 150; i++) {
        int kn = snprintf(k, sizeof k, "dk:%d", 100 + i);
        assert_int_equal(db_set(d, 1, k, (size_t)kn, K("x"), 0, 0, NULL, NULL), 1);
    }
    assert_int_equal(stor_drain(f->s), 0);
    assert_int_equal(db_counts_settle(d, false), 0);
    assert_int_equal(d->nkeys[1], 150);
    assert_int_equal(d->defer_out[1], 0);
    fx_assert_keys(d, 1, 150, 0);
}

/* The key filter never loses a key it was given, also across its growth,
 * and answers "maybe" for few it was not given. */
static void test_db_keyf(void **state)
{
    (void)state;
    struct db_keyf kf;
    memset(&kf, 0, sizeof kf);
    db_keyf_init(&kf, 1000); /* raised to the smallest size, 65,536 keys */
    uint64_t x = 0x12345678;
    enum { N = 300000 };
    for (int i = 0; i < N; i++)
        db_keyf_add(&kf, stor_key_hash(STOR_CF_META, (char *)&(uint64_t){x + (uint64_t)i}, 8));
    assert_true(kf.n >= 3); /* 65,536, 131,072, 262,144 */
    for (int i = 0; i < N; i++)
        assert_true(
            db_keyf_may(&kf, stor_key_hash(STOR_CF_META, (char *)&(uint64_t){x + (uint64_t)i}, 8)));
    int fp = 0;
    for (int i = 0; i < N; i++)
        fp += db_keyf_may(&kf,
                          stor_key_hash(STOR_CF_META, (char *)&(uint64_t){x + N + (uint64_t)i}, 8));
    print_message("key filter: %u filters, %.2f%% false positives\n", kf.n, 100.0 * fp / N);
    assert_true(fp < N / 50); /* under 2% with three filters asked */
    db_keyf_init(&kf, 1 << 20);
    assert_false(db_keyf_may(&kf, stor_key_hash(STOR_CF_META, (char *)&x, 8)));
    for (int i = 0; i < 1000; i++)
        db_keyf_add(&kf, (uint64_t)i * 0x9e3779b97f4a7c15ull);
    assert_int_equal(kf.n, 1);
    fp = 0;
    for (int i = 0; i < N; i++)
        fp += db_keyf_may(&kf, stor_key_hash(STOR_CF_SUB, (char *)&(uint64_t){x + (uint64_t)i}, 8));
    assert_true(fp < 10); /* nearly empty */
    db_keyf_destroy(&kf);
}

/* Saves the counts as a clean shutdown does, then reopens. */
static void save_and_reopen(struct fx *f)
{
    assert_int_equal(db_save_counts(&f->d), 0);
    fx_reopen(f);
}

/* Sets every key "k<i>" of db 0 again: a key the loaded filter lost would
 * be taken for a new one and counted twice. */
static void set_all_again(struct db *d, int n)
{
    char k[16];
    for (int i = 0; i < n; i++) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)kn, K("w"), 0, 0, NULL, NULL), 1);
    }
}

/* The key counts and the key filter survive a clean shutdown in a file
 * (db_save_counts) that the next open takes instead of counting, only
 * while it still describes the data, and deletes at once. */
static void test_db_counts_saved(void **state)
{
    struct fx *f = *state;
    char k[16], path[300];
    for (int i = 0; i < 3000; i++) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_set(&f->d, 0, k, (size_t)kn, K("v"),
                                i % 7 == 0 ? stor_now_ms() + 3600000 : 0, 0, NULL, NULL),
                         1);
    }
    assert_int_equal(db_set(&f->d, 9, K("other"), K("v"), 0, 0, NULL, NULL), 1);
    assert_false(f->d.counts_loaded);
    snprintf(path, sizeof path, "%s/key-counts", f->dir);

    save_and_reopen(f);
    assert_true(f->d.counts_loaded);
    assert_int_equal(access(path, F_OK), -1); /* gone once read */
    fx_assert_keys(&f->d, 0, 3000, 429);
    fx_assert_keys(&f->d, 9, 1, 0);
    set_all_again(&f->d, 3000);
    fx_assert_keys(&f->d, 0, 3000, 0);

    /* No file (the last open deleted it): counted. A save a crash cut
     * short goes too. */
    char tmp[320];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *cut = fopen(tmp, "wb");
    assert_non_null(cut);
    fputs("SHMKVKC1", cut);
    fclose(cut);
    fx_reopen(f);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_false(f->d.counts_loaded);
    fx_assert_keys(&f->d, 0, 3000, 0);

    /* A write after the save: the file no longer describes the data. */
    assert_int_equal(db_save_counts(&f->d), 0);
    assert_int_equal(db_set(&f->d, 0, K("late"), K("v"), 0, 0, NULL, NULL), 1);
    db_destroy(&f->d);
    memset(&f->d, 0, sizeof f->d);
    struct db_opts o = {0};
    assert_int_equal(db_init(&f->d, f->s, &o), 0);
    assert_false(f->d.counts_loaded);
    fx_assert_keys(&f->d, 0, 3001, 0);

    /* One byte changed, or the file cut short: counted. */
    for (int damage = 0; damage < 2; damage++) {
        assert_int_equal(db_save_counts(&f->d), 0);
        FILE *fp = fopen(path, "r+b");
        assert_non_null(fp);
        if (damage == 0) {
            assert_int_equal(fseek(fp, 5000, SEEK_SET), 0);
            int c = fgetc(fp);
            assert_int_equal(fseek(fp, 5000, SEEK_SET), 0);
            fputc(c ^ 0x10, fp);
            fclose(fp);
        } else {
            fclose(fp);
            assert_int_equal(truncate(path, 1000), 0);
        }
        fx_reopen(f);
        assert_false(f->d.counts_loaded);
        fx_assert_keys(&f->d, 0, 3001, 0);
    }

    /* A filter mostly of deleted keys is not saved: the scan builds a
     * tighter one. */
    for (int i = 0; i < 3000; i++) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_del(&f->d, 0, k, (size_t)kn), 1);
    }
    f->d.keyf_dead_slack = 1000;
    assert_int_equal(db_save_counts(&f->d), 1);
    assert_int_equal(access(path, F_OK), -1);
    fx_reopen(f);
    assert_false(f->d.counts_loaded);
    fx_assert_keys(&f->d, 0, 1, 0);
    fx_assert_keys(&f->d, 9, 1, 0);
    uint64_t bytes, added;
    db_keyf_usage(&f->d.keyf, &bytes, &added);
    assert_int_equal(added, 2); /* built afresh from the live keys */
}

/* Whether the key filter may hold db 0's key k. */
static bool keyf_has(struct db *d, const char *k, size_t kn)
{
    char mk[64];
    size_t n = enc_meta_key(mk, 0, enc_slot(k, kn), k, kn);
    return db_keyf_may(&d->keyf, stor_key_hash(STOR_CF_META, mk, n));
}

/* A filter mostly of deleted keys is built again from the live ones, a
 * slice at a time, while commits go on: keys created before and after the
 * cursor, deleted or not, end up as they should. */
static void keyf_rebuild(void **state)
{
    struct fx *f = *state;
    struct db *d = &f->d;
    d->keyf_dead_slack = 1000;
    char k[16];
    for (int i = 0; i < 3000; i++) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)kn, K("v"), 0, 0, NULL, NULL), 1);
    }
    bool more;
    assert_int_equal(db_keyf_rebuild_step(d, 100, &more), 0);
    assert_false(more || d->keyf_building); /* nothing dead yet */
    for (int i = 0; i < 3000; i += 10) {    /* 300 live ones stay: k0, k10, ... */
        for (int j = i + 1; j < i + 10; j++) {
            int kn = snprintf(k, sizeof k, "k%d", j);
            assert_int_equal(db_del(d, 0, k, (size_t)kn), 1);
        }
    }
    int steps = 0, created = 0;
    do {
        assert_int_equal(db_keyf_rebuild_step(d, 40, &more), 0);
        steps++;
        /* New keys all over the key order while the cursor moves, and a
         * few of the live ones deleted. */
        for (int j = 0; j < 3; j++, created++) {
            int kn = snprintf(k, sizeof k, "n%d", created);
            assert_int_equal(db_set(d, 0, k, (size_t)kn, K("v"), 0, 0, NULL, NULL), 1);
        }
        int kn = snprintf(k, sizeof k, "k%d", steps * 10);
        if (steps % 4 == 0 && steps * 10 < 3000)
            assert_int_equal(db_del(d, 0, k, (size_t)kn), 1);
    } while (more);
    assert_true(steps > 5); /* in slices */
    assert_false(d->keyf_building);
    assert_int_equal(d->keyf_rebuilds, 1);
    uint64_t bytes, added, live, e;
    assert_int_equal(db_keycount(d, 0, &live, &e), 0);
    db_keyf_usage(&d->keyf, &bytes, &added);
    assert_true(added >= live && added < live + 3 * (uint64_t)steps + 10);
    /* Every live key is in it: a lost one would be taken for new, and
     * counted twice, by the SETs below. */
    for (int i = 0; i < 3000; i += 10) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        if (db_exists(d, 0, k, (size_t)kn))
            assert_true(keyf_has(d, k, (size_t)kn));
    }
    for (int i = 0; i < created; i++) {
        int kn = snprintf(k, sizeof k, "n%d", i);
        assert_true(keyf_has(d, k, (size_t)kn));
        assert_int_equal(db_set(d, 0, k, (size_t)kn, K("w"), 0, 0, NULL, NULL), 1);
    }
    fx_assert_keys(d, 0, live, 0);
    /* Most dead keys are gone from it. */
    int dead_maybe = 0;
    for (int i = 1; i < 3000; i += 10) {
        int kn = snprintf(k, sizeof k, "k%d", i);
        dead_maybe += keyf_has(d, k, (size_t)kn);
    }
    assert_true(dead_maybe < 10);
    /* FLUSHALL during a rebuild ends it. */
    for (int i = 0; i < 3000; i++) {
        int kn = snprintf(k, sizeof k, "x%d", i);
        assert_int_equal(db_set(d, 0, k, (size_t)kn, K("v"), 0, 0, NULL, NULL), 1);
        assert_int_equal(db_del(d, 0, k, (size_t)kn), 1);
    }
    assert_int_equal(db_keyf_rebuild_step(d, 10, &more), 0);
    assert_true(more && d->keyf_building);
    assert_int_equal(db_flushall(d), 0);
    assert_false(d->keyf_building);
    assert_int_equal(db_keyf_rebuild_step(d, 10, &more), 0);
    assert_false(more);
}

static void test_db_keyf_rebuild(void **state)
{
    keyf_rebuild(state);
}

/* With write-back and no flusher every record stays in the overlay: the
 * slices, which read RocksDB alone, see none of them, and the overlay's
 * walk at the start has to put every key in. */
static int setup_overlay_only(void **state)
{
    fx_writeback = 2;
    int rc = fx_setup(state);
    fx_writeback = 0;
    return rc;
}

static void test_db_keyf_rebuild_overlay(void **state)
{
    keyf_rebuild(state);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_db_string_set_get),
        T(test_db_string_set_replaces_other_types),
        T(test_db_string_expiry),
        T(test_db_string_getdel_getex),
        T(test_db_string_mset),
        T(test_db_string_incr),
        T(test_db_string_mget),
        cmocka_unit_test_setup_teardown(test_db_string_mget, fx_setup_wb, fx_teardown),
        T(test_db_string_incrbyfloat),
        T(test_db_string_append_ranges),
        T(test_db_string_setbit_bitop),
        T(test_db_string_bitfield),
        T(test_db_keys_del_type_exists),
        T(test_db_keys_expire_flags),
        T(test_db_keys_rename_copy),
        T(test_db_keys_scan_dbsize_flush),
        T(test_db_scan_over_tombstones),
        cmocka_unit_test(test_db_keys_glob),
        T(test_db_keys_persist_across_reopen),
        T(test_db_keys_corrupt_records_are_errors),
        T(test_db_keycount_kept),
        cmocka_unit_test(test_db_keyf),
        T(test_db_counts_saved),
        T(test_db_keyf_rebuild),
        cmocka_unit_test_setup_teardown(test_db_keyf_rebuild_overlay, setup_overlay_only,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_keycount_kept, fx_setup_blind, fx_teardown),
        /* With write-back and its flusher: writes of keys the overlay no
         * longer holds leave their prior state to the flusher
         * (stor_batch_defer). */
        cmocka_unit_test_setup_teardown(test_db_keycount_kept, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_counts_deferred, fx_setup_wb, fx_teardown),
        T(test_db_del_many),
        T(test_db_read_priors),
        cmocka_unit_test_setup_teardown(test_db_read_priors, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_del_many, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_scan_over_tombstones, fx_setup_wb, fx_teardown),
        cmocka_unit_test_setup_teardown(test_db_scan_waiting, fx_setup_wb_overlay, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
