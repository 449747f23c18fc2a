/*
 * test_db_string — strings with Redis 7 semantics: SET and its options,
 * GET, MSET and MGET, the INCR family, APPEND and ranges, bit operations
 * and BITFIELD.
 */
#include "fixture.h"

#include <math.h>

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
static void mget_check(struct db *d)
{
    char names[150][16];
    struct db_str keys[150];
    fx_names(names, keys, 150, "mg");
    struct fx_mget g = {0};
    uint64_t present = 0, count;
    for (int j = 0; j < 150; j++) /* EXISTS counts the hashes too, and repeats */
        present += (j * 7 % 100) % 5 == 1 || (j * 7 % 100) % 5 == 2 || (j * 7 % 100) % 5 == 4;
    for (size_t pre = 0; pre <= 16; pre += 16) {
        assert_int_equal(db_exists_many(d, 0, keys, 150, pre, &count), 0);
        assert_int_equal(count, present);
        g.n = 0;
        db_mget(d, 0, keys, 150, pre, fx_mget_each, &g);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
