/*
 * test_enc — the record layouts: golden byte vectors (any format change
 * fails here), round trips, and byte order = numeric order.
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>

#include <cmocka.h>

#include "enc.h"

static void test_enc_crc16_golden(void **state)
{
    (void)state;
    /* The check value of CRC16-CCITT/XModem, as the Redis Cluster spec gives it. */
    assert_int_equal(enc_crc16("123456789", 9), 0x31C3);
    assert_int_equal(enc_crc16("", 0), 0);
    /* The table-driven CRC against the bitwise definition, every length
     * from 0 to 40 (the four-byte steps and every tail). */
    char buf[40];
    uint32_t x = 12345;
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < sizeof buf; i++)
            buf[i] = (char)((x = x * 1103515245u + 12345u) >> 16);
        for (size_t n = 0; n <= sizeof buf; n++) {
            uint16_t want = 0;
            for (size_t i = 0; i < n; i++) {
                want ^= (uint16_t)((unsigned char)buf[i] << 8);
                for (int b = 0; b < 8; b++)
                    want =
                        (want & 0x8000) ? (uint16_t)((want << 1) ^ 0x1021) : (uint16_t)(want << 1);
            }
            assert_int_equal(enc_crc16(buf, n), want);
        }
    }
}

static void test_enc_slot_hashtags(void **state)
{
    (void)state;
    assert_int_equal(enc_slot("foo", 3), 12182);
    assert_int_equal(enc_slot("somekey", 7), 11058);
    /* Keys sharing a hashtag share a slot; the tag alone hashes the same. */
    assert_int_equal(enc_slot("{user1000}.following", 20), enc_slot("user1000", 8));
    assert_int_equal(enc_slot("{user1000}.followers", 20), enc_slot("user1000", 8));
    /* Only the first '{' and the first '}' after it count. */
    assert_int_equal(enc_slot("foo{bar}{zap}", 13), enc_slot("bar", 3));
    assert_int_equal(enc_slot("foo{{bar}}zap", 13), enc_slot("{bar", 4));
    /* An empty tag, or no closing brace, hashes the whole key. */
    assert_int_equal(enc_slot("foo{}{bar}", 10), enc_crc16("foo{}{bar}", 10) & 16383);
    assert_int_equal(enc_slot("foo{bar", 7), enc_crc16("foo{bar", 7) & 16383);
    assert_true(enc_slot("\xff\xfe", 2) < ENC_SLOTS);
}

static void test_enc_meta_key_golden(void **state)
{
    (void)state;
    char out[16];
    uint16_t slot = enc_slot("ab", 2);
    size_t n = enc_meta_key(out, 1, slot, "ab", 2);
    assert_int_equal(n, enc_meta_key_len(2));
    const char want[] = {1, (char)(slot >> 8), (char)slot, 'a', 'b'};
    assert_memory_equal(out, want, sizeof want);

    unsigned db;
    uint16_t s;
    const char *k;
    size_t kn;
    assert_int_equal(enc_meta_key_decode(out, n, &db, &s, &k, &kn), 0);
    assert_int_equal(db, 1);
    assert_int_equal(s, slot);
    assert_int_equal(kn, 2);
    assert_memory_equal(k, "ab", 2);
    assert_int_equal(enc_meta_key_decode(out, 2, &db, &s, &k, &kn), KV_ECORRUPT);
    out[1] = (char)0xff; /* slot 0xff.. is out of range */
    assert_int_equal(enc_meta_key_decode(out, n, &db, &s, &k, &kn), KV_ECORRUPT);
}

static void test_enc_expiry_key_golden(void **state)
{
    (void)state;
    char out[32], meta[32];
    uint16_t slot = enc_slot("ab", 2);
    size_t n = enc_expiry_key(out, 7, 0x0102030405060708ull, slot, "ab", 2);
    assert_int_equal(n, enc_expiry_key_len(2));
    const char want[] = {7, 1, 2, 3, 4, 5, 6, 7, 8, (char)(slot >> 8), (char)slot, 'a', 'b'};
    assert_int_equal(n, sizeof want);
    assert_memory_equal(out, want, sizeof want);

    /* Decoding gives back the time and the key's meta key. */
    unsigned db;
    uint64_t exp;
    size_t mn;
    assert_int_equal(enc_expiry_key_decode(out, n, &db, &exp, meta, &mn), 0);
    assert_int_equal(db, 7);
    assert_int_equal(exp, 0x0102030405060708ull);
    char mk[16];
    size_t mkn = enc_meta_key(mk, 7, slot, "ab", 2);
    assert_int_equal(mn, mkn);
    assert_memory_equal(meta, mk, mkn);
    assert_int_equal(enc_expiry_key_decode(out, 10, &db, &exp, meta, &mn), KV_ECORRUPT);
    out[9] = (char)0xff; /* slot 0xff.. is out of range */
    assert_int_equal(enc_expiry_key_decode(out, n, &db, &exp, meta, &mn), KV_ECORRUPT);
}

static void test_enc_sub_key_golden(void **state)
{
    (void)state;
    char out[64];
    uint16_t slot = enc_slot("k", 1);
    size_t n = enc_sub_prefix(out, 0, slot, "k", 1, 0x0102030405060708ull);
    assert_int_equal(n, enc_sub_prefix_len(1));
    memcpy(out + n, "field", 5);
    n += 5;
    const char want[] = {0,          (char)(slot >> 8),
                         (char)slot, 0,
                         0,          0,
                         1,          'k',
                         1,          2,
                         3,          4,
                         5,          6,
                         7,          8,
                         'f',        'i',
                         'e',        'l',
                         'd'};
    assert_int_equal(n, sizeof want);
    assert_memory_equal(out, want, sizeof want);

    struct enc_sub sk;
    assert_int_equal(enc_sub_decode(out, n, &sk), 0);
    assert_int_equal(sk.db, 0);
    assert_int_equal(sk.slot, slot);
    assert_int_equal(sk.klen, 1);
    assert_memory_equal(sk.key, "k", 1);
    assert_true(sk.version == 0x0102030405060708ull);
    assert_int_equal(sk.flen, 5);
    assert_memory_equal(sk.field, "field", 5);
    /* A key length running past the buffer is corruption, not a read. */
    out[6] = 100;
    assert_int_equal(enc_sub_decode(out, n, &sk), KV_ECORRUPT);
    assert_int_equal(enc_sub_decode(out, 14, &sk), KV_ECORRUPT);
}

static void test_enc_meta_value_golden(void **state)
{
    (void)state;
    char out[64];
    struct enc_meta m = {.type = ENC_TYPE_HASH,
                         .coding = ENC_CODING_BLIND,
                         .expire_ms = 0x1122334455667788ull,
                         .version = 1,
                         .size = 2};
    size_t n = enc_meta_value(out, &m);
    const char want[] = {0x12, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, (char)0x88, 0, 0, 0, 0,
                         0,    0,    0,    1,    0,    0,    0,    0,    0,          0, 0, 2};
    assert_int_equal(n, sizeof want);
    assert_int_equal(n, enc_meta_value_len(&m));
    assert_memory_equal(out, want, sizeof want);

    struct enc_meta r;
    assert_int_equal(enc_meta_value_decode(out, n, &r), 0);
    assert_int_equal(r.type, ENC_TYPE_HASH);
    assert_int_equal(r.coding, ENC_CODING_BLIND);
    assert_true(r.expire_ms == m.expire_ms && r.version == 1 && r.size == 2);
    assert_int_equal(enc_meta_value_decode(out, n - 1, &r), KV_ECORRUPT);

    uint8_t t;
    uint64_t e;
    assert_int_equal(enc_meta_peek(out, n, &t, &e), 0);
    assert_int_equal(t, ENC_TYPE_HASH);
    out[0] = 0x07; /* type 7 does not exist */
    assert_int_equal(enc_meta_peek(out, n, &t, &e), KV_ECORRUPT);
    out[0] = 0x32; /* coding 3 does not exist */
    assert_int_equal(enc_meta_value_decode(out, n, &r), KV_ECORRUPT);
    out[0] = 0x21; /* an inline string does not exist */
    assert_int_equal(enc_meta_peek(out, n, &t, &e), KV_ECORRUPT);
}

/* An inline hash: version and size, then its records. */
static void test_enc_meta_value_inline_golden(void **state)
{
    (void)state;
    static const char pl[] = "\x01"
                             "a"
                             "\x01"
                             "1"
                             "\x02"
                             "bc"
                             "\x00";
    struct enc_meta m = {.type = ENC_TYPE_HASH,
                         .coding = ENC_CODING_INLINE,
                         .version = 0x0102030405060708ull,
                         .size = 2,
                         .inl = pl,
                         .inln = sizeof pl - 1};
    char out[64];
    size_t n = enc_meta_value(out, &m);
    static const char want[] = "\x22"
                               "\x00\x00\x00\x00\x00\x00\x00\x00"
                               "\x01\x02\x03\x04\x05\x06\x07\x08"
                               "\x00\x00\x00\x00\x00\x00\x00\x02"
                               "\x01"
                               "a"
                               "\x01"
                               "1"
                               "\x02"
                               "bc"
                               "\x00";
    assert_int_equal(n, sizeof want - 1);
    assert_int_equal(n, enc_meta_value_len(&m));
    assert_memory_equal(out, want, n);
    struct enc_meta r;
    assert_int_equal(enc_meta_value_decode(out, n, &r), 0);
    assert_int_equal(r.coding, ENC_CODING_INLINE);
    assert_int_equal(r.size, 2);
    assert_int_equal(r.inln, sizeof pl - 1);
    size_t off = 0, fn, vn;
    const char *f, *v;
    assert_int_equal(enc_inline_next(r.inl, r.inln, &off, &f, &fn, &v, &vn), 1);
    assert_memory_equal(f, "a", 1);
    assert_memory_equal(v, "1", 1);
    assert_int_equal(enc_inline_next(r.inl, r.inln, &off, &f, &fn, &v, &vn), 1);
    assert_int_equal(fn, 2);
    assert_int_equal(vn, 0);
    assert_int_equal(enc_inline_next(r.inl, r.inln, &off, &f, &fn, &v, &vn), 0);
    assert_int_equal(enc_inline_find(r.inl, r.inln, "bc", 2, &v, &vn), 1);
    assert_int_equal(enc_inline_find(r.inl, r.inln, "b", 1, &v, &vn), 0);
    assert_int_equal(enc_inline_find(r.inl, r.inln, "z", 1, &v, &vn), 0);
    /* Cut anywhere inside a record, or a length past the end: corrupt. */
    for (size_t cut = 1; cut < r.inln; cut++) {
        if (cut == 4)
            continue; /* a whole first record */
        off = 0;
        int rc;
        while ((rc = enc_inline_next(r.inl, cut, &off, &f, &fn, &v, &vn)) == 1)
            ;
        assert_int_equal(rc, KV_ECORRUPT);
    }
    static const char longv[] = "\xff\xff\xff\xff\xff\x01";
    off = 0;
    assert_int_equal(enc_inline_next(longv, 6, &off, &f, &fn, &v, &vn), KV_ECORRUPT);
    /* The header alone is an empty payload; anything shorter is corrupt. */
    assert_int_equal(enc_meta_value_decode(out, 25, &r), 0);
    assert_int_equal(r.inln, 0);
    assert_int_equal(enc_meta_value_decode(out, 24, &r), KV_ECORRUPT);
    assert_int_equal(enc_varint_len(127), 1);
    assert_int_equal(enc_varint_len(128), 2);
    char vb[8];
    assert_int_equal(enc_varint_put(vb, 300), 2);
    assert_memory_equal(vb, "\xac\x02", 2);
}

static void test_enc_meta_value_string_and_list(void **state)
{
    (void)state;
    char out[64];
    struct enc_meta s = {.type = ENC_TYPE_STRING, .expire_ms = 0, .value = "hi", .vlen = 2};
    size_t n = enc_meta_value(out, &s);
    const char want[] = {0x01, 0, 0, 0, 0, 0, 0, 0, 0, 'h', 'i'};
    assert_int_equal(n, sizeof want);
    assert_memory_equal(out, want, sizeof want);
    struct enc_meta r;
    assert_int_equal(enc_meta_value_decode(out, n, &r), 0);
    assert_int_equal(r.vlen, 2);
    assert_memory_equal(r.value, "hi", 2);
    /* An empty string is a valid value. */
    assert_int_equal(enc_meta_value_decode(out, 9, &r), 0);
    assert_int_equal(r.vlen, 0);

    struct enc_meta l = {.type = ENC_TYPE_LIST,
                         .version = 7,
                         .size = 3,
                         .head = ENC_LIST_MID - 1,
                         .tail = ENC_LIST_MID + 2};
    n = enc_meta_value(out, &l);
    assert_int_equal(n, 9 + 32);
    assert_int_equal(enc_meta_value_decode(out, n, &r), 0);
    assert_true(r.head == l.head && r.tail == l.tail && r.size == 3 && r.version == 7);
    /* size must agree with [head, tail). */
    enc_put_u64(out + 9 + 8, 4);
    assert_int_equal(enc_meta_value_decode(out, n, &r), KV_ECORRUPT);
}

static void test_enc_score_order(void **state)
{
    (void)state;
    const double v[] = {-INFINITY, -DBL_MAX, -1e10,   -1.5, -1.0, -DBL_MIN, -4.9e-324, -0.0,
                        0.0,       4.9e-324, DBL_MIN, 1.0,  1.5,  1e10,     DBL_MAX,   INFINITY};
    size_t n = sizeof v / sizeof v[0];
    char prev[8], cur[8];
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(enc_score_put(cur, v[i]), 0);
        double back = enc_score_get(cur);
        assert_memory_equal(&back, &v[i], sizeof back); /* bit-exact, sign of zero too */
        if (i > 0)
            assert_true(memcmp(prev, cur, 8) < 0);
        memcpy(prev, cur, 8);
    }
    assert_int_equal(enc_score_put(cur, NAN), KV_EINVAL);
    assert_int_equal(enc_score_put(cur, -NAN), KV_EINVAL);
    /* Golden: +1.0 is 0x3ff0... with the sign bit flipped. */
    enc_score_put(cur, 1.0);
    const char want[] = {(char)0xbf, (char)0xf0, 0, 0, 0, 0, 0, 0};
    assert_memory_equal(cur, want, 8);
}

static void test_enc_integer_order(void **state)
{
    (void)state;
    /* Versions and list positions are big-endian u64: byte order is numeric. */
    const uint64_t v[] = {0,         1, 255, 256, ENC_LIST_MID - 1, ENC_LIST_MID, ENC_LIST_MID + 1,
                          UINT64_MAX};
    char a[8], b[8];
    for (size_t i = 1; i < sizeof v / sizeof v[0]; i++) {
        enc_put_u64(a, v[i - 1]);
        enc_put_u64(b, v[i]);
        assert_true(memcmp(a, b, 8) < 0);
        assert_true(enc_get_u64(b) == v[i]);
    }
    uint64_t v1 = enc_version_make(1000, 2047), v2 = enc_version_make(1001, 0);
    assert_true(v1 < v2);
    assert_true(enc_version_make(1000, 5) == ((1000ull << 11) | 5));
    enc_put_u32(a, 0xdeadbeef);
    assert_true(enc_get_u32(a) == 0xdeadbeef);
    enc_put_u16(a, 0xbeef);
    assert_int_equal(enc_get_u16(a), 0xbeef);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enc_crc16_golden),
        cmocka_unit_test(test_enc_slot_hashtags),
        cmocka_unit_test(test_enc_meta_key_golden),
        cmocka_unit_test(test_enc_expiry_key_golden),
        cmocka_unit_test(test_enc_sub_key_golden),
        cmocka_unit_test(test_enc_meta_value_golden),
        cmocka_unit_test(test_enc_meta_value_inline_golden),
        cmocka_unit_test(test_enc_meta_value_string_and_list),
        cmocka_unit_test(test_enc_score_order),
        cmocka_unit_test(test_enc_integer_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
