/*
 * test_srv_idle — the last-use clock behind OBJECT IDLETIME: exact seconds
 * for keys used since the floor, the floor for the rest, across table
 * growth, generation switches, the 24-bit clock and a clock that goes back.
 * Time is passed in, so nothing here sleeps.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "srv_idle.h"

#define T0 1700000000000ull /* ms */
#define S(x) ((uint64_t)(x)*1000)

static void touch(struct srv_idle *t, unsigned db, const char *k, uint64_t ms)
{
    srv_idle_touch(t, db, k, strlen(k), ms);
}

static uint64_t idle(const struct srv_idle *t, unsigned db, const char *k, uint64_t ms)
{
    return srv_idle_seconds(t, db, k, strlen(k), ms);
}

static void keyname(char *buf, size_t n, const char *prefix, unsigned i)
{
    snprintf(buf, n, "%s:%u", prefix, i);
}

static void test_idle_exact_and_floor(void **state)
{
    (void)state;
    struct srv_idle t;
    srv_idle_init(&t, 1000, T0 + 400); /* the floor: second T0 */
    assert_int_equal(idle(&t, 0, "never", T0 + S(7)), 7);
    touch(&t, 0, "a", T0 + S(3) + 900);
    assert_int_equal(idle(&t, 0, "a", T0 + S(3) + 950), 0);
    /* Both ends truncated to the second, as Redis's LRU clock does. */
    assert_int_equal(idle(&t, 0, "a", T0 + S(4) + 10), 1);
    assert_int_equal(idle(&t, 0, "a", T0 + S(20)), 17);
    /* Another database is another key. */
    assert_int_equal(idle(&t, 1, "a", T0 + S(20)), 20);
    touch(&t, 0, "a", T0 + S(20));
    assert_int_equal(idle(&t, 0, "a", T0 + S(25)), 5);
    /* Binary keys, the empty one included. */
    srv_idle_touch(&t, 0, "x\0y", 3, T0 + S(2));
    srv_idle_touch(&t, 0, "", 0, T0 + S(4));
    assert_int_equal(srv_idle_seconds(&t, 0, "x\0y", 3, T0 + S(10)), 8);
    assert_int_equal(srv_idle_seconds(&t, 0, "x\0z", 3, T0 + S(10)), 10);
    assert_int_equal(srv_idle_seconds(&t, 0, "", 0, T0 + S(10)), 6);
    /* Asked before its last use (a clock that went back): 0, not a wrap. */
    assert_int_equal(idle(&t, 0, "a", T0 + S(1)), 0);
    srv_idle_free(&t);
}

/* Growth rehashes from the slots: every key keeps its own second. */
static void test_idle_growth(void **state)
{
    (void)state;
    struct srv_idle t;
    enum { N = 100000 };
    srv_idle_init(&t, N, T0);
    char k[32];
    for (unsigned i = 0; i < N; i++) {
        keyname(k, sizeof k, "g", i);
        touch(&t, i % 3, k, T0 + S(i % 1000));
    }
    assert_int_equal(t.switches, 0);
    assert_int_equal(t.cur.n, N);
    assert_true(t.cur.cap >= 2 * N);
    unsigned wrong = 0;
    for (unsigned i = 0; i < N; i++) {
        keyname(k, sizeof k, "g", i);
        wrong += idle(&t, i % 3, k, T0 + S(5000)) != 5000 - i % 1000;
    }
    assert_int_equal(wrong, 0);
    /* Re-touching known keys adds none. */
    touch(&t, 0, "g:0", T0 + S(6000));
    assert_int_equal(t.cur.n, N);
    assert_int_equal(idle(&t, 0, "g:0", T0 + S(6001)), 1);
    srv_idle_free(&t);
}

/* A full generation becomes the previous one; the one before goes, and the
 * floor rises to the start of the one kept. */
static void test_idle_generations(void **state)
{
    (void)state;
    struct srv_idle t;
    enum { G = 16 };
    srv_idle_init(&t, G, T0);
    char k[32];
    touch(&t, 0, "a", T0);
    for (unsigned i = 0; i < G - 1; i++) {
        keyname(k, sizeof k, "one", i);
        touch(&t, 0, k, T0 + S(10));
    }
    assert_int_equal(t.switches, 0);
    keyname(k, sizeof k, "two", 0);
    touch(&t, 0, k, T0 + S(10)); /* the 17th key: a switch */
    assert_int_equal(t.switches, 1);
    assert_int_equal(t.cur.n, 1);
    /* Everything of the first generation is still exact; unknown keys are
     * still idle since the start. */
    assert_int_equal(idle(&t, 0, "a", T0 + S(20)), 20);
    assert_int_equal(idle(&t, 0, "one:3", T0 + S(20)), 10);
    assert_int_equal(idle(&t, 0, "never", T0 + S(20)), 20);
    /* "one:4" used again: it moves to the current generation. */
    touch(&t, 0, "one:4", T0 + S(25));
    for (unsigned i = 1; i < G - 1; i++) {
        keyname(k, sizeof k, "two", i);
        touch(&t, 0, k, T0 + S(30));
    }
    assert_int_equal(t.switches, 1);
    touch(&t, 0, "three", T0 + S(30));
    assert_int_equal(t.switches, 2);
    /* The first generation is gone: its keys, and keys never used, report
     * the time since the second generation began (second 10), a lower
     * bound; keys used since then are exact. */
    assert_int_equal(idle(&t, 0, "a", T0 + S(40)), 30);
    assert_int_equal(idle(&t, 0, "one:3", T0 + S(40)), 30);
    assert_int_equal(idle(&t, 0, "never", T0 + S(40)), 30);
    assert_int_equal(idle(&t, 0, "one:4", T0 + S(40)), 15);
    assert_int_equal(idle(&t, 0, "two:0", T0 + S(40)), 30);
    assert_int_equal(idle(&t, 0, "two:5", T0 + S(40)), 10);
    assert_int_equal(idle(&t, 0, "three", T0 + S(40)), 10);
    /* Later generations are allocated whole: no growth while they fill. */
    assert_int_equal(t.cur.cap, 1024);
    assert_int_equal(t.prev.cap, 1024);
    srv_idle_free(&t);
}

/* A generation's clock is 24 bits of seconds: at 194 days it is switched
 * out as if full, and what it held stays exact. */
static void test_idle_clock_limit(void **state)
{
    (void)state;
    struct srv_idle t;
    srv_idle_init(&t, 1000, T0);
    uint64_t lim = (1u << 24) - 1;
    touch(&t, 0, "old", T0 + S(1));
    touch(&t, 0, "edge", T0 + S(lim));
    assert_int_equal(t.switches, 0);
    assert_int_equal(idle(&t, 0, "edge", T0 + S(lim + 2)), 2);
    touch(&t, 0, "new", T0 + S(lim + 1));
    assert_int_equal(t.switches, 1);
    assert_int_equal(idle(&t, 0, "old", T0 + S(lim + 11)), lim + 10);
    assert_int_equal(idle(&t, 0, "edge", T0 + S(lim + 11)), 11);
    assert_int_equal(idle(&t, 0, "new", T0 + S(lim + 11)), 10);
    /* A touch stamped before the generation began (the wall clock went
     * back) counts as its first second. */
    touch(&t, 0, "back", T0 + S(5));
    assert_int_equal(idle(&t, 0, "back", T0 + S(lim + 11)), 10);
    srv_idle_free(&t);
}

/* LFU words: a key starts at SRV_LFU_INIT, grows quickly and then
 * logarithmically (log factor 10: about a hundred uses to pass 15, never
 * past 255), decays by one per decay period, and carries over a generation
 * switch; an unseen key reads 0. */
static void test_idle_lfu(void **state)
{
    (void)state;
    struct srv_idle t;
    srv_idle_init(&t, 64, T0);
    uint64_t hot = srv_idle_key(&t, 0, "hot", 3), cold = srv_idle_key(&t, 0, "cold", 4);
    srv_idle_touch_lfu(&t, cold, T0, 10, 1);
    assert_int_equal(srv_idle_freq(&t, 0, "cold", 4, T0, 1), SRV_LFU_INIT);
    assert_int_equal(srv_idle_freq(&t, 0, "none", 4, T0, 1), 0);
    for (int i = 0; i < 1000; i++)
        srv_idle_touch_lfu(&t, hot, T0, 10, 1);
    unsigned f = srv_idle_freq(&t, 0, "hot", 3, T0, 1);
    assert_true(f > 15 && f < 40);
    for (int i = 0; i < 2000000; i++)
        srv_idle_touch_lfu(&t, hot, T0, 0, 1); /* factor 0: every use counts */
    assert_int_equal(srv_idle_freq(&t, 0, "hot", 3, T0, 1), 255);
    /* Three minutes later with a 1-minute period: 3 less; with 0, none. */
    assert_int_equal(srv_idle_freq(&t, 0, "hot", 3, T0 + 180000, 1), 252);
    assert_int_equal(srv_idle_freq(&t, 0, "hot", 3, T0 + 180000, 0), 255);
    assert_int_equal(srv_idle_freq(&t, 0, "cold", 4, T0 + 600000, 1), 0);
    /* Filling the generation switches it: hot's word goes along. */
    char k[32];
    for (unsigned i = 0; i < 64; i++) {
        keyname(k, sizeof k, "fill", i);
        srv_idle_touch_lfu(&t, srv_idle_key(&t, 0, k, strlen(k)), T0, 10, 1);
    }
    assert_true(t.switches >= 1);
    srv_idle_touch_lfu(&t, hot, T0, 10, 1);
    assert_true(srv_idle_freq(&t, 0, "hot", 3, T0, 1) >= 254);
    srv_idle_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_exact_and_floor),
        cmocka_unit_test(test_idle_growth),
        cmocka_unit_test(test_idle_generations),
        cmocka_unit_test(test_idle_clock_limit),
        cmocka_unit_test(test_idle_lfu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
