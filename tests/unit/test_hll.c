/*
 * test_hll — HyperLogLog sketches in Redis's layout: the hash and the
 * estimator against figures redis-server 7.0 gave for the same elements,
 * both encodings round trip, and malformed sketches are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hll.h"

static uint8_t regs[HLL_REGS], back[HLL_REGS];

static void add_range(unsigned from, unsigned to)
{
    char e[16];
    for (unsigned i = from; i < to; i++) {
        snprintf(e, sizeof e, "e%u", i);
        hll_add(regs, e, strlen(e));
    }
}

/* redis-server: PFADD y a; PFCOUNT y; GET y is this sparse sketch. */
static void test_hll_matches_redis_bytes(void **state)
{
    (void)state;
    static const unsigned char want[] = {'H', 'Y', 'L', 'L', 1, 0,    0,    0,    1,    0,   0,
                                         0,   0,   0,   0,   0, 0x71, 0xa6, 0x84, 0x4e, 0x57};
    memset(regs, 0, sizeof regs);
    assert_true(hll_add(regs, "a", 1));
    assert_false(hll_add(regs, "a", 1)); /* the same element grows nothing */
    assert_int_equal(regs[12711], 2);
    size_t n;
    char *v = hll_encode(regs, false, NULL, &n);
    uint64_t card;
    assert_false(hll_cached(v, n, &card)); /* a new encoding's count is stale */
    hll_set_cached(v, hll_count(regs));
    assert_int_equal(n, sizeof want);
    assert_memory_equal(v, want, n);
    free(v);
}

/* redis-server: PFADD of "e0".."e9999", then of "e0".."e99999". */
static void test_hll_counts_as_redis(void **state)
{
    (void)state;
    memset(regs, 0, sizeof regs);
    assert_int_equal(hll_count(regs), 0);
    add_range(0, 200);
    assert_int_equal(hll_count(regs), 200);
    add_range(200, 10000);
    assert_int_equal(hll_count(regs), 9973);
    add_range(10000, 100000);
    assert_int_equal(hll_count(regs), 100853);
}

static void test_hll_round_trips(void **state)
{
    (void)state;
    bool dense;
    size_t n;
    /* Few elements: sparse. Many: past HLL_SPARSE_MAX, dense. */
    for (unsigned many = 0; many < 2; many++) {
        memset(regs, 0, sizeof regs);
        add_range(0, many ? 5000 : 300);
        char *v = hll_encode(regs, false, NULL, &n);
        assert_int_equal(hll_check(v, n, &dense), HLL_OK);
        assert_int_equal(dense, many == 1);
        assert_true(many ? n == HLL_DENSE_SIZE : n <= HLL_SPARSE_MAX);
        assert_int_equal(hll_decode(v, n, back), HLL_OK);
        assert_memory_equal(back, regs, HLL_REGS);
        free(v);
    }
    /* Every register at its edge values, both encodings: the first and
     * last registers and those straddling a byte. A value above 32 has no
     * sparse opcode, so that sketch is dense even when sparse is asked. */
    for (int r = 0; r < 3; r++) {
        for (size_t i = 0; i < HLL_REGS; i++)
            regs[i] = (uint8_t)(r == 0 ? (i % 4 ? 0 : 51) : r == 1 ? i % 33 : 63 - i % 64);
        regs[0] = 51;
        regs[HLL_REGS - 1] = 50;
        char *v = hll_encode(regs, false, NULL, &n);
        assert_int_equal(hll_check(v, n, &dense), HLL_OK);
        assert_true(dense);
        assert_int_equal(hll_decode(v, n, back), HLL_OK);
        assert_memory_equal(back, regs, HLL_REGS);
        free(v);
    }
    /* Adding in place to a dense sketch is adding to its registers. */
    memset(regs, 0, sizeof regs);
    add_range(0, 3000);
    char *dv = hll_encode(regs, true, NULL, &n);
    char e[16];
    for (unsigned i = 3000; i < 60000; i++) {
        snprintf(e, sizeof e, "e%u", i);
        assert_int_equal(hll_dense_add(dv, e, strlen(e)), hll_add(regs, e, strlen(e)));
    }
    assert_int_equal(hll_decode(dv, n, back), HLL_OK);
    assert_memory_equal(back, regs, HLL_REGS);
    free(dv);
    /* Editing a sparse sketch as runs gives the bytes that encoding its
     * registers gives, up to and past the move to dense. */
    memset(regs, 0, sizeof regs);
    static const char empty[] = "HYLL\1\0\0\0\0\0\0\0\0\0\0\0\x7f\xff";
    struct hll_runs *runs;
    assert_int_equal(hll_runs_decode(empty, sizeof empty - 1, &runs), HLL_OK);
    for (unsigned i = 0; i < 4000; i++) {
        snprintf(e, sizeof e, "r%u", i * 7919u);
        assert_int_equal(hll_runs_add(runs, e, strlen(e)), hll_add(regs, e, strlen(e)));
        if (i % 97 && i != 3999)
            continue;
        size_t rn;
        char *a = hll_runs_encode(runs, NULL, &rn), *b = hll_encode(regs, false, NULL, &n);
        assert_int_equal(rn, n);
        assert_memory_equal(a, b, n);
        free(a);
        free(b);
    }
    assert_true(n == HLL_DENSE_SIZE); /* 4,000 elements no longer fit sparse */
    hll_runs_free(runs);
    /* A replaced sketch's cached count keeps its bits, marked stale. */
    memset(regs, 0, sizeof regs);
    char *old = hll_encode(regs, false, NULL, &n);
    hll_set_cached(old, 0x1234);
    uint64_t card;
    assert_true(hll_cached(old, n, &card));
    assert_int_equal(card, 0x1234);
    char *v = hll_encode(regs, true, old, &n);
    assert_false(hll_cached(v, n, &card));
    assert_memory_equal(v + 8, old + 8, 7);
    free(old);
    free(v);
}

static void test_hll_refuses_malformed(void **state)
{
    (void)state;
    bool dense;
    assert_int_equal(hll_check("HYLL", 4, &dense), HLL_NOTHLL); /* short */
    assert_int_equal(hll_check("HYLX\1\0\0\0\0\0\0\0\0\0\0\0\x7f\xff", 18, &dense), HLL_NOTHLL);
    assert_int_equal(hll_check("HYLL\2\0\0\0\0\0\0\0\0\0\0\0\x7f\xff", 18, &dense), HLL_NOTHLL);
    assert_int_equal(hll_check("HYLL\0\0\0\0\0\0\0\0\0\0\0\0", 16, &dense), HLL_NOTHLL);
    /* Sparse opcodes must cover the 16,384 registers exactly. */
    static const struct {
        const char *ops;
        size_t n;
        int rc;
    } cases[] = {
        {"\x7f\xff", 2, HLL_OK},          /* XZERO 16384 */
        {"\x7f\xfe", 2, HLL_CORRUPT},     /* one short */
        {"\x7f\xff\x00", 3, HLL_CORRUPT}, /* one too many */
        {"\x7f", 1, HLL_CORRUPT},         /* XZERO cut in half */
        {"\x7f\xfe\x80", 3, HLL_OK},      /* 16383 zeros, one register of 1 */
        {"\x7f\xfe\x81", 3, HLL_CORRUPT}, /* ... but two of them */
        {"", 0, HLL_CORRUPT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char v[HLL_HDR + 4] = "HYLL\1";
        memcpy(v + HLL_HDR, cases[i].ops, cases[i].n);
        assert_int_equal(hll_check(v, HLL_HDR + cases[i].n, &dense), HLL_OK);
        if (hll_decode(v, HLL_HDR + cases[i].n, back) != cases[i].rc)
            fail_msg("sparse case %zu: want %d", i, cases[i].rc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hll_matches_redis_bytes),
        cmocka_unit_test(test_hll_counts_as_redis),
        cmocka_unit_test(test_hll_round_trips),
        cmocka_unit_test(test_hll_refuses_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
