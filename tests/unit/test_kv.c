/*
 * test_kv — the common base: Redis's number texts, the error table, CRC-32C,
 * SHA-1.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kv_crc.h"
#include "kv_err.h"
#include "kv_num.h"
#include "kv_sha1.h"
#include "t_rnd.h"

#define K(s) s, sizeof(s) - 1

static void test_kv_str2ll(void **state)
{
    (void)state;
    struct {
        const char *in;
        int ok;
        int64_t v;
    } c[] = {
        {"0", 1, 0},
        {"7", 1, 7},
        {"-12", 1, -12},
        {"9223372036854775807", 1, INT64_MAX},
        {"-9223372036854775808", 1, INT64_MIN},
        {"9223372036854775808", 0, 0},
        {"-9223372036854775809", 0, 0},
        {"99999999999999999999", 0, 0},
        {"", 0, 0},
        {"-", 0, 0},
        {"-0", 0, 0},
        {"007", 0, 0},
        {"+1", 0, 0},
        {" 1", 0, 0},
        {"1 ", 0, 0},
        {"1x", 0, 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int64_t v = 42;
        int rc = kv_str2ll(c[i].in, strlen(c[i].in), &v);
        assert_int_equal(rc, c[i].ok ? 0 : KV_ENOTINT);
        assert_int_equal(v, c[i].ok ? c[i].v : 42);
    }
}

static void test_kv_strerror(void **state)
{
    (void)state;
    assert_string_equal(kv_strerror(KV_EWRONGTYPE),
                        "WRONGTYPE Operation against a key holding the wrong kind of value");
    assert_string_equal(kv_strerror(KV_ENOTINT), "value is not an integer or out of range");
    assert_string_equal(kv_strerror(0), "success");
    assert_non_null(kv_strerror(-2)); /* -ENOENT */
    assert_string_equal(kv_strerror(12345), "unknown error");
}

/* INCRBY's arithmetic: the sum, or an overflow that leaves the value. */
static void test_kv_add_ll(void **state)
{
    (void)state;
    int64_t v = 5;
    assert_int_equal(kv_add_ll(&v, -7), 0);
    assert_int_equal(v, -2);
    v = INT64_MAX - 1;
    assert_int_equal(kv_add_ll(&v, 1), 0);
    assert_int_equal(kv_add_ll(&v, 1), KV_EOVERFLOW);
    assert_true(v == INT64_MAX);
    v = INT64_MIN + 1;
    assert_int_equal(kv_add_ll(&v, -2), KV_EOVERFLOW);
    assert_int_equal(kv_add_ll(&v, INT64_MAX), 0);
    assert_int_equal(v, 0);
    char buf[KV_LLSTR_MAX];
    assert_int_equal(kv_ll2str(buf, INT64_MIN), 20);
    assert_string_equal(buf, "-9223372036854775808");
    assert_int_equal(kv_ll2str(buf, 0), 1);
    assert_string_equal(buf, "0");
}

/* Redis's float arguments: the whole text, no space, no NaN, no overflow
 * to infinity or underflow to zero; "inf" itself is fine. */
static void test_kv_str2d(void **state)
{
    (void)state;
    double d = 7;
    assert_int_equal(kv_str2d(K("1.5"), &d), 0);
    assert_true(d == 1.5);
    assert_int_equal(kv_str2d(K("-inf"), &d), 0);
    assert_true(isinf(d) && d < 0);
    assert_int_equal(kv_str2d(K("1e-3"), &d), 0);
    d = 7;
    assert_int_equal(kv_str2d(K(""), &d), KV_ENOTFLOAT);
    assert_int_equal(kv_str2d(K(" 1"), &d), KV_ENOTFLOAT);
    assert_int_equal(kv_str2d(K("1 "), &d), KV_ENOTFLOAT);
    assert_int_equal(kv_str2d(K("nan"), &d), KV_ENOTFLOAT);
    assert_int_equal(kv_str2d(K("1e999"), &d), KV_ENOTFLOAT);
    assert_int_equal(kv_str2d(K("1e-999"), &d), KV_ENOTFLOAT);
    assert_int_equal(kv_str2d(K("1.5x"), &d), KV_ENOTFLOAT);
    assert_true(d == 7);
}

/* INCRBYFLOAT's long doubles, read and written as Redis does. */
static void test_kv_long_double(void **state)
{
    (void)state;
    long double ld;
    assert_int_equal(kv_str2ld(K(" 1"), &ld), KV_ENOTFLOAT);
    assert_int_equal(kv_str2ld(K("nan"), &ld), KV_ENOTFLOAT);
    assert_int_equal(kv_str2ld(K("1e99999"), &ld), KV_ENOTFLOAT);
    assert_int_equal(kv_str2ld(K("-1.5"), &ld), 0);
    assert_true(ld == -1.5L);
    char buf[KV_LDSTR_MAX];
    assert_int_equal(kv_ld2str(buf, sizeof buf, 10.5L), 4);
    assert_string_equal(buf, "10.5");
    assert_int_equal(kv_ld2str(buf, sizeof buf, 5200.0L), 4);
    assert_string_equal(buf, "5200");
    kv_ld2str(buf, sizeof buf, -0.0L);
    assert_string_equal(buf, "0");
    kv_ld2str(buf, sizeof buf, -INFINITY);
    assert_string_equal(buf, "-inf");
}

/* Doubles as Redis 7.0 replies them: %.17g, inf, -inf. */
static void test_kv_d2str(void **state)
{
    (void)state;
    char buf[KV_DSTR_MAX];
    assert_int_equal(kv_d2str(buf, sizeof buf, 1.1), 18);
    assert_string_equal(buf, "1.1000000000000001");
    kv_d2str(buf, sizeof buf, -INFINITY);
    assert_string_equal(buf, "-inf");
    kv_d2str(buf, sizeof buf, -1.7976931348623157e308);
    assert_string_equal(buf, "-1.7976931348623157e+308");
    assert_true(strlen(buf) < KV_DSTR_MAX);
}

/* RFC 3720's CRC-32C test vectors, and the fast
 * path against the table over every alignment and length, chained. */
static void test_kv_crc32c(void **state)
{
    (void)state;
    unsigned char z[32], ff[32], up[32];
    memset(z, 0, sizeof z);
    memset(ff, 0xff, sizeof ff);
    for (int i = 0; i < 32; i++)
        up[i] = (unsigned char)i;
    assert_int_equal(kv_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(kv_crc32c(0, z, 32), 0x8a9136aau);
    assert_int_equal(kv_crc32c(0, ff, 32), 0x62a8ab43u);
    assert_int_equal(kv_crc32c(0, up, 32), 0x46dd794eu);
    assert_int_equal(kv_crc32c_table(0, up, 32), 0x46dd794eu);
    unsigned char buf[300];
    uint64_t r = 7;
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)t_rnd(&r);
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n + off <= sizeof buf; n += 1 + n / 8) {
            uint32_t a = kv_crc32c(0, buf + off, n), b = kv_crc32c_table(0, buf + off, n);
            assert_int_equal(a, b);
            size_t h = n / 3; /* in two pieces: the journal checksums header, then payload */
            assert_int_equal(kv_crc32c(kv_crc32c(0, buf + off, h), buf + off + h, n - h), a);
        }
}

/* The digest of p[0..n) as 40 hex digits. */
static void sha1_hex(const void *p, size_t n, char out[41])
{
    unsigned char d[KV_SHA1_LEN];
    kv_sha1(p, n, d);
    for (int i = 0; i < KV_SHA1_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* FIPS 180's SHA-1 examples (one block, two blocks, a million 'a' fed in
 * uneven pieces), the empty message, and the padding's edge lengths
 * (55, 56 and 64 bytes) against digests computed elsewhere. */
static void test_kv_sha1(void **state)
{
    (void)state;
    char hex[41];
    sha1_hex(K("abc"), hex);
    assert_string_equal(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
    sha1_hex(K(""), hex);
    assert_string_equal(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    sha1_hex(K("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"), hex);
    assert_string_equal(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    struct kv_sha1 s;
    kv_sha1_init(&s);
    char a[1000];
    memset(a, 'a', sizeof a);
    for (size_t done = 0, step = 1; done < 1000000; step = step % 997 + 1) {
        size_t n = 1000000 - done < step ? 1000000 - done : step;
        kv_sha1_update(&s, a, n);
        done += n;
    }
    unsigned char d[KV_SHA1_LEN];
    kv_sha1_final(&s, d);
    for (int i = 0; i < KV_SHA1_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    assert_string_equal(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    sha1_hex(a, 55, hex);
    assert_string_equal(hex, "c1c8bbdc22796e28c0e15163d20899b65621d65a");
    sha1_hex(a, 56, hex);
    assert_string_equal(hex, "c2db330f6083854c99d4b5bfb6e8f29f201be699");
    sha1_hex(a, 64, hex);
    assert_string_equal(hex, "0098ba824b5c16427bd7a1122a5a442a25ec644d");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_str2ll), cmocka_unit_test(test_kv_add_ll),
        cmocka_unit_test(test_kv_str2d),  cmocka_unit_test(test_kv_long_double),
        cmocka_unit_test(test_kv_d2str),  cmocka_unit_test(test_kv_strerror),
        cmocka_unit_test(test_kv_crc32c), cmocka_unit_test(test_kv_sha1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
