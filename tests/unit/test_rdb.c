/*
 * test_rdb — DUMP/RESTORE payloads: the CRC's check value, round trips of
 * every type through the encoder, the decoder on each encoding Redis
 * writes (payloads built by tests/t_rdb.h), and refusals: bad footers,
 * unknown types, empty, duplicate and NaN contents, every truncation of a
 * valid body, and random corruption (which must be refused or decoded,
 * never read out of bounds: the ASan build runs this too).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rdb.h"
#include "t_rdb.h"
#include "t_rnd.h"

static void vinit(struct db_value *v)
{
    memset(v, 0, sizeof *v);
    db_vec_init(&v->items);
}

/* Loads p; returns rdb_load's result, v holding what was decoded. */
static int load(const struct t_buf *b, struct db_value *v)
{
    vinit(v);
    return rdb_load((const char *)b->p, b->n, v);
}

/* v holds type t and exactly the strings want[0..n). */
static void expect(const struct db_value *v, int t, const char *const *want, size_t n)
{
    assert_int_equal(v->type, t);
    assert_int_equal(v->items.n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(db_vec_len(&v->items, i), strlen(want[i]));
        assert_memory_equal(db_vec_ptr(&v->items, i), want[i], strlen(want[i]));
    }
}

static void test_crc_check_value(void **state)
{
    (void)state;
    assert_true(rdb_crc64(0, "123456789", 9) == 0xe9c6d914c4b8d9caULL);
    uint64_t c = rdb_crc64(0, "1234", 4);
    assert_true(rdb_crc64(c, "56789", 5) == 0xe9c6d914c4b8d9caULL);
    assert_true(rdb_crc64(0, "", 0) == 0);
    /* the tests' bitwise CRC (t_rdb.h) agrees on every length to 300 */
    unsigned char buf[300];
    uint64_t r = 0x435243; /* "CRC" */
    for (size_t n = 0; n < sizeof buf; n++) {
        buf[n] = (unsigned char)t_rnd(&r);
        assert_true(t_crc64(buf, n + 1) == rdb_crc64(0, buf, n + 1));
    }
}

/* dump then load gives back v; returns the payload's size. */
static size_t round_trip(const struct db_value *v)
{
    size_t n;
    char *p = rdb_dump(v, &n);
    struct db_value w;
    vinit(&w);
    assert_int_equal(rdb_load(p, n, &w), RDB_OK);
    assert_int_equal(w.type, v->type);
    assert_int_equal(w.items.n, v->items.n);
    for (size_t i = 0; i < v->items.n; i++) {
        assert_int_equal(db_vec_len(&w.items, i), db_vec_len(&v->items, i));
        assert_memory_equal(db_vec_ptr(&w.items, i), db_vec_ptr(&v->items, i),
                            db_vec_len(&v->items, i));
        double a = v->items.items[i].score, b = w.items.items[i].score;
        assert_memory_equal(&a, &b, sizeof a); /* -0 and infinities bit for bit */
    }
    /* The footer: version 9, then the CRC of everything before it. */
    assert_int_equal((unsigned char)p[n - 10], 9);
    assert_int_equal(p[n - 9], 0);
    db_vec_destroy(&w.items);
    free(p);
    return n;
}

static void test_round_trip(void **state)
{
    (void)state;
    struct db_value v;
    static const int types[] = {ENC_TYPE_STRING, ENC_TYPE_HASH, ENC_TYPE_SET, ENC_TYPE_ZSET,
                                ENC_TYPE_LIST};
    static const double scores[] = {0, -0.0, 1.5, -2, INFINITY, -INFINITY, 1e308, 5e-324};
    static const size_t sizes[] = {1, 2, 63, 64, 16383, 16384, 20000};
    char buf[80];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            vinit(&v);
            v.type = types[t];
            size_t n = types[t] == ENC_TYPE_STRING ? 1 : sizes[s];
            for (size_t i = 0; i < n; i++) {
                if (types[t] == ENC_TYPE_STRING) { /* one string of sizes[s] bytes, binary */
                    char *big = malloc(sizes[s]);
                    for (size_t j = 0; j < sizes[s]; j++)
                        big[j] = (char)(j * 7);
                    db_vec_push(&v.items, big, sizes[s], 0);
                    free(big);
                    break;
                }
                int m = snprintf(buf, sizeof buf, "m%zu", i);
                /* a 0 byte and a long member now and then */
                size_t len = i % 97 == 5 ? 70 : (size_t)m + (i % 13 == 0);
                memset(buf + m, i % 13 == 0 ? 0 : 'x', sizeof buf - (size_t)m);
                db_vec_push(&v.items, buf, len, types[t] == ENC_TYPE_ZSET ? scores[i % 8] : 0);
                if (types[t] == ENC_TYPE_HASH)
                    db_vec_push(&v.items, buf, i % 5, 0); /* the value; "" too */
            }
            size_t bytes = round_trip(&v);
            assert_true(bytes >= 11);
            db_vec_destroy(&v.items);
        }
    }
    /* the empty string */
    vinit(&v);
    v.type = ENC_TYPE_STRING;
    db_vec_push(&v.items, "", 0, 0);
    assert_int_equal(round_trip(&v), 1 + 1 + 10);
    db_vec_destroy(&v.items);
}

static void test_string_forms(void **state)
{
    (void)state;
    static const int64_t ints[] = {0, -5, 127, -128, 300, -32768, -70000, 2147483647};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        struct t_buf b = {0};
        tb_byte(&b, 0);
        tb_intstr(&b, ints[i]);
        tb_footer(&b, 10);
        struct db_value v;
        assert_int_equal(load(&b, &v), RDB_OK);
        char want[24];
        snprintf(want, sizeof want, "%lld", (long long)ints[i]);
        const char *w[] = {want};
        expect(&v, ENC_TYPE_STRING, w, 1);
        db_vec_destroy(&v.items);
        free(b.p);
    }
    /* LZF: a literal, then copies of earlier output, short and long */
    static const struct {
        const char *stream;
        size_t n;
        const char *out;
        int ok;
    } lzf[] = {
        {"\x01"
         "ab"
         "\xe0\x01\x01",
         6, "abababababab", 1}, /* copy of 10: long form */
        {"\x00"
         "a"
         "\x20\x00",
         4, "aaaa", 1}, /* copy of 3 */
        {"\x02"
         "xyz"
         "\x40\x02"
         "\x00"
         "!",
         8, "xyzxyzx!", 1},
        {"\x00"
         "a"
         "\x20\x01",
         4, "aaaa", 0}, /* copies from before the start */
        {"\x03"
         "ab",
         3, "ab", 0}, /* literal runs past the input */
        {"\x00"
         "a"
         "\xe0",
         3, "aaaaaaaaa", 0}, /* long copy, length cut off */
        {"\x00"
         "a"
         "\x20\x00",
         4, "aaa", 0}, /* more output than declared */
        {"\x00"
         "a"
         "\x20\x00",
         4, "aaaaa", 0}, /* less */
    };
    for (size_t i = 0; i < sizeof lzf / sizeof lzf[0]; i++) {
        struct t_buf b = {0};
        tb_byte(&b, 0);
        tb_byte(&b, 0xc3);
        tb_len(&b, lzf[i].n);
        tb_len(&b, strlen(lzf[i].out));
        tb_put(&b, lzf[i].stream, lzf[i].n);
        tb_footer(&b, 10);
        struct db_value v;
        int rc = load(&b, &v);
        if (lzf[i].ok) {
            assert_int_equal(rc, RDB_OK);
            const char *w[] = {lzf[i].out};
            expect(&v, ENC_TYPE_STRING, w, 1);
        } else {
            assert_int_equal(rc, RDB_EFORMAT);
        }
        db_vec_destroy(&v.items);
        free(b.p);
    }
}

/* A ziplist of every entry encoding, as a list (type 10), in a quicklist
 * (type 14, with an empty node that is skipped), and its pairs as a hash
 * (13) and a sorted set (12). */
static void test_ziplist(void **state)
{
    (void)state;
    static const int64_t ints[] = {
        0,      12,      13,       -1,      127,        -128,          128,          32767,
        -32768, 8388607, -8388608, 8388608, 2147483647, -2147483648LL, 4294967296LL, INT64_MIN};
    const size_t ni = sizeof ints / sizeof ints[0];
    char *big = malloc(20000);
    memset(big, 'q', 20000);
    static const size_t lens[] = {0, 1, 63, 64, 300, 16383, 16384, 20000};
    const size_t nl = sizeof lens / sizeof lens[0];
    struct t_zl z;
    tz_begin(&z);
    char want_s[32][24];
    const char *want[32];
    size_t nw = 0;
    for (size_t i = 0; i < ni; i++) {
        tz_int(&z, ints[i]);
        snprintf(want_s[nw], sizeof want_s[nw], "%lld", (long long)ints[i]);
        want[nw] = want_s[nw];
        nw++;
    }
    for (size_t i = 0; i < nl; i++) {
        tz_str(&z, big, lens[i]);
        want[nw++] = NULL; /* checked by length below */
    }
    tz_end(&z);
    struct t_zl empty;
    tz_begin(&empty);
    tz_end(&empty);
    for (int form = 0; form < 2; form++) {
        struct t_buf b = {0};
        tb_byte(&b, form ? 14 : 10);
        if (form) {
            tb_len(&b, 2);
            tb_str(&b, empty.b.p, empty.b.n);
        }
        tb_str(&b, z.b.p, z.b.n);
        tb_footer(&b, 9);
        struct db_value v;
        assert_int_equal(load(&b, &v), RDB_OK);
        assert_int_equal(v.type, ENC_TYPE_LIST);
        assert_int_equal(v.items.n, nw);
        for (size_t i = 0; i < ni; i++) {
            assert_int_equal(db_vec_len(&v.items, i), strlen(want[i]));
            assert_memory_equal(db_vec_ptr(&v.items, i), want[i], strlen(want[i]));
        }
        for (size_t i = 0; i < nl; i++) {
            assert_int_equal(db_vec_len(&v.items, ni + i), lens[i]);
            assert_memory_equal(db_vec_ptr(&v.items, ni + i), big, lens[i]);
        }
        db_vec_destroy(&v.items);
        free(b.p);
    }
    /* pairs: field/member, then value/score */
    struct t_zl h;
    tz_begin(&h);
    tz_str(&h, "f", 1);
    tz_int(&h, 7);
    tz_int(&h, 300);
    tz_str(&h, "2.5", 3);
    tz_end(&h);
    struct t_buf b = {0};
    tb_byte(&b, 13);
    tb_str(&b, h.b.p, h.b.n);
    tb_footer(&b, 9);
    struct db_value v;
    assert_int_equal(load(&b, &v), RDB_OK);
    const char *hw[] = {"f", "7", "300", "2.5"};
    expect(&v, ENC_TYPE_HASH, hw, 4);
    db_vec_destroy(&v.items);
    b.p[0] = 12;
    b.n -= 10;
    tb_footer(&b, 9);
    assert_int_equal(load(&b, &v), RDB_OK);
    const char *zw[] = {"f", "300"};
    expect(&v, ENC_TYPE_ZSET, zw, 2);
    assert_true(v.items.items[0].score == 7 && v.items.items[1].score == 2.5);
    db_vec_destroy(&v.items);
    free(b.p);
    free(h.b.p);
    free(z.b.p);
    free(empty.b.p);
    free(big);
}

/* Listpacks: every encoding as a hash (16), a sorted set (17) and a
 * quicklist's packed nodes beside a plain one (18). */
static void test_listpack(void **state)
{
    (void)state;
    static const int64_t ints[] = {
        0,          127,           128,          -1,       -4096,   4095,     4096,
        -4097,      32767,         -32768,       32768,    8388607, -8388608, 8388608,
        2147483647, -2147483648LL, 2147483648LL, INT64_MAX};
    const size_t ni = sizeof ints / sizeof ints[0];
    static const size_t lens[] = {0, 63, 64, 4095, 4096, 16378, 16379, 20000};
    const size_t nl = sizeof lens / sizeof lens[0];
    char *big = malloc(20000 + nl);
    for (size_t i = 0; i < 20000 + nl; i++)
        big[i] = (char)('a' + i % 26);
    struct t_lp l;
    tl_begin(&l);
    for (size_t i = 0; i < ni; i++)
        tl_int(&l, ints[i]);
    for (size_t i = 0; i < nl; i++)
        tl_str(&l, big + i, lens[i]); /* distinct: each starts elsewhere */
    tl_end(&l);
    /* as a list: a plain node, the packed node, another plain node */
    struct t_buf b = {0};
    tb_byte(&b, 18);
    tb_len(&b, 3);
    tb_len(&b, 1);
    tb_str(&b, "plain", 5);
    tb_len(&b, 2);
    tb_str(&b, l.b.p, l.b.n);
    tb_len(&b, 1);
    tb_str(&b, "", 0);
    tb_footer(&b, 10);
    struct db_value v;
    assert_int_equal(load(&b, &v), RDB_OK);
    assert_int_equal(v.type, ENC_TYPE_LIST);
    assert_int_equal(v.items.n, 1 + ni + nl + 1);
    assert_memory_equal(db_vec_ptr(&v.items, 0), "plain", 5);
    for (size_t i = 0; i < ni; i++) {
        char w[24];
        int n = snprintf(w, sizeof w, "%lld", (long long)ints[i]);
        assert_int_equal(db_vec_len(&v.items, 1 + i), (size_t)n);
        assert_memory_equal(db_vec_ptr(&v.items, 1 + i), w, (size_t)n);
    }
    for (size_t i = 0; i < nl; i++) {
        assert_int_equal(db_vec_len(&v.items, 1 + ni + i), lens[i]);
        assert_memory_equal(db_vec_ptr(&v.items, 1 + ni + i), big + i, lens[i]);
    }
    assert_int_equal(db_vec_len(&v.items, 1 + ni + nl), 0);
    db_vec_destroy(&v.items);
    free(b.p);
    /* the same entries as a hash: 26 of them, 13 pairs */
    b = (struct t_buf){0};
    tb_byte(&b, 16);
    tb_str(&b, l.b.p, l.b.n);
    tb_footer(&b, 10);
    assert_int_equal(load(&b, &v), RDB_OK);
    assert_int_equal(v.type, ENC_TYPE_HASH);
    assert_int_equal(v.items.n, ni + nl);
    db_vec_destroy(&v.items);
    free(b.p);
    /* a sorted set: members and integer or text scores */
    struct t_lp z;
    tl_begin(&z);
    tl_str(&z, "a", 1);
    tl_int(&z, -4096);
    tl_int(&z, 5);
    tl_str(&z, "1e3", 3);
    tl_str(&z, "c", 1);
    tl_str(&z, "-inf", 4);
    tl_end(&z);
    b = (struct t_buf){0};
    tb_byte(&b, 17);
    tb_str(&b, z.b.p, z.b.n);
    tb_footer(&b, 10);
    assert_int_equal(load(&b, &v), RDB_OK);
    const char *zw[] = {"a", "5", "c"};
    expect(&v, ENC_TYPE_ZSET, zw, 3);
    assert_true(v.items.items[0].score == -4096 && v.items.items[1].score == 1000 &&
                v.items.items[2].score == -INFINITY);
    db_vec_destroy(&v.items);
    free(b.p);
    free(z.b.p);
    free(l.b.p);
    free(big);
}

static void test_intset_and_text_scores(void **state)
{
    (void)state;
    static const int64_t vals[] = {-5, 0, 3, 40000};
    static const int widths[] = {2, 4, 8};
    for (size_t w = 0; w < 3; w++) {
        struct t_buf is = {0}, b = {0};
        ti_build(&is, vals, widths[w] == 2 ? 3 : 4, widths[w]);
        tb_byte(&b, 11);
        tb_str(&b, is.p, is.n);
        tb_footer(&b, 10);
        struct db_value v;
        assert_int_equal(load(&b, &v), RDB_OK);
        const char *want[] = {"-5", "0", "3", "40000"};
        expect(&v, ENC_TYPE_SET, want, widths[w] == 2 ? 3 : 4);
        db_vec_destroy(&v.items);
        /* a width that is none of 2, 4, 8, and a size that disagrees */
        is.p[0] = 3;
        b.n = 1;
        tb_str(&b, is.p, is.n);
        tb_footer(&b, 10);
        assert_int_equal(load(&b, &v), RDB_EFORMAT);
        db_vec_destroy(&v.items);
        is.p[0] = (unsigned char)widths[w];
        b.n = 1;
        tb_str(&b, is.p, is.n - 1);
        tb_footer(&b, 10);
        assert_int_equal(load(&b, &v), RDB_EFORMAT);
        db_vec_destroy(&v.items);
        free(is.p);
        free(b.p);
    }
    /* type 3: scores as text, 253/254/255 for nan, +inf, -inf */
    struct t_buf b = {0};
    tb_byte(&b, 3);
    tb_len(&b, 3);
    tb_str(&b, "a", 1);
    tb_str(&b, "1.25", 4);
    tb_str(&b, "b", 1);
    tb_byte(&b, 254);
    tb_str(&b, "c", 1);
    tb_byte(&b, 255);
    tb_footer(&b, 10);
    struct db_value v;
    assert_int_equal(load(&b, &v), RDB_OK);
    const char *zw[] = {"a", "b", "c"};
    expect(&v, ENC_TYPE_ZSET, zw, 3);
    assert_true(v.items.items[0].score == 1.25 && v.items.items[1].score == INFINITY &&
                v.items.items[2].score == -INFINITY);
    db_vec_destroy(&v.items);
    b.p[b.n - 11] = 253; /* c's score: nan */
    b.n -= 10;
    tb_footer(&b, 10);
    assert_int_equal(load(&b, &v), RDB_EFORMAT);
    db_vec_destroy(&v.items);
    free(b.p);
}

/* Payloads that must be refused, and how. */
static void test_refused(void **state)
{
    (void)state;
    struct db_value v;
    struct t_buf b = {0};
    /* a good one first: a set of two */
    tb_byte(&b, 2);
    tb_len(&b, 2);
    tb_str(&b, "a", 1);
    tb_str(&b, "b", 1);
    tb_footer(&b, 10);
    assert_int_equal(load(&b, &v), RDB_OK);
    db_vec_destroy(&v.items);
    /* footer: a newer version, a wrong CRC, too short for a footer */
    b.n -= 10;
    tb_footer(&b, 11);
    assert_int_equal(load(&b, &v), RDB_EVERSION);
    db_vec_destroy(&v.items);
    b.n -= 10;
    tb_footer(&b, 10);
    b.p[b.n - 1] ^= 1;
    assert_int_equal(load(&b, &v), RDB_EVERSION);
    db_vec_destroy(&v.items);
    vinit(&v);
    assert_int_equal(rdb_load("\x00\x00\x0a\x00\x00\x00\x00\x00\x00", 9, &v), RDB_EVERSION);
    db_vec_destroy(&v.items);
    /* bytes after the object are ignored, as Redis ignores them */
    b.n -= 10;
    tb_put(&b, "junk", 4);
    tb_footer(&b, 10);
    assert_int_equal(load(&b, &v), RDB_OK);
    assert_int_equal(v.items.n, 2);
    db_vec_destroy(&v.items);
    free(b.p);

    /* bodies: {type, count, items...} as bytes, each refused */
    static const struct {
        const char *body;
        size_t n;
    } bad[] = {
        {"\x0f\x00", 2}, /* a stream */
        {"\x09\x00", 2}, /* a zipmap */
        {"\x07\x00", 2}, /* a module value */
        {"\x02\x00", 2}, /* an empty set */
        {"\x01\x00", 2}, /* an empty list */
        {"\x04\x00", 2}, /* an empty hash */
        {"\x05\x00", 2}, /* an empty sorted set */
        {"\x02\x02\x01"
         "a\x01"
         "a",
         6}, /* a set member twice */
        {"\x04\x02\x01"
         "f\x01"
         "1\x01"
         "f\x01"
         "2",
         10}, /* a hash field twice */
        {"\x03\x02\x01"
         "m\x01"
         "1\x01"
         "m\x01"
         "2",
         10}, /* a member twice */
        {"\x03\x01\x01"
         "m\xfd",
         5}, /* a nan score */
        {"\x03\x01\x01"
         "m\x03"
         "abc",
         7},                 /* a score that is no number */
        {"\x00\xc4\x00", 3}, /* a string form that does not exist */
        {"\x00\x82\x00", 3}, /* a length form that does not exist */
        {"\x12\x01\x03\x01"
         "x",
         5},                         /* a quicklist node of kind 3 */
        {"\x00\xc3\x01\x00\x00", 5}, /* LZF to 0 bytes */
        {"\x00\xc3\x01\x7f\x00", 5}, /* LZF expanding more than it can */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = (struct t_buf){0};
        tb_put(&b, bad[i].body, bad[i].n);
        tb_footer(&b, 10);
        if (load(&b, &v) != RDB_EFORMAT)
            fail_msg("bad body %zu was accepted", i);
        db_vec_destroy(&v.items);
        free(b.p);
    }
    /* a NaN binary score, and a listpack hash with an odd count */
    b = (struct t_buf){0};
    tb_byte(&b, 5);
    tb_len(&b, 1);
    tb_str(&b, "m", 1);
    double nan = NAN;
    uint64_t u;
    memcpy(&u, &nan, sizeof u);
    tb_le(&b, u, 8);
    tb_footer(&b, 10);
    assert_int_equal(load(&b, &v), RDB_EFORMAT);
    db_vec_destroy(&v.items);
    free(b.p);
    struct t_lp l;
    tl_begin(&l);
    tl_str(&l, "f", 1);
    tl_end(&l);
    b = (struct t_buf){0};
    tb_byte(&b, 16);
    tb_str(&b, l.b.p, l.b.n);
    tb_footer(&b, 10);
    assert_int_equal(load(&b, &v), RDB_EFORMAT);
    db_vec_destroy(&v.items);
    free(b.p);
    free(l.b.p);
}

/* A valid body cut short anywhere is refused; one with random bytes
 * changed (the CRC made to match) is refused or decoded, and never read
 * past its end. */
static void test_truncated_and_corrupt(void **state)
{
    (void)state;
    struct t_buf bodies[5] = {{0}};
    /* a plain hash, a listpack zset, a ziplist quicklist, an intset, LZF */
    tb_byte(&bodies[0], 4);
    tb_len(&bodies[0], 2);
    tb_str(&bodies[0], "field", 5);
    tb_str(&bodies[0], "value", 5);
    tb_str(&bodies[0], "f2", 2);
    tb_intstr(&bodies[0], -300);
    struct t_lp l;
    tl_begin(&l);
    tl_str(&l, "m", 1);
    tl_int(&l, 1000);
    tl_str(&l, "n", 1);
    tl_str(&l, "2.5", 3);
    tl_end(&l);
    tb_byte(&bodies[1], 17);
    tb_str(&bodies[1], l.b.p, l.b.n);
    struct t_zl z;
    tz_begin(&z);
    tz_str(&z, "x", 1);
    tz_int(&z, 70000);
    tz_int(&z, 3);
    tz_end(&z);
    tb_byte(&bodies[2], 14);
    tb_len(&bodies[2], 2);
    tb_str(&bodies[2], z.b.p, z.b.n);
    tb_str(&bodies[2], z.b.p, z.b.n);
    static const int64_t ints[] = {1, 2, 3};
    struct t_buf is = {0};
    ti_build(&is, ints, 3, 2);
    tb_byte(&bodies[3], 11);
    tb_str(&bodies[3], is.p, is.n);
    tb_byte(&bodies[4], 0);
    tb_put(&bodies[4],
           "\xc3\x06\x0c\x01"
           "ab"
           "\xe0\x01\x01",
           9);
    uint64_t r = 0x524442; /* "RDB" */
    size_t refused = 0, decoded = 0;
    for (size_t k = 0; k < 5; k++) {
        const struct t_buf *src = &bodies[k];
        for (size_t cut = 0; cut < src->n; cut++) {
            struct t_buf b = {0};
            tb_put(&b, src->p, cut);
            tb_footer(&b, 10);
            struct db_value v;
            if (load(&b, &v) != RDB_EFORMAT)
                fail_msg("body %zu cut to %zu bytes was accepted", k, cut);
            db_vec_destroy(&v.items);
            free(b.p);
        }
        for (int round = 0; round < 4000; round++) {
            struct t_buf b = {0};
            tb_put(&b, src->p, src->n);
            for (int flips = 1 + (int)(t_rnd(&r) % 3); flips; flips--)
                b.p[t_rnd(&r) % b.n] = (unsigned char)t_rnd(&r);
            tb_footer(&b, 10);
            struct db_value v;
            int rc = load(&b, &v);
            assert_true(rc == RDB_OK || rc == RDB_EFORMAT);
            if (rc == RDB_OK)
                decoded++;
            else
                refused++;
            db_vec_destroy(&v.items);
            free(b.p);
        }
        free(bodies[k].p);
    }
    assert_true(refused > 0 && decoded > 0);
    free(l.b.p);
    free(z.b.p);
    free(is.p);
}

/* rdb_file_read over a file of several progress steps: every key comes,
 * progress reports growing offsets between items, and the checksum,
 * summed a slice at a time, still catches a changed byte anywhere. */
struct file_seen {
    size_t keys, calls, last;
};

static int file_key(void *arg, unsigned db, const char *k, size_t kn, const struct db_value *v)
{
    struct file_seen *fs = arg;
    (void)k;
    (void)kn;
    assert_int_equal(db, 3);
    assert_int_equal(v->type, ENC_TYPE_STRING);
    assert_int_equal(db_vec_len(&v->items, 0), 200);
    fs->keys++;
    return 0;
}

static int file_library(void *arg, const char *code, size_t n)
{
    (void)arg;
    (void)code;
    (void)n;
    return 0;
}

static void file_progress(void *arg, size_t done)
{
    struct file_seen *fs = arg;
    assert_true(done > fs->last);
    assert_true(done - fs->last >= RDB_PROGRESS_STEP);
    fs->last = done;
    fs->calls++;
}

static void test_file_progress(void **state)
{
    (void)state;
    struct t_buf b = {0};
    tb_put(&b, "REDIS0010", 9);
    tb_byte(&b, 0xfe);
    tb_len(&b, 3);
    char key[32], val[200];
    memset(val, 'v', sizeof val);
    const size_t nkeys = 120000; /* about 27 MB: three progress steps */
    for (size_t i = 0; i < nkeys; i++) {
        int kn = snprintf(key, sizeof key, "key:%zu", i);
        tb_byte(&b, 0);
        tb_str(&b, key, (size_t)kn);
        tb_str(&b, val, sizeof val);
    }
    tb_byte(&b, 0xff);
    tb_le(&b, t_crc64(b.p, b.n), 8);
    struct file_seen fs = {0};
    struct rdb_file_cb cb = {
        .arg = &fs, .key = file_key, .library = file_library, .progress = file_progress};
    size_t where;
    assert_int_equal(rdb_file_read((const char *)b.p, b.n, &cb, &where), RDB_OK);
    assert_int_equal(fs.keys, nkeys);
    assert_true(fs.calls >= 2 && fs.calls <= b.n / RDB_PROGRESS_STEP);
    assert_int_equal(where, b.n - 8);
    /* A value's byte in the first slice, then in the last: the file reads
     * whole, and its checksum does not match. */
    size_t at[] = {1000, b.n - 100};
    for (size_t i = 0; i < 2; i++) {
        b.p[at[i]] ^= 1;
        fs = (struct file_seen){0};
        assert_int_equal(rdb_file_read((const char *)b.p, b.n, &cb, &where), RDB_EVERSION);
        b.p[at[i]] ^= 1;
    }
    free(b.p);
}

/* A file of nothing but "REDIS0010", in a block of exactly its size: the
 * version is read as its four digits, not past them (fuzz_rdb found atoi
 * reading on). Also a version with a letter in it. */
static void test_file_header_only(void **state)
{
    (void)state;
    struct rdb_file_cb cb = {0};
    static const char *const heads[] = {"REDIS0010", "REDIS001x", "REDIS0011", "REDIS0000",
                                        "REDIS"};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        size_t n = strlen(heads[i]);
        char *p = malloc(n);
        memcpy(p, heads[i], n);
        int rc = rdb_file_read(p, n, &cb, NULL);
        assert_int_equal(rc, i == 0 ? RDB_EFORMAT : RDB_EVERSION);
        free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc_check_value), cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_string_forms),    cmocka_unit_test(test_ziplist),
        cmocka_unit_test(test_listpack),        cmocka_unit_test(test_intset_and_text_scores),
        cmocka_unit_test(test_refused),         cmocka_unit_test(test_truncated_and_corrupt),
        cmocka_unit_test(test_file_progress),   cmocka_unit_test(test_file_header_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
